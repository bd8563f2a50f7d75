#!/bin/sh
# The main job, as the README's first command: install what is needed, build
# colloc (release), start collocd twice on a simulated server of 4 GPUs of
# 40 GiB — once with the `exclusive` policy (one job per GPU), once with
# `estimate-aware` (jobs share a GPU when their memory fits) — submit the
# same workload (data/workloads/demo.workload) to both, wait for every job,
# and print the two summaries side by side. The two daemons run at the same
# time, each with its own simulated GPUs; the whole run takes about a minute.
#
#   scripts/demo.sh [WORKLOAD]            (default: data/workloads/demo.workload)
#   scripts/demo.sh --estimate            the previous demo: inspect + estimate ResNet-50
set -eu
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cmake --preset release >/dev/null
cmake --build --preset release -j "$(nproc 2>/dev/null || echo 2)" >/dev/null
B=$PWD/build

if [ "${1:-}" = "--estimate" ]; then
	"$B/colloc" inspect resnet50 --batch 32 | tail -8
	echo
	"$B/colloc" estimate resnet50 --batch 32 --optimizer adam \
		--platform rtx3060-cu124-torch26 --gpu-memory 12GiB --explain
	exit 0
fi
WORKLOAD=${1:-data/workloads/demo.workload}
[ -r "$WORKLOAD" ] || { echo "demo.sh: cannot read $WORKLOAD" >&2; exit 2; }

T=$(mktemp -d /tmp/colloc-demo.XXXXXX)
POLICIES="exclusive estimate-aware"
cleanup() {
	for p in $POLICIES; do
		[ -f "$T/$p.pid" ] && kill "$(cat "$T/$p.pid")" 2>/dev/null
	done
	pkill -f "$T" 2>/dev/null || true
	rm -rf "$T"
}
trap cleanup EXIT INT TERM

for p in $POLICIES; do
	"$B/collocd" --gpus "sim:4x40GiB,path=$T/$p.state" --socket "$T/$p.sock" \
		--db "$T/$p.db" --state-dir "$T/$p" --policy "$p" 2>"$T/$p.log" &
	echo $! >"$T/$p.pid"
done
for p in $POLICIES; do
	i=0
	until "$B/colloc" --socket "$T/$p.sock" queue >/dev/null 2>&1; do
		i=$((i + 1))
		if [ $i -gt 100 ]; then
			echo "demo.sh: collocd ($p) did not start:" >&2
			cat "$T/$p.log" >&2
			exit 1
		fi
		sleep 0.1
	done
done

echo "collocd on a simulated server of 4 x 40 GiB GPUs, twice: $POLICIES"
n=0
# Columns: name gpus need util mem ramp duration [model...] (see
# data/workloads/README.md); need "estimate": `--model` with the rest.
grep -v '^[[:space:]]*\(#\|$\)' "$WORKLOAD" >"$T/jobs"
while read -r name gpus need util mem ramp duration model; do
	n=$((n + 1))
	if [ "$need" = estimate ]; then
		[ -n "$model" ] || { echo "demo.sh: $name: need 'estimate' without a model" >&2; exit 2; }
		# shellcheck disable=SC2086 # the model's arguments, split
		set -- --model $model
	else
		set -- --mem "$need"
	fi
	for p in $POLICIES; do
		"$B/colloc" --socket "$T/$p.sock" submit --name "$name" --gpus "$gpus" \
			"$@" --util "$util" -- "$B/colloc-simjob" --mem "$mem" \
			--ramp "$ramp" --duration "$duration" --util "$util" >>"$T/$p.ids"
	done
done <"$T/jobs"
echo "submitted the same $n jobs to both ($WORKLOAD); waiting for all of them..."
start=$(date +%s)
for p in $POLICIES; do
	ids=$(sed -n 's/^submitted job //p' "$T/$p.ids")
	# shellcheck disable=SC2086
	"$B/colloc" --socket "$T/$p.sock" wait --timeout 10m $ids >/dev/null 2>&1 &
	echo $! >"$T/$p.wait"
done
for p in $POLICIES; do
	wait "$(cat "$T/$p.wait")" || true
done
echo "all jobs ended after $(($(date +%s) - start)) s"
echo

for p in $POLICIES; do
	"$B/colloc" --socket "$T/$p.sock" stats >"$T/$p.stats"
done
# Side by side, with the ratio estimate-aware / exclusive where it means something.
awk -v A="$T/exclusive.stats" -v E="$T/estimate-aware.stats" '
function val(line) { return substr(line, 30) }
BEGIN {
	while ((getline l < A) > 0) { a[++n] = l }
	while ((getline l < E) > 0) { e[++m] = l }
	printf "%-28s %18s %18s %8s\n", "", "exclusive", "estimate-aware", "ratio"
	for (i = 1; i <= n; i++) {
		label = substr(a[i], 1, 28); va = val(a[i]); ve = val(e[i])
		if (label ~ /^policy/) continue
		ratio = ""
		if (label ~ /makespan|mean wait|completion|utilization|memory use/ && va + 0 > 0)
			ratio = sprintf("%.2fx", (ve + 0) / (va + 0))
		printf "%-28s %18s %18s %8s\n", label, va, ve, ratio
	}
}'
echo
echo "estimate-aware, job by job:"
"$B/colloc" --socket "$T/estimate-aware.sock" queue --all
