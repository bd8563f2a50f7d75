#!/bin/sh
# End-to-end checks of `colloc top` against a real collocd on a temporary
# socket with two simulated 8 GiB GPUs. The live screen runs in a detached
# tmux session (a real terminal, 120x40): the test reads it with
# capture-pane and types with send-keys. Checked: the GPUs, the jobs on them
# and a memory figure appear and refresh; 'a', a resize, 'q' and Ctrl-C;
# "collocd unreachable" while the daemon is away and recovery when it is
# back; --once and the non-terminal fallback; exit statuses 2 and 3.
# Each screen writes its stderr and exit status to files, so that a
# sanitizer report at exit (the build under test is ASan) fails the test.
#
# Usage: test_top.sh PATH/TO/colloc PATH/TO/collocd PATH/TO/colloc-simjob
# Exits 77 (CTest: skipped) without tmux. Prints "N passed, M failed"; exits
# non-zero on any failure. Every wait is bounded; the tmux server, the jobs
# and the daemon are stopped on exit.
set -u
colloc=$1
collocd=$2
simjob=$3
# shellcheck source=SCRIPTDIR/../lib.sh
. "$(dirname "$0")/../lib.sh"

if ! command -v tmux >/dev/null 2>&1; then
	echo "SKIP: tmux not found"
	exit 77
fi

tmpdir colloc-top
sock=$T/s.sock
srv=colloc-test-$$
ids=
unset COLLOC_SOCKET CUDA_VISIBLE_DEVICES COLLOC_SIM_STATE TMUX

tm() { tmux -L "$srv" "$@"; }

# At exit, before the daemon stops: no more screens, and the jobs (which
# outlive a stopped daemon under their supervisors) cancelled and ended.
end_screens_and_jobs() {
	tm kill-server 2>/dev/null
	[ -n "$ids" ] || return 0
	# shellcheck disable=SC2086
	bounded 10 "$colloc" --socket "$sock" cancel $ids >/dev/null 2>&1
	# shellcheck disable=SC2086
	bounded 20 "$colloc" --socket "$sock" wait --timeout 15s $ids >/dev/null 2>&1
}
on_exit=end_screens_and_jobs

# has FILE STRING...: FILE holds every STRING (fixed strings).
has() {
	f=$1
	shift
	for s in "$@"; do
		grep -qF -- "$s" "$f" || return 1
	done
}

# screen NAME ARGS...: `colloc top ARGS` in a new 120x40 tmux session NAME;
# its stderr goes to $T/NAME.err and its exit status to $T/NAME.rc.
screen() {
	name=$1
	shift
	{
		echo '#!/bin/sh'
		# Ctrl-C reaches the whole foreground group: this shell must
		# outlive colloc to write its status (colloc itself gets the
		# default disposition, as under any shell).
		echo 'trap : INT'
		echo '"$@" 2>"$0.err"'
		echo 'echo $? >"$0.rc"'
	} >"$T/$name"
	rm -f "$T/$name.rc" "$T/$name.err"
	tm new-session -d -s "$name" -x 120 -y 40 sh "$T/$name" "$colloc" "$@"
}

# pane NAME: the session's screen now, in $T/pane.
pane() { tm capture-pane -p -t "=$1:" >"$T/pane" 2>/dev/null; }

# wait_pane NAME STRING...: wait (at most ~10 s) until the screen shows every
# STRING.
wait_pane() {
	name=$1
	shift
	i=0
	while [ "$i" -lt 100 ]; do
		pane "$name" && has "$T/pane" "$@" && return 0
		sleep 0.1
		i=$((i + 1))
	done
	return 1
}

# wait_gone NAME: wait (at most ~5 s) until session NAME has ended.
wait_gone() {
	i=0
	while tm has-session -t "=$1:" 2>/dev/null; do
		[ "$i" -ge 50 ] && return 1
		sleep 0.1
		i=$((i + 1))
	done
}

# ended NAME STATUS WHAT: session NAME ends, its colloc exited with STATUS
# and wrote nothing to stderr (no sanitizer report, no error).
ended() {
	if ! wait_gone "$1"; then
		bad "$3: the screen did not end within 5 s"
		return
	fi
	is "$(cat "$T/$1.rc" 2>/dev/null)" "$2" "$3: exit status"
	if [ -s "$T/$1.err" ]; then
		bad "$3: stderr is not empty:"
		sed 's/^/  | /' "$T/$1.err" | head -20
	else
		ok
	fi
}

