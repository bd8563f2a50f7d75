# shellcheck shell=sh disable=SC2154 # $colloc and $collocd are the script's
# tests/lib.sh — what the shell tests of collocd and its CLI share: pass and
# fail counting, checks, a temporary directory removed on exit, and collocd
# daemons started on it and stopped again. POSIX sh (the tests run under
# dash). Not a test framework: each script still says what it checks.
#
# Sourced after the script has set $colloc and $collocd (and `set -u`):
#   . "$(dirname "$0")/../lib.sh"
# It defines ok, bad, check, is, expect, bounded, summary, tmpdir,
# daemon_start, start, stop, c, submitted_id and submit, and the variables pass,
# fail, T (set by tmpdir), dpid (by daemon_start) and on_exit. Functions
# here keep their scratch variables apart (lib_*) so as not to clobber the
# script's.
#
# Every wait is bounded; a daemon still running at exit is stopped, and
# anything left running whose command line names $T (supervisors, jobs) is
# killed.

pass=0
fail=0
T=
dpid=
# A command the exit cleanup runs first, while the daemons still answer
# (e.g. cancelling jobs that would outlive them).
on_exit=
lib_daemons=

ok() { pass=$((pass + 1)); }

# bad MESSAGE...: count a failure and print "FAIL MESSAGE".
bad() {
	echo "FAIL $*"
	fail=$((fail + 1))
}

# check NAME CMD...: pass when CMD succeeds.
check() {
	lib_check=$1
	shift
	if "$@"; then ok; else bad "$lib_check: $*"; fi
}

# is GOT WANT WHAT: pass when GOT = WANT, else fail saying WHAT.
is() {
	if [ "$1" = "$2" ]; then ok; else bad "$3 (got '$1', expected '$2')"; fi
}

# bounded SECS CMD...: run CMD, killing it after SECS seconds.
bounded() {
	lib_secs=$1
	shift
	"$@" &
	lib_cpid=$!
	# The watchdog takes its sleep with it when it is stopped early.
	(
		sleep "$lib_secs" &
		lib_spid=$!
		trap 'kill "$lib_spid"; exit 0' TERM
		wait "$lib_spid" && kill "$lib_cpid"
	) >/dev/null 2>&1 &
	lib_kpid=$!
	wait "$lib_cpid"
	lib_st=$?
	kill "$lib_kpid" 2>/dev/null
	wait "$lib_kpid" 2>/dev/null
	return "$lib_st"
}

# expect NAME STATUS PATTERN CMD...: run CMD (at most 30 s, stdin from
# /dev/null), check its exit status and that stdout+stderr match the
# extended regex PATTERN. The output is left in $T/out.
expect() {
	lib_expect=$1 lib_want=$2 lib_pat=$3
	shift 3
	bounded 30 "$@" >"$T/out" 2>&1 </dev/null
	lib_got=$?
	if [ "$lib_got" != "$lib_want" ]; then
		bad "$lib_expect: exit $lib_got, expected $lib_want"
		sed 's/^/  | /' "$T/out" | head -5
	elif ! grep -Eq -- "$lib_pat" "$T/out"; then
		bad "$lib_expect: output does not match /$lib_pat/"
		sed 's/^/  | /' "$T/out" | head -5
	else
		ok
	fi
}

# summary: print "N passed, M failed"; succeeds only when none failed. The
# last command of a script, so that it is the script's exit status.
summary() {
	echo "$pass passed, $fail failed"
	[ "$fail" -eq 0 ]
}

# tmpdir PREFIX: make T a new directory /tmp/PREFIX.XXXXXX (short: a socket
# path has at most 107 bytes) and clean up on exit: $on_exit, then the
# daemons, then whatever still runs from $T, then $T itself. INT and TERM
# exit with 130 through the same cleanup.
tmpdir() {
	T=$(mktemp -d "/tmp/$1.XXXXXX") || exit 1
	trap lib_cleanup EXIT
	trap 'exit 130' INT TERM
}

lib_cleanup() {
	[ -z "$on_exit" ] || $on_exit
	for lib_d in $lib_daemons; do
		stop "$lib_d"
	done
	pkill -9 -f "$T" 2>/dev/null
	rm -rf "$T"
}

# daemon_start NAME ARGS...: run "$collocd" ARGS... in the background on
# socket $T/NAME.sock, database $T/NAME.db and state directory $T/NAME,
# sampling every 200 ms, its output appended to $T/NAME.log and its pid in
# $dpid and $T/NAME.pid; then wait (at most 30 s: ASan on a loaded 2-core
# machine, recovering a killed daemon's jobs) until its API answers.
# Returns 1 after a FAIL with the log's tail when it does not answer.
daemon_start() {
	lib_dname=$1
	shift
	"$collocd" --socket "$T/$lib_dname.sock" --db "$T/$lib_dname.db" \
		--state-dir "$T/$lib_dname" --set sample_interval=200ms "$@" \
		>>"$T/$lib_dname.log" 2>&1 &
	dpid=$!
	echo "$dpid" >"$T/$lib_dname.pid"
	case " $lib_daemons " in
	*" $lib_dname "*) ;;
	*) lib_daemons="$lib_daemons $lib_dname" ;;
	esac
	lib_i=0
	until "$colloc" --socket "$T/$lib_dname.sock" queue >/dev/null 2>&1; do
		lib_i=$((lib_i + 1))
		if ! kill -0 "$dpid" 2>/dev/null; then
			wait "$dpid"
			bad "start-$lib_dname: collocd exited ($?) before it answered"
			sed 's/^/  | /' "$T/$lib_dname.log" | tail -10
			return 1
		fi
		if [ "$lib_i" -gt 300 ]; then
			bad "start-$lib_dname: collocd did not answer within 30 s"
			sed 's/^/  | /' "$T/$lib_dname.log" | tail -10
			return 1
		fi
		sleep 0.1
	done
}

# start NAME SPEC [ARGS...]: daemon_start on simulated GPUs SPEC ("2x8GiB"),
# their state in $T/NAME.state.
start() {
	lib_sname=$1 lib_spec=$2
	shift 2
	daemon_start "$lib_sname" --gpus "sim:$lib_spec,path=$T/$lib_sname.state" "$@"
}

# stop NAME: SIGTERM to daemon NAME, SIGKILL when it has not ended within
# 10 s. Returns its exit status (0 when it was not running).
stop() {
	lib_pid=$(cat "$T/$1.pid" 2>/dev/null) || return 0
	rm -f "$T/$1.pid"
	kill "$lib_pid" 2>/dev/null
	lib_i=0
	while kill -0 "$lib_pid" 2>/dev/null && [ "$lib_i" -lt 100 ]; do
		sleep 0.1
		lib_i=$((lib_i + 1))
	done
	kill -9 "$lib_pid" 2>/dev/null
	wait "$lib_pid" 2>/dev/null
}

# c NAME ARGS...: the CLI against daemon NAME.
c() {
	lib_cname=$1
	shift
	"$colloc" --socket "$T/$lib_cname.sock" "$@"
}

# submitted_id: the job id in `colloc submit`'s "submitted job ID" on stdin.
submitted_id() { sed -n 's/^submitted job \([0-9][0-9]*\)$/\1/p'; }

# submit NAME ARGS...: submit to daemon NAME and print the new job's id
# (nothing when it was refused).
submit() {
	lib_subname=$1
	shift
	c "$lib_subname" submit "$@" | submitted_id
}
