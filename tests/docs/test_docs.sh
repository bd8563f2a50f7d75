#!/bin/sh
# tests/docs/test_docs.sh COLLOC COLLOCD SIMJOB SOURCE_DIR — the examples of
# README.md and docs/*.md, run. Each command block marked
# `<!-- test: run ... -->` (the marker's syntax: tests/docs/docblocks.py) is
# run in a temporary directory of its own against the built commands, and
# the key lines of its output compared with what the page shows; a block
# that asks for one gets collocd on simulated GPUs on a socket of its own
# (COLLOC_SOCKET). Also checked: every sh/console block of README.md is
# marked (run, or not run with the reason), and every relative link of the
# pages names a file of the repository.
#
# A block's directory holds: `build` (the directory of the built commands,
# for README's `build/colloc`), `data` (the repository's data/, for
# `hf:data/hf/...`), tests/data (the bundled trace excerpts), the small stand-ins of tests/docs/fixtures (train.py,
# run.sh, report.py) and an empty XDG_RUNTIME_DIR, so that no block reaches
# a collocd of the machine by default.
# Prints "N passed, M failed"; exits non-zero on any failure.
set -u
# abs PATH: PATH made absolute (the blocks run elsewhere).
abs() { echo "$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"; }
colloc=$(abs "$1")
collocd=$(abs "$2")
simjob=$(abs "$3")
src=$(cd "$4" && pwd)
# shellcheck source=SCRIPTDIR/../lib.sh
. "$src/tests/lib.sh"
tmpdir colloc-docs
py=/usr/bin/python3
[ -x "$py" ] || py=python3
unset COLLOC_SOCKET COLLOC_SIM_STATE CUDA_VISIBLE_DEVICES COLLOC_JOB_ID COLLOC_ARRAY_INDEX

# The built commands under their installed names, first on PATH.
mkdir "$T/bin"
ln -s "$colloc" "$T/bin/colloc"
ln -s "$collocd" "$T/bin/collocd"
ln -s "$simjob" "$T/bin/colloc-simjob"
PATH=$T/bin:$PATH
export PATH

pages="README.md docs/cli-jobs.md docs/collocd.md docs/transformers.md"
if "$py" "$src/tests/docs/docblocks.py" selftest; then ok; else bad "docblocks.py selftest"; fi
if (cd "$src" && "$py" tests/docs/docblocks.py links . README.md docs/*.md); then
	ok
else
	bad "relative links"
fi
mkdir "$T/blocks"
# shellcheck disable=SC2086 # the list of pages
if ! (cd "$src" && "$py" tests/docs/docblocks.py extract "$T/blocks" $pages); then
	bad "the pages' test markers"
	summary
	exit 1
fi

# finish_jobs NAME: cancel what still runs or waits on daemon NAME (a job
# would outlive its daemon), then wait for it to end.
finish_jobs() {
	left=$(c "$1" queue --all --json 2>/dev/null | "$py" -c '
import json, sys
print(" ".join(str(j["id"]) for j in json.load(sys.stdin)["jobs"]
               if j["state"] in ("queued", "running")))' 2>/dev/null)
	[ -n "$left" ] || return 0
	# shellcheck disable=SC2086
	c "$1" cancel $left >/dev/null 2>&1
	# shellcheck disable=SC2086
	c "$1" wait --timeout 15s $left >/dev/null 2>&1
}

n=0
while IFS='|' read -r dir where daemon <&3; do
	n=$((n + 1))
	w=$T/w$n
	mkdir "$w" "$w/run"
	ln -s "$T/bin" "$w/build"
	ln -s "$src/data" "$w/data"
	mkdir "$w/tests"
	ln -s "$src/tests/data" "$w/tests/data"
	cp -p "$src"/tests/docs/fixtures/* "$w/"
	name=
	if [ -n "$daemon" ]; then
		name=d$n
		# shellcheck disable=SC2086 # the spec, then collocd's options
		if ! start "$name" $daemon </dev/null; then
			bad "$where: collocd did not start"
			continue
		fi
	fi
	if (
		XDG_RUNTIME_DIR=$w/run
		export XDG_RUNTIME_DIR
		if [ -n "$name" ]; then
			COLLOC_SOCKET=$T/$name.sock
			export COLLOC_SOCKET
		fi
		"$py" "$src/tests/docs/docblocks.py" run "$dir" "$w"
	) </dev/null; then
		ok
	else
		bad "$where: its example (above)"
	fi
	if [ -n "$name" ]; then
		finish_jobs "$name"
		stop "$name"
	fi
done 3<"$T/blocks/index"
check "blocks-run" test "$n" -gt 10
summary
