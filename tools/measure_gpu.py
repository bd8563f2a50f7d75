"""Measure real peak GPU memory of short training runs, for the estimator's benchmark.

Run on a machine with an NVIDIA GPU and PyTorch with CUDA (e.g. the H200 the device tool lends):

    python3 tools/measure_gpu.py --out data/measurements/h200.csv [--budget-s 420]

Each configuration (model x batch x optimizer x precision) runs in a fresh subprocess, so the
caching allocator and the CUDA context start clean, and trains 4 iterations of the loop colloc
models (docs/estimator.md):

    out = model(x); loss = crit(out, y); opt.zero_grad(); loss.backward(); opt.step()

It records torch.cuda.max_memory_allocated / max_memory_reserved, and the process's peak device
memory as NVML reports it (nvidia-smi --query-compute-apps, polled every 20 ms by a thread), plus
the GPU name, driver, CUDA, cuDNN and PyTorch versions on every row. Models are built exactly as
tools/export_zoo.py builds the zoo (same constructors; the transformers from its classes), so every
row has a graph in data/zoo/. Configurations run in order until --budget-s is spent; the CSV is
written row by row, so an interrupted run keeps what it measured.

--dry-run runs one tiny configuration on the CPU without CUDA, to check the script itself.
"""
import argparse
import csv
import os
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))

# (zoo model, batch sizes, seq) - sized for an 80-141 GB GPU, a few seconds each.
PLAN = [
    ("resnet50", (32, 128), None), ("resnet18", (64, 256), None), ("vgg16", (32, 64), None),
    ("mobilenet_v2", (64, 256), None), ("densenet121", (32,), None),
    ("efficientnet_b0", (64,), None), ("vit_b_16", (32,), None), ("convnext_tiny", (32,), None),
    ("gpt2", (4, 16), 512), ("bert_base", (16,), 128), ("t5_small", (16,), 128),
]
OPTIMIZERS = ("adam", "sgd", "adamw", "momentum", "rmsprop", "adagrad")
PRECISIONS = ("fp32", "amp-fp16", "amp-bf16")
FIELDS = ["model", "batch", "seq", "optimizer", "precision", "iterations", "max_allocated_bytes",
          "max_reserved_bytes", "nvml_peak_bytes", "step_s", "gpu", "driver", "cuda", "cudnn",
          "torch", "error"]


def configs():
    for model, batches, seq in PLAN:
        for batch in batches:
            yield (model, batch, seq, "adam", "fp32")
    for opt in OPTIMIZERS[1:]:
        yield ("resnet50", 64, None, opt, "fp32")
        yield ("gpt2", 8, 512, opt, "fp32")
    for prec in PRECISIONS[1:]:
        for model, batch, seq in (("resnet50", 128, None), ("gpt2", 16, 512),
                                  ("bert_base", 16, 128), ("vit_b_16", 32, None)):
            yield (model, batch, seq, "adam", prec)


def nvml_peak(pid, stop, result):
    """Poll nvidia-smi for pid's used memory; keep the maximum (MiB -> bytes)."""
    peak = 0
    while not stop.is_set():
        try:
            out = subprocess.run(["nvidia-smi", "--query-compute-apps=pid,used_memory",
                                  "--format=csv,noheader,nounits"], capture_output=True,
                                 text=True, timeout=5).stdout
            for line in out.splitlines():
                parts = [p.strip() for p in line.split(",")]
                if len(parts) == 2 and parts[0] == str(pid) and parts[1].isdigit():
                    peak = max(peak, int(parts[1]) << 20)
        except (OSError, subprocess.SubprocessError):
            pass
        time.sleep(0.02)
    result.append(peak)


