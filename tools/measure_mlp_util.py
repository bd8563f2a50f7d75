"""Measure the GPU utilization of small MLP training runs, the host-bound regime of colloc's
utilization predictor, on the machine whose GPU and CPU run them.

Run on a machine with an NVIDIA GPU (through the device tool: write under $OUT):

    python3 tools/measure_mlp_util.py --out data/measurements/perf/h200-mlp.csv [--budget-s 100]

Each run follows the training loop of GPUMemNet's MLP runs (itu-rad/GPUMemNet,
NeuroNetGen_scripts/MLP/mlp.py, as tools/bench_perf.c describes it): 4,096 random samples held
on the CPU, a DataLoader with no workers and shuffling, the batch copied to the GPU from pageable
memory every step, nn.Sequential of Linear + ReLU, cross-entropy, Adam, fp32, loss.item() every
step. The configurations are drawn with a fixed seed over the same space (input 64-4096 wide,
2-100 classes, 1-10 layers, uniform or pyramid widths, batch 16-1024), so this file is an
independent set on a named GPU and CPU, not a copy of theirs. Per run, after a warm-up:

  util_gpu_pct   utilization.gpu sampled every 100 ms (pynvml) over >= --timed-s of training
  sm_active      DCGM field 1002 over the same window, when dcgmi answers (else empty)
  step_ms        wall time per training step over that window (time.perf_counter)
  loader_ms      the DataLoader's main-thread time per step alone (iterating it, no GPU work)
  kernels, kernel_busy_ms   kernel count and union of kernel time of one profiled step

The columns Filename / Activations-Params / Batch Size / Avg GPUTL / Avg SMACT use GPUMemNet's
names and formats, so tools/bench_perf reads this file with the same code (--mlp FILE). Rows are
written one by one; the run stops when --budget-s is spent. --dry-run runs two tiny
configurations on the CPU to check the script.
"""
import argparse
import csv
import os
import random
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
FIELDS = ["Filename", "Depth", "Activations-Params", "Batch Size", "Avg GPUTL", "Avg SMACT",
          "util_samples", "sm_samples", "steps", "step_ms", "loader_ms", "kernels",
          "kernel_busy_ms", "kernel_ms", "timed_s", "gpu", "driver", "cuda", "cudnn", "torch",
          "cpu", "error"]


