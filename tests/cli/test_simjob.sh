#!/bin/sh
# End-to-end checks of colloc-simjob on simulated GPUs: two jobs that do not
# fit on one 1 GiB GPU (one dies with PyTorch's OOM message and exit 1), two
# that fit, a ramp that runs out of memory half way, SIGTERM and SIGKILL
# giving the memory back, and usage errors. Usage: test_simjob.sh
# PATH/TO/colloc-simjob. Prints "N passed, M failed"; exits non-zero on any
# failure. Every wait is bounded.
set -u
job=$1
pass=0
fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
COLLOC_SIM_STATE=$tmp/gpus.state
export COLLOC_SIM_STATE
unset CUDA_VISIBLE_DEVICES

ok() { pass=$((pass + 1)); }
# is GOT WANT WHAT: pass when GOT = WANT, else fail saying WHAT.
is() {
	if [ "$1" = "$2" ]; then ok; else bad "$3 (got '$1', expected '$2')"; fi
}
bad() {
	echo "FAIL $*"
	fail=$((fail + 1))
}

# used_bytes: memory in use on simulated GPU 0.
used_bytes() {
	"$job" --list | awk '$1 == 0 { print $6 }'
}

# wait_used MIN: wait (at most ~5 s) until GPU 0 has at least MIN bytes used.
wait_used() {
	i=0
	while [ "$i" -lt 100 ]; do
		u=$(used_bytes)
		[ -n "$u" ] && [ "$u" -ge "$1" ] && return 0
		sleep 0.05
		i=$((i + 1))
	done
	return 1
}

oom_re='^torch\.OutOfMemoryError: CUDA out of memory\. Tried to allocate [0-9.]+ (bytes|KiB|MiB|GiB)\. GPU 0 has a total capacity of [0-9.]+ (MiB|GiB) of which [0-9.]+ (bytes|KiB|MiB|GiB) is free\.$'

uuid=$("$job" --setup sim:1x1GiB)
case $uuid in
SIM-????????-????-????-????-????????????) ok ;;
*) bad "setup printed '$uuid', not one SIM- UUID" ;;
esac
CUDA_VISIBLE_DEVICES=$uuid
export CUDA_VISIBLE_DEVICES

# --- two 600 MiB jobs on 1 GiB, started together: exactly one fails -------------
"$job" --mem 600MiB --duration 1500ms >"$tmp/a.out" 2>&1 &
pa=$!
"$job" --mem 600MiB --duration 1500ms >"$tmp/b.out" 2>&1 &
pb=$!
wait "$pa"
ra=$?
wait "$pb"
rb=$?
if [ "$ra$rb" = "01" ]; then
	loser=$tmp/b.out
elif [ "$ra$rb" = "10" ]; then
	loser=$tmp/a.out
else
	loser=
	bad "together: exits $ra and $rb, expected one 0 and one 1"
	sed 's/^/  | /' "$tmp/a.out" "$tmp/b.out"
fi
if [ -n "$loser" ]; then
	if grep -Eq "$oom_re" "$loser"; then ok; else
		bad "together: no OOM message"
		sed 's/^/  | /' "$loser"
	fi
fi
is "$(used_bytes)" 0 "together: memory not given back"

# --- the same, one after the other: the exact message ---------------------------
"$job" --mem 600MiB --duration 3s >"$tmp/a.out" 2>&1 &
pa=$!
if wait_used 629145600; then ok; else bad "first job never allocated"; fi
"$job" --mem 600MiB --duration 300ms >"$tmp/b.out" 2>&1
rb=$?
is "$rb" 1 "second job"
want='torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 600.00 MiB. GPU 0 has a total capacity of 1024.00 MiB of which 424.00 MiB is free.'
if [ "$(cat "$tmp/b.out")" = "$want" ]; then ok; else
	bad "second job's message"
	sed 's/^/  | /' "$tmp/b.out"
fi
kill -TERM "$pa"
wait "$pa"
ra=$?
is "$ra" 143 "SIGTERM"
is "$(used_bytes)" 0 "SIGTERM: memory not given back"

# --- two that fit -----------------------------------------------------------------
"$job" --mem 400MiB --duration 300ms --util 30 >"$tmp/a.out" 2>&1 &
pa=$!
"$job" --mem 400MiB --duration 300ms --util 30 --gpus "$uuid" >"$tmp/b.out" 2>&1 &
pb=$!
wait "$pa"
ra=$?
wait "$pb"
rb=$?
if [ "$ra$rb" = 00 ]; then ok; else
	bad "fit: exits $ra and $rb, expected 0 and 0"
	sed 's/^/  | /' "$tmp/a.out" "$tmp/b.out"
fi
is "$(used_bytes)" 0 "fit: memory not given back"

# --- a ramp that runs out half way: the step that failed is reported ---------------
"$job" --mem 500MiB --duration 3s >"$tmp/a.out" 2>&1 &
pa=$!
wait_used 524288000 || bad "holder never allocated"
"$job" --mem 800MiB --ramp 200ms --duration 100ms >"$tmp/b.out" 2>&1
rb=$?
is "$rb" 1 "ramp"
if grep -q "Tried to allocate 200.00 MiB. GPU 0 has a total capacity of 1024.00 MiB of which 124.00 MiB is free." "$tmp/b.out"; then ok; else
	bad "ramp: message"
	sed 's/^/  | /' "$tmp/b.out"
fi
# --- SIGKILL: the dead job's memory is freed by the next reader -------------------------
kill -KILL "$pa"
wait "$pa" 2>/dev/null
is "$(used_bytes)" 0 "SIGKILL: memory not freed"

# --- errors -------------------------------------------------------------------------
expect() {
	name=$1 want=$2 pat=$3
	shift 3
	"$@" >"$tmp/out" 2>&1
	got=$?
	if [ "$got" != "$want" ]; then
		bad "$name: exit $got, expected $want"
		sed 's/^/  | /' "$tmp/out" | head -5
	elif ! grep -Eq -- "$pat" "$tmp/out"; then
		bad "$name: output does not match /$pat/"
		sed 's/^/  | /' "$tmp/out" | head -5
	else
		ok
	fi
}
expect help 0 "--duration" "$job" --help
expect no-mem 2 "--mem SIZE is missing" "$job" --duration 1s
expect no-duration 2 "--duration DURATION is missing" "$job" --mem 1MiB
expect bad-duration 2 "--duration wants a duration" "$job" --mem 1MiB --duration 5parsecs
expect bad-util 2 "--util wants a percentage" "$job" --mem 1MiB --duration 0 --util 101
expect bad-gpu 1 "no simulated GPU 'SIM-nope'" "$job" --mem 1MiB --duration 0 --gpus SIM-nope
expect no-gpus 1 "No CUDA GPUs are available" env CUDA_VISIBLE_DEVICES= "$job" --mem 1MiB --duration 0
expect too-big 1 "$oom_re" "$job" --mem 2GiB --duration 0
expect index 0 "holding" "$job" --mem 1MiB --duration 0 --gpus 0
expect no-state 1 "no simulated GPUs here" "$job" --mem 1MiB --duration 0 --state "$tmp/none"
expect bad-setup 2 "'abc' is not a memory size" "$job" --setup sim:2xabc
printf 'garbage\n' >"$tmp/bad.state"
expect corrupt 1 "bad.state:1: not a colloc-simgpu state file" "$job" --list --state "$tmp/bad.state"

echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
