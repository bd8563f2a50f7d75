#!/bin/sh
# collocd's Prometheus endpoint end to end: the real daemon with
# `metrics = 127.0.0.1:0` (the kernel picks the port, the log names it), a
# colloc-simjob on simulated GPUs, `curl` for GET /metrics and `promtool
# check metrics` on what it answers; then the wrong method and path, a busy
# port, and a daemon without the key that must open no TCP port at all.
#
#   test_metrics.sh PATH/TO/colloc PATH/TO/collocd PATH/TO/colloc-simjob
#
# Needs curl and promtool (Debian package `prometheus`, installed by
# scripts/install-deps.sh). Without promtool the test FAILS rather than
# skips: CI installs it. Every wait is bounded. Prints "N passed, M failed";
# exits non-zero on any failure.
set -u
colloc=$1
collocd=$2
simjob=$3
# shellcheck source=SCRIPTDIR/../lib.sh
. "$(dirname "$0")/../lib.sh"

for tool in promtool curl; do
	if ! command -v "$tool" >/dev/null 2>&1; then
		echo "FAIL: '$tool' is not installed; this test needs it and does not skip." >&2
		echo "      Install it with scripts/install-deps.sh (Debian: apt-get install prometheus curl)." >&2
		exit 1
	fi
done

tmpdir colloc-prom
chmod 755 "$T"

# scrape PORT [CURL ARGS...]: the body into $T/m.txt, prints the status.
scrape() {
	port=$1
	shift
	curl -s --max-time 5 -o "$T/m.txt" -w '%{http_code}' "$@" "http://127.0.0.1:$port/metrics"
}

# value SERIES: the value of the sample written exactly as SERIES in $T/m.txt
# (through the environment: awk -v would take the label escapes as its own).
value() {
	SERIES=$1 awk 'BEGIN { s = ENVIRON["SERIES"] }
		index($0, s " ") == 1 { print substr($0, length(s) + 2); exit }' "$T/m.txt"
}

