#!/bin/sh
# Refuse functions that invite overflows or hide errors (after curl's
# checksrc): unbounded string copies, unchecked conversions, shell escapes.
set -eu
cd "$(dirname "$0")/.."
banned='\b(sprintf|vsprintf|strcpy|strcat|strncat|gets|atoi|atol|atoll|atof|system|popen|strtok|tmpnam|mktemp|alloca)[[:space:]]*\('
files=$(git ls-files 'src/*.c' 'src/*.h' 'include/*.h' 'tests/*.c' 'tests/*.h' 2>/dev/null ||
	find src include tests -name '*.[ch]')
# shellcheck disable=SC2086
if grep -nE "$banned" $files; then
	echo "check-banned: use snprintf, strtoll/colloc_parse_u64, or a bounded copy" >&2
	exit 1
fi
echo "check-banned: ok"
