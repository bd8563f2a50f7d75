#!/bin/sh
# End-to-end checks of the job features of issue 16 against a real collocd
# on a temporary socket with two simulated 8 GiB GPUs: COLLOC_JOB_ID and
# COLLOC_ARRAY_INDEX in the job's environment, --time (killed, failed with
# the reason), --after ID[:ok|any] (waits, runs, or fails when it can never
# be met), hold/release, requeue (finished and running), update --mem and
# --priority, --array A-B%N (never more than N running), queue filters
# (--state PD, --user, --name, --since), history with measured peaks, the
# API's answers (400/409) behind them, retention at start, and the OOM
# give-up reasons (once "giving up"; no retry of an allocation larger than
# the GPU; their exact strings, sizes in one format: "13.5 GiB" for
# PyTorch's "13.50 GiB").
# Usage: test_job_features.sh PATH/TO/colloc PATH/TO/collocd PATH/TO/colloc-simjob
# Prints "N passed, M failed"; exits non-zero on any failure. Every wait is
# bounded and the daemon is stopped on exit.
set -u
colloc=$1
collocd=$2
simjob=$3
# shellcheck source=SCRIPTDIR/../lib.sh
. "$(dirname "$0")/../lib.sh"
tmpdir colloc-feat
sock=$T/s.sock
long_ids=
unset COLLOC_SOCKET CUDA_VISIBLE_DEVICES COLLOC_SIM_STATE COLLOC_JOB_ID COLLOC_ARRAY_INDEX

# Jobs outlive a stopped daemon (their supervisors keep them): cancel the
# long ones before it goes.
cancel_long() {
	[ -n "$long_ids" ] || return 0
	# shellcheck disable=SC2086
	"$colloc" --socket "$sock" cancel $long_ids >/dev/null 2>&1
	# shellcheck disable=SC2086
	"$colloc" --socket "$sock" wait --timeout 15s $long_ids >/dev/null 2>&1
}
on_exit=cancel_long

# jq_py EXPR: a Python expression on the JSON in $T/json (as j).
jq_py() {
	python3 -c "import json,sys; j=json.load(open(sys.argv[1])); print($1)" "$T/json"
}

# js NAME CMD...: CMD's stdout (JSON) into $T/json; pass when it exits 0.
js() {
	lib_js=$1
	shift
	if bounded 30 "$@" >"$T/json" 2>"$T/err"; then ok; else
		bad "$lib_js: exit $? ($(head -c 300 "$T/err"))"
	fi
}

# field ID EXPR: EXPR on job ID's JSON (show --json).
field() {
	bounded 30 "$colloc" show --json "$1" >"$T/json" 2>/dev/null && jq_py "$2"
}

# wait_field ID EXPR WANT: wait (at most ~15 s) until EXPR on job ID is WANT.
wait_field() {
	i=0
	while [ "$i" -lt 150 ]; do
		[ "$(field "$1" "$2")" = "$3" ] && return 0
		sleep 0.1
		i=$((i + 1))
	done
	return 1
}

sub() { bounded 30 "$colloc" submit "$@" 2>"$T/err" | submitted_id; }

