#!/bin/sh
# Build colloc with ASan+UBSan and warnings as errors, then run every test,
# the static checks and the fuzz corpus replays. This is what the README's
# test command and CI (.ci/run) run. Ends with CTest's summary line.
#
#   scripts/test.sh [--no-install] [--no-lint]
set -eu
cd "$(dirname "$0")/.."

install=1
lint=1
for arg in "$@"; do
	case "$arg" in
	--no-install) install=0 ;;
	--no-lint) lint=0 ;;
	*) echo "test.sh: unknown option '$arg'" >&2; exit 2 ;;
	esac
done

[ "$install" = 1 ] && scripts/install-deps.sh

jobs=$(nproc 2>/dev/null || echo 2)
cmake --preset asan
cmake --build --preset asan -j "$jobs"

if [ "$lint" = 1 ]; then
	scripts/check-format.sh
	scripts/check-banned.sh
	scripts/lint.sh build-asan
fi

# The estimator's benchmark prints its table (accuracy against measured GPU
# runs next to published estimators, and speed); it never fails on numbers.
build-asan/bench_estimate --data data || echo "test.sh: bench_estimate could not run" >&2
# The step-time / utilization benchmark likewise (skips data it cannot find).
build-asan/tests/bench_perf --data data --shared ../shared/data ||
	echo "test.sh: bench_perf could not run" >&2

ctest --preset asan -j "$jobs"
