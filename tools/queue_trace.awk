# The synthetic trace of tools/bench_sim.sh, in colloc's CSV trace format:
# n jobs (awk -v n=N), Poisson arrivals of mean gap `gap` seconds (-v
# gap=S), run times 1 min to 6 h, 1-8 GPUs, the simulator's job kinds.
# srand(1) makes it the same on every run: the first k jobs of a longer
# trace are the trace of k jobs.
BEGIN {
	srand(1); t = 0
	split("resnet18 resnet50 vgg16 mobilenet_v2 bert gpt2 dqn shufflenet_v2_x1_0", m, " ")
	split("1 1 1 1 2 4 8", g, " ")
	print "id,submit_s,duration_s,gpus,model"
	for (i = 0; i < n; i++) {
		t += -gap * log(1 - rand())
		printf "%d,%.1f,%d,%d,%s\n", i, t, 60 + int(rand() * 21540), g[1 + int(rand() * 7)], m[1 + int(rand() * 8)]
	}
}
