#!/bin/sh
# Static analysis: cppcheck and clang-tidy over the compile database of a
# configured build directory (default build-asan). Fails on any finding.
set -eu
cd "$(dirname "$0")/.."
bdir=${1:-build-asan}
if [ ! -f "$bdir/compile_commands.json" ]; then
	echo "lint: $bdir/compile_commands.json missing; configure first" >&2
	exit 2
fi
srcs=$(git ls-files 'src/*.c' 'integrations/*.c' 2>/dev/null || find src integrations -name '*.c')

cppcheck --quiet --error-exitcode=1 --std=c11 --inline-suppr \
	--enable=warning,portability,performance \
	--suppress=missingIncludeSystem \
	-I include -I src -I "$bdir/gen" $srcs

log=$(mktemp)
trap 'rm -f "$log"' EXIT
# shellcheck disable=SC2086
if ! clang-tidy --quiet -p "$bdir" --extra-arg=-Wno-unknown-warning-option --warnings-as-errors='*' $srcs >"$log" 2>&1; then
	grep -v "warnings generated" "$log" >&2 || true
	echo "lint: clang-tidy found problems" >&2
	exit 1
fi
echo "lint: ok"
