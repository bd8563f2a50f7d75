#!/bin/sh
# Accuracy and speed of `colloc estimate` (see tools/bench_estimate.c):
#  1. every measured run of data/measurements/xmem_dev.csv, colloc's error next to the published
#     estimators' on the same rows, and its transformer rows again from their config.json;
#  2. published fine-tuning figures (data/reference/published_finetune.csv and .md), colloc's
#     error next to a bytes-per-parameter rule of thumb computed in the same run;
#  3. ResNet-50 at batch 256 estimated in-process, next to one CPU training iteration of ResNet-50
#     under torch.profiler (the xMem approach), measured now on this machine, as a ratio.
#
#   tools/bench_estimate.sh [--rows] [--torch-batch N]   (default N = 32; 256 takes minutes)
set -eu
cd "$(dirname "$0")/.."
tb=32
args=""
while [ $# -gt 0 ]; do
	case "$1" in
	--rows) args="--rows" ;;
	--torch-batch) tb=$2; shift ;;
	*) echo "bench_estimate.sh: unknown option '$1'" >&2; exit 2 ;;
	esac
	shift
done
bin=""
for b in build/bench_estimate build-asan/bench_estimate build-debug/bench_estimate; do
	[ -z "$bin" ] && [ -x "$b" ] && bin=$b
done
[ -n "$bin" ] || { echo "bench_estimate.sh: build first (cmake --preset release)" >&2; exit 2; }
out=$("$bin" $args)
echo "$out"
ours=$(echo "$out" | sed -n 's/^speed: .*in-process: \([0-9.]*\) ms.*/\1/p')
py=${PYTHON:-/usr/bin/python3}
if "$py" -c "import torch, torchvision" 2>/dev/null; then
	theirs=$("$py" tools/bench_train_step.py --model resnet50 --batch "$tb")
	echo "one CPU training iteration of ResNet-50 at batch $tb under torch.profiler: $theirs ms"
	awk -v a="$theirs" -v b="$ours" -v tb="$tb" 'BEGIN {
		printf "colloc (batch 256) is %.0fx faster than one profiled iteration at batch %d\n", a / b, tb }'
else
	echo "torch not installed: skipping the torch.profiler comparison (scripts/install-deps.sh --tools)"
fi