def draw_configs(n, seed):
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        inp = int(round(2 ** rng.uniform(6, 12)))
        classes = rng.randint(2, 100)
        depth = rng.randint(1, 10)
        arch = rng.choice(("uniform", "pyramid"))
        batch = int(round(2 ** rng.uniform(4, 10)))
        widths, w = [], inp
        for layer in range(depth):
            if layer == depth - 1:
                w = classes
            elif arch == "pyramid":
                w = max(classes, (w + 1) // 2)
            widths.append(w)
        out.append((inp, classes, depth, arch, batch, widths))
    return out


def layer_list(inp, widths):
    """GPUMemNet's Activations-Params format: ('linear', width, params), ('ReLU', width, 0)."""
    parts, prev = [], inp
    for i, w in enumerate(widths):
        parts.append(f"('linear', {w}, {prev * w + w})")
        if i + 1 < len(widths):
            parts.append(f"('ReLU', {w}, 0)")
        prev = w
    return "[" + ", ".join(parts) + "]"


def run_one(torch, cfg, samplers, dry, timed_s):
    from torch.utils.data import DataLoader, TensorDataset
    inp, classes, depth, arch, batch, widths = cfg
    dev = torch.device("cpu" if dry else "cuda")
    layers, prev = [], inp
    for i, w in enumerate(widths):
        layers.append(torch.nn.Linear(prev, w))
        if i + 1 < len(widths):
            layers.append(torch.nn.ReLU())
        prev = w
    model = torch.nn.Sequential(*layers).to(dev)
    data = TensorDataset(torch.randn(4096, inp), torch.randint(0, classes, (4096,)))
    loader = DataLoader(data, batch_size=batch, shuffle=True, num_workers=0)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    crit = torch.nn.CrossEntropyLoss()

    def batches():
        while True:
            yield from loader

    it = batches()

    def step():
        x, y = next(it)
        x, y = x.to(dev), y.to(dev)
        loss = crit(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss.item()

    t_end = time.perf_counter() + (0.1 if dry else 0.7)
    while time.perf_counter() < t_end:  # warm-up: allocator, cuBLAS, Adam states
        step()
    # loader alone, main thread
    n_l, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < (0.05 if dry else 0.3):
        next(it)
        n_l += 1
    loader_ms = (time.perf_counter() - t0) / n_l * 1e3
    # one profiled step
    kernels = busy = ksum = ""
    try:
        from torch.profiler import ProfilerActivity, profile
        acts = [ProfilerActivity.CPU if dry else ProfilerActivity.CUDA]
        with profile(activities=acts) as prof:
            step()
        evs = []
        for e in prof.events():
            dt = getattr(e, "device_type", None)
            name = e.name or ""
            if dry or (dt is not None and "CUDA" in str(dt) and "Memcpy" not in name
                       and "Memset" not in name):
                evs.append((e.time_range.start, e.time_range.end))
        if not dry and evs:
            kernels = len(evs)
            ksum = round(sum(b - a for a, b in evs) / 1e3, 4)
            evs.sort()
            tot, cur_a, cur_b = 0, evs[0][0], evs[0][1]
            for a, b in evs[1:]:
                if a > cur_b:
                    tot += cur_b - cur_a
                    cur_a, cur_b = a, b
                else:
                    cur_b = max(cur_b, b)
            busy = round((tot + cur_b - cur_a) / 1e3, 4)
    except Exception:  # noqa: BLE001 - the profiler is a nice-to-have column
        pass
    # timed window
    n, w0, p0 = 0, time.time(), time.perf_counter()
    while time.perf_counter() - p0 < timed_s:
        step()
        n += 1
    if not dry:
        torch.cuda.synchronize()
    dt = time.perf_counter() - p0
    w1 = time.time()
    win = samplers.window(w0 + 0.25, w1) if samplers else {}
    name = f"input:{inp}_output:{classes}_depth:{depth}_arch:{arch}_batch:{batch}.out"
    return {"Filename": name, "Depth": depth, "Activations-Params": layer_list(inp, widths),
            "Batch Size": batch, "Avg GPUTL": win.get("util_gpu_pct", ""),
            "Avg SMACT": win.get("sm_active", ""), "util_samples": win.get("util_samples", 0),
            "sm_samples": win.get("sm_samples", 0), "steps": n,
            "step_ms": round(dt / n * 1e3, 4), "loader_ms": round(loader_ms, 4),
            "kernels": kernels, "kernel_busy_ms": busy, "kernel_ms": ksum,
            "timed_s": round(dt, 3)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=os.path.join(HERE, "..", "data", "measurements", "perf",
                                                  "gpu-mlp.csv"))
    ap.add_argument("--runs", type=int, default=40, help="configurations to draw (40)")
    ap.add_argument("--seed", type=int, default=20261204)
    ap.add_argument("--timed-s", type=float, default=2.0, help="timed window per run (2 s)")
    ap.add_argument("--budget-s", type=float, default=100)
    ap.add_argument("--dry-run", action="store_true", help="two tiny runs on the CPU")
    a = ap.parse_args()
    t_stop = time.time() + a.budget_s
    sys.path.insert(0, HERE)
    import torch
    import measure_gpu
    ver = measure_gpu.perf_versions(a.dry_run)
    samplers = None if a.dry_run else measure_gpu.Samplers(False)
    cfgs = draw_configs(a.runs, a.seed)
    if a.dry_run:
        cfgs = [(32, 4, 2, "uniform", 16, [32, 4]), (64, 8, 3, "pyramid", 32, [32, 16, 8])]
    done = 0
    try:
        with open(a.out, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=FIELDS)
            w.writeheader()
            for cfg in cfgs:
                if time.time() + a.timed_s + 2 > t_stop:
                    break
                try:
                    row = run_one(torch, cfg, samplers, a.dry_run,
                                  0.2 if a.dry_run else a.timed_s)
                except Exception as e:  # noqa: BLE001 - keep the row with its error
                    row = {"Filename": str(cfg), "error": f"{type(e).__name__}: {e}"[:200]}
                row.update(ver)
                w.writerow(row)
                f.flush()
                done += 1
    finally:
        if samplers:
            samplers.stop()
    print(f"measure_mlp_util: {done} runs -> {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
