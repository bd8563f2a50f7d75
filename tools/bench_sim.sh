#!/bin/sh
# Simulator speed: synthetic traces of growing size (colloc's CSV format,
# generated here with a fixed seed) replayed on one cluster with a policy and
# a baseline policy in the same process (`colloc sim --policy BASE,POLICY`).
# Per size and policy it prints the simulation time (trace reading excluded),
# jobs per second, how the time grew from the previous size (time x, and per
# job: 1.00 is linear), the time against the baseline policy's at the same
# size, and the process's wall time and peak memory (GNU time, when there).
#
#   tools/bench_sim.sh [CLUSTER] [SIZES...]
#       default: 1250x8xA100-80GB (10,000 GPUs) 10000 100000 1000000
#   environment: COLLOC (binary, build/colloc), POLICY (estimate-aware; a
#                comma-separated list runs each), BASELINE (exclusive),
#                GAPS (mean seconds between arrivals, one trace each:
#                "4 2"; 4 s leaves the cluster room for almost every job,
#                offered load about 0.69; 2 s is about 1.39, so jobs queue
#                and EASY backfill reserves for the queue head)
#
# Issue 5's target: 1,000,000 jobs on 10,000 GPUs in under 60 s on one core,
# under 2 GB; issue 13's: the same with a queue, for every policy, and
# growth of at most 12x per 10x jobs. docs/simulator.md has the figures
# measured here and where the time goes. The whole default run takes many
# minutes (the queueing 1M trace under every policy most of it).
set -eu
cd "$(dirname "$0")/.."
colloc=${COLLOC:-build/colloc}
[ -x "$colloc" ] || { echo "bench_sim.sh: build first (cmake --preset release)" >&2; exit 2; }
cluster=${1:-1250x8xA100-80GB}
[ $# -gt 0 ] && shift
sizes=${*:-10000 100000 1000000}
policies=$(echo "${POLICY:-estimate-aware}" | tr , ' ')
base=${BASELINE:-exclusive}
gaps=${GAPS:-4 2}
gtime=""
[ -x /usr/bin/time ] && /usr/bin/time -f %M true >/dev/null 2>&1 && gtime=/usr/bin/time
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "cluster $cluster; baseline policy $base, measured in the same process"
printf "%-5s %-9s %-16s %8s %11s %8s %8s %8s %7s %7s %8s\n" gap_s jobs policy sim_s jobs_per_s growth per_job "vs_$base" wall_s rss_mb trace_s
# row JOBS POLICY TIME BASELINE_TIME PREVIOUS_SIZE_TIME (uses prev_n, wall,
# rss, gen)
row() {
	awk -v n="$1" -v p="$2" -v t="$3" -v tb="$4" -v tp="$5" -v pn="$prev_n" -v gap="$gap" \
		-v w="$wall" -v r="$rss" -v g="$gen" 'BEGIN {
		gr = "-"; pj = "-"
		if (tp != "" && tp > 0) {
			gr = sprintf("%.1fx", t / tp)
			pj = sprintf("%.2f", (t / tp) / (n / pn))
		}
		printf "%-5s %-9s %-16s %8.2f %11.0f %8s %8s %7.2fx %7s %7s %8s\n", gap, n, p, t,
		       (t > 0 ? n / t : 0), gr, pj, (tb > 0 ? t / tb : 0), w, r, g
	}'
}
for gap in $gaps; do
for policy in $policies; do
prev_n=""
prev_b=""
prev_p=""
for n in $sizes; do
	# Poisson arrivals (mean gap $gap s), run times 1 min to 6 h, 1-8 GPUs,
	# the simulator's job kinds; awk's srand(1) makes it repeatable.
	g0=$(date +%s.%N)
	awk -v n="$n" -v gap="$gap" -f tools/queue_trace.awk >"$tmp/t.csv"
	s=$(date +%s.%N)
	if [ -n "$gtime" ]; then
		$gtime -f %M -o "$tmp/rss" "$colloc" sim --trace "csv:$tmp/t.csv" --cluster "$cluster" \
			--policy "$base,$policy" --csv >"$tmp/out.csv"
		rss=$(awk '{v = $1} END {printf "%.0f", v / 1024}' "$tmp/rss")
	else
		"$colloc" sim --trace "csv:$tmp/t.csv" --cluster "$cluster" \
			--policy "$base,$policy" --csv >"$tmp/out.csv"
		rss=-
	fi
	e=$(date +%s.%N)
	wall=$(awk -v a="$s" -v b="$e" 'BEGIN {printf "%.1f", b - a}')
	gen=$(awk -v a="$g0" -v b="$s" 'BEGIN {printf "%.1f", b - a}')
	# sim_wall_s is the last column of colloc's CSV.
	tb=$(awk -F, -v p="$base" '$1 == p {print $NF; exit}' "$tmp/out.csv")
	tp=$(awk -F, -v p="$policy" '$1 == p {v = $NF} END {print v}' "$tmp/out.csv")
	row "$n" "$base" "$tb" "$tb" "$prev_b"
	[ "$policy" = "$base" ] || row "$n" "$policy" "$tp" "$tb" "$prev_p"
	prev_b=$tb
	prev_p=$tp
	prev_n=$n
done
done
done
