#!/bin/sh
# Calibrate the step-time predictor's kernel efficiencies on NeuSight's
# measured kernels and write them into the platform profiles
# (data/platforms/*.json, keys "eff" and "eff_source").
#
#   tools/fit_perf.sh [BUILD_DIR] [SHARED_DATA_DIR]
#
# GPUs without measured kernels take the fit of the measured GPU of the same
# architecture (TWINS below), and say so in eff_source; the others keep the
# built-in defaults of src/estimate/perf.c.
set -eu
cd "$(dirname "$0")/.."
build=${1:-build}
data=${2:-../shared/data}
"$build/fit_perf" --data "$data"
"$build/fit_perf" --data "$data" --json | python3 -c '
import json, os, sys
TWINS = {  # profile without kernels: measured profile of the same architecture
    "h200-141gb-cu124-torch26": "h100-80gb-cu124-torch26",            # Hopper GH100
    "a100-40gb-cu124-torch26": "a100-40gb-pcie-cu124-torch26",        # same GA100 die
    "a100-80gb-sxm-cu124-torch26": "a100-80gb-cu124-torch26",
    "v100-16gb-cu124-torch26": "v100-32gb-cu124-torch26",             # same GV100 die
    # GA102/AD10x count dual-issue FP32 in their peak as L4 (AD104) does
    "a10-24gb-cu124-torch26": "l4-24gb-cu124-torch26",
    "rtx3060-cu124-torch26": "l4-24gb-cu124-torch26",
    "rtx3090-cu124-torch26": "l4-24gb-cu124-torch26",
    "rtx4060-cu124-torch26": "l4-24gb-cu124-torch26",
    "rtx4090-cu124-torch26": "l4-24gb-cu124-torch26",
}
fits = {}
for line in sys.stdin:
    r = json.loads(line)
    fits[r["profile"]] = r
def write(name, eff, source):
    path = os.path.join("data", "platforms", name + ".json")
    if not os.path.exists(path):
        print("fit_perf.sh: no profile", path, file=sys.stderr)
        return
    with open(path) as f:
        p = json.load(f)
    p["eff"] = eff
    p["eff_source"] = source
    with open(path, "w") as f:
        json.dump(p, f, indent=2)
        f.write("\n")
    print("wrote", path)
for name, r in fits.items():
    write(name, r["eff"], "fitted by tools/fit_perf.sh on NeuSight kernels of the %s "
          "(torch 2.1, CUDA 12.1, fp32)" % r["device"])
for name, twin in TWINS.items():
    if twin in fits:
        write(name, fits[twin]["eff"], "not measured: the fit of %s (same architecture), "
              "tools/fit_perf.sh" % fits[twin]["device"])
'
