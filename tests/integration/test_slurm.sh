#!/bin/sh
# colloc on a real Slurm 22.05 (docs/slurm.md), end to end on this machine:
# slurmctld and three slurmd (-N n1..n3) in the foreground on private ports,
# auth/none, two fake GPUs per node (device nodes made with mknod; gres
# refuses regular files), the colloc SPANK plugin in plugstack.conf,
# integrations/slurm/job_submit.lua, and colloc-epilog.sh as the Epilog with
# a fake nvidia-smi. gres.conf and colloc_submit.conf come from `colloc
# slurm-gres`. It checks that
#   - jobs annotated with --colloc-model/--colloc-batch get gres:shard:N with
#     N = ceil(estimate / 1 GiB), say so in AdminComment, and run several to
#     a GPU (five jobs on one node's two GPUs at once, at least two sharing);
#   - each of their tasks has the fence CUDA_MPS_PINNED_DEVICE_MEM_LIMIT and
#     COLLOC_PEAK_BYTES, and srun -N3 puts them into the tasks of all 3 nodes;
#   - a job that no GPU can hold is refused at submit ("sbatch: error:
#     colloc: ...");
#   - jobs without a model keep their request (none, or gres:gpu:1) and get
#     no fence;
#   - the epilog writes history rows that `colloc estimate --calibrate` reads.
# Usage: test_slurm.sh PATH/TO/colloc PATH/TO/colloc_spank.so REPO
# Exits 77 (skipped) when not root, or Slurm or the plugin is missing.
# Every daemon it starts is stopped by pid on exit. Prints "N passed, M failed".
set -u
colloc=$1
plugin=${2:-}
repo=$3
pass=0
fail=0
G=1073741824
abs() { case "$1" in /*) echo "$1" ;; '') echo "" ;; *) echo "$(pwd)/$1" ;; esac; }
colloc=$(abs "$colloc")
plugin=$(abs "$plugin")
repo=$(abs "$repo")

skip() {
	echo "SKIP: $*"
	exit 77
}
[ "$(id -u)" = 0 ] || skip "needs root (slurmd runs jobs as their users; mknod)"
for b in slurmctld slurmd sbatch srun squeue scontrol scancel sinfo; do
	command -v "$b" >/dev/null 2>&1 ||
		skip "$b not found (Debian: apt-get install slurmctld slurmd slurm-client)"
done
[ -n "$plugin" ] && [ -f "$plugin" ] ||
	skip "the SPANK plugin was not built (needs slurm/spank.h: apt-get install libslurm-dev)"
slurmctld -V 2>/dev/null | grep -q '22\.05' ||
	echo "note: written for Slurm 22.05, found $(slurmctld -V 2>&1)"

T=$(mktemp -d /tmp/colloc-slurm.XXXXXX)
chmod 755 "$T"
pids=""
cleanup() {
	if [ -n "$pids" ]; then
		# Jobs first, so that no slurmstepd outlives its slurmd.
		timeout 5 scancel --quiet --full --user=root >/dev/null 2>&1
		k=0
		while [ $k -lt 20 ] && [ -n "$(timeout 2 squeue -h -o %i 2>/dev/null)" ]; do
			sleep 0.25
			k=$((k + 1))
		done
		for p in $pids; do kill "$p" 2>/dev/null; done
		for p in $pids; do
			k=0
			while kill -0 "$p" 2>/dev/null && [ $k -lt 40 ]; do
				sleep 0.1
				k=$((k + 1))
			done
			kill -9 "$p" 2>/dev/null
		done
		# A slurmstepd of ours that is left: its environment names our conf.
		for d in /proc/[0-9]*; do
			[ "$(cat "$d/comm" 2>/dev/null)" = slurmstepd ] || continue
			if { tr '\0' '\n' <"$d/environ"; } 2>/dev/null | grep -qx "SLURM_CONF=$T/slurm.conf"; then
				kill -9 "${d#/proc/}" 2>/dev/null
			fi
		done
	fi
	if [ "$fail" != 0 ] || [ -n "${COLLOC_TEST_KEEP:-}" ]; then
		echo "logs kept in $T/log"
		for f in "$T"/log/*; do
			[ -f "$f" ] || continue
			echo "--- $f (last lines)"
			tail -n 15 "$f"
		done
	else
		rm -rf "$T"
	fi
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

ok() { pass=$((pass + 1)); }
bad() {
	echo "FAIL $*"
	fail=$((fail + 1))
}
is() {
	if [ "$1" = "$2" ]; then ok; else bad "$3 (got '$1', expected '$2')"; fi
}
has() {
	case "$1" in
	*"$2"*) ok ;;
	*) bad "$3 (got '$1', expected it to contain '$2')" ;;
	esac
}
finish() {
	echo "$pass passed, $fail failed"
	[ "$fail" = 0 ]
	exit $?
}

# Five free ports (listening sockets are in /proc/net/tcp*, state 0A).
in_use() {
	hex=$(printf '%04X' "$1")
	cat /proc/net/tcp /proc/net/tcp6 2>/dev/null | awk -v h=":$hex" \
		'$4 == "0A" && substr($2, length($2) - 4) == h { f = 1 } END { exit !f }'
}
base=$((20000 + ($$ % 4000) * 10))
tries=0
while :; do
	busy=0
	for k in 0 1 2 3 4; do in_use $((base + k)) && busy=1; done
	[ $busy = 0 ] && break
	tries=$((tries + 1))
	[ $tries -lt 20 ] || skip "no five free ports near $base"
	base=$((base + 50))
done

mkdir -p "$T/dev" "$T/state" "$T/log" "$T/out" "$T/pids"
export SLURM_CONF="$T/slurm.conf"
unset SLURM_JOB_ID SLURM_JOBID SBATCH_PARTITION SLURM_PARTITION 2>/dev/null

# --- configuration: the GPUs' lines from `colloc slurm-gres` ---------------
nodes="n1 n2 n3"
: >"$T/gres.conf"
node_lines=""
for n in $nodes; do
	mkdir -p "$T/spool/$n"
	for g in 0 1; do mknod "$T/dev/$n-gpu$g" c 1 3 || skip "mknod failed"; done
	if ! "$colloc" slurm-gres --gpus "sim:2x16GiB,path=$T/sim-$n.state" --node "$n" \
		--device-prefix "$T/dev/$n-gpu" >"$T/gres-$n.txt" 2>"$T/log/slurm-gres.err"; then
		bad "colloc slurm-gres failed: $(cat "$T/log/slurm-gres.err")"
		finish
	fi
	grep "^NodeName=$n Name=" "$T/gres-$n.txt" >>"$T/gres.conf"
	gres=$(sed -n "s/^NodeName=$n \(Gres=.*\)$/\1/p" "$T/gres-$n.txt")
	port=$((base + 2 + ${n#n} - 1))
	node_lines="${node_lines}NodeName=$n NodeHostname=localhost NodeAddr=127.0.0.1 Port=$port CPUs=8 RealMemory=1000 $gres State=UNKNOWN
"
done
is "$(grep -c 'Name=shard Count=16 ' "$T/gres.conf")" 6 "slurm-gres: 16 shards per 16 GiB GPU"
grep -E '^(shard_size|max_shards_per_gpu)=' "$T/gres-n1.txt" >"$T/colloc_submit.conf"
is "$(cat "$T/colloc_submit.conf" | tr '\n' ' ')" "shard_size=1073741824 max_shards_per_gpu=16 " \
	"slurm-gres: colloc_submit.conf keys"

cat >"$T/slurm.conf" <<EOF
ClusterName=colloctest
SlurmctldHost=localhost
SlurmctldPort=$base
SlurmdPort=$((base + 1))
AuthType=auth/none
CredType=cred/none
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$T/state
SlurmdSpoolDir=$T/spool/%n
SlurmctldPidFile=$T/slurmctld.pid
SlurmdPidFile=$T/slurmd-%n.pid
SlurmctldLogFile=$T/log/slurmctld.log
SlurmdLogFile=$T/log/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SlurmdParameters=config_overrides
SchedulerParameters=batch_sched_delay=0
MailProg=/bin/true
ReturnToService=2
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
GresTypes=gpu,shard
JobSubmitPlugins=lua
PlugStackConfig=$T/plugstack.conf
Epilog=$T/epilog.sh
${node_lines}PartitionName=all Nodes=n[1-3] Default=YES MaxTime=INFINITE State=UP
PartitionName=one Nodes=n1 MaxTime=INFINITE State=UP
EOF
echo "required $plugin colloc=$colloc timeout=60 pid_dir=$T/pids" >"$T/plugstack.conf"
cp "$repo/integrations/slurm/job_submit.lua" "$T/job_submit.lua"
# The fake NVML accounting: every recorded pid peaked at 1500 MiB.
cat >"$T/nvidia-smi" <<EOF
#!/bin/sh
cat "$T"/pids/*.pids 2>/dev/null | awk '{ print \$1 ", 1500" }'
EOF
cat >"$T/epilog.sh" <<EOF
#!/bin/sh
COLLOC_HISTORY=$T/history.csv COLLOC_PID_DIR=$T/pids NVIDIA_SMI=$T/nvidia-smi \
	exec sh "$repo/integrations/slurm/colloc-epilog.sh" 2>>"$T/log/epilog.err"
EOF
cat >"$T/job.sh" <<EOF
#!/bin/sh
env >"$T/out/\$SLURM_JOB_ID.env"
sleep "\${1:-8}"
EOF
chmod 755 "$T/nvidia-smi" "$T/epilog.sh" "$T/job.sh"

# --- start the daemons --------------------------------------------------
start=$(date +%s)
slurmctld -D -c >"$T/log/slurmctld.out" 2>&1 &
pids="$!"
for n in $nodes; do
	slurmd -D -N "$n" >"$T/log/slurmd-$n.out" 2>&1 &
	pids="$pids $!"
done
k=0
idle=""
while [ $k -lt 40 ]; do
	idle=$(timeout 2 sinfo -h -p all -t idle -o %D 2>/dev/null)
	[ "$idle" = 3 ] && break
	for p in $pids; do
		kill -0 "$p" 2>/dev/null || k=1000
	done
	sleep 0.25
	k=$((k + 1))
done
if [ "$idle" != 3 ]; then
	bad "the cluster did not come up with 3 idle nodes in 10 s, or a daemon died (sinfo: '$idle')"
	finish
fi
ok

# --- the estimates the jobs should be sized by --------------------------
peak() {
	"$colloc" estimate "$1" --batch "$2" --json | sed -n 's/.*"peak_device_bytes": *\([0-9]*\).*/\1/p'
}
p50=$(peak resnet50 16)
p18=$(peak resnet18 32)
case "$p50$p18" in
'' | *[!0-9]*)
	bad "colloc estimate --json gave no peak_device_bytes ('$p50', '$p18')"
	finish
	;;
