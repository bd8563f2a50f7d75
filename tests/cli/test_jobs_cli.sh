#!/bin/sh
# End-to-end checks of colloc's job commands (submit, queue, show, cancel,
# logs, wait, gpus) against a real collocd on a temporary socket with two
# simulated 8 GiB GPUs: output, --json validity, exit statuses (wait's job
# status, 124 on timeout, 3 when the daemon is unreachable, 2 for usage).
# Usage: test_jobs_cli.sh PATH/TO/colloc PATH/TO/collocd PATH/TO/colloc-simjob
# (COLLOC_DATA_DIR defaults to the repository's data/). Prints
# "N passed, M failed"; exits non-zero on any failure. Every wait is bounded
# and the daemon is stopped on exit.
set -u
colloc=$1
collocd=$2
simjob=$3
# shellcheck source=SCRIPTDIR/../lib.sh
. "$(dirname "$0")/../lib.sh"
tmpdir colloc-jobs
sock=$T/s.sock
long_ids=
: "${COLLOC_DATA_DIR:=$(cd "$(dirname "$0")/../.." && pwd)/data}"
export COLLOC_DATA_DIR
unset COLLOC_SOCKET CUDA_VISIBLE_DEVICES COLLOC_SIM_STATE

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

# no_env_socket CMD...: run CMD without COLLOC_SOCKET in its environment.
no_env_socket() {
	(
		unset COLLOC_SOCKET
		exec "$@"
	)
}

# json_ok NAME CMD...: CMD exits 0 and its stdout is one valid JSON value.
json_ok() {
	name=$1
	shift
	bounded 30 "$@" >"$T/json" 2>"$T/err"
	st=$?
	if [ "$st" != 0 ]; then
		bad "$name: exit status $st"
		sed 's/^/  | /' "$T/err" | head -5
	elif ! python3 -c 'import json,sys; json.load(sys.stdin)' <"$T/json"; then
		bad "$name: output is not valid JSON"
		head -c 300 "$T/json" | sed 's/^/  | /'
	else
		ok
	fi
}

# jq_py EXPR...: print Python expressions on the JSON in $T/json (as j),
# separated by spaces (print's way).
jq_py() {
	python3 -c "import json,sys; j=json.load(open(sys.argv[1])); print($1)" "$T/json"
}

# submit_job ARGS...: submit a job, print its id (empty on failure).
submit_job() {
	bounded 30 "$colloc" submit "$@" 2>"$T/err" | submitted_id
}

# state_of ID: the job's state now.
state_of() {
	bounded 30 "$colloc" show --json "$1" >"$T/json" 2>/dev/null && jq_py 'j["state"]'
}

# wait_state ID STATE: wait (at most ~10 s) until the job is in STATE.
wait_state() {
	i=0
	while [ "$i" -lt 100 ]; do
		[ "$(state_of "$1")" = "$2" ] && return 0
		sleep 0.1
		i=$((i + 1))
	done
	return 1
}

# --- without a daemon ---------------------------------------------------------
expect help 0 "submit .*CMD" "$colloc" --help
expect help-exit-codes 0 "3 +collocd could not be reached" "$colloc" --help
for c in submit queue show cancel logs wait gpus; do
	expect "help-$c" 0 "usage: colloc $c" "$colloc" "$c" --help
done
expect wait-help-codes 0 "128\+N" "$colloc" wait --help
expect wait-help-timeout 0 "124" "$colloc" wait --help

unreach="colloc: error: cannot reach collocd at $T/none.sock: .*\(is collocd running\? set --socket or COLLOC_SOCKET\)"
expect unreachable-queue 3 "$unreach" "$colloc" queue --socket "$T/none.sock"
expect unreachable-submit 3 "$unreach" "$colloc" submit --socket "$T/none.sock" /bin/true
expect unreachable-submit-model 3 "$unreach" "$colloc" submit --socket "$T/none.sock" \
	--model resnet18 --batch 4 /bin/true
