#!/bin/sh
# `colloc sim` end to end on the bundled trace excerpts: every policy is
# deterministic per seed (two --json runs, with --seeds too, differ only in
# sim_wall_s), the fill mode likewise, and the option errors. Usage:
# test_sim_cli.sh PATH/TO/colloc TRACE_DIR. Needs COLLOC_DATA_DIR for the
# model zoo. Prints "N passed, M failed"; exits non-zero on any failure.
set -u
colloc=$1
traces=$2
pass=0
fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

bad() {
	echo "FAIL $*"
	fail=$((fail + 1))
}
# same_but_wall A B WHAT: the two JSON files are equal once every
# "sim_wall_s":NUMBER is blanked.
same_but_wall() {
	sed 's/"sim_wall_s":[-0-9.e+]*/"sim_wall_s":-/g' "$1" >"$1.n"
	sed 's/"sim_wall_s":[-0-9.e+]*/"sim_wall_s":-/g' "$2" >"$2.n"
	if cmp -s "$1.n" "$2.n" && [ -s "$1.n" ]; then
		pass=$((pass + 1))
	else
		bad "$3: two runs differ beyond sim_wall_s"
		diff "$1.n" "$2.n" | head -5
	fi
}
# status WANT WHAT CMD...: the command exits with WANT.
status() {
	want=$1 what=$2
	shift 2
	"$@" >"$tmp/out" 2>&1
	got=$?
	if [ "$got" = "$want" ]; then pass=$((pass + 1)); else bad "$what: exit $got, expected $want"; fi
}

all=exclusive,round-robin,most-free-memory,least-utilized,estimate-aware,request,fgd
for t in "philly:$traces/philly_trace1_head.csv" "alibaba2023:$traces/alibaba2023_default_head.csv"; do
	for seeds in "--seed 3" "--seeds 1-3"; do
		# shellcheck disable=SC2086
		"$colloc" sim --trace "$t" --cluster 2x4xV100-32GB --policy "$all" $seeds \
			--est-error 0.2 --json >"$tmp/a.json" 2>"$tmp/err" || bad "sim $t $seeds: $(cat "$tmp/err")"
		# shellcheck disable=SC2086
		"$colloc" sim --trace "$t" --cluster 2x4xV100-32GB --policy "$all" $seeds \
			--est-error 0.2 --json >"$tmp/b.json" 2>>"$tmp/err"
		same_but_wall "$tmp/a.json" "$tmp/b.json" "sim ${t%%:*} $seeds"
	done
done
# Seeds that differ give different identities on a trace without models.
"$colloc" sim --trace "alibaba2023:$traces/alibaba2023_default_head.csv" --cluster 2x4xV100-32GB \
	--policy estimate-aware --seeds 1-3 --json >"$tmp/s.json"
if grep -q '"sd":{[^}]*"gpu_util":0[,}]' "$tmp/s.json"; then
	bad "seeds 1-3 on drawn identities: sd of gpu_util is 0"
else
	pass=$((pass + 1))
fi

# A node list for the fill mode: three nodes of the openb kinds.
cat >"$tmp/nodes.csv" <<'N'
sn,cpu_milli,memory_mib,gpu,model
n-0,96000,393216,8,G2
n-1,104000,524288,2,T4
n-2,64000,262144,2,P100
N
for p in random,bestfit fgd,request,estimate-aware,exclusive; do
	"$colloc" sim --fill --trace "alibaba2023:$traces/alibaba2023_default_head.csv" \
		--cluster "alibaba:$tmp/nodes.csv" --policy "$p" --seeds 1-2 --json >"$tmp/f1.json" ||
		bad "fill $p"
	"$colloc" sim --fill --trace "alibaba2023:$traces/alibaba2023_default_head.csv" \
		--cluster "alibaba:$tmp/nodes.csv" --policy "$p" --seeds 1-2 --json >"$tmp/f2.json"
	same_but_wall "$tmp/f1.json" "$tmp/f2.json" "fill $p"
done