esac
s50=$(((p50 + G - 1) / G))
s18=$(((p18 + G - 1) / G))

field() { # JOBID KEY: one field of scontrol show job
	timeout 5 scontrol show job "$1" 2>/dev/null | tr ' ' '\n' | sed -n "s/^$2=//p" | head -n 1
}
submit() { # sbatch ARGS...: prints the job id
	timeout 30 sbatch --parsable -o /dev/null "$@" 2>>"$T/log/sbatch.err" | cut -d';' -f1
}

# --- packing: five annotated jobs on one node's two 16-shard GPUs --------
jobs=""
for spec in "resnet50 16 $s50 $p50" "resnet50 16 $s50 $p50" "resnet50 16 $s50 $p50" \
	"resnet18 32 $s18 $p18" "resnet18 32 $s18 $p18"; do
	set -- $spec
	j=$(submit -p one --colloc-model="$1" --colloc-batch="$2" "$T/job.sh" 12)
	if [ -z "$j" ]; then
		bad "sbatch --colloc-model=$1 --colloc-batch=$2 failed: $(tail -n 3 "$T/log/sbatch.err")"
		continue
	fi
	jobs="$jobs $j:$3:$4"
done

# --- a job that no GPU can hold is refused at submit ---------------------
err=$(timeout 30 sbatch -o /dev/null --colloc-model=resnet50 --colloc-batch=1024 \
	"$T/job.sh" 1 2>&1)
