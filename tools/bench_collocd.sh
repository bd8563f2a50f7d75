#!/bin/sh
# Benchmarks of collocd (issue 4), each next to a baseline measured in the
# same run:
#   1. submit-to-running latency with a free GPU (target: median < 50 ms),
#      as the daemon records it (start_time - submit_time) and as a client
#      sees it (from calling `colloc submit` until `colloc show` says
#      running); baseline: one no-op API round trip (`colloc queue`).
#   2. one scheduling pass over 10,000 queued jobs on 1,000 GPUs (target:
#      < 10 ms), from the scheduler's own benchmark (test_sched, release).
#   3. the daemon's idle CPU use at 1 s sampling (target < 1% of one core),
#      over IDLE seconds; baseline: the same daemon sampling every 100 ms.
#   4. the same on 8 "NVIDIA" GPUs (issue 6 target: sampling 8 GPUs once a
#      second costs collocd < 1% of a core): collocd --gpus nvml against the
#      fake libnvidia-ml.so.1 and libdcgm of tests/fake (tests/data/nvml/
#      bench8.scn: 2 GPUs in MIG mode, processes, DCGM ratios); baseline: the
#      4 simulated GPUs of part 3.
#
#   tools/bench_collocd.sh [BUILD_DIR] [N_JOBS] [IDLE_S]   (build, 40, 20)
set -eu
cd "$(dirname "$0")/.."
B=${1:-build}
N=${2:-40}
IDLE=${3:-20}
for f in colloc collocd colloc-simjob tests/test_sched; do
	[ -x "$B/$f" ] || { echo "bench_collocd: $B/$f missing; build first (cmake --build --preset release)" >&2; exit 2; }
done
T=$(mktemp -d /tmp/colloc-bench.XXXXXX)
DPID=""
cleanup() {
	[ -n "$DPID" ] && kill "$DPID" 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT INT TERM

start() { # start NAME SAMPLE_INTERVAL [GPUS]
	"$B/collocd" --gpus "${3:-sim:4x40GiB,path=$T/$1.state}" --socket "$T/$1.sock" --db "$T/$1.db" \
		--state-dir "$T/$1" --set "sample_interval=$2" 2>"$T/$1.log" &
	DPID=$!
	i=0
	until "$B/colloc" --socket "$T/$1.sock" queue >/dev/null 2>&1; do
		i=$((i + 1))
		[ $i -gt 200 ] && { echo "bench_collocd: collocd did not start" >&2; cat "$T/$1.log" >&2; exit 1; }
		sleep 0.05
	done
}

ms_now() { date +%s%N | awk '{printf "%.3f", $1 / 1e6}'; }
median() { sort -n | awk '{a[NR]=$1} END {if (NR == 0) print "nan"; else if (NR % 2) print a[(NR+1)/2]; else printf "%.3f", (a[NR/2]+a[NR/2+1])/2}'; }
field() { sed -n "s/.*\"$1\": *\([0-9.]*\).*/\1/p" | head -n 1; }

echo "== 1. submit-to-running latency, $N jobs, one at a time, GPUs free"
start lat 1s
S="$T/lat.sock"
: >"$T/daemon_ms"
: >"$T/client_ms"
: >"$T/noop_ms"
k=0
while [ $k -lt "$N" ]; do
	k=$((k + 1))
	t0=$(ms_now)
	"$B/colloc" --socket "$S" queue >/dev/null
	t1=$(ms_now)
	echo "$t0 $t1" | awk '{printf "%.3f\n", $2 - $1}' >>"$T/noop_ms"
	t0=$(ms_now)
	id=$("$B/colloc" --socket "$S" submit --mem 1GiB -- sleep 0.3 | sed -n 's/^submitted job //p')
	until "$B/colloc" --socket "$S" show "$id" --json | grep -q '"state": *"\(running\|done\)"'; do :; done
	t1=$(ms_now)
	echo "$t0 $t1" | awk '{printf "%.3f\n", $2 - $1}' >>"$T/client_ms"
	"$B/colloc" --socket "$S" wait "$id" >/dev/null
	j=$("$B/colloc" --socket "$S" show "$id" --json | tr -d '\n')
	sub=$(printf '%s' "$j" | field submit_time)
	st=$(printf '%s' "$j" | field start_time)
	echo "$sub $st" | awk '{printf "%.3f\n", ($2 - $1) * 1000}' >>"$T/daemon_ms"
done
printf '  %-52s %8s ms\n' "baseline: no-op API round trip (colloc queue), median" "$(median <"$T/noop_ms")"
printf '  %-52s %8s ms   (target < 50 ms)\n' "daemon: start_time - submit_time, median" "$(median <"$T/daemon_ms")"
printf '  %-52s %8s ms\n' "client: submit call to 'running' seen, median" "$(median <"$T/client_ms")"
kill "$DPID"
wait "$DPID" 2>/dev/null || true
DPID=""

echo "== 2. one scheduling pass, 10,000 queued jobs on 1,000 GPUs"
"$B/tests/test_sched" 2>&1 | grep -E "sched: one pass" | sed 's/^\[[^]]*\] *//; s/^/  /'

echo "== 3. idle CPU of collocd (no jobs), ${IDLE} s"
cpu_pct() { # cpu_pct NAME INTERVAL [GPUS]: % of one core used over IDLE seconds
	start "$1" "$2" "${3:-}"
	sleep 1
	hz=$(getconf CLK_TCK)
	a=$(awk '{print $14 + $15}' "/proc/$DPID/stat")
	sleep "$IDLE"
	b=$(awk '{print $14 + $15}' "/proc/$DPID/stat")
	kill "$DPID"
	wait "$DPID" 2>/dev/null || true
	DPID=""
	echo "$a $b $hz $IDLE" | awk '{printf "%.3f", ($2 - $1) / $3 / $4 * 100}'
}
base=$(cpu_pct idle100 100ms)
one=$(cpu_pct idle1s 1s)
printf '  %-52s %8s %%\n' "baseline: sampling every 100 ms" "$base"
printf '  %-52s %8s %%   (target < 1%%)\n' "sampling every 1 s" "$one"
echo "$(getconf CLK_TCK) $IDLE" | awk '{printf "  (resolution: one clock tick over the interval = %.3f %%)\n", 100 / $1 / $2}'

echo "== 4. collocd on 8 fake NVML GPUs (MIG, processes, DCGM), 1 s sampling, ${IDLE} s"
fake=$B/tests/fake/full/libnvidia-ml.so.1
if [ -r "$fake" ]; then
	export COLLOC_NVML_LIBRARY="$fake" COLLOC_DCGM_LIBRARY="$B/tests/fake/full/libdcgm.so.4"
	export FAKE_NVML_SCENARIO="$PWD/tests/data/nvml/bench8.scn"
	nv=$(cpu_pct nvml8 1s nvml)
	printf '  %-52s %8s %%\n' "baseline: 4 simulated GPUs (part 3)" "$one"
	printf '  %-52s %8s %%   (target < 1%%)\n' "8 NVML GPUs, sampling every 1 s" "$nv"
else
	echo "  skipped: $fake not built (cmake --build $B --target fake_nvml_full fake_dcgm)"
fi
