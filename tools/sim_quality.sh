#!/bin/sh
# estimate-aware against the issue's quality bar (makespan <= 1.01x, mean
# JCT <= 1.02x, p99 JCT <= 1.05x the strongest other policy, the one with
# the lowest mean JCT, failed jobs counted) in every (trace, load) cell,
# with extra `colloc sim` flags for estimate-aware only, so that a change
# of the policy can be judged before docs/sim-report.md is regenerated.
#
#   tools/sim_quality.sh [--held-out] [DATA_DIR] [-- FLAG...]
#
# Default: the report's sweep (tools/sim_report.sh: Philly traces 1-4 and
# Alibaba's default pod list on 8x8xV100-32GB, Gavel's fifteen traces on
# 4x8xV100-32GB, loads 0.5, 0.9 and 1.2, seeds 1-5). --held-out: cells no
# rule was chosen on -- the Philly traces on 4x8xV100-32GB, Alibaba's
# gpushare40 and gpuspec33 pod lists, Gavel's traces on 8x4xV100-32GB,
# seeds 6-10. Prints one line per cell (trace-load, strongest other policy,
# the three ratios, mean JCT against exclusive, yes/NO) and the count that
# meets the bar; runs two simulations at a time. Example:
#   tools/sim_quality.sh -- --no-queue-wait
set -eu
cd "$(dirname "$0")/.."
held=no
if [ "${1:-}" = --held-out ]; then
	held=yes
	shift
fi
data=../shared/data
if [ $# -gt 0 ] && [ "$1" != -- ]; then
	data=$1
	shift
fi
[ "${1:-}" = -- ] && shift
extra=$*
colloc=${COLLOC:-build/colloc}
[ -x "$colloc" ] || { echo "sim_quality.sh: build first (cmake --preset release)" >&2; exit 2; }
[ -d "$data" ] || { echo "sim_quality.sh: no shared data at $data" >&2; exit 2; }
others=exclusive,round-robin,most-free-memory,least-utilized,request,fgd
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if [ $held = yes ]; then
	seeds=6-10 philly=4x8xV100-32GB gavel=8x4xV100-32GB
	pods="gpushare40 gpuspec33"
else
	seeds=1-5 philly=8x8xV100-32GB gavel=4x8xV100-32GB
	pods=default
fi
{
	for k in 1 2 3 4; do
		echo "philly-trace$k philly:$data/philly-derived/trace$k.csv $philly"
	done
	for p in $pods; do
		echo "alibaba-$p alibaba2023:$data/alibaba-gpu-2023/openb_pod_list_$p.csv 8x8xV100-32GB"
	done
	for g in "$data"/gavel/msr/seed0/*.trace; do
		echo "gavel-$(basename "$g" .trace) gavel:$g $gavel"
	done
} | while read -r name trace cluster; do
	for load in 0.5 0.9 1.2; do
		echo "$name $trace $cluster $load"
	done
done >"$tmp/cells"
# one cell: the other policies, then estimate-aware with the extra flags
# ($0 the folder, $1 colloc, $2 the other policies, $3 seeds, $4 the flags;
# then the cell: $5 name, $6 trace, $7 cluster, $8 load)
# shellcheck disable=SC2016
xargs -P 2 -L 1 sh -c '
	out=$0/$5-$8.csv
	"$1" sim --trace "$6" --cluster "$7" --policy "$2" --load "$8" --seeds "$3" \
		--csv >"$out" &&
	"$1" sim --trace "$6" --cluster "$7" --policy estimate-aware $4 --load "$8" \
		--seeds "$3" --csv | tail -n +2 >>"$out"' \
	"$tmp" "$colloc" "$others" "$seeds" "$extra" <"$tmp/cells" 2>/dev/null || true
n=0
ok=0
while read -r name trace cluster load; do
	f=$tmp/$name-$load.csv
	[ -s "$f" ] || { echo "sim_quality.sh: $name at $load did not run" >&2; exit 1; }
	line=$(awk -F, -v name="$name-$load" -v e=estimate-aware -f tools/sim_verdict.awk "$f")
	echo "$line"
	n=$((n + 1))
	case $line in *yes) ok=$((ok + 1)) ;; esac
done <"$tmp/cells"
echo "estimate-aware${extra:+ $extra} meets the bar in $ok of $n cells"