expect unreachable-show 3 "$unreach" "$colloc" --socket "$T/none.sock" show 1
expect unreachable-cancel 3 "$unreach" "$colloc" cancel 1 --socket "$T/none.sock"
expect unreachable-logs 3 "$unreach" "$colloc" logs 1 --socket="$T/none.sock"
expect unreachable-wait 3 "$unreach" env COLLOC_SOCKET="$T/none.sock" "$colloc" wait 1
expect unreachable-gpus 3 "$unreach" "$colloc" gpus --socket "$T/none.sock"
: >"$T/plain-file"
expect unreachable-not-socket 3 "cannot reach collocd at .*plain-file: Connection refused" \
	"$colloc" queue --socket "$T/plain-file"

expect usage-submit-nocmd 2 "CMD is missing" "$colloc" submit --mem 1GiB
expect usage-submit-mem 2 "--mem: 'lots' is not a positive size" "$colloc" submit --mem lots /bin/true
expect usage-submit-both 2 "choose one" "$colloc" submit --mem 1GiB --model resnet18 --batch 1 /bin/true
expect usage-submit-batch 2 "--model needs --batch" "$colloc" submit --model resnet18 /bin/true
expect usage-submit-orphan 2 "describe a --model" "$colloc" submit --batch 4 /bin/true
expect usage-submit-util 2 "--util wants a percentage" "$colloc" submit --util 150 /bin/true
expect usage-submit-gpus 2 "--gpus wants a positive integer" "$colloc" submit --gpus 0 /bin/true
expect usage-submit-dash 2 "unknown or incomplete option '--frob'" "$colloc" submit --frob /bin/true
expect usage-submit-model 2 "unbound; bind it with --dim seq=N" "$colloc" submit --model gpt2 --batch 1 /bin/true
expect usage-queue-arg 2 "unexpected argument 'x'" "$colloc" queue x
expect usage-show-id 2 "'abc' is not a job id" "$colloc" show abc
expect usage-show-none 2 "JOB is missing" "$colloc" show
expect usage-show-two 2 "one JOB only" "$colloc" show 1 2
expect usage-cancel-none 2 "JOB is missing" "$colloc" cancel
expect usage-logs-json 2 "unknown or incomplete option '--json'" "$colloc" logs 1 --json
expect usage-wait-timeout 2 "--timeout wants a duration" "$colloc" wait 1 --timeout soon
expect usage-socket-missing 2 "--socket wants a path" "$colloc" --socket
expect usage-socket-estimate 2 "--socket is for commands that talk to collocd" \
	"$colloc" --socket "$sock" estimate resnet18 --batch 1
expect usage-gpus-both 2 "choose one" "$colloc" gpus --gpus sim --socket "$sock"

# --- start the daemon -----------------------------------------------------------
start s 2x8GiB || exit 1
COLLOC_SOCKET=$sock
export COLLOC_SOCKET

# --- gpus -----------------------------------------------------------------------
expect gpus-table 0 "reserved .*jobs" "$colloc" gpus
expect gpus-rows 0 "^1 +SIM-[0-9a-f-]+ " "$colloc" gpus
json_ok gpus-json "$colloc" gpus --json
is "$(jq_py 'len(j["gpus"]), "mem_reserved_bytes" in j["gpus"][0]')" "2 True" \
	"gpus --json: 2 GPUs with mem_reserved_bytes"
expect gpus-direct 0 "processes \(pid:memory\)" "$colloc" gpus --gpus "sim:path=$T/s.state"

# --- submit, queue, show, wait, logs ------------------------------------------
# long enough to still run when `gpus` looks for it on a loaded machine
id1=$(submit_job --mem 1GiB --name sj -- "$simjob" --mem 1GiB --duration 8s)
is "${id1:+yes}" yes "submit simjob: 'submitted job N' ($(cat "$T/err"))"
id3=$(submit_job --mem 256MiB /bin/sh -c 'echo hi; echo oops >&2; exit 3')
is "${id3:+yes}" yes "submit exit-3 job: 'submitted job N' ($(cat "$T/err"))"

