#!/bin/sh
# One GPU session's measurements, in one call (the device tool lends a GPU for minutes).
#
#   sh tools/device_measure.sh OUTDIR [PREFIX]      e.g. sh tools/device_measure.sh "$OUT" h200
#
# Writes, under OUTDIR, each part bounded by its own time limit so that a stuck part costs only
# its share (parts write row by row; what a cut part measured stays):
#   PREFIX-context.csv  fixed device memory per stage (tools/measure_context.py)
#   PREFIX-memory.csv   peak memory of zoo training runs (tools/measure_gpu.py)
#   PREFIX-mlp.csv      utilization of GPUMemNet-style MLP runs (tools/measure_mlp_util.py)
#   PREFIX-host.txt     host cost per op, CPU and CUDA tensors, and the DataLoader's fit
#   PREFIX-steps.csv, PREFIX-pairs.csv   step time, utilization, pairs (measure_gpu.py --perf)
#   PREFIX-kernels.csv  the profiled step's kernels by name, count and time (the same run)
#   PREFIX-peak-tensors.csv   the blocks alive at the allocated peak (tools/measure_snapshot.py)
#   PREFIX-log.txt      everything printed, with nvidia-smi's view of the GPU first
# Budgets (s) can be changed with CTX_S, MEM_S, MLP_S, HOST_S, PERF_S, SNAP_S (0 skips a part).
# Total by default: ~530 s; the first H200 session (2026-12-04) ran all but the snapshot.
set -u
out=${1:?usage: device_measure.sh OUTDIR [PREFIX]}
pre=${2:-gpu}
here=$(dirname "$0")
py=${PYTHON:-python3}
log="$out/$pre-log.txt"
mkdir -p "$out"
export PYTHONUNBUFFERED=1
: >"$log"

part() { # name limit_s command...; a limit of 0 skips the part
	name=$1
	lim=$2
	shift 2
	[ "$lim" -gt 0 ] || return 0
	t0=$(date +%s)
	echo "== $name (limit ${lim} s) $(date -u +%FT%TZ)" >>"$log"
	timeout -k 5 "$lim" "$@" >>"$log" 2>&1
	rc=$?
	echo "== $name: rc $rc in $(($(date +%s) - t0)) s" >>"$log"
}

{
	date -u +%FT%TZ
	nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,power.limit \
		--format=csv 2>&1
	nvidia-smi 2>&1 | head -20
	$py -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda,
"cudnn", torch.backends.cudnn.version())' 2>&1
	command -v dcgmi nv-hostengine 2>&1
	grep -m1 "model name" /proc/cpuinfo
	nproc
} >>"$log" 2>&1

part snapshot "${SNAP_S:-80}" "$py" "$here/measure_snapshot.py" \
	--out "$out/$pre-peak-tensors.csv"
part context "${CTX_S:-60}" "$py" "$here/measure_context.py" --out "$out/$pre-context.csv"
part memory "${MEM_S:-120}" "$py" "$here/measure_gpu.py" --out "$out/$pre-memory.csv" \
	--budget-s "$((${MEM_S:-120} - 15))"
part mlp "${MLP_S:-100}" "$py" "$here/measure_mlp_util.py" --out "$out/$pre-mlp.csv" \
	--budget-s "$((${MLP_S:-100} - 15))"
host="$out/$pre-host.txt"
part host "${HOST_S:-40}" sh -c "$py '$here/measure_host_overhead.py' --device cpu >'$host' 2>&1;
	$py '$here/measure_host_overhead.py' --device cuda >>'$host' 2>&1;
	$py '$here/measure_dataloader.py' --repeat 5 >>'$host' 2>&1"
part perf "${PERF_S:-170}" "$py" "$here/measure_gpu.py" --perf --perf-out "$out/$pre-steps.csv" \
	--pairs-out "$out/$pre-pairs.csv" --budget-s "$((${PERF_S:-170} - 20))"
echo "== all parts done $(date -u +%FT%TZ)" >>"$log"
ls -l "$out" >>"$log"
