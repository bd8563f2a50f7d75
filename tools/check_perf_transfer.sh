#!/bin/sh
# Out-of-fit check of the kernel calibration: predict NeuSight's end-to-end rows of a GPU with
# efficiencies that were NOT fitted on that GPU's kernels, in a scratch copy of data/:
#   1. twin: the A100-80GB rows with the A100-PCIE-40GB fit (same architecture; how the H200,
#      A100-SXM, V100-16GB and RTX profiles get theirs);
#   2. leave-one-out: the V100 and A100-80GB rows with the median fit of the other GPUs (other
#      architectures; how an unmeasured GPU of a new architecture would fare).
#
#   tools/check_perf_transfer.sh [BUILD_DIR] [SHARED_DATA_DIR]
set -eu
cd "$(dirname "$0")/.."
build=${1:-build}
shared=${2:-../shared/data}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$build/fit_perf" --data "$shared" --json >"$tmp/fit.json"
run() { # $1 label, $2 profile, $3 python expression selecting the eff, $4 row filter
	rm -rf "$tmp/data"
	cp -r data "$tmp/data"
	python3 - "$tmp/fit.json" "$tmp/data/platforms/$2.json" "$3" <<'PY'
import json, statistics, sys
rows = {json.loads(l)["device"]: json.loads(l) for l in open(sys.argv[1])}
def median_of(devs):
    eff = {}
    for c in ["gemm", "bmm", "elem", "softmax", "norm"]:
        v = [rows[d]["eff"][c] for d in devs if c in rows[d]["eff"]]
        eff[c] = {k: round(statistics.median(x[k] for x in v), 2)
                  for k in ("eta_compute", "eta_memory", "fixed_us")}
    return eff
p = json.load(open(sys.argv[2]))
p["eff"] = eval(sys.argv[3])
json.dump(p, open(sys.argv[2], "w"), indent=2)
PY
	echo "$1"
	"$build/tests/bench_perf" --data "$tmp/data" --shared "$shared" 2>/dev/null |
		sed -n '/^1\./,/^median/p' | grep "$4" | grep -v skipped |
		python3 -c '
import statistics, sys
e = []
for line in sys.stdin:
    f = line.split()
    print("  %s bs %s measured %s predicted %s %s" % (f[0], f[2], f[4], f[5], f[6]))
    e.append(float(f[6].rstrip("%")))
print("  median |error| %.1f%%" % statistics.median(e))'
}
run "twin: A100-80GB with the A100-PCIE-40GB fit" a100-80gb-cu124-torch26 \
	'rows["NVIDIA A100-PCIE-40GB"]["eff"]' A100_80GB
run "leave-one-out: V100 with the median of the other GPUs" v100-32gb-cu124-torch26 \
	'median_of([d for d in rows if d != "Tesla V100-PCIE-32GB"])' V100
run "leave-one-out: A100-80GB with the median of the non-A100 GPUs" a100-80gb-cu124-torch26 \
	'median_of([d for d in rows if "A100" not in d])' A100_80GB
