#!/bin/sh
# collocd on the nvml backend, against the fake libnvidia-ml.so.1
# (tests/fake/) and the scenario tests/data/nvml/daemon.scn: MIG instances
# are placed smallest-fit first and jobs get the instance's MIG- UUID; a GPU
# that falls off the bus is reported and skipped while the daemon and the
# other GPU carry on.
#
#   test_nvml_daemon.sh PATH/TO/colloc PATH/TO/collocd PATH/TO/libnvidia-ml.so.1 SCENARIO
set -u
colloc=$1
collocd=$2
fake=$3
scenario=$4
# shellcheck source=SCRIPTDIR/../lib.sh
. "$(dirname "$0")/../lib.sh"
tmpdir colloc-nvml

# The fake NVML and its scenario, for collocd (the CLI and the jobs ignore them).
COLLOC_NVML_LIBRARY=$fake FAKE_NVML_SCENARIO=$scenario COLLOC_DCGM_LIBRARY=/nonexistent
export COLLOC_NVML_LIBRARY FAKE_NVML_SCENARIO COLLOC_DCGM_LIBRARY
daemon_start s --gpus nvml || exit 1
check backend-nvml grep -q "on backend nvml" "$T/s.log"

# Three jobs at once: each goes to the smallest MIG instance that fits its
# need + 512 MiB headroom; the 30 GiB one to the whole GPU 1.
a=$(submit s --mem 4GiB -- sh -c 'echo "CVD=$CUDA_VISIBLE_DEVICES"; sleep 1')
b=$(submit s --mem 8GiB -- sh -c 'echo "CVD=$CUDA_VISIBLE_DEVICES"; sleep 1')
d=$(submit s --mem 30GiB -- sh -c 'echo "CVD=$CUDA_VISIBLE_DEVICES"; sleep 1')
c s wait --timeout 30s "$a" "$b" "$d" >/dev/null 2>&1
check mig-small sh -c "\"$colloc\" --socket \"$T/s.sock\" logs $a | grep -qx 'CVD=MIG-33333333-aaaa-aaaa-aaaa-333333333333'"
check mig-medium sh -c "\"$colloc\" --socket \"$T/s.sock\" logs $b | grep -qx 'CVD=MIG-22222222-aaaa-aaaa-aaaa-222222222222'"
check whole-gpu sh -c "\"$colloc\" --socket \"$T/s.sock\" logs $d | grep -qx 'CVD=GPU-a100a100-1111-1111-1111-111111111111'"

c s gpus --json >"$T/gpus.json"
check gpus-mig-listed grep -q 'MIG-22222222-aaaa-aaaa-aaaa-222222222222' "$T/gpus.json"
check gpus-sm-absent-null grep -q '"sm_active": *null' "$T/gpus.json"
check activity-source-logged grep -q "scheduling on .*no DCGM SM activity\|scheduling on nothing" "$T/s.log"

# GPU 1 falls off the bus: reported, skipped, nothing else stops.
i=0
until grep -q "GPU 1: cannot read it" "$T/s.log" || [ $i -gt 100 ]; do
	sleep 0.1
	i=$((i + 1))
done
check lost-reported grep -q "GPU 1: cannot read it, not scheduling on it: .*fallen off the bus" "$T/s.log"
check daemon-alive kill -0 "$dpid"
big=$(submit s --mem 30GiB -- true)
small=$(submit s --mem 4GiB -- sh -c 'echo "CVD=$CUDA_VISIBLE_DEVICES"')
c s wait --timeout 30s "$small" >/dev/null 2>&1
check small-still-runs sh -c "\"$colloc\" --socket \"$T/s.sock\" logs $small | grep -q 'CVD=MIG-33333333'"
sleep 0.5
check big-waits sh -c "\"$colloc\" --socket \"$T/s.sock\" show $big --json | grep -q '\"state\": *\"queued\"'"
check gpus-answer sh -c "\"$colloc\" --socket \"$T/s.sock\" gpus --json >/dev/null"
c s cancel "$big" >/dev/null

# jval FILE EXPR: a Python expression on the JSON object in FILE (as j).
jval() { python3 -c "import json,sys; j=json.load(open(sys.argv[1])); print($2)" "$1"; }
# jval_show NAME ID EXPR: jval on `colloc show ID --json` of daemon NAME.
jval_show() {
	c "$1" show "$2" --json >"$T/show.json" && jval "$T/show.json" "$3"
}