show_pane() { sed 's/^/  | /' "$T/pane" | head -20; }

# --- without a daemon -----------------------------------------------------------
expect help 0 "usage: colloc top" "$colloc" top --help
expect help-main 0 " top " "$colloc" --help
expect usage-option 2 "unknown or incomplete option '--frob'" "$colloc" top --frob
expect usage-interval 2 "--interval wants a duration" "$colloc" top --interval 5ms
expect usage-interval-word 2 "--interval wants a duration" "$colloc" top --interval soon
expect usage-arg 2 "unexpected argument 'x'" "$colloc" top x
unreach="colloc: error: cannot reach collocd at $T/none.sock: .*\(is collocd running\? set --socket or COLLOC_SOCKET\)"
expect unreachable-once 3 "$unreach" "$colloc" top --once --socket "$T/none.sock"
expect unreachable-pipe 3 "$unreach" "$colloc" --socket "$T/none.sock" top
# In a terminal too, and before drawing anything.
screen unreach --socket "$T/none.sock" top
ended_unreach() {
	if ! wait_gone unreach; then
		bad "unreachable-tty: the screen did not end within 5 s"
		return
	fi
	is "$(cat "$T/unreach.rc" 2>/dev/null)" 3 "unreachable-tty: exit status"
	if grep -Eq -- "$unreach" "$T/unreach.err"; then ok; else
		bad "unreachable-tty: no 'cannot reach collocd' message"
		sed 's/^/  | /' "$T/unreach.err" | head -5
	fi
}
ended_unreach

# --- the daemon and two jobs ------------------------------------------------------
start s 2x8GiB || exit 1
for n in a b; do
	id=$(bounded 30 "$colloc" --socket "$sock" submit --name "top-$n" --mem 2GiB --util 30 -- \
		"$simjob" --mem 2GiB --duration 20s --util 30 2>"$T/err" | submitted_id)
	if [ -z "$id" ]; then
		bad "submit top-$n: $(cat "$T/err")"
		exit 1
	fi
	ids="$ids $id"