# api METHOD PATH [BODY]: HTTP status of a raw API request; body in $T/api.
api() {
	if [ $# -gt 2 ]; then
		curl -s -o "$T/api" -w '%{http_code}' --unix-socket "$sock" -X "$1" \
			-H 'Content-Type: application/json' --data-binary "$3" "http://localhost$2"
	else
		curl -s -o "$T/api" -w '%{http_code}' --unix-socket "$sock" -X "$1" \
			"http://localhost$2"
	fi
}

# --- without a daemon -----------------------------------------------------------
for c in hold release requeue update history; do
	expect "help-$c" 0 "usage: colloc $c" "$colloc" "$c" --help
	expect "help-main-$c" 0 "^  $c " "$colloc" --help
done
expect help-submit-time 0 "--time DURATION" "$colloc" submit --help
expect help-submit-after 0 "--after ID\[:ok\|any\]" "$colloc" submit --help
expect help-submit-array 0 "COLLOC_ARRAY_INDEX" "$colloc" submit --help
expect help-submit-job-id 0 "COLLOC_JOB_ID" "$colloc" submit --help
expect help-queue-filters 0 "--since TIME" "$colloc" queue --help
expect help-history-peak 0 "PEAK .*largest GPU memory" "$colloc" history --help

expect usage-time-bare 2 "--time wants a duration" "$colloc" submit --time 10 /bin/true
expect usage-time-word 2 "--time wants a duration" "$colloc" submit --time soon /bin/true
expect usage-after 2 "--after wants ID, ID:ok or ID:any" "$colloc" submit --after 3:maybe /bin/true
expect usage-after-zero 2 "--after wants" "$colloc" submit --after 0 /bin/true
expect usage-array-order 2 "--array wants A-B" "$colloc" submit --array 5-2 /bin/true
expect usage-array-big 2 "--array wants A-B" "$colloc" submit --array 0-1000 /bin/true
expect usage-array-pct 2 "--array wants A-B" "$colloc" submit --array 0-3%0 /bin/true
expect usage-update-nothing 2 "nothing to change" "$colloc" update 1
expect usage-update-mem 2 "--mem: 'x' is not a positive size" "$colloc" update 1 --mem x
expect usage-update-prio 2 "--priority wants an integer" "$colloc" update 1 --priority 5000
expect usage-hold-none 2 "JOB is missing" "$colloc" hold
expect usage-release-id 2 "'x' is not a job id" "$colloc" release x
expect usage-since 2 "--since wants a time" "$colloc" queue --since yesterday
expect usage-history-arg 2 "unexpected argument 'x'" "$colloc" history x
expect unreachable-requeue 3 "cannot reach collocd" "$colloc" requeue 1 --socket "$T/none.sock"

# --- start the daemon -----------------------------------------------------------
start s 2x8GiB --set oom_max_attempts=2 --set kill_grace=2s || exit 1
COLLOC_SOCKET=$sock
export COLLOC_SOCKET

# --- COLLOC_JOB_ID ------------------------------------------------------------
# shellcheck disable=SC2016 # expanded by the job's shell
idenv=$(sub --mem 256MiB --name feat-env -- sh -c 'echo "id=$COLLOC_JOB_ID index=${COLLOC_ARRAY_INDEX-none}"')
expect env-done 0 "job $idenv done" "$colloc" wait "$idenv" --timeout 20s
expect env-job-id 0 "^id=$idenv index=none$" "$colloc" logs "$idenv"

# --- --time ---------------------------------------------------------------------
idt=$(sub --mem 256MiB --time 1s --name feat-time sleep 30)
long_ids=$idt
js time-submitted "$colloc" show --json "$idt"
is "$(jq_py 'j["time_limit_s"]')" 1 "show --json: time_limit_s"
expect show-time-limit 0 "^time limit: +1s$" "$colloc" show "$idt"
expect time-killed 143 "job $idt failed \(signal 15\)" "$colloc" wait "$idt" --timeout 20s
is "$(field "$idt" 'j["reason"]')" "exceeded its time limit of 1s" "time limit: the reason"
js time-events "$colloc" show --json "$idt"
is "$(jq_py '[e["kind"] for e in j["events"]][-2:]')" "['time-limit', 'failed']" \
	"time limit: events time-limit, then failed"
elapsed=$(jq_py 'round(j["end_time"] - j["start_time"])')
check time-measured-from-start test "$elapsed" -ge 1 -a "$elapsed" -le 6
json='{"argv":["true"],"env":[],"cwd":"/","time_limit_s":0}'
is "$(api POST /v1/jobs "$json")" 400 "API: time_limit_s 0 is 400"
check api-time-message grep -q "time_limit_s" "$T/api"

# --- --after --------------------------------------------------------------------
ida=$(sub --mem 256MiB --name feat-dep-a -- sh -c 'sleep 1.5; exit 3')
idok=$(sub --mem 256MiB --name feat-dep-ok --after "$ida" /bin/true)
idany=$(sub --mem 256MiB --name feat-dep-any --after "$ida:any" /bin/true)
idchain=$(sub --mem 256MiB --name feat-dep-chain --after "$idok" /bin/true)
expect dep-waits 0 "^ +$idok feat-dep-ok .* queued .*after $ida:ok" "$colloc" queue
expect dep-show 0 "^after: +$ida:ok$" "$colloc" show "$idok"
expect dep-a-failed 3 "job $ida failed" "$colloc" wait "$ida" --timeout 20s
expect dep-any-ran 0 "job $idany done" "$colloc" wait "$idany" --timeout 20s
expect dep-ok-failed 1 "job $idok failed" "$colloc" wait "$idok" --timeout 20s
is "$(field "$idok" 'j["reason"]')" \
	"dependency job $ida ended failed, exit 3; --after $ida:ok can never be satisfied" \
	"--after ok on a failed job: the reason"
is "$(field "$idok" 'j["attempts"]')" 0 "--after ok on a failed job: never launched"
expect dep-chain-failed 1 "job $idchain failed" "$colloc" wait "$idchain" --timeout 20s
check dep-chain-reason sh -c "\"$colloc\" show $idchain | grep -q 'dependency job $idok ended failed'"
idb=$(sub --mem 256MiB --name feat-dep-b /bin/true)
idafter=$(sub --mem 256MiB --name feat-dep-done --after "afterok:$idb" /bin/true)
expect dep-ok-done 0 "job $idafter done" "$colloc" wait "$idafter" --timeout 20s
is "$(field "$idafter" '[d["met"] for d in j["after"]]')" "[True]" "a met dependency says so"
expect dep-missing 1 "no job 999999" "$colloc" submit --after 999999 /bin/true
is "$(api POST /v1/jobs '{"argv":["true"],"env":[],"cwd":"/","after":["1:soon"]}')" 400 \
	"API: a bad dependency is 400"

# --- hold, release --------------------------------------------------------------
idh=$(sub --mem 256MiB --hold --name feat-held /bin/true)
sleep 1
is "$(field "$idh" 'j["state"], j["held"]')" "queued True" "submit --hold: stays queued"
expect hold-reason 0 "^ +$idh feat-held .* queued .* held$" "$colloc" queue
expect hold-again 0 "^held job $idh$" "$colloc" hold "$idh"
expect release 0 "^released job $idh$" "$colloc" release "$idh"
expect released-runs 0 "job $idh done" "$colloc" wait "$idh" --timeout 20s
expect release-not-held 1 "job $idh is done: only queued jobs can be released" "$colloc" release "$idh"
idr=$(sub --mem 256MiB --name feat-run sleep 30)
long_ids="$long_ids $idr"
wait_field "$idr" 'j["state"]' running || bad "job $idr never ran"
expect hold-running 1 "job $idr is running: only queued jobs can be held" "$colloc" hold "$idr"
is "$(api POST "/v1/jobs/$idr/hold")" 409 "API: holding a running job is 409"
is "$(api POST /v1/jobs/999999/hold)" 404 "API: holding no job is 404"

# --- requeue --------------------------------------------------------------------
expect requeue-running 0 "^requeued job $idr$" "$colloc" requeue "$idr"
if wait_field "$idr" 'j["attempts"] == 2 and j["state"] == "running"' True; then ok; else
	bad "requeue of a running job: not running again as attempt 2 ($(field "$idr" 'j["state"], j["attempts"]'))"
fi
is "$(field "$idr" 'j["reason"]')" "requeued while running (stopped: signal 15)" \
	"requeue of a running job: the reason"
expect requeue-finished 0 "^requeued job $idenv$" "$colloc" requeue "$idenv"
expect requeued-done 0 "job $idenv done" "$colloc" wait "$idenv" --timeout 20s
is "$(field "$idenv" 'j["attempts"], j["exit_code"]')" "2 0" "requeue of a done job: ran again"
expect requeued-log 0 "^id=$idenv index=none$" "$colloc" logs "$idenv"
idq=$(sub --mem 256MiB --hold /bin/true)
expect requeue-queued 1 "job $idq is queued already" "$colloc" requeue "$idq"
is "$(api POST "/v1/jobs/$idq/requeue")" 409 "API: requeueing a queued job is 409"

# --- update ---------------------------------------------------------------------
expect update 0 "^updated job $idq: need 1.00 GiB per GPU, priority 7$" \
	"$colloc" update "$idq" --mem 1GiB --priority 7
is "$(field "$idq" 'j["mem_need_bytes"], j["mem_source"], j["priority"]')" \
	"1073741824 request 7" "update: need, source, priority"
expect update-too-big 1 "could never start" "$colloc" update "$idq" --mem 100GiB
expect update-done 1 "job $idh is done: only queued jobs can be updated" "$colloc" update "$idh" --priority 1
is "$(api POST "/v1/jobs/$idq/update" '{"priority": 1, "gpus": 2}')" 400 "API: update with an unknown field is 400"
is "$(api POST "/v1/jobs/$idh/update" '{"priority": 1}')" 409 "API: updating a finished job is 409"
"$colloc" cancel "$idq" >/dev/null 2>&1

# --- arrays ---------------------------------------------------------------------
# shellcheck disable=SC2016 # expanded by the job's shell
bounded 30 "$colloc" submit --mem 256MiB --array 0-3%1 --name feat-array -- \
	sh -c 'echo "index=$COLLOC_ARRAY_INDEX id=$COLLOC_JOB_ID"; sleep 0.6' >"$T/array" 2>&1
arr=$(submitted_id <"$T/array")
is "$(sed -n 2p "$T/array")" "array: 4 jobs $arr..$((arr + 3))" "submit --array: what it prints"
most=0
i=0
while [ "$i" -lt 100 ]; do
	bounded 30 "$colloc" queue --json --name feat-array >"$T/json" 2>/dev/null || break
	n=$(jq_py 'sum(1 for x in j["jobs"] if x["state"] == "running")')
	[ "$n" -gt "$most" ] && most=$n
	[ "$(jq_py 'all(x["state"] == "done" for x in j["jobs"])')" = True ] && break
	sleep 0.1
	i=$((i + 1))
done
is "$most" 1 "--array 0-3%1: at most one running at a time"
is "$(jq_py '[x["array_index"] for x in j["jobs"]], set(x["array_id"] for x in j["jobs"])')" \
	"[0, 1, 2, 3] {$arr}" "array: indices and array id"
expect array-done 0 "job $((arr + 3)) done" "$colloc" wait "$((arr + 3))" --timeout 20s
expect array-log 0 "^index=2 id=$((arr + 2))$" "$colloc" logs "$((arr + 2))"
expect array-show 0 "^array: +index 1 of array $arr, at most 1 running$" "$colloc" show "$((arr + 1))"
is "$(api POST /v1/jobs '{"argv":["true"],"env":[],"cwd":"/","array":{"first":0,"last":1000}}')" 400 \
	"API: an array of 1001 is 400"

# --- queue filters --------------------------------------------------------------
idp=$(sub --mem 256MiB --hold --name feat-pending /bin/true)
expect queue-state-pd 0 "^ +$idp feat-pending " "$colloc" queue --state PD
expect queue-state-pending 0 "^ +$idp feat-pending " "$colloc" queue --state pending
js queue-state-json "$colloc" queue --json --state PD,R
is "$(jq_py 'sorted(set(x["state"] for x in j["jobs"]))')" "['queued', 'running']" "queue --state PD,R: only those"
js queue-name "$colloc" queue --json --name 'feat-dep-*'
is "$(jq_py 'sorted(x["name"] for x in j["jobs"])')" \
	"['feat-dep-a', 'feat-dep-any', 'feat-dep-b', 'feat-dep-chain', 'feat-dep-done', 'feat-dep-ok']" \
	"queue --name PATTERN: a shell pattern"
js queue-user "$colloc" queue --json --user "$(id -un)"
is "$(jq_py 'len(j["jobs"]) > 5')" True "queue --user ME: my jobs"
js queue-since-future "$colloc" queue --json --since "@$(($(date +%s) + 3600))"
is "$(jq_py '[x["id"] for x in j["jobs"] if x["state"] in ("done", "failed", "cancelled")]')" "[]" \
	"queue --since the future: no finished job"
is "$(jq_py "$idp in [x['id'] for x in j['jobs']]")" True "queue --since: jobs not ended are listed"
js queue-since-ago "$colloc" queue --json --since 1h
is "$(jq_py "$idenv in [x['id'] for x in j['jobs']]")" True "queue --since 1h: a job ended a moment ago"
is "$(api GET '/v1/jobs?since=soon')" 400 "API: since=soon is 400"
is "$(api GET '/v1/jobs?name=%zz')" 400 "API: a bad %-escape is 400"
if [ "$(id -u)" = 0 ]; then
	js queue-user-other "$colloc" queue --json --user nobody
	is "$(jq_py 'j["jobs"]')" "[]" "queue --user nobody (as root): nobody's jobs, none"
fi
"$colloc" cancel "$idp" >/dev/null 2>&1

# --- history --------------------------------------------------------------------
idm=$(sub --mem 1GiB --name feat-hist -- "$simjob" --mem 512MiB --duration 1500ms --util 30)
expect hist-done 0 "job $idm done" "$colloc" wait "$idm" --timeout 20s
expect history-header 0 "^ +ID NAME +USER +STATE +EXIT +START +ELAPSED +NEED +PEAK +UTIL +ATTEMPTS" \
	"$colloc" history
expect history-row 0 "^ +$idm feat-hist .* done +exit 0 .* 1.00 GiB +512 MiB +[0-9]+% +1$" \
	"$colloc" history --name feat-hist
expect history-failed-row 0 "^ +$idt feat-time .* failed +signal 15 " "$colloc" history --since 1h
js history-json "$colloc" history --json
is "$(jq_py 'sorted(set(x["state"] for x in j["jobs"]))')" "['cancelled', 'done', 'failed']" \
	"history: finished jobs only"
is "$(jq_py "[x['peak_bytes'] for x in j['jobs'] if x['id'] == $idm]")" "[536870912]" \
	"history --json: the measured peak"

# --- out-of-memory give-up reasons ------------------------------------------------
# shellcheck disable=SC2016
idbig=$(sub --mem 256MiB --name feat-oom-big -- sh -c 'echo "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 13.50 GiB. GPU 0 has a total capacity of 7.79 GiB of which 7.00 GiB is free."; exit 1')
expect oom-big-failed 1 "job $idbig failed" "$colloc" wait "$idbig" --timeout 20s
is "$(field "$idbig" 'j["attempts"]')" 1 "OOM larger than the GPU: not retried"
is "$(field "$idbig" 'j["reason"]')" \
	"out of memory on attempt 1: it tried to allocate 13.5 GiB at once, more than the GPU's total capacity of 7.79 GiB: giving up" \
	"OOM larger than the GPU: the reason"
idoom=$(sub --mem 256MiB --name feat-oom -- sh -c 'echo "RuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB"; exit 1')
expect oom-failed 1 "job $idoom failed" "$colloc" wait "$idoom" --timeout 30s
is "$(field "$idoom" 'j["attempts"]')" 2 "OOM: retried up to oom_max_attempts"
reason=$(field "$idoom" 'j["reason"]')
is "$(printf '%s\n' "$reason" | grep -o 'giving up' | wc -l | tr -d ' ')" 1 "OOM give-up: 'giving up' once ($reason)"
# One way of writing sizes in the reasons and events: colloc_format_bytes,
# three significant digits ("13.5 GiB" for PyTorch's "13.50 GiB", "7.79
# GiB", "512 MiB"), the exact strings checked above and here.
is "$(field "$idoom" 'j["reason"]')" \
	"out of memory on attempt 2 of 2 (need 512 MiB): giving up" "OOM give-up: the reason"
# The reasons and events, not the commands (which quote PyTorch).
for id in "$idoom" "$idbig"; do
	"$colloc" show "$id" 2>&1 | sed -n '/^reason:/p; /^events:/,$p'
done >"$T/oom-events"
check oom-retry-event grep -q "oom  *out of memory on attempt 1: need 256 MiB -> 512 MiB, on GPUs of its own; re-queued for a GPU of its own$" "$T/oom-events"
check oom-big-event grep -q "oom  *out of memory on attempt 1: it tried to allocate 13.5 GiB at once, more than the GPU's total capacity of 7.79 GiB: giving up$" "$T/oom-events"
check oom-one-format sh -c "! grep -Eh '[0-9]{2,}\.[0-9]{2} [KMGT]iB|[0-9]\.[0-9]{3,} [KMGT]iB|[0-9]{3,}\.[0-9]+ [KMGT]iB' '$T/s.log' '$T/oom-events'"

# --- the daemon stops; retention at start ---------------------------------------
cancel_long
long_ids=
stop s
count_before=$(python3 -c "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute('select count(*) from jobs where state in (2,3,4)').fetchone()[0])" "$T/s.db")
check retention-had-finished test "$count_before" -gt 10
sleep 1.2
daemon_start s --gpus "sim:2x8GiB,path=$T/s.state" --set retention=1s || exit 1
js retention-queue "$colloc" queue --json --state done,failed,cancelled
is "$(jq_py 'len(j["jobs"])')" 0 "retention = 1s at start: finished jobs deleted"
check retention-logged grep -Eq "retention: deleted $count_before finished job\(s\) older than 1s" "$T/s.log"
check retention-logs-removed test ! -e "$T/s/logs/$idm.log"
expect retention-gone 1 "no job $idm" "$colloc" show "$idm"

summary
