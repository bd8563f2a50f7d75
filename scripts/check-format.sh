#!/bin/sh
# Check (or with --fix, apply) .clang-format on every C source and header.
set -eu
cd "$(dirname "$0")/.."
files=$(git ls-files '*.c' '*.h' 2>/dev/null || find src include tests -name '*.[ch]')
if [ "${1:-}" = "--fix" ]; then
	# shellcheck disable=SC2086
	clang-format -i $files
	exit 0
fi
# shellcheck disable=SC2086
if ! clang-format --dry-run --Werror $files; then
	echo "check-format: run scripts/check-format.sh --fix" >&2
	exit 1
fi
echo "check-format: ok ($(echo "$files" | wc -w) files)"