def child(model_name, batch, seq, opt_name, prec, dry):
    """One configuration, in its own process: prints one CSV row's values as key=value."""
    import torch
    import torch.nn as nn
    sys.path.insert(0, HERE)
    import export_zoo  # noqa: E402

    dev = torch.device("cpu" if dry else "cuda")
    spec = [s for s in export_zoo.zoo() if s.name == model_name][0]
    model = spec.build().to(dev)
    model.train()
    dims = {"seq": seq or 0, "dec_seq": seq or 0}
    inputs = tuple(t.to(dev) for t in spec.make_inputs(batch, dims))
    opts = {"sgd": lambda p: torch.optim.SGD(p, lr=1e-3),
            "momentum": lambda p: torch.optim.SGD(p, lr=1e-3, momentum=0.9),
            "adam": lambda p: torch.optim.Adam(p, lr=1e-3),
            "adamw": lambda p: torch.optim.AdamW(p, lr=1e-3),
            "rmsprop": lambda p: torch.optim.RMSprop(p, lr=1e-3),
            "adagrad": lambda p: torch.optim.Adagrad(p, lr=1e-3)}
    opt = opts[opt_name](model.parameters())
    crit = nn.CrossEntropyLoss()
    scaler = torch.cuda.amp.GradScaler(enabled=(prec == "amp-fp16" and not dry))
    amp_dtype = {"amp-fp16": torch.float16, "amp-bf16": torch.bfloat16}.get(prec)
    t0 = time.time()
    for _ in range(4):
        with torch.autocast(device_type="cuda", dtype=amp_dtype or torch.float16,
                            enabled=amp_dtype is not None and not dry):
            out = model(*inputs)
            out = out[0] if isinstance(out, (tuple, list)) else out
            if out.dim() == 3:  # language models: next-token loss, as colloc's causal-lm
                logits = out[:, :-1].contiguous() if model_name in ("gpt2", "distilgpt2") else out
                target = torch.randint(0, logits.shape[-1], logits.shape[:-1], device=dev)
                loss = crit(logits.reshape(-1, logits.shape[-1]), target.reshape(-1))
            else:
                loss = crit(out, torch.randint(0, out.shape[-1], (out.shape[0],), device=dev))
        opt.zero_grad()
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
    if not dry:
        torch.cuda.synchronize()
    step_s = (time.time() - t0) / 4
    alloc = torch.cuda.max_memory_allocated() if not dry else 0
    reserved = torch.cuda.max_memory_reserved() if not dry else 0
    print(f"max_allocated_bytes={alloc}\nmax_reserved_bytes={reserved}\nstep_s={step_s:.4f}")


def versions(dry):
    import torch
    v = {"torch": torch.__version__, "cuda": str(torch.version.cuda),
         "cudnn": str(torch.backends.cudnn.version()), "gpu": "cpu (dry run)", "driver": ""}
    if not dry:
        v["gpu"] = torch.cuda.get_device_name(0)
        try:
            v["driver"] = subprocess.run(["nvidia-smi", "--query-gpu=driver_version",
                                          "--format=csv,noheader"], capture_output=True,
                                         text=True, timeout=10).stdout.strip().splitlines()[0]
        except (OSError, subprocess.SubprocessError, IndexError):
            v["driver"] = "unknown"
    return v


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.path.join(HERE, "..", "data", "measurements", "gpu.csv"))
    ap.add_argument("--budget-s", type=float, default=420)
    ap.add_argument("--dry-run", action="store_true")
    ap.add_argument("--child", nargs=5, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        m, b, s, o, p = args.child
        child(m, int(b), int(s) or None, o, p, args.dry_run)
        return 0
    ver = versions(args.dry_run)
    plan = [("resnet18", 2, None, "adam", "fp32")] if args.dry_run else list(configs())
    start = time.time()
    with open(args.out, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=FIELDS)
        w.writeheader()
        for model, batch, seq, opt, prec in plan:
            if time.time() - start > args.budget_s:
                print(f"budget spent; stopping before {model} b{batch}", flush=True)
                break
            cmd = [sys.executable, __file__, "--child", model, str(batch), str(seq or 0), opt,
                   prec] + (["--dry-run"] if args.dry_run else [])
            proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                    text=True)
            stop, peak = threading.Event(), []
            poller = None
            if not args.dry_run:
                poller = threading.Thread(target=nvml_peak, args=(proc.pid, stop, peak))
                poller.start()
            out, err = proc.communicate(timeout=300)
            stop.set()
            if poller:
                poller.join()
            vals = dict(line.split("=", 1) for line in out.splitlines() if "=" in line)
            row = {"model": model, "batch": batch, "seq": seq or "", "optimizer": opt,
                   "precision": prec, "iterations": 4,
                   "max_allocated_bytes": vals.get("max_allocated_bytes", ""),
                   "max_reserved_bytes": vals.get("max_reserved_bytes", ""),
                   "nvml_peak_bytes": peak[0] if peak else "", "step_s": vals.get("step_s", ""),
                   "error": "" if proc.returncode == 0 else (err.strip().splitlines() or ["?"])[-1][:200],
                   **ver}
            w.writerow(row)
            f.flush()
            print(f"{model:16s} b{batch:<4d} {opt:8s} {prec:8s} "
                  f"alloc {row['max_allocated_bytes']} reserved {row['max_reserved_bytes']} "
                  f"nvml {row['nvml_peak_bytes']} {row['error']}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
