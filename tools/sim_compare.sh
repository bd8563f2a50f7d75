#!/bin/sh
# Do two builds of colloc decide the same? Runs both on the same simulations
# and compares every figure of `colloc sim --csv` but the wall time: the
# 100k-job queueing trace of tools/bench_sim.sh (tools/queue_trace.awk, 2 s
# mean gap, 10,000 GPUs) under every policy, estimate-aware with
# --hard-bound, EASY against the starvation rule, and, when the shared data
# is there, Philly trace 2 and Alibaba's default pod list on its node list
# at offered load 1.2. A speed change that is meant to keep decisions must
# print SAME on every line.
#
#   tools/sim_compare.sh OLD_COLLOC NEW_COLLOC [SHARED_DATA_DIR]
#       (default ../shared/data; JOBS: the queueing trace's size, 100000)
#   exit status: 0 all the same, 1 some differ, 2 usage or a run failed
set -eu
[ $# -ge 2 ] || { echo "usage: tools/sim_compare.sh OLD_COLLOC NEW_COLLOC [SHARED_DATA_DIR]" >&2; exit 2; }
old=$1
new=$2
data=${3:-$(dirname "$0")/../../shared/data}
for b in "$old" "$new"; do
	[ -x "$b" ] || { echo "sim_compare.sh: $b is not an executable" >&2; exit 2; }
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
awk -v n="${JOBS:-100000}" -v gap=2 -f "$(dirname "$0")/queue_trace.awk" >"$tmp/q.csv"
all=exclusive,round-robin,most-free-memory,least-utilized,request,fgd,estimate-aware
q="--trace csv:$tmp/q.csv --cluster 1250x8xA100-80GB"
set -- "$q --policy $all" "$q --policy estimate-aware --hard-bound" \
	"$q --policy exclusive,least-utilized --backfill starve"
if [ -d "$data/philly-derived" ] && [ -d "$data/alibaba-gpu-2023" ]; then
	a=$data/alibaba-gpu-2023
	set -- "$@" "--trace philly:$data/philly-derived/trace2.csv --cluster 8x8xV100-32GB --load 1.2 --policy $all" \
		"--trace alibaba2023:$a/openb_pod_list_default.csv --cluster alibaba:$a/openb_node_list_gpu_node.csv --load 1.2 --policy $all"
else
	echo "sim_compare.sh: no shared data at $data: the queueing trace only" >&2
fi
rc=0
for args in "$@"; do
	for side in a b; do
		[ $side = a ] && bin=$old || bin=$new
		# shellcheck disable=SC2086
		if ! "$bin" sim $args --csv >"$tmp/$side.csv"; then
			echo "sim_compare.sh: $bin failed on: colloc sim $args" >&2
			exit 2
		fi
		# every column but the last (sim_wall_s)
		awk -F, -v OFS=, '{NF--; print}' "$tmp/$side.csv" >"$tmp/$side"
	done
	if cmp -s "$tmp/a" "$tmp/b"; then
		echo "SAME  colloc sim $args" | sed "s|$tmp/||g"
	else
		echo "DIFF  colloc sim $args" | sed "s|$tmp/||g"
		diff "$tmp/a" "$tmp/b" | sed 's/^/      /'
		rc=1
	fi
done
exit $rc