# --no-queue-wait reaches the core (on one 4-GPU node the 50 jobs queue, and
# counting the queue in front, the default, changes estimate-aware's
# decisions), --queue-wait names the default, and both are deterministic.
for k in 1 2; do
	"$colloc" sim --trace "philly:$traces/philly_trace1_head.csv" --cluster 1x4xV100-32GB \
		--policy estimate-aware --no-queue-wait --json >"$tmp/q$k.json" 2>"$tmp/err" ||
		bad "sim --no-queue-wait: $(cat "$tmp/err")"
done
same_but_wall "$tmp/q1.json" "$tmp/q2.json" "sim --no-queue-wait"
"$colloc" sim --trace "philly:$traces/philly_trace1_head.csv" --cluster 1x4xV100-32GB \
	--policy estimate-aware --json >"$tmp/q0.json"
"$colloc" sim --trace "philly:$traces/philly_trace1_head.csv" --cluster 1x4xV100-32GB \
	--policy estimate-aware --queue-wait --json >"$tmp/q3.json"
same_but_wall "$tmp/q0.json" "$tmp/q3.json" "sim --queue-wait (the default)"
sed 's/"sim_wall_s":[-0-9.e+]*//' "$tmp/q0.json" >"$tmp/q0.n"
sed 's/"sim_wall_s":[-0-9.e+]*//' "$tmp/q1.json" >"$tmp/q1.n"
if cmp -s "$tmp/q0.n" "$tmp/q1.n"; then
	bad "sim --no-queue-wait decides as the default on a queue"
else
	pass=$((pass + 1))
fi

# --job-log: one row per job of every run, whose JCTs average to the
# summary's mean JCT; nothing under the name when it cannot be written.
"$colloc" sim --trace "philly:$traces/philly_trace1_head.csv" --cluster 1x4xV100-32GB \
	--policy exclusive,estimate-aware --seeds 1-2 --job-log "$tmp/jobs.csv" --csv >"$tmp/jl.csv" \
	2>"$tmp/err" || bad "sim --job-log: $(cat "$tmp/err")"
if [ "$(wc -l <"$tmp/jobs.csv")" -eq 201 ] && [ ! -e "$tmp/jobs.csv.tmp" ] &&
	head -1 "$tmp/jobs.csv" | grep -q '^policy,seed,job_id,kind,gpus,gpu_milli,submit_s,start_s,end_s,wait_s,jct_s,alone_s,slowdown,outcome,'; then
	pass=$((pass + 1))
else
	bad "sim --job-log: $(wc -l <"$tmp/jobs.csv") lines, header $(head -1 "$tmp/jobs.csv")"
fi
for p in exclusive estimate-aware; do
	want=$(awk -F, -v p=$p '$1 == p && $2 == "mean" {print $7}' "$tmp/jl.csv")
	got=$(awk -F, -v p=$p 'NR > 1 && $1 == p {s += $11; n++} END {printf "%.2f", s / n}' "$tmp/jobs.csv")
	if awk -v a="$want" -v b="$got" 'BEGIN {d = a - b; exit !(d < 0.01 && d > -0.01)}'; then
		pass=$((pass + 1))
	else
		bad "sim --job-log $p: mean JCT $got, the summary's $want"
	fi
done
status 1 "--job-log unwritable" "$colloc" sim --trace "philly:$traces/philly_trace1_head.csv" \
	--cluster 1x4xV100-32GB --job-log "$tmp/no/such/dir/jobs.csv"
if grep -q "cannot write" "$tmp/out"; then pass=$((pass + 1)); else bad "--job-log unwritable: $(cat "$tmp/out")"; fi

status 2 "--seeds 5-1" "$colloc" sim --trace "philly:$traces/philly_trace1_head.csv" \
	--cluster 1x1xV100-32GB --seeds 5-1
status 2 "--seeds 1-100" "$colloc" sim --trace "philly:$traces/philly_trace1_head.csv" \
	--cluster 1x1xV100-32GB --seeds 1-100
