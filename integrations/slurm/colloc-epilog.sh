#!/bin/sh
# colloc-epilog.sh — Slurm Epilog: record what a colloc job really used.
#
# slurmd runs it as root on every node of a job when the job ends
# (slurm.conf: Epilog=/usr/local/share/colloc/slurm/colloc-epilog.sh, or call
# it from your own epilog). For a job that the colloc SPANK plugin annotated
# (SPANK_COLLOC_MODEL in the epilog's environment) it looks up the peak GPU
# memory of each of the job's processes on this node in NVML's accounting
# (`nvidia-smi --query-accounted-apps`, kept after a process exits once
# accounting mode is on: `nvidia-smi -am 1`), and appends one row to the
# history file:
#
#   job_id,node,user,model,batch,optimizer,precision,dims,estimate_bytes,peak_bytes
#
# That file is a runs file for `colloc estimate --calibrate HISTORY
# --platform BASE --out mine.json`: refit the platform profile from what
# jobs measured, then point the plugin's platform= at it, and the next
# estimates of every job carry what the earlier ones taught.
#
# The pids come from the plugin (plugstack.conf: pid_dir=DIR, the same DIR
# as COLLOC_PID_DIR here); the pid file is removed. A job whose processes
# NVML never saw (no GPU, accounting off) writes no row. This script never
# fails the job: every problem is a line on stderr (slurmd's log) and exit 0.
#
# Settings (environment, or /etc/slurm/colloc-epilog.conf, sourced when
# present, for the epilog's environment is slurmd's choice, not yours):
#   COLLOC_HISTORY   the history file (/var/lib/colloc/slurm-history.csv)
#   COLLOC_PID_DIR   the plugin's pid_dir (/run/colloc-slurm)
#   NVIDIA_SMI       the nvidia-smi binary (nvidia-smi)
#   COLLOC_NVSMI_TIMEOUT  seconds nvidia-smi may take (10)
set -u

conf=${COLLOC_EPILOG_CONF:-/etc/slurm/colloc-epilog.conf}
# shellcheck disable=SC1090
[ -r "$conf" ] && . "$conf"
history=${COLLOC_HISTORY:-/var/lib/colloc/slurm-history.csv}
pid_dir=${COLLOC_PID_DIR:-/run/colloc-slurm}
nvsmi=${NVIDIA_SMI:-nvidia-smi}
nvsmi_timeout=${COLLOC_NVSMI_TIMEOUT:-10}

job=${SLURM_JOB_ID:-}
case "$job" in
'' | *[!0-9]*) exit 0 ;;
esac
node=${SLURMD_NODENAME:-$(hostname -s)}
pids="$pid_dir/$job.$node.pids"
model=${SPANK_COLLOC_MODEL:-}
if [ -z "$model" ]; then
	rm -f "$pids"
	exit 0
fi

# A field of the CSV: no commas or newlines (no quoting in the format).
field() {
	printf '%s' "$1" | tr ',\n\r' ';  '
}

peak_mib=""
if [ -s "$pids" ] && command -v "$nvsmi" >/dev/null 2>&1; then
	peak_mib=$(timeout "$nvsmi_timeout" "$nvsmi" \
		--query-accounted-apps=pid,max_memory_usage \
		--format=csv,noheader,nounits 2>/dev/null |
		awk -F', *' -v pidfile="$pids" '
			BEGIN { while ((getline p < pidfile) > 0) want[p] = 1 }
			($1 in want) && $2 ~ /^[0-9]+$/ && $2 + 0 > max { max = $2 + 0 }
			END { if (max > 0) print max }')
fi
rm -f "$pids"
if [ -z "$peak_mib" ]; then
	echo "colloc-epilog: job $job: no NVML accounting record of its processes;" \
		"no history row" >&2
	exit 0
fi

mkdir -p "$(dirname "$history")" 2>/dev/null
header="job_id,node,user,model,batch,optimizer,precision,dims,estimate_bytes,peak_bytes"
if [ ! -s "$history" ]; then
	# Jobs ending together must not both write the header: the file is
	# made with its header inside by ln, which only one of them can do
	# (atomic, also on NFS); the others find it there.
	tmp=$history.$job.$$
	if echo "$header" >"$tmp" 2>/dev/null; then
		ln "$tmp" "$history" 2>/dev/null
		rm -f "$tmp"
	fi
	# an existing empty file (made by hand) gets the header appended
	[ -s "$history" ] || echo "$header" >>"$history" || exit 0
fi
# One short line with >>: an O_APPEND write, whole even when nodes share the file.
printf '%s,%s,%s,%s,%s,%s,%s,%s,%s,%s\n' "$job" \
	"$(field "$node")" \
	"$(field "${SLURM_JOB_USER:-}")" "$(field "$model")" \
	"$(field "${SPANK_COLLOC_BATCH:-}")" "$(field "${SPANK_COLLOC_OPTIMIZER:-}")" \
	"$(field "${SPANK_COLLOC_PRECISION:-}")" "$(field "${SPANK_COLLOC_DIMS:-}")" \
	"$(field "${SPANK_COLLOC_NEED_BYTES:-}")" "$((peak_mib * 1048576))" \
	>>"$history" || echo "colloc-epilog: job $job: cannot append to $history" >&2
exit 0