# submit --model predicts on the profile whose "gpu" is GPU 0's NVML name;
# without DCGM the daemon schedules on utilization.gpu and takes that figure.
c s submit --json --model resnet18 --batch 32 -- true >"$T/m.json" 2>"$T/m.err"
check model-submitted test -s "$T/m.json"
is "$(jval "$T/m.json" 'j["util_source"], j["util_graph"]["platform"]')" \
	"graph (a100-40gb-cu124-torch26) a100-40gb-cu124-torch26" \
	"submit --model on an A100-SXM4-40GB: its profile"
is "$(jval "$T/m.json" 'j["util_pred"] == j["util_graph"]["gpu_util"]')" True \
	"no DCGM: the utilization.gpu figure"
stop s
check clean-stop test $? = 0

# With DCGM's SM activity the daemon schedules on it, and a graph prediction
# is taken on that scale. The fake libdcgm sits next to the fake NVML.
cat >"$T/dcgm.scn" <<'EOF2'
gpu 0 uuid GPU-b0000000-0000-0000-0000-000000000000 name "NVIDIA H100 80GB HBM3" bus 00000000:18:00.0 total 80GiB reserved 512MiB
mig 0 off
at 0 gpu 0 used 0 util 40 power 100000 energy 1
dcgmat 0 0 gr 0.5 sm 0.25 occ 0.125 tensor 0 dram 0.25
EOF2
COLLOC_DCGM_LIBRARY=$(dirname "$fake")/libdcgm.so.4 FAKE_NVML_SCENARIO=$T/dcgm.scn
daemon_start dc --gpus nvml || exit 1
c dc submit --json --model resnet18 --batch 32 -- true >"$T/d.json" 2>"$T/d.err"
is "$(jval "$T/d.json" 'j["util_source"], j["util_pred"] == j["util_graph"]["sm_activity"]')" \
	"graph (h100-80gb-cu124-torch26) True" "DCGM: the SM-activity figure, H100 profile"
i=0
until grep -q "scheduling on SM activity (DCGM)" "$T/dc.log" || [ $i -gt 50 ]; do
	sleep 0.1
	i=$((i + 1))
done
check dcgm-activity-source grep -q "scheduling on SM activity (DCGM)" "$T/dc.log"
stop dc

# Overuse on NVML: the liar's process (its pid, which the job writes, is read
# by the fake at every query) holds 10 GiB against a 2 GiB need while its
# neighbour runs on the same GPU: the liar is stopped and queued again with
# its measured need; the neighbour runs on. A process that is no job's is
# reported with its memory.
cat >"$T/over.scn" <<EOF2
gpu 0 uuid GPU-c0000000-0000-0000-0000-000000000000 name "NVIDIA A100-SXM4-40GB" bus 00000000:07:00.0 total 40GiB reserved 0
mig 0 off
at 0 gpu 0 used 15GiB util 50 power 100000 energy 1
proc 0 @$T/neighbour.pid used 4GiB
proc 0 @$T/liar.pid used 10GiB
proc 0 999999 used 1GiB
EOF2
COLLOC_DCGM_LIBRARY=/nonexistent FAKE_NVML_SCENARIO=$T/over.scn
daemon_start ov --gpus nvml || exit 1
n=$(submit ov --mem 4GiB -- sh -c "echo \$\$ >$T/neighbour.pid; sleep 4; rm -f $T/neighbour.pid")
l=$(submit ov --mem 2GiB -- sh -c "echo \$\$ >$T/liar.pid; sleep 1; rm -f $T/liar.pid")
c ov wait --timeout 40s "$n" "$l" >/dev/null 2>&1
c ov show "$l" >"$T/ov.show"
check nvml-overuse-stopped grep -q "overuse .*uses 10.0 GiB on GPU 0, more than its need of 2.00 GiB" "$T/ov.show"
check nvml-overuse-requeued grep -q "queued again with 10.0 GiB" "$T/ov.show"
is "$(jval_show ov "$l" 'j["state"], j["mem_source"], j["mem_need_bytes"]')" \
	"done overuse 10737418240" "nvml overuse: the liar ends done, with its measured need"
is "$(jval_show ov "$n" 'j["state"], j["attempts"]')" "done 1" "nvml overuse: the neighbour runs once"
c ov gpus >"$T/ov.gpus"
check nvml-unowned-cli grep -q "+1 not collocd's (1.00 GiB): pid 999999 (1.00 GiB)" "$T/ov.gpus"
stop ov
summary
