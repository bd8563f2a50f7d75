#!/bin/sh
# Regenerate docs/sim-report.md and its plots with colloc itself: each bundled
# trace on a simulated cluster under every policy, plus the interference
# model's held-out error.
#
#   tools/sim_report.sh [SHARED_DATA_DIR]   (default ../shared/data)
#
# Needs a release build (cmake --preset release && cmake --build --preset
# release) and gnuplot (gnuplot-nox) for the pictures.
set -eu
cd "$(dirname "$0")/.."
data=${1:-../shared/data}
colloc=build/colloc
fit=build/fit_interference
out=docs/sim-report.md
head=docs/sim-report.head.md
[ -x "$colloc" ] || { echo "sim_report.sh: build first" >&2; exit 2; }
policies=exclusive,round-robin,most-free-memory,least-utilized,estimate-aware

run() { # NAME KIND:PATH CLUSTER
	name=$1 trace=$2 cluster=$3
	dir=docs/sim/$name
	rm -rf "$dir"
	"$colloc" sim --trace "$trace" --cluster "$cluster" --policy "$policies" \
		--util-bound 1.5 --plot "$dir" >"$dir.txt"
	rm -f "$dir"/*.dat
	{
		echo "### $name: \`$(basename "${trace#*:}")\` on \`$cluster\`"
		echo
		echo "\`colloc sim --trace $(echo "$trace" | sed "s|$data/||") --cluster $cluster --policy $policies --util-bound 1.5 --plot docs/sim/$name\`"
		echo
		echo '```'
		sed "s|$data/||" "$dir.txt"
		echo '```'
		echo
		awk -F, -v name="$name" '
			$1 == "exclusive" { m0 = $5; u0 = $12; j0 = $6 }
			$1 == "estimate-aware" { m1 = $5; u1 = $12; j1 = $6; lost = $18 }
			$1 == "least-utilized" { m2 = $5; u2 = $12 }
			END {
				printf "**%s: estimate-aware vs exclusive:** makespan %+.1f%%, GPU utilization %+.1f%%, mean JCT %+.1f%%, jobs lost %d", name, 100 * (m1 / m0 - 1), 100 * (u1 / u0 - 1), 100 * (j1 / j0 - 1), lost
				printf " (least-utilized: makespan %+.1f%%, utilization %+.1f%%).\n\n", 100 * (m2 / m0 - 1), 100 * (u2 / u0 - 1)
			}' "$dir/summary.csv"
		echo "![GPU utilization over time](sim/$name/util.svg)"
		echo "![Job completion time CDF](sim/$name/jct_cdf.svg)"
		echo
	} >>"$out.tmp"
	rm -f "$dir.txt"
}

: >"$out.tmp"
run philly-trace1 "philly:$data/philly-derived/trace1.csv" 16x8xA100-40GB
run alibaba-default "alibaba2023:$data/alibaba-gpu-2023/openb_pod_list_default.csv" 2x8xA100-40GB
run gavel-0e4a51 "gavel:$data/gavel/msr/seed0/0e4a51.trace" 4x8xV100-32GB
fitted=$("$fit" "$data/gavel/simulation_throughputs.json" 2>&1 | sed -n '1,7p' || true)
{
	cat docs/sim-report.head.md
	echo
	echo "## Interference model: held-out error"
	echo
	echo "\`build/fit_interference $data/gavel/simulation_throughputs.json\` (fit on half of"
	echo "Gavel's measured pairs, evaluated on the other half; docs/interference.md):"
	echo
	echo '```'
	echo "$fitted"
	echo '```'
	echo
	echo "## Runs"
	echo
	cat "$out.tmp"
} >"$out"
rm -f "$out.tmp"
echo "sim_report.sh: wrote $out"