# tcp_listeners PID: how many TCP sockets PID has open (from /proc).
tcp_listeners() {
	n=0
	for fd in /proc/"$1"/fd/*; do
		inode=$(readlink "$fd" 2>/dev/null | sed -n 's/^socket:\[\([0-9]*\)\]$/\1/p')
		[ -n "$inode" ] || continue
		if awk -v i="$inode" '$10 == i { found = 1 } END { exit !found }' \
			/proc/net/tcp /proc/net/tcp6 2>/dev/null; then
			n=$((n + 1))
		fi
	done
	echo "$n"
}

# promtool_ok: `promtool check metrics` on $T/m.txt passes and says nothing
# (any lint complaint is printed and fails the check).
promtool_ok() {
	promtool check metrics <"$T/m.txt" >"$T/promtool.out" 2>&1
	rc=$?
	if [ $rc -ne 0 ] || [ -s "$T/promtool.out" ]; then
		echo "promtool check metrics (exit $rc):"
		sed 's/^/  | /' "$T/promtool.out"
		return 1
	fi
	return 0
}

user=$(id -un)

# --- A. GET /metrics with a running job ----------------------------------------
start m 2x8GiB --set metrics=127.0.0.1:0 || exit 1
port=$(sed -n 's/.*metrics on 127\.0\.0\.1:\([0-9][0-9]*\) .*/\1/p' "$T/m.log" | head -n 1)
check port-logged test -n "$port"
[ -n "$port" ] || { echo "no 'metrics on' line in the log:"; cat "$T/m.log"; exit 1; }
check port-not-zero test "$port" -gt 0
check one-tcp-listener test "$(tcp_listeners "$(cat "$T/m.pid")")" = 1

id=$(submit m --mem 2GiB --util 40 --name 'say "hi"\now' -- "$simjob" --mem 1GiB --ramp 100ms --duration 60s --util 40)
check submitted test -n "$id"
jl="{job=\"$id\",user=\"$user\",name=\"say \\\"hi\\\"\\\\now\"}"
# Wait (at most 10 s) until a sample has seen the job's memory.
i=0
while :; do
	scrape "$port" >/dev/null
	grep -q "^colloc_job_memory_used_bytes{job=\"$id\",.* 1073741824\$" "$T/m.txt" && break
	i=$((i + 1))
	if [ $i -gt 100 ]; then
		bad "job-sampled: no colloc_job_memory_used_bytes of 1 GiB for job $id within 10 s"
		break
	fi
	sleep 0.1
done
check get-200 test "$(scrape "$port")" = 200
check content-type test "$(curl -s --max-time 5 -o /dev/null -w '%{content_type}' \
	"http://127.0.0.1:$port/metrics")" = "text/plain; version=0.0.4; charset=utf-8"
cp "$T/m.txt" "$T/running.txt"
check promtool-running promtool_ok
check up test "$(value colloc_up)" = 1
check gpus test "$(value colloc_gpus)" = 2
check jobs-running test "$(value 'colloc_jobs{state="running"}')" = 1
check submitted-total test "$(value colloc_jobs_submitted_total)" = "$id"
check job-need test "$(value "colloc_job_memory_need_bytes$jl")" = 2147483648
check job-peak test "$(value "colloc_job_memory_peak_bytes$jl")" = 1073741824
check job-attempts test "$(value "colloc_job_attempts$jl")" = 1
check gpu-total test "$(grep -c '^colloc_gpu_memory_total_bytes{gpu="[01]",uuid="SIM-[0-9a-f-]*"} 8589934592$' "$T/m.txt")" = 2
check gpu-jobs test "$(grep -c '^colloc_gpu_jobs{.*} 1$' "$T/m.txt")" = 1
check gpu-used test "$(grep -c '^colloc_gpu_memory_used_bytes{.*} 1073741824$' "$T/m.txt")" = 1
check gpu-util test "$(grep -c '^colloc_gpu_utilization_ratio{.*} 0.4$' "$T/m.txt")" = 1
check help-type sh -c "grep -q '^# HELP colloc_gpu_energy_joules_total ' '$T/m.txt' &&
	grep -q '^# TYPE colloc_gpu_energy_joules_total counter\$' '$T/m.txt'"

# Only GET (and HEAD) of /metrics.
check post-405 test "$(scrape "$port" -X POST --data-binary 'x=1')" = 405
check put-405 test "$(scrape "$port" -X PUT --data-binary 'x')" = 405
check head-200 test "$(curl -s --max-time 5 -o /dev/null -w '%{http_code}' -I \
	"http://127.0.0.1:$port/metrics")" = 200
check other-404 test "$(curl -s --max-time 5 -o /dev/null -w '%{http_code}' \
	"http://127.0.0.1:$port/other")" = 404
check api-404 test "$(curl -s --max-time 5 -o /dev/null -w '%{http_code}' \
	"http://127.0.0.1:$port/v1/status")" = 404

# The job ends (cancelled): the counts move, its series go.
c m cancel "$id" >/dev/null 2>&1
c m wait --timeout 30s "$id" >/dev/null 2>&1
check get-after-200 test "$(scrape "$port")" = 200
check promtool-after promtool_ok
check jobs-cancelled test "$(value 'colloc_jobs{state="cancelled"}')" = 1
check jobs-running-0 test "$(value 'colloc_jobs{state="running"}')" = 0
check no-job-series test "$(grep -c '^colloc_job_' "$T/m.txt")" = 0

# --- B. a port that is taken: the daemon refuses to start -----------------------
timeout 20 "$collocd" --gpus "sim:1x8GiB,path=$T/busy.state" --socket "$T/busy.sock" \
	--db "$T/busy.db" --state-dir "$T/busy" --set "metrics=127.0.0.1:$port" \
	>"$T/busy.log" 2>&1
check busy-exit-1 test $? = 1
check busy-message grep -q "cannot listen for metrics on 127.0.0.1:$port: Address already in use" "$T/busy.log"
check busy-no-socket test ! -e "$T/busy.sock"
stop m

# --- C. without the key: no TCP port, nothing said about metrics ------------------
start off 1x8GiB || exit 1
check off-no-tcp test "$(tcp_listeners "$(cat "$T/off.pid")")" = 0
check off-log-silent sh -c "! grep -q 'metrics on' '$T/off.log'"
check off-port-closed sh -c "! curl -s --max-time 2 -o /dev/null 'http://127.0.0.1:$port/metrics'"
stop off

summary