expect queue-header 0 "^ +ID NAME +USER +STATE +GPUS +MEM +ATTEMPTS +TIME +REASON" "$colloc" queue
expect queue-row 0 "^ +$id1 sj +[^ ]+ +(queued|running) +1 +1.00 GiB" "$colloc" queue
json_ok queue-json "$colloc" queue --json
is "$(jq_py '[x["id"] for x in j["jobs"]][:2]')" "[$id1, $id3]" "queue --json: job ids"
json_ok queue-json-state "$colloc" queue --json --state done,failed,cancelled
expect queue-bad-state 1 "colloc: error: .*bogus" "$colloc" queue --state bogus

if wait_state "$id1" running; then ok; else bad "job $id1 never ran"; fi
json_ok gpus-json-running "$colloc" gpus --json
is "$(jq_py "any($id1 in g['jobs'] for g in j['gpus'])")" True "gpus --json: job $id1 on a GPU"
expect gpus-jobs-column 0 " $id1\$" "$colloc" gpus

expect show-human 0 "^state: +(running|done)" "$colloc" show "$id1"
expect show-mem 0 "^memory need: +1.00 GiB per GPU \(request\)" "$colloc" show "$id1"
expect show-events 0 "^  [0-9-]+ [0-9:.]+ +submit " "$colloc" show "$id1"
json_ok show-json "$colloc" show --json "$id1"
is "$(jq_py 'j["id"], j["name"]')" "$id1 sj" "show --json: id and name"
expect show-missing 1 "^colloc: error: " "$colloc" show 999999

expect wait-exit-3 3 "job $id3 failed \(exit 3\)" "$colloc" wait "$id3" --timeout 20s
expect logs-exit-3 0 "^hi$" "$colloc" logs "$id3"
expect logs-stderr 0 "^oops$" "$colloc" logs "$id3"
expect wait-done 0 "job $id1 done" "$colloc" wait "$id1" --timeout 20s
json_ok wait-json sh -c "\"$colloc\" wait --json $id1 $id3; [ \$? = 1 ]"
is "$(jq_py '[x["state"] for x in j["jobs"]]')" "['done', 'failed']" "wait --json: states"
expect wait-several 1 "job $id3 failed" "$colloc" wait "$id1" "$id3" --timeout 5s
expect wait-missing 1 "^colloc: error: " "$colloc" wait 999999 --timeout 5s

id9=$(submit_job --mem 256MiB /bin/sh -c 'kill -9 $$')
expect wait-signal 137 "job $id9 failed \(signal 9\)" "$colloc" wait "$id9" --timeout 20s

# --json submit, --socket in its three places, the model estimate.
json_ok submit-json "$colloc" submit --json --mem 256MiB --util 40 --priority -5 --exclusive \
	--name jj /bin/echo --json
idj=$(jq_py 'j["id"]')
is "$(jq_py 'j["name"], j["util_pred"], j["priority"], j["exclusive"]')" "jj 0.4 -5 True" \
	"submit --json: name, util, priority, exclusive as given"
expect submit-args-go-to-cmd 0 "^--json$" sh -c "\"$colloc\" wait $idj --timeout 20s >/dev/null && \"$colloc\" logs $idj"
expect socket-before 0 "^ +$idj jj " no_env_socket "$colloc" --socket "$sock" queue
expect socket-after 0 "^ +$idj jj " no_env_socket "$colloc" queue --socket "$sock"
expect socket-equals 0 "^ +$idj jj " no_env_socket "$colloc" queue --socket="$sock"

if peak=$("$colloc" estimate resnet18 --batch 4 --optimizer sgd --json 2>/dev/null |
	python3 -c 'import json,sys; print(json.load(sys.stdin)["peak_device_bytes"])'); then
	json_ok submit-model "$colloc" submit --json --model resnet18 --batch 4 --optimizer sgd /bin/true
	is "$(jq_py 'j["mem_need_bytes"], j["mem_source"], j["model"]')" \
		"$peak estimate resnet18 --batch 4 --optimizer sgd" \
		"submit --model: need (the estimate's peak), source, model text"
