#!/bin/sh
# Wall time of `colloc inspect MODEL --batch N --json` (process start-up
# included) against `python3 -c "import onnx; onnx.load(MODEL)"` on the same
# file, measured in the same run: median of RUNS runs each, and the ratio.
#
#   tools/bench_inspect.sh [MODEL] [RUNS]      (default resnet50, 21 runs)
#
# Needs a built colloc (build/ or build-asan/, or $COLLOC) and, for the
# baseline, Debian's python3-onnx. Target (issue 2): colloc under 20 ms.
set -eu
cd "$(dirname "$0")/.."
model=${1:-resnet50}
runs=${2:-21}
colloc=${COLLOC:-}
for c in build/colloc build-release/colloc build-debug/colloc build-asan/colloc; do
	[ -z "$colloc" ] && [ -x "$c" ] && colloc=$c
done
[ -n "$colloc" ] || { echo "bench_inspect: build colloc first (cmake --preset release)" >&2; exit 2; }
py=${PYTHON:-/usr/bin/python3}
file=$model
[ -f "$file" ] || file=data/zoo/$model.onnx
[ -f "$file" ] || { echo "bench_inspect: no model $model" >&2; exit 2; }

# median_ms CMD... : run CMD $runs times, print the median wall time in ms.
median_ms() {
	i=0
	: >"$tmp"
	while [ "$i" -lt "$runs" ]; do
		t0=$(date +%s%N)
		"$@" >/dev/null 2>&1
		t1=$(date +%s%N)
		echo $(((t1 - t0) / 1000)) >>"$tmp"
		i=$((i + 1))
	done
	sort -n "$tmp" | awk '{a[NR]=$1} END {printf "%.2f", a[int((NR+1)/2)]/1000}'
}
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT

"$colloc" inspect "$file" --batch 1 --json >/dev/null
ours=$(median_ms "$colloc" inspect "$file" --batch 1 --json)
if "$py" -c "import onnx" 2>/dev/null; then
	base=$(median_ms "$py" -c "import onnx; onnx.load('$file', load_external_data=False)")
	ratio=$(awk -v a="$base" -v b="$ours" 'BEGIN {printf "%.1f", a / b}')
else
	base="n/a (python3-onnx not installed)"
	ratio="n/a"
fi
echo "model:                         $file ($runs runs each, median wall time)"
echo "colloc inspect --json:         $ours ms   ($colloc; target < 20 ms)"
echo "python3 onnx.load (no infer):  $base ms"
echo "speed-up:                      ${ratio}x"
