#!/bin/sh
# Simulator speed: synthetic traces of growing size (colloc's CSV format,
# generated here with a fixed seed) replayed with the estimate-aware policy;
# prints wall time, jobs per second, and the growth factor from one size to
# the next (1.0 per 10x would be linear).
#
#   tools/bench_sim.sh [CLUSTER] [SIZES...]   (default 64x8x40GiB 1000 10000 100000)
#
# Issue 5's target is 1,000,000 jobs on 10,000 GPUs in under 60 s; see
# docs/simulator.md for where the time goes today.
set -eu
cd "$(dirname "$0")/.."
colloc=${COLLOC:-build/colloc}
[ -x "$colloc" ] || { echo "bench_sim.sh: build first (cmake --preset release)" >&2; exit 2; }
cluster=${1:-64x8x40GiB}
[ $# -gt 0 ] && shift
sizes=${*:-1000 10000 100000}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
prev=""
printf "%-10s %-14s %10s %12s %8s\n" jobs cluster wall_s jobs_per_s growth
for n in $sizes; do
	# Poisson arrivals (mean gap 4 s), run times 1 min to 6 h, 1-8 GPUs,
	# the simulator's job kinds; awk's srand(1) makes it repeatable.
	awk -v n="$n" 'BEGIN {
		srand(1); t = 0
		split("resnet18 resnet50 vgg16 mobilenet_v2 bert gpt2 dqn shufflenet_v2_x1_0", m, " ")
		split("1 1 1 1 2 4 8", g, " ")
		print "id,submit_s,duration_s,gpus,model"
		for (i = 0; i < n; i++) {
			t += -4 * log(1 - rand())
			printf "%d,%.1f,%d,%d,%s\n", i, t, 60 + int(rand() * 21540), g[1 + int(rand() * 7)], m[1 + int(rand() * 8)]
		}
	}' >"$tmp/t.csv"
	s=$(date +%s.%N)
	"$colloc" sim --trace "csv:$tmp/t.csv" --cluster "$cluster" --policy estimate-aware --csv >/dev/null
	e=$(date +%s.%N)
	wall=$(awk -v a="$s" -v b="$e" 'BEGIN {printf "%.2f", b - a}')
	growth=$(awk -v w="$wall" -v p="$prev" 'BEGIN {if (p == "" || p == 0) print "-"; else printf "%.1fx", w / p}')
	printf "%-10s %-14s %10s %12.0f %8s\n" "$n" "$cluster" "$wall" "$(awk -v n="$n" -v w="$wall" 'BEGIN {print (w > 0 ? n / w : 0)}')" "$growth"
	prev=$wall
done