else
	bad "colloc estimate resnet18 failed (COLLOC_DATA_DIR=$COLLOC_DATA_DIR)"
fi
if upper=$("$colloc" estimate resnet18 --batch 4 --optimizer sgd --json 2>/dev/null |
	python3 -c 'import json,sys; print(json.load(sys.stdin)["peak_device_upper_bytes"])'); then
	json_ok submit-model-bound "$colloc" submit --json --model resnet18 --batch 4 --optimizer sgd \
		--safety bound /bin/true
	is "$(jq_py 'j["mem_need_bytes"], j["model"]')" \
		"$upper resnet18 --batch 4 --optimizer sgd --safety bound" \
		"submit --model --safety bound: need is the estimate's upper bound"
fi
# The training options are estimate's (one parser): a LoRA set-up from a
# config.json, and a ZeRO-3 job sharded over the job's --gpus.
hf="hf:$COLLOC_DATA_DIR/hf/gpt2"
if peak=$("$colloc" estimate "$hf" --batch 2 --seq 64 --trainable lora --lora-rank 4 \
	--precision bf16 --gradient-checkpointing --keep-grads --json 2>/dev/null |
	python3 -c 'import json,sys; print(json.load(sys.stdin)["peak_device_bytes"])'); then
	json_ok submit-model-lora "$colloc" submit --json --model "$hf" --batch 2 --seq 64 \
		--trainable lora --lora-rank 4 --precision bf16 --gradient-checkpointing --keep-grads /bin/true
	is "$(jq_py 'j["mem_need_bytes"], j["model"]')" \
		"$peak $hf --batch 2 --precision bf16 --seq 64 --trainable lora --lora-rank 4 --gradient-checkpointing --keep-grads" \
		"submit --model hf: with LoRA: need and model text as estimate's"
else
	bad "colloc estimate $hf --trainable lora failed"
fi
if peak=$("$colloc" estimate "$hf" --batch 2 --seq 64 --parallel zero3 --gpus 2 --json 2>/dev/null |
	python3 -c 'import json,sys; print(json.load(sys.stdin)["peak_device_bytes"])'); then
	json_ok submit-model-zero3 "$colloc" submit --json --model "$hf" --batch 2 --seq 64 \
		--parallel zero3 --gpus 2 /bin/true
	is "$(jq_py 'j["mem_need_bytes"]')" "$peak" "submit --parallel zero3 --gpus 2: the per-GPU shard"
else
	bad "colloc estimate $hf --parallel zero3 failed"
fi
expect usage-submit-train-orphan 2 "training options" "$colloc" submit --trainable lora /bin/true
expect usage-submit-lora-rank 2 "--lora-rank wants 1..65536" "$colloc" submit --model "$hf" --batch 1 --lora-rank 0 /bin/true

# The utilization need: the graph's prediction (on the daemon's GPU 0's
# profile: none matches a simulated GPU, so the built-in one), --util over
# it, then what the first run measured for the second.
json_ok submit-model-util "$colloc" submit --json --model resnet18 --batch 32 /bin/true
is "$(jq_py 'j["util_source"], 0 < j["util_pred"] <= 1, j["util_graph"]["platform"]')" \
	"graph (default) True default" "submit --model: util from the graph, in (0,1]"
# No DCGM on simulated GPUs: the daemon schedules on utilization.gpu.
is "$(jq_py 'j["util_pred"] == j["util_graph"]["gpu_util"], 0 < j["util_graph"]["sm_activity"] <= 1')" \
	"True True" "submit --model: NVML-scale figure chosen, both sent"
idg=$(jq_py 'j["id"]')
expect show-util-graph 0 "^util pred: +[0-9]+% \(graph \(default\)\)" "$colloc" show "$idg"
expect show-util-graph-both 0 "^util graph: +[0-9]+% gpu util, [0-9]+% sm activity \(default\)" \
	"$colloc" show "$idg"
