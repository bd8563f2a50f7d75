#!/bin/sh
# Accuracy and speed of the step-time / utilization predictor (tools/bench_perf.c): NeuSight's
# transformer rows next to the roofline, Habitat, NeuSight and Li predictions published with
# them; Pollux's and Gavel's CNN/BERT step times and GPUMemNet's MLP utilization next to a
# constant-median baseline; the speed of one prediction. Also the kernel fit it rests on
# (build/fit_perf, with the plain roofline's error on the same kernels).
#
#   tools/bench_perf.sh [SHARED_DATA_DIR]     (default ../shared/data)
set -eu
cd "$(dirname "$0")/.."
shared=${1:-../shared/data}
bindir=""
for b in build build-asan build-debug; do
	[ -z "$bindir" ] && [ -x "$b/tests/bench_perf" ] && bindir=$b
done
[ -n "$bindir" ] || { echo "bench_perf.sh: build first (cmake --preset release)" >&2; exit 2; }
"$bindir/fit_perf" --data "$shared"
echo
"$bindir/tests/bench_perf" --data data --shared "$shared"