done
id_a=${ids# }
id_a=${id_a%% *}
id_b=${ids##* }
for id in $ids; do
	i=0
	until bounded 10 "$colloc" --socket "$sock" show --json "$id" 2>/dev/null |
		grep -q '"state": *"running"'; do
		i=$((i + 1))
		if [ "$i" -ge 100 ]; then
			bad "job $id did not start within 10 s"
			exit 1
		fi
		sleep 0.1
	done
done
# The GPUs' UUID prefixes, as the screen shows them.
uuids=$(bounded 10 "$colloc" --socket "$sock" gpus --json | tr ',' '\n' |
	sed -n 's/.*"uuid": *"\([^"]*\)".*/\1/p' | cut -c1-12)
u0=$(echo "$uuids" | sed -n 1p)
u1=$(echo "$uuids" | sed -n 2p)
is "$(echo "$uuids" | wc -l | tr -d ' ')" 2 "gpus --json: two UUIDs"

# --- --once and the non-terminal fallback ------------------------------------------
once_has() {
	name=$1
	shift
	bounded 30 "$colloc" --socket "$sock" top "$@" >"$T/once" 2>"$T/err" </dev/null
	st=$?
	if [ "$st" != 0 ]; then
		bad "$name: exit $st: $(cat "$T/err")"
	elif [ -s "$T/err" ]; then
		bad "$name: stderr: $(head -c 300 "$T/err")"
	elif ! has "$T/once" "$u0" "$u1" "top-a" "top-b" "job $id_a " "job $id_b " \
		"/8.00 GiB" "need 2.00 GiB" "QUEUED 0" "backend sim"; then
		bad "$name: the frame lacks a GPU, a job or a memory figure:"
		sed 's/^/  | /' "$T/once" | head -20
	else
		ok
	fi
}
once_has once --once
once_has once-not-a-tty
once_has once-interval --once --interval 2s
if grep -q "everyone's jobs" "$T/once"; then admin=yes; else admin=no; fi
# A GPU line: index, UUID prefix, a bar, used/total, reserved, util, SM
# activity ("-" where the backend does not measure it, never a made-up 0%),
# power.
if grep -Eq "^ +[01] SIM-[0-9a-f]{8} .*\[[#=.]+\] +[0-9.]+ [KMG]?i?B/8.00 GiB +[0-9.]+ [KMG]?i?B +[0-9]+% +(-|[0-9]+%) +[0-9]+ W$" "$T/once"; then
	ok
else
	bad "once: GPU line layout:"
	sed 's/^/  | /' "$T/once" | head -8
fi
if [ "$admin" = yes ]; then
	expect once-all 0 "everyone's jobs" "$colloc" --socket "$sock" top --once --all
else
	expect once-all-refused 1 "colloc: error: top: " "$colloc" --socket "$sock" top --once --all
fi

# --- the live screen -------------------------------------------------------------
screen live --socket "$sock" top --interval 200ms
if wait_pane live "$u0" "$u1" "top-a" "top-b" "job $id_a " "job $id_b " "/8.00 GiB" \
	"q quit"; then
	ok
else
	bad "live: the screen did not show both GPUs, both jobs and memory within 10 s:"
	show_pane
fi
# It refreshes: the clock (and the jobs' running time) move on.
pane live
cp "$T/pane" "$T/pane1"
i=0
while [ "$i" -lt 30 ]; do
	sleep 0.1
	pane live
	cmp -s "$T/pane" "$T/pane1" || break
	i=$((i + 1))
done
if cmp -s "$T/pane" "$T/pane1"; then bad "live: the screen did not change in 3 s"; else ok; fi

# 'a': an administrator switches to their own jobs; anyone else is told.
tm send-keys -t "=live:" a
if [ "$admin" = yes ]; then want="(your jobs)"; else want="for administrators only"; fi
if wait_pane live "$want"; then ok; else
	bad "live: 'a' did not show '$want'"
	show_pane
fi
# 'r' refreshes at once (and must not break anything).
tm send-keys -t "=live:" r
# A terminal too small for anything: cut, no crash; then back.
tm resize-window -t "=live:" -x 20 -y 3 2>/dev/null
if wait_pane live "colloc top"; then ok; else
	bad "live: nothing drawn at 20x3"
	show_pane
fi
tm resize-window -t "=live:" -x 120 -y 40 2>/dev/null
if wait_pane live "$u0" "$u1" "top-a"; then ok; else
	bad "live: not redrawn after growing back to 120x40"
	show_pane
fi
tm send-keys -t "=live:" q
ended live 0 "live: q"

# Ctrl-C quits as cleanly.
screen intr --socket "$sock" top --interval 200ms
if wait_pane intr "$u0" "top-a"; then ok; else
	bad "intr: nothing drawn"
	show_pane
fi
tm send-keys -t "=intr:" C-c
ended intr 0 "intr: Ctrl-C"

# --- collocd goes away and comes back --------------------------------------------
# shellcheck disable=SC2086
bounded 10 "$colloc" --socket "$sock" cancel $ids >/dev/null 2>&1
# shellcheck disable=SC2086
bounded 20 "$colloc" --socket "$sock" wait --timeout 15s $ids >/dev/null 2>&1
ids=
screen away --socket "$sock" top --interval 200ms
if wait_pane away "$u0" "$u1" "QUEUED 0"; then ok; else
	bad "away: nothing drawn"
	show_pane
fi
stop s
if wait_pane away "collocd unreachable: $sock"; then ok; else
	bad "away: no 'collocd unreachable' in the header"
	show_pane
fi
sleep 0.5
if tm has-session -t "=away:" 2>/dev/null; then ok; else bad "away: top exited without the daemon"; fi
start s 2x8GiB || exit 1
i=0
while [ "$i" -lt 100 ]; do
	pane away && has "$T/pane" "$u0" "$u1" && ! grep -q "unreachable" "$T/pane" && break
	sleep 0.1
	i=$((i + 1))
done
if [ "$i" -lt 100 ]; then ok; else
	bad "away: did not recover after collocd came back"
	show_pane
fi
tm send-keys -t "=away:" q
ended away 0 "away: q"

summary