check submit-event-util grep -Eq "job $idg: submit: .*, util [0-9]+% \(graph \(default\)\)" "$T/s.log"
json_ok queue-json-util "$colloc" queue --json
is "$(jq_py "[x['util_source'] for x in j['jobs'] if x['id'] == $idg]")" "['graph (default)']" \
	"queue --json: util_source"

json_ok submit-model-util-request "$colloc" submit --json --model resnet18 --batch 32 --util 40 /bin/true
is "$(jq_py 'j["util_source"], j["util_pred"], j["util_graph"] is not None')" "request 0.4 True" \
	"submit --model --util 40: the request wins"
json_ok submit-model-platform "$colloc" submit --json --model resnet18 --batch 32 \
	--platform t4-16gb-cu124-torch26 /bin/true
is "$(jq_py 'j["util_source"], j["util_graph"]["platform"]')" \
	"graph (t4-16gb-cu124-torch26) t4-16gb-cu124-torch26" "submit --model --platform: its profile"
expect usage-submit-platform 2 "t4-nonexistent" "$colloc" submit --model resnet18 --batch 32 \
	--platform t4-nonexistent /bin/true
json_ok submit-util-default "$colloc" submit --json --mem 256MiB /bin/true
is "$(jq_py 'j["util_source"], j["util_pred"], j["util_graph"]')" "default 0.5 None" \
	"submit without --util or --model: default_util"

# The same job twice: the second takes the first run's measured mean
# (colloc-simjob keeps the simulated GPU 30% busy; samples taken before it
# registers read idle, so the mean is at most 30%), ahead of the graph.
idh1=$(submit_job --model resnet18 --batch 32 -- "$simjob" --mem 512MiB --duration 1500ms --util 30)
expect history-first-done 0 "job $idh1 done" "$colloc" wait "$idh1" --timeout 20s
json_ok history-first-show "$colloc" show --json "$idh1"
is "$(jq_py 'j["util_source"], 0 < j["util_mean"] <= 0.3 + 1e-9')" "graph (default) True" \
	"first run: graph prediction, measured about 30%"
mean1=$(jq_py 'repr(j["util_mean"])')
json_ok history-second "$colloc" submit --json --model resnet18 --batch 32 -- \
	"$simjob" --mem 512MiB --duration 1500ms --util 30
is "$(jq_py 'j["util_source"], repr(j["util_pred"])')" "history $mean1" \
	"second run: the first run's measured utilization"
idh2=$(jq_py 'j["id"]')
json_ok history-request "$colloc" submit --json --model resnet18 --batch 32 --util 70 -- \
	"$simjob" --mem 512MiB --duration 1500ms --util 30
is "$(jq_py 'j["util_source"], j["util_pred"]')" "request 0.7" "--util over history"
idh3=$(jq_py 'j["id"]')
"$colloc" wait --timeout 20s "$idh2" "$idh3" >/dev/null 2>&1

# logs -f follows a job to its end.
# shellcheck disable=SC2016 # $i is the job's
idf=$(submit_job --mem 256MiB /bin/sh -c 'for i in 1 2 3 4 5; do echo "line $i"; sleep 0.2; done')
bounded 20 "$colloc" logs -f "$idf" >"$T/follow" 2>&1
st=$?
is "$st" 0 "logs -f: exit status"
is "$(cat "$T/follow")" "$(printf 'line %s\n' 1 2 3 4 5)" "logs -f: output"
expect follow-ended 0 "^state: +done" "$colloc" show "$idf"

# --- cancel and timeouts --------------------------------------------------------
idl=$(submit_job --mem 256MiB sleep 30)
long_ids="$idl"
expect wait-timeout 124 "colloc: error: wait: timed out after 300ms: job $idl" \
	"$colloc" wait "$idl" --timeout 300ms