# The event simulator on a node list: GPU types honoured (the excerpt's one
# pod asking for an A10, which no node has, fails under every policy),
# deterministic per seed; a model it does not know is an error of the list.
for seeds in "--seed 2" "--seeds 1-2"; do
	# shellcheck disable=SC2086
	"$colloc" sim --trace "alibaba2023:$traces/alibaba2023_types_pods.csv" \
		--cluster "alibaba:$traces/alibaba2023_types_nodes.csv" --policy "$all" $seeds \
		--json >"$tmp/h1.json" 2>"$tmp/err" || bad "sim on a node list $seeds: $(cat "$tmp/err")"
	# shellcheck disable=SC2086
	"$colloc" sim --trace "alibaba2023:$traces/alibaba2023_types_pods.csv" \
		--cluster "alibaba:$traces/alibaba2023_types_nodes.csv" --policy "$all" $seeds \
		--json >"$tmp/h2.json"
	same_but_wall "$tmp/h1.json" "$tmp/h2.json" "sim on a node list $seeds"
done
"$colloc" sim --trace "alibaba2023:$traces/alibaba2023_types_pods.csv" \
	--cluster "alibaba:$traces/alibaba2023_types_nodes.csv" --policy "$all" --json >"$tmp/h.json"
if [ "$(grep -o '"failed":1,' "$tmp/h.json" | wc -l)" -eq 7 ]; then
	pass=$((pass + 1))
else
	bad "node list: the A10 pod does not fail under every policy: $(cat "$tmp/h.json")"
fi
status 0 "node list, text" "$colloc" sim --trace "alibaba2023:$traces/alibaba2023_types_pods.csv" \
	--cluster "alibaba:$traces/alibaba2023_types_nodes.csv"
if grep -q "4 nodes, GPUs 4 x T4, 2 x V100M32, 4 x G2; estimates on T4" "$tmp/out"; then
	pass=$((pass + 1))
else
	bad "node list header: $(head -1 "$tmp/out")"
fi
status 0 "philly on a node list" "$colloc" sim --trace "philly:$traces/philly_trace1_head.csv" \
	--cluster "alibaba:$tmp/nodes.csv"
status 0 "--kinds on a node list" "$colloc" sim --kinds --cluster "alibaba:$tmp/nodes.csv"
if grep -q "^GPU G2, platform profile default" "$tmp/out"; then pass=$((pass + 1)); else bad "--kinds on a node list: $(head -1 "$tmp/out")"; fi
printf 'sn,cpu_milli,memory_mib,gpu,model\nn-0,96000,1024,8,B200\n' >"$tmp/b200.csv"
status 1 "unknown GPU model" "$colloc" sim --trace "philly:$traces/philly_trace1_head.csv" \
	--cluster "alibaba:$tmp/b200.csv"
if grep -q "GPU model 'B200'" "$tmp/out"; then pass=$((pass + 1)); else bad "unknown model message: $(cat "$tmp/out")"; fi
status 2 "--fill --job-log" "$colloc" sim --fill --job-log "$tmp/fill.csv" \
	--trace "alibaba2023:$traces/alibaba2023_default_head.csv" --cluster "alibaba:$tmp/nodes.csv"
if grep -q "job-log is for the event simulator" "$tmp/out"; then pass=$((pass + 1)); else bad "--fill --job-log: $(cat "$tmp/out")"; fi
status 2 "--fill without a node list" "$colloc" sim --fill \
	--trace "alibaba2023:$traces/alibaba2023_default_head.csv" --cluster 1x1xV100-32GB
printf 'sn,cpu_milli,memory_mib,gpu,model\nn-0,96000,x,8,G2\n' >"$tmp/bad.csv"
status 1 "bad node list" "$colloc" sim --fill --trace "alibaba2023:$traces/alibaba2023_default_head.csv" \
	--cluster "alibaba:$tmp/bad.csv"
if grep -q "bad.csv:2: column 'memory_mib'" "$tmp/out"; then pass=$((pass + 1)); else bad "bad node list message: $(cat "$tmp/out")"; fi
status 2 "fill with an unknown rule" "$colloc" sim --fill \
	--trace "alibaba2023:$traces/alibaba2023_default_head.csv" --cluster "alibaba:$tmp/nodes.csv" \
	--policy worstfit

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