rc=$?
echo "$err" >"$T/log/refused.txt"
if [ $rc = 0 ]; then bad "resnet50 at batch 1024 was accepted: $err"; else ok; fi
has "$err" "sbatch: error: colloc: resnet50 at batch 1024 needs" "refusal message"
has "$err" "the largest GPU has 16 shards" "refusal says why"

# --- unannotated jobs are left alone -------------------------------------
plain=$(submit -p all -w n3 "$T/job.sh" 1)
plain_gpu=$(submit -p all -w n3 --gres=gpu:1 "$T/job.sh" 1)

# --- the fence on every task of 3 nodes (srun's own allocation) ----------
srun_out=$(timeout 40 srun -p all -N3 --colloc-model=resnet18 --colloc-batch=32 \
	sh -c 'echo "$SLURMD_NODENAME $CUDA_MPS_PINNED_DEVICE_MEM_LIMIT $COLLOC_PEAK_BYTES $SLURM_SHARDS_ON_NODE"' \
	2>"$T/log/srun.err" | sort)
want=""
for n in $nodes; do
	want="$want$n 0=$((s18 * 1024))M $p18 $s18
"
done
is "$srun_out
" "$want" "srun -N3: fence, estimate and shards in every task"

# --- the annotated jobs: all running at once, sized, fenced, packed ------
k=0
while [ $k -lt 80 ]; do
	running=0
	for e in $jobs; do
		j=${e%%:*}
		[ -s "$T/out/$j.env" ] && running=$((running + 1))
	done
	[ $running = 5 ] && break
	sleep 0.25
	k=$((k + 1))
