"""Measure the fixed device memory a PyTorch training process holds besides its tensors.

Run on a machine with an NVIDIA GPU (through the device tool: write under $OUT):

    python3 tools/measure_context.py --out data/measurements/h200-context.csv

For each CUDA module-loading mode (CUDA_MODULE_LOADING=LAZY, PyTorch's default since CUDA 11.7,
and EAGER), one fresh process walks through the stages a training step passes, and after each
one records the process's device memory as NVML reports it (nvmlDeviceGetComputeRunningProcesses,
the number nvidia-smi shows per process), the device-wide used memory, and PyTorch's
memory_reserved / memory_allocated. What the process holds beyond memory_reserved is what the
caching allocator does not see: the CUDA context (code, per-SM local memory, the runtime's own
heaps), the cuBLAS and cuDNN handles' workspaces, and the loaded kernels' modules.

Stages, in order (each adds to the one before):
  init            torch.zeros(1) on the device: context created, allocator's first 2 MiB block
  matmul_fp32     a 4096^3 fp32 matmul on the main thread (cuBLAS handle + workspace)
  matmul_bf16     the same in bf16 (cuBLASLt)
  backward_linear a Linear layer's backward: the autograd engine's device thread takes its own
                  cuBLAS handle and workspace (PyTorch keys workspaces by handle and stream)
  conv_fwd_bwd    a 3x3 conv forward + backward, cudnn.benchmark off (cuDNN handle; the
                  workspace comes from the caching allocator, so it shows in reserved)
  conv_benchmark  the same conv with cudnn.benchmark on (the autotuner tries algorithms with
                  their workspaces)
  empty_cache     torch.cuda.empty_cache(): what stays is the fixed cost

Each row carries GPU, driver, CUDA, cuDNN and PyTorch versions. --dry-run checks the script on
the CPU (no NVML: the device columns stay empty).
"""
import argparse
import csv
import json
import os
import subprocess
import sys
import time

FIELDS = ["loading", "stage", "process_bytes", "device_used_bytes", "device_used_delta_bytes",
          "reserved_bytes", "allocated_bytes", "process_minus_reserved_bytes", "gpu", "driver",
          "cuda", "cudnn", "torch", "error"]
STAGES = ("init", "matmul_fp32", "matmul_bf16", "backward_linear", "conv_fwd_bwd",
          "conv_benchmark", "empty_cache")


def nvml_handle():
    try:
        import pynvml
        pynvml.nvmlInit()
        idx = os.environ.get("CUDA_VISIBLE_DEVICES", "0").split(",")[0].strip()
        return pynvml, pynvml.nvmlDeviceGetHandleByIndex(int(idx) if idx.isdigit() else 0)
    except Exception:  # noqa: BLE001 - no pynvml or no driver: device columns stay empty
        return None, None


def device_used(nv, h):
    return nv.nvmlDeviceGetMemoryInfo(h).used if nv else ""


def process_used(nv, h, pid):
    if not nv:
        return ""
    try:
        for p in nv.nvmlDeviceGetComputeRunningProcesses(h):
            if p.pid == pid and p.usedGpuMemory is not None:
                return p.usedGpuMemory
    except Exception:  # noqa: BLE001 - NVML refuses per-process queries in some containers
        return ""
    return ""


def child(dry):
    """One fresh process: run the stages, print one JSON line per stage."""
    import torch
    nv, h = (None, None) if dry else nvml_handle()
    dev = torch.device("cpu" if dry else "cuda")

    def sync():
        if not dry:
            torch.cuda.synchronize()
        time.sleep(0.3)  # NVML's per-process accounting lags the allocation a little

    def report(stage, err=""):
        sync()
        rec = {"stage": stage, "process_bytes": process_used(nv, h, os.getpid()),
               "device_used_bytes": device_used(nv, h),
               "reserved_bytes": torch.cuda.memory_reserved() if not dry else "",
               "allocated_bytes": torch.cuda.memory_allocated() if not dry else "", "error": err}
        print("STAGE " + json.dumps(rec), flush=True)

    keep = []
    n = 256 if dry else 4096  # the dry run only checks the code path
    steps = {
        "init": lambda: keep.append(torch.zeros(1, device=dev)),
        "matmul_fp32": lambda: keep.append(torch.randn(n, n, device=dev)
                                           @ torch.randn(n, n, device=dev)),
        "matmul_bf16": lambda: keep.append(
            torch.randn(n, n, device=dev, dtype=torch.bfloat16)
            @ torch.randn(n, n, device=dev, dtype=torch.bfloat16)),
    }

    def backward_linear():
        lin = torch.nn.Linear(1024, 1024).to(dev)
        lin(torch.randn(256, 1024, device=dev)).sum().backward()
        keep.append(lin)

    def conv(bench):
        torch.backends.cudnn.benchmark = bench
        c = torch.nn.Conv2d(64, 64, 3, padding=1).to(dev)
        c(torch.randn(2 if dry else 32, 64, 56, 56, device=dev)).sum().backward()
        keep.append(c)

    steps["backward_linear"] = backward_linear
    steps["conv_fwd_bwd"] = lambda: conv(False)
    steps["conv_benchmark"] = lambda: conv(True)
    steps["empty_cache"] = lambda: (keep.clear(), None if dry else torch.cuda.empty_cache())
    for stage in STAGES:
        try:
            steps[stage]()
            report(stage)
        except Exception as e:  # noqa: BLE001 - record the stage's failure and go on
            report(stage, f"{type(e).__name__}: {e}"[:200])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                  "..", "data", "measurements", "context.csv"))
    ap.add_argument("--dry-run", action="store_true", help="the CPU, to check the script")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        child(a.dry_run)
        return 0
    nv, h = (None, None) if a.dry_run else nvml_handle()
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import measure_gpu  # noqa: E402 - its versions(), the same columns on every CSV
    ver = measure_gpu.versions(a.dry_run)
    rows = 0
    with open(a.out, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=FIELDS)
        w.writeheader()
        for loading in ("LAZY", "EAGER"):
            base = device_used(nv, h)
            env = dict(os.environ, CUDA_MODULE_LOADING=loading)
            cmd = [sys.executable, os.path.abspath(__file__), "--child"]
            if a.dry_run:
                cmd.append("--dry-run")
            try:
                out = subprocess.run(cmd, env=env, capture_output=True, text=True,
                                     timeout=180)
                lines, err = out.stdout.splitlines(), out.stderr.strip().splitlines()
            except subprocess.TimeoutExpired:
                lines, err = [], ["timed out after 180 s"]
            got = 0
            for line in lines:
                if not line.startswith("STAGE "):
                    continue
                rec = json.loads(line[6:])
                rec["loading"] = loading
                if base != "" and rec["device_used_bytes"] != "":
                    rec["device_used_delta_bytes"] = rec["device_used_bytes"] - base
                if rec["process_bytes"] != "" and rec["reserved_bytes"] != "":
                    rec["process_minus_reserved_bytes"] = (rec["process_bytes"]
                                                           - rec["reserved_bytes"])
                rec.update(ver)
                w.writerow(rec)
                f.flush()
                got += 1
            if not got:
                w.writerow(dict(ver, loading=loading, stage="", error=(err or ["no output"])[-1]))
            rows += got
            time.sleep(1)  # let the driver release the context before the next baseline
    print(f"measure_context: {rows} stage rows -> {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