json_ok wait-timeout-json-valid sh -c "\"$colloc\" wait --json --timeout 100ms $idl; [ \$? = 124 ]"
expect cancel 0 "^cancelled job $idl$" "$colloc" cancel "$idl"
expect wait-cancelled 1 "job $idl cancelled" "$colloc" wait "$idl" --timeout 20s
expect cancel-again 1 "^colloc: error: " "$colloc" cancel "$idl"
expect cancel-missing 1 "^colloc: error: " "$colloc" cancel 999999
expect show-cancelled 0 "^state: +cancelled" "$colloc" show "$idl"

idq=$(submit_job --mem 256MiB --gpus 2 --exclusive sleep 30)
idq2=$(submit_job --mem 256MiB --gpus 2 --exclusive sleep 30)
long_ids="$idl $idq $idq2"
expect cancel-queued 0 "^cancelled job $idq2$" "$colloc" cancel "$idq2"
expect cancel-mixed 1 "cancelled job $idq" "$colloc" cancel 999999 "$idq"
expect wait-queued-cancelled 1 "job $idq2 cancelled" "$colloc" wait "$idq2" --timeout 20s

# --- the daemon goes away -------------------------------------------------------
expect wait-both-cancelled 1 "cancelled" "$colloc" wait "$idq" "$idq2" --timeout 20s
# A job still queued when collocd stops is carried over to the next one.
idheld=$(submit_job --mem 256MiB --hold --name carried true)
json_ok stats-before-restart "$colloc" stats --scope store --json
n_before=$(jq_py 'j["jobs"]')
check stats-before-restart-some test "$n_before" -gt 5
json_ok stats-start-before-restart "$colloc" stats --json
is "$(jq_py 'j["scope"], j["jobs"]')" "start $n_before" \
	"stats before any restart: the default scope has every job"
long_ids=
stop s
expect stopped-queue 3 "cannot reach collocd at $sock" "$colloc" queue
expect stopped-gpus-named 3 "cannot reach collocd at $sock" "$colloc" gpus
mkdir "$T/xdg"
expect stopped-gpus-fallback 0 "processes \(pid:memory\)" no_env_socket env \
	XDG_RUNTIME_DIR="$T/xdg" COLLOC_SIM_STATE="$T/s.state" "$colloc" gpus

# --- stats: one scope at a time, across a restart -------------------------------
# The default scope is this collocd's: the jobs that ended before it started
# are left out, the held job it took over and the new one are in, with its
# own utilization; --scope store counts every job, without a utilization.
start s 2x8GiB || exit 1
long_ids=$idheld
idnew=$(submit_job --mem 256MiB --name after-restart true)
expect stats-new-done 0 "job $idnew done" "$colloc" wait "$idnew" --timeout 20s
json_ok stats-start "$colloc" stats --json
is "$(jq_py 'j["scope"], j["jobs"], j["done"], j["queued"], j["failed"], j["cancelled"]')" \
	"start 2 1 1 0 0" "stats after a restart: the held job carried over and the new one"
is "$(jq_py 'isinstance(j["gpu_util"], (int, float)), j["started_at"] > 1e9')" "True True" \
	"stats: this collocd's utilization and start"
json_ok stats-store "$colloc" stats --scope store --json
is "$(jq_py 'j["scope"], j["jobs"], j["gpu_util"], j["busy_s"], j["mem_util"]')" \
	"store $((n_before + 1)) None None None" "stats --scope store: every job, no utilization"
expect stats-table-start 0 "^scope +since collocd started \(" "$colloc" stats
expect stats-table-jobs 0 "^jobs +2$" "$colloc" stats --scope=start
expect stats-table-store 0 "^mean GPU utilization +-$" "$colloc" stats --scope store
expect stats-table-store-scope 0 "^scope +every job in the database \(collocd started " \
	"$colloc" stats --scope store
expect stats-scope-bad 2 "stats: --scope: expected start or store, not 'all'" \
	"$colloc" stats --scope all

summary