done
is "$running" 5 "five annotated jobs running on n1 at once"
is "$(timeout 5 squeue -h -p one -t R -o %i | wc -l)" 5 "squeue: five running on partition one"
gpus_used=""
for e in $jobs; do
	j=${e%%:*}
	rest=${e#*:}
	shards=${rest%%:*}
	peak_b=${rest#*:}
	is "$(field "$j" TresPerNode)" "gres:shard:$shards" "job $j: TresPerNode"
	timeout 5 scontrol show job "$j" >"$T/log/job-$j.txt" 2>&1
	has "$(cat "$T/log/job-$j.txt")" "AdminComment=colloc: " "job $j: AdminComment"
	has "$(timeout 5 scontrol show job "$j")" "-> gres:shard:$shards (1 shard = 1.00 GiB)" \
		"job $j: AdminComment says what was decided"
	envf="$T/out/$j.env"
	is "$(sed -n 's/^CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=//p' "$envf")" "0=$((shards * 1024))M" \
		"job $j: fence"
	is "$(sed -n 's/^COLLOC_PEAK_BYTES=//p' "$envf")" "$peak_b" "job $j: COLLOC_PEAK_BYTES"
	is "$(sed -n 's/^SLURM_SHARDS_ON_NODE=//p' "$envf")" "$shards" "job $j: shards on node"
	gpu=$(sed -n 's/^CUDA_VISIBLE_DEVICES=//p' "$envf")
	gpus_used="$gpus_used $gpu:$shards"
done
# Packed: some GPU holds two or more of the five, none holds more than 16.
per_gpu=$(echo "$gpus_used" | tr ' ' '\n' | awk -F: 'NF == 2 { n[$1]++; s[$1] += $2 }
	END { for (g in n) print g, n[g], s[g] }')
echo "jobs per GPU of n1 (gpu jobs shards): $(echo "$per_gpu" | tr '\n' ';')"
most=$(echo "$per_gpu" | awk '$2 > m { m = $2 } END { print m + 0 }')
over=$(echo "$per_gpu" | awk '$3 > 16 { print }')
if [ "$most" -ge 2 ]; then ok; else bad "no GPU holds two annotated jobs ($per_gpu)"; fi
is "$over" "" "no GPU holds more than its 16 shards"

# --- the unannotated jobs ---------------------------------------------------
if [ -n "$plain" ] && [ -n "$plain_gpu" ]; then
	is "$(field "$plain" TresPerNode)" "" "plain job: no gres added"
	is "$(field "$plain" AdminComment)" "" "plain job: no AdminComment"
	is "$(field "$plain_gpu" TresPerNode)" "gres:gpu:1" "gpu:1 job: untouched"
	is "$(field "$plain_gpu" AdminComment)" "" "gpu:1 job: no AdminComment"
	k=0
	while [ $k -lt 40 ] && ! [ -s "$T/out/$plain_gpu.env" ]; do
		sleep 0.25
		k=$((k + 1))
	done
	is "$(grep -c -E '^(CUDA_MPS_PINNED_DEVICE_MEM_LIMIT|COLLOC_(PEAK|NEED|FENCE)_[A-Z_]*|SLURM_SPANK_COLLOC_[A-Z_]*)=' "$T/out/$plain_gpu.env" 2>/dev/null)" \
		0 "gpu:1 job: no fence, no COLLOC_ variables"
else
	bad "plain sbatch failed: $(tail -n 3 "$T/log/sbatch.err")"
fi

# --- feedback: the epilog's history ----------------------------------------
# Eight rows: five batch jobs and the srun job on each of 3 nodes.
k=0
rows=0
while [ $k -lt 80 ]; do
	rows=$(grep -c ',1572864000$' "$T/history.csv" 2>/dev/null)
	[ "${rows:-0}" -ge 8 ] && break
	sleep 0.25
	k=$((k + 1))
done
is "$rows" 8 "epilog: one history row per annotated job and node"
is "$(head -n 1 "$T/history.csv" 2>/dev/null)" \
	"job_id,node,user,model,batch,optimizer,precision,dims,estimate_bytes,peak_bytes" \
	"history header"
if "$colloc" estimate --calibrate "$T/history.csv" --platform rtx3060-cu124-torch26 >"$T/log/calibrate.out" 2>&1; then
	ok
else
	bad "colloc estimate --calibrate cannot read the history: $(tail -n 2 "$T/log/calibrate.out")"
fi
is "$(ls "$T/pids" | wc -l)" 0 "epilog removed the pid files"

echo "cluster up to checks done in $(($(date +%s) - start)) s"
finish
