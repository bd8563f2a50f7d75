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

--perf measures step time instead (docs/perf-model.md, "Measuring on a GPU"):

    python3 tools/measure_gpu.py --perf --perf-out data/measurements/perf/h200-steps.csv \
        [--pairs-out data/measurements/perf/h200-pairs.csv] [--budget-s 300]

For each model x batch of PERF_PLAN (one subprocess each) and each precision (fp32: TF32 off
for matmuls, cuDNN at its default; tf32: torch.backends.cuda.matmul.allow_tf32 and
cudnn.allow_tf32 on; amp-fp16 with GradScaler; amp-bf16), Adam, the batch already on the GPU:
after --warmup steps, at least --steps (20) steps of the loop above plus loss.item(), and at
least --min-timed-s (2 s, so that the 100 ms samplers see enough), each timed with CUDA events
(median, mean); forward+loss and backward alone, synchronized, no optimizer step (NeuSight's
definition); utilization.gpu sampled every 100 ms (pynvml if importable, else nvidia-smi -lms 100)
and DCGM SM activity, field 1002 (dcgmi dmon -d 100, when dcgmi exists; empty otherwise),
averaged over the timed steps' window; kernel count, summed and union kernel time of one step
under torch.profiler (ProfilerActivity.CUDA), and the same step's kernels by name, count and
time in PREFIX-kernels.csv beside the steps CSV (which convolution, layout and reduction kernels
cuDNN and ATen launch per op: the rules of docs/perf-model.md's step model). Then PAIRS: two subprocesses train at once on the
GPU (both warmed up, then timed together), each one's step time alone and together, and the
GPU's utilization and SM activity while both run. Both CSVs are written row by row, every row
with GPU, driver, CUDA, cuDNN, PyTorch versions and the host CPU; budget as above. With
--dry-run, --perf runs the same code on the CPU (one tiny model, one pair, perf_counter for CUDA
events, CPU ops for kernels) and leaves the GPU-only columns empty; its CSVs go to the temp
folder unless --perf-out is given.
"""
import argparse
import contextlib
import csv
import json
import os
import queue
import shutil
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
_T0 = time.time()

# (zoo model, batch sizes, seq) - sized for an 80-141 GB GPU, a few seconds each.
PLAN = [
    ("resnet50", (32, 128), None), ("resnet18", (64, 256), None), ("vgg16", (32, 64), None),
    ("mobilenet_v2", (64, 256), None), ("densenet121", (32,), None),
    ("efficientnet_b0", (64,), None), ("vit_b_16", (32,), None), ("convnext_tiny", (32,), None),
    ("gpt2", (4, 16), 512), ("bert_base", (16,), 128), ("t5_small", (16,), 128),
]
OPTIMIZERS = ("adam", "sgd", "adamw", "momentum", "rmsprop", "adagrad")
PRECISIONS = ("fp32", "amp-fp16", "amp-bf16")
FIELDS = ["model", "batch", "seq", "optimizer", "precision", "loss", "attention", "iterations",
          "max_allocated_bytes",
          "max_reserved_bytes", "nvml_peak_bytes", "step_s", "gpu", "driver", "cuda", "cudnn",
          "torch", "error"]


# The language models whose next-token loss the scripts shift themselves (out[:, :-1]).
CAUSAL_LMS = ("gpt2", "distilgpt2")


def default_loss(model):
    """The loss memory_loop_loss() computes for model unless told otherwise, in colloc's names:
    the language models shift in the loop, whose name `logits` keeps the copy."""
    return "causal-lm-loop" if model in CAUSAL_LMS else "cross-entropy"


def configs():
    """(model, batch, seq, optimizer, precision, loss, attention) in the order they run."""
    for model, batches, seq in PLAN:
        for batch in batches:
            yield (model, batch, seq, "adam", "fp32", default_loss(model), "eager")
    # Hugging Face's ForCausalLMLoss since transformers 4.49 (colloc's causal-lm): the labels
    # shifted by padding, the logits upcast by .float(), nothing held but the output; with the
    # eager attention of the zoo's GPT-2 and with SDPA, transformers' default for GPT-2 since
    # 4.42 (one scaled_dot_product_attention per layer, colloc's --attention sdpa)
    for attention in ("eager", "sdpa"):
        for prec in ("fp32", "amp-bf16"):
            yield ("gpt2", 8, 512, "adam", prec, "causal-lm", attention)
    for opt in OPTIMIZERS[1:]:
        yield ("resnet50", 64, None, opt, "fp32", "cross-entropy", "eager")
        yield ("gpt2", 8, 512, opt, "fp32", default_loss("gpt2"), "eager")
    for prec in PRECISIONS[1:]:
        for model, batch, seq in (("resnet50", 128, None), ("gpt2", 16, 512),
                                  ("bert_base", 16, 128), ("vit_b_16", 32, None)):
            yield (model, batch, seq, "adam", prec, default_loss(model), "eager")


def csv_model(model, attention):
    """The model column: what colloc estimates the run from. The zoo's graph for eager attention;
    with SDPA the bundled Hugging Face configuration the zoo's model was written from (hf:MODEL,
    colloc's data/hf/MODEL, estimated with --attention sdpa; the same graph as the zoo's in eager,
    test_hf)."""
    return model if attention == "eager" else "hf:" + model


def grad_scaler(torch, enabled):
    """torch.amp.GradScaler("cuda") where it exists (2.3+; torch.cuda.amp's is deprecated)."""
    if hasattr(torch, "amp") and hasattr(torch.amp, "GradScaler"):
        return torch.amp.GradScaler("cuda", enabled=enabled)
    return torch.cuda.amp.GradScaler(enabled=enabled)


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


def memory_loop_loss(torch, model, inputs, crit, model_name, dev, loss_kind=None):
    """out = model(x); loss = crit(out, y) as the memory runs write it, with a new random target
    each time; language models take the next-token loss (gpt2, distilgpt2: the logits shifted by
    one, a copy, colloc's causal-lm-loop). Returns (out, logits, target, loss): the caller holds all
    four names until the next iteration replaces them, as the measured loop did (so the shifted
    copy of gpt2 stays alive through backward). loss_kind "causal-lm": transformers 4.49's
    ForCausalLMLoss instead (labels padded with -100 and shifted, crit on logits.float(), no
    copy held; crit's ignore_index is its default, -100)."""
    out = model(*inputs)
    out = out[0] if isinstance(out, (tuple, list)) else out
    if out.dim() == 3 and loss_kind == "causal-lm":
        labels = torch.randint(0, out.shape[-1], out.shape[:-1], device=dev)
        target = torch.nn.functional.pad(labels, (0, 1), value=-100)[..., 1:].contiguous()
        return out, None, target, crit(out.float().reshape(-1, out.shape[-1]),
                                       target.reshape(-1))
    if out.dim() == 3:
        logits = out[:, :-1].contiguous() if model_name in CAUSAL_LMS else out
        target = torch.randint(0, logits.shape[-1], logits.shape[:-1], device=dev)
        return out, logits, target, crit(logits.reshape(-1, logits.shape[-1]),
                                         target.reshape(-1))
    target = torch.randint(0, out.shape[-1], (out.shape[0],), device=dev)
    return out, out, target, crit(out, target)


def child(model_name, batch, seq, opt_name, prec, dry, loss_kind=None, attention="eager"):
    """One configuration, in its own process: prints one CSV row's values as key=value."""
    import torch
    import torch.nn as nn
    sys.path.insert(0, HERE)
    import export_zoo  # noqa: E402

    dev = torch.device("cpu" if dry else "cuda")
    spec = [s for s in export_zoo.zoo() if s.name == model_name][0]
    model = spec.build().to(dev)
    model.train()
    if attention == "sdpa":
        for m in model.modules():
            if isinstance(m, export_zoo.GPT2Attention):
                m.sdpa = True
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
    scaler = grad_scaler(torch, prec == "amp-fp16" and not dry)
    amp_dtype = {"amp-fp16": torch.float16, "amp-bf16": torch.bfloat16}.get(prec)
    t0 = time.time()
    for _ in range(4):
        with torch.autocast(device_type="cuda", dtype=amp_dtype or torch.float16,
                            enabled=amp_dtype is not None and not dry):
            out, logits, target, loss = memory_loop_loss(torch, model, inputs, crit,
                                                         model_name, dev, loss_kind)
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


# ----------------------------------------------------------------------------------------------
# --perf: step time, utilization and SM activity (docs/perf-model.md, "Measuring on a GPU")
# ----------------------------------------------------------------------------------------------

# (zoo model, batch, seq), each run at every precision of PERF_PRECISIONS, in this order (the
# budget may cut the tail). One subprocess per (model, batch) runs the precisions in turn.
PERF_PLAN = [
    ("resnet50", 32, None), ("resnet18", 32, None), ("bert_base", 16, 128), ("gpt2", 4, 512),
    ("mobilenet_v2", 64, None), ("vit_b_16", 32, None), ("resnet18", 128, None),
    ("resnet50", 128, None), ("gpt2", 16, 512),
]
PERF_PRECISIONS = ("fp32", "tf32", "amp-fp16", "amp-bf16")
# Collocated pairs: (model, batch, seq, precision) x 2. Members come from PERF_PLAN, so their
# "alone" step time is the perf row measured earlier in the same run.
PAIRS = [
    (("resnet18", 32, None, "fp32"), ("resnet18", 32, None, "fp32")),
    (("bert_base", 16, 128, "fp32"), ("resnet50", 32, None, "amp-fp16")),
    (("gpt2", 4, 512, "amp-bf16"), ("resnet18", 32, None, "fp32")),
]
DRY_PERF_PLAN = [("resnet18", 2, None)]
DRY_PAIRS = [(("resnet18", 2, None, "fp32"), ("mobilenet_v3_small", 2, None, "fp32"))]
PERF_OPTIMIZER = "adam"
VERSION_FIELDS = ["gpu", "driver", "cuda", "cudnn", "torch", "cpu"]
PERF_FIELDS = [
    "model", "batch", "seq", "optimizer", "precision", "loss", "matmul_tf32", "cudnn_tf32",
    "cudnn_benchmark", "input_on_gpu", "warmup", "steps", "timed_s", "step_ms_median",
    "step_ms_mean", "step_ms_stdev", "step_ms_min", "wall_step_ms_median", "loop_gpu_ms_median",
    "loop_fwd_bwd_ms_median", "fwd_bwd_ms_median", "fwd_bwd_ms_mean", "forward_ms_median",
    "backward_ms_median", "throughput_samples_per_s", "amp_skipped_steps", "util_gpu_pct",
    "util_samples", "util_source", "sm_active", "sm_samples", "sm_source", "profile_device",
    "kernels", "kernel_ms", "kernel_busy_ms", "kernel_span_ms", "kernel_util", "memcpy_count",
    "memcpy_ms", "max_allocated_bytes", "t_start", "t_end"] + VERSION_FIELDS + ["error"]
PAIR_FIELDS = (
    ["pair"]
    + [f"{m}_{k}" for m in ("a", "b") for k in (
        "model", "batch", "seq", "precision", "alone_step_ms", "alone_source",
        "alone_util_gpu_pct", "alone_sm_active", "together_step_ms_median",
        "together_step_ms_mean", "together_steps", "slowdown")]
    + ["together_window_s", "together_util_gpu_pct", "util_samples", "util_source",
       "together_sm_active", "sm_samples", "sm_source", "t_start", "t_end"]
    + VERSION_FIELDS + ["error"])
TAGS = ("READY", "TIMED", "RESULT", "SKIP")


def _emit(tag, payload=None):
    print(tag if payload is None else f"{tag} {json.dumps(payload)}", flush=True)


def _r(x, nd=4):
    return "" if x is None or x == "" else round(float(x), nd)


class Clock:
    """Step marks: CUDA events on a GPU, perf_counter on the CPU (dry run)."""

    def __init__(self, torch, cuda):
        self.torch, self.cuda = torch, cuda

    def mark(self):
        if self.cuda:
            ev = self.torch.cuda.Event(enable_timing=True)
            ev.record()
            return ev
        return time.perf_counter()

    def ms(self, a, b):
        return a.elapsed_time(b) if self.cuda else (b - a) * 1e3

    def sync(self):
        if self.cuda:
            self.torch.cuda.synchronize()


def set_precision_flags(torch, prec):
    """fp32: TF32 off for matmuls, cuDNN at its default (TF32 on); tf32: TF32 on for both."""
    torch.backends.cuda.matmul.allow_tf32 = prec == "tf32"
    torch.backends.cudnn.allow_tf32 = True  # PyTorch's default, and what tf32 asks for
    return {"matmul_tf32": int(torch.backends.cuda.matmul.allow_tf32),
            "cudnn_tf32": int(torch.backends.cudnn.allow_tf32),
            "cudnn_benchmark": int(torch.backends.cudnn.benchmark)}


class Job:
    """One training job: the loop colloc models, with the batch already on the device."""

    def __init__(self, torch, spec, cpu_model, model_name, batch, seq, prec, dev):
        import copy
        self.torch, self.model_name, self.dev = torch, model_name, dev
        self.cuda = dev.type == "cuda"
        self.model = copy.deepcopy(cpu_model).to(dev)
        self.model.train()
        dims = {"seq": seq or 0, "dec_seq": seq or 0}
        self.inputs = tuple(t.to(dev) for t in spec.make_inputs(batch, dims))
        self.opt = torch.optim.Adam(self.model.parameters(), lr=1e-3)
        self.crit = torch.nn.CrossEntropyLoss()
        self.amp_dtype = {"amp-fp16": torch.float16, "amp-bf16": torch.bfloat16}.get(prec)
        self.scaler = grad_scaler(torch, prec == "amp-fp16" and self.cuda)
        self.target, self.loss_kind = None, ""

    def forward_loss(self):
        torch = self.torch
        amp = self.amp_dtype is not None and self.cuda  # the dry run has no CUDA autocast
        with (torch.autocast(device_type="cuda", dtype=self.amp_dtype) if amp
              else contextlib.nullcontext()):
            out = self.model(*self.inputs)
            out = out[0] if isinstance(out, (tuple, list)) else out
            if out.dim() == 3:  # language models; gpt2: next-token loss, colloc's causal-lm-copy
                causal = self.model_name in CAUSAL_LMS
                logits = out[:, :-1].contiguous() if causal else out
                if self.target is None:  # made once, outside the timed steps
                    self.target = torch.randint(0, logits.shape[-1], logits.shape[:-1],
                                                device=self.dev)
                    self.loss_kind = "causal-lm-copy" if causal else "cross-entropy"
                return self.crit(logits.reshape(-1, logits.shape[-1]), self.target.reshape(-1))
            if self.target is None:
                self.target = torch.randint(0, out.shape[-1], (out.shape[0],), device=self.dev)
                self.loss_kind = "cross-entropy"
            return self.crit(out, self.target)

    def train_step(self, marks=None, clock=None):
        """out = model(x); loss = crit(out, y); opt.zero_grad(); loss.backward(); opt.step();
        loss.item(). Appends a mark after backward and one after the optimizer step."""
        loss = self.forward_loss()
        self.opt.zero_grad()
        self.scaler.scale(loss).backward()
        if marks is not None:
            marks.append(clock.mark())
        self.scaler.step(self.opt)
        self.scaler.update()
        if marks is not None:
            marks.append(clock.mark())
        return loss.item()

    def scale(self):
        return self.scaler.get_scale() if self.scaler.is_enabled() else None


def timed_steps(job, clock, steps, min_s, max_steps=500):
    """At least `steps` steps and at least min_s seconds (so that 100 ms samplers see enough)."""
    import math
    import statistics
    clock.sync()
    scale0 = job.scale()
    t_start, p0 = time.time(), time.perf_counter()
    starts, walls, fbs, ends = [clock.mark()], [p0], [], []
    n = 0
    while True:
        m = []
        job.train_step(m, clock)
        fbs.append(m[0])
        ends.append(m[1])
        starts.append(clock.mark())
        walls.append(time.perf_counter())
        n += 1
        if n >= steps and (walls[-1] - p0 >= min_s or n >= max_steps):
            break
    t_end = time.time()
    clock.sync()
    step = [clock.ms(starts[i], starts[i + 1]) for i in range(n)]
    scale1 = job.scale()
    skipped = ""
    if scale0 and scale1:  # GradScaler halves its scale on every step it skips
        skipped = max(0, round(math.log2(scale0 / scale1)))
    return {"steps": n, "timed_s": t_end - t_start, "t_start": t_start, "t_end": t_end,
            "step_ms_median": statistics.median(step), "step_ms_mean": statistics.mean(step),
            "step_ms_stdev": statistics.pstdev(step), "step_ms_min": min(step),
            "step_ms_list": step,
            "wall_step_ms_median": statistics.median(
                (walls[i + 1] - walls[i]) * 1e3 for i in range(n)),
            "loop_gpu_ms_median": statistics.median(
                clock.ms(starts[i], ends[i]) for i in range(n)),
            "loop_fwd_bwd_ms_median": statistics.median(
                clock.ms(starts[i], fbs[i]) for i in range(n)),
            "amp_skipped_steps": skipped}


def fwd_bwd_alone(job, clock, iters):
    """Forward + loss, then backward, each synchronized, no optimizer step (NeuSight's e2e)."""
    import statistics
    fwd, bwd = [], []
    for _ in range(iters):
        job.opt.zero_grad()
        clock.sync()
        a = clock.mark()
        loss = job.forward_loss()
        b = clock.mark()
        job.scaler.scale(loss).backward()
        c = clock.mark()
        clock.sync()
        fwd.append(clock.ms(a, b))
        bwd.append(clock.ms(b, c))
        del loss
    tot = [f + b for f, b in zip(fwd, bwd)]
    return {"fwd_bwd_ms_median": statistics.median(tot), "fwd_bwd_ms_mean": statistics.mean(tot),
            "forward_ms_median": statistics.median(fwd),
            "backward_ms_median": statistics.median(bwd)}


def summarize_events(events, device):
    """Kernel count, summed and union (busy) time of the profiled events of `device` (CUDA:
    kernels, Memcpy/Memset counted apart; CPU, the dry run: top-level ops)."""
    kern, mem, names = [], [], {}
    for e in events:
        if not str(getattr(e, "device_type", "")).endswith(device):
            continue
        if device == "CPU" and e.cpu_parent is not None:
            continue
        tr = e.time_range
        span = (tr.start, tr.end)
        name = e.name.lower()
        (mem if name.startswith(("memcpy", "memset")) else kern).append(span)
        # per kernel name: how many and how long, for the kernel-name CSV
        n = names.setdefault(e.name[:200], [0, 0.0])
        n[0] += 1
        n[1] += (tr.end - tr.start) / 1e3
    busy, cur = 0.0, None
    for s, t in sorted(kern):
        if cur is None or s > cur[1]:
            if cur:
                busy += cur[1] - cur[0]
            cur = [s, t]
        else:
            cur[1] = max(cur[1], t)
    if cur:
        busy += cur[1] - cur[0]
    return {"kernels": len(kern), "kernel_ms": sum(t - s for s, t in kern) / 1e3,
            "kernel_busy_ms": busy / 1e3,
            "kernel_span_ms": (max(t for _, t in kern) - min(s for s, _ in kern)) / 1e3
            if kern else 0.0,
            "memcpy_count": len(mem), "memcpy_ms": sum(t - s for s, t in mem) / 1e3,
            "kernel_names": names}


def profile_step(job, clock):
    """One training step under torch.profiler (CUDA activity; CPU in the dry run)."""
    from torch.profiler import ProfilerActivity, profile
    device = "CUDA" if job.cuda else "CPU"
    tries = ([[ProfilerActivity.CUDA], [ProfilerActivity.CPU, ProfilerActivity.CUDA]]
             if job.cuda else [[ProfilerActivity.CPU]])
    for acts in tries:  # CUDA alone first; with the CPU too if that saw no kernel
        with profile(activities=acts) as prof:
            job.train_step()
            clock.sync()
        res = summarize_events(prof.events(), device)
        if res["kernels"]:
            break
    res["profile_device"] = device.lower()
    return res


def perf_child(model_name, batch, seq, precs, role, deadline, opt):
    """--perf worker. role solo: for each precision, warm-up, timed steps, forward+backward
    alone, one profiled step; prints RESULT {json} per precision. role pair: one precision;
    warm-up, READY, waits for "go" on stdin, timed steps, TIMED {json}, then keeps training
    (untimed) until "stop" or EOF, so that a partner's timed steps stay collocated."""
    import torch
    sys.path.insert(0, HERE)
    import export_zoo  # noqa: E402

    dry = opt["dry"]
    dev = torch.device("cpu" if dry else "cuda")
    clock = Clock(torch, dev.type == "cuda")
    go, stop = threading.Event(), threading.Event()
    if role == "pair":
        def listen():
            for line in sys.stdin:
                if line.strip() == "go":
                    go.set()
                elif line.strip() == "stop":
                    break
            stop.set()
            go.set()
        threading.Thread(target=listen, daemon=True).start()
    spec = [s for s in export_zoo.zoo() if s.name == model_name][0]
    cpu_model = spec.build()
    last = 0.0
    for prec in precs:
        if role == "solo" and time.time() + last > deadline:
            _emit("SKIP", {"precision": prec, "why": "budget"})
            continue
        t0 = time.time()
        res, job = {"precision": prec}, None
        try:
            res.update(set_precision_flags(torch, prec))
            job = Job(torch, spec, cpu_model, model_name, batch, seq, prec, dev)
            if clock.cuda:
                torch.cuda.reset_peak_memory_stats()
            for _ in range(opt["warmup"]):
                job.train_step()
            res["loss"] = job.loss_kind
            if role == "pair":
                _emit("READY")
                go.wait()
                if stop.is_set():  # the group was called off (a partner failed)
                    return
            res.update(timed_steps(job, clock, opt["steps"], opt["min_timed_s"]))
            if clock.cuda:
                res["max_allocated_bytes"] = torch.cuda.max_memory_allocated()
            if role == "pair":
                _emit("TIMED", res)
                while not stop.is_set() and time.time() < deadline:
                    job.train_step()
                return
            res.pop("step_ms_list", None)
            res.update(fwd_bwd_alone(job, clock, opt["fwd_bwd_iters"]))
            try:
                res.update(profile_step(job, clock))
            except Exception as e:  # the profiler is optional; keep the timings
                res["error"] = f"profiler: {type(e).__name__}: {e}".splitlines()[0][:200]
        except Exception as e:
            res["error"] = f"{type(e).__name__}: {e}".splitlines()[0][:200]
            if role == "pair":
                _emit("TIMED", res)
                return
        finally:
            del job
            if clock.cuda:
                torch.cuda.empty_cache()
        _emit("RESULT", res)
        last = time.time() - t0


# --- device-wide samplers, in the parent ------------------------------------------------------

def parse_nvsmi(line):
    """'87' or '2025/01/02 03:04:05.678, 87' -> (unix time or None, 87.0); None if no value."""
    import datetime
    parts = [p.strip() for p in line.split(",")]
    try:
        val = float(parts[-1])
    except ValueError:
        return None
    ts = None
    if len(parts) == 2:
        try:
            ts = datetime.datetime.strptime(parts[0], "%Y/%m/%d %H:%M:%S.%f").timestamp()
        except ValueError:
            ts = None
    return ts, val


def parse_dcgmi(line):
    """'GPU 0     0.512' (dcgmi dmon -e 1002) -> (None, 0.512); headers, N/A -> None."""
    parts = line.split()
    if len(parts) < 3 or parts[0] != "GPU":
        return None
    try:
        return None, float(parts[-1])
    except ValueError:
        return None


class Sampler:
    """Samples one device-wide value about every 100 ms into [(unix time, value)]: either the
    lines of a long-running command (nvidia-smi -lms 100, dcgmi dmon -d 100), or a poll function
    (pynvml). window(t0, t1) averages the samples taken in [t0, t1]."""

    def __init__(self, source, cmd=None, parse=None, poll=None, on_fail=None):
        self.source, self.cmd, self.parse, self.poll, self.on_fail = source, cmd, parse, poll, on_fail
        self.samples, self.lock, self.stopping = [], threading.Lock(), threading.Event()
        self.proc, self.thread, self.note = None, None, ""

    def start(self):
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()
        return self

    def _add(self, ts, val):
        with self.lock:
            self.samples.append((ts if ts is not None else time.time(), val))

    def _run(self):
        if self.poll:
            while not self.stopping.is_set():
                try:
                    self._add(None, float(self.poll()))
                except Exception as e:  # noqa: BLE001 - a failed poll is a missing sample
                    self.note = f"{type(e).__name__}"
                self.stopping.wait(0.1)
            return
        for attempt in range(2):
            got, tail = 0, []
            try:
                self.proc = subprocess.Popen(self.cmd, stdout=subprocess.PIPE,
                                             stderr=subprocess.STDOUT, text=True, bufsize=1)
            except OSError as e:
                self.note = f"{self.cmd[0]}: {e}"
                return
            for line in self.proc.stdout:
                v = self.parse(line)
                if v is None:
                    tail = (tail + [line.strip()])[-3:]
                    continue
                got += 1
                self._add(*v)
            self.proc.wait()
            if got or self.stopping.is_set():
                return
            self.note = " | ".join(t for t in tail if t)[:160] or f"exit {self.proc.returncode}"
            if attempt or not self.on_fail or not self.on_fail():
                return

    def stop(self):
        self.stopping.set()
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        if self.thread:
            self.thread.join(timeout=5)

    def window(self, t0, t1, wait_s=1.0):
        """(mean, count) of the samples in [t0, t1]; waits up to wait_s for one after t1."""
        end = time.time() + wait_s
        while time.time() < end and self.thread and self.thread.is_alive():
            with self.lock:
                if self.samples and self.samples[-1][0] > t1:
                    break
            time.sleep(0.05)
        with self.lock:
            vals = [v for t, v in self.samples if t0 <= t <= t1]
        return (sum(vals) / len(vals) if vals else None), len(vals)


class Samplers:
    """utilization.gpu (pynvml if importable, else nvidia-smi -lms 100) and DCGM field 1002
    (dcgmi dmon, when dcgmi exists; if no host engine answers, one nv-hostengine started here
    for the run's duration)."""

    def __init__(self, dry):
        self.util = self.sm = None
        self.util_source = self.sm_source = "none (dry run)" if dry else "none"
        self.hostengine = None
        if dry:
            return
        idx = os.environ.get("CUDA_VISIBLE_DEVICES", "0").split(",")[0].strip()
        idx = idx if idx.isdigit() else "0"
        line_buf = ["stdbuf", "-oL"] if shutil.which("stdbuf") else []
        try:
            import pynvml
            pynvml.nvmlInit()
            handle = pynvml.nvmlDeviceGetHandleByIndex(int(idx))
            self.util = Sampler("pynvml", poll=lambda: pynvml.nvmlDeviceGetUtilizationRates(
                handle).gpu).start()
            self.util_source = "pynvml utilization.gpu, 100 ms"
        except Exception:  # noqa: BLE001 - not installed, or NVML refuses: use nvidia-smi
            if shutil.which("nvidia-smi"):
                self.util = Sampler("nvidia-smi", cmd=line_buf + [
                    "nvidia-smi", "-i", idx, "--query-gpu=timestamp,utilization.gpu",
                    "--format=csv,noheader,nounits", "-lms", "100"], parse=parse_nvsmi).start()
                self.util_source = "nvidia-smi utilization.gpu -lms 100"
            else:
                self.util_source = "none (no nvidia-smi)"
        if shutil.which("dcgmi"):
            self.sm = Sampler("dcgmi", cmd=line_buf + ["dcgmi", "dmon", "-i", idx, "-e", "1002",
                                                       "-d", "100"],
                              parse=parse_dcgmi, on_fail=self._start_hostengine).start()
            self.sm_source = "dcgmi dmon -e 1002 -d 100"
        else:
            self.sm_source = "none (no dcgmi)"

    def _start_hostengine(self):
        if not shutil.which("nv-hostengine"):
            return False
        try:
            self.hostengine = subprocess.Popen(["nv-hostengine", "-n"], stdout=subprocess.DEVNULL,
                                               stderr=subprocess.DEVNULL)
        except OSError:
            return False
        time.sleep(3)
        self.sm_source = "dcgmi dmon -e 1002 -d 100 (nv-hostengine started by this run)"
        return True

    def window(self, t0, t1):
        """Columns for [t0, t1]: util_gpu_pct, util_samples, util_source, sm_active, ..."""
        u, nu = self.util.window(t0, t1) if self.util else (None, 0)
        s, ns = self.sm.window(t0, t1) if self.sm else (None, 0)
        usrc = self.util_source + (f" [{self.util.note}]" if self.util and self.util.note
                                   and not nu else "")
        ssrc = self.sm_source + (f" [{self.sm.note}]" if self.sm and self.sm.note
                                 and not ns else "")
        return {"util_gpu_pct": _r(u, 2), "util_samples": nu, "util_source": usrc,
                "sm_active": _r(s, 4), "sm_samples": ns, "sm_source": ssrc}

    def stop(self):
        for s in (self.util, self.sm):
            if s:
                s.stop()
        if self.hostengine and self.hostengine.poll() is None:
            self.hostengine.terminate()
            try:
                self.hostengine.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.hostengine.kill()


def sampler_selftest():
    """Dry run: the parsers and the line sampler's thread, on canned output."""
    assert parse_nvsmi("87") == (None, 87.0)
    ts, v = parse_nvsmi("2025/01/02 03:04:05.678, 42")
    assert v == 42.0 and ts is not None
    assert parse_nvsmi("[N/A]") is None
    assert parse_dcgmi("GPU 0     0.512") == (None, 0.512)
    assert parse_dcgmi("#Entity   SMACT") is None and parse_dcgmi("GPU 0  N/A") is None
    fake = ("import time\nprint('#Entity   SMACT', flush=True)\nfor i in range(6):\n"
            "    print('GPU 0     0.%d00' % i, flush=True); time.sleep(0.05)\n")
    s = Sampler("fake", cmd=[sys.executable, "-c", fake], parse=parse_dcgmi).start()
    s.thread.join(timeout=10)
    mean, n = s.window(0, time.time() + 1, wait_s=0)
    s.stop()
    assert n == 6 and abs(mean - 0.25) < 1e-9, (mean, n)
    print("samplers: parser and thread self-test ok (6 canned dcgmi samples, mean 0.25)")


# --- orchestration --------------------------------------------------------------------------

def _launch(model, batch, seq, precs, role, deadline, opt):
    cmd = [sys.executable, os.path.abspath(__file__), "--perf-child", model, str(batch),
           str(seq or 0), ",".join(precs), role, repr(deadline),
           "--warmup", str(opt["warmup"]), "--steps", str(opt["steps"]),
           "--min-timed-s", str(opt["min_timed_s"]), "--fwd-bwd-iters", str(opt["fwd_bwd_iters"])]
    if opt["dry"]:
        cmd.append("--dry-run")
    err = tempfile.TemporaryFile(mode="w+")
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err,
                            text=True, bufsize=1)
    q = queue.Queue()

    def read():
        for line in proc.stdout:
            tag, _, rest = line.strip().partition(" ")
            if tag in TAGS:
                try:
                    q.put((tag, json.loads(rest) if rest else None))
                except ValueError:
                    pass
        q.put(("EOF", None))
    threading.Thread(target=read, daemon=True).start()
    return proc, q, err


def _last_err(proc, err):
    err.seek(0)
    lines = [ln.strip() for ln in err.read().splitlines() if ln.strip()]
    return (lines[-1] if lines else f"exit status {proc.returncode}")[:200]


def _end(proc, timeout=15):
    try:
        if proc.stdin and not proc.stdin.closed:
            proc.stdin.close()
    except OSError:
        pass
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def _get(q, until):
    try:
        return q.get(timeout=max(0.05, until - time.time()))
    except queue.Empty:
        return ("TIMEOUT", None)


def run_solo(model, batch, seq, precs, deadline, opt, grace=10):
    """Yields (precision, result dict) as the child reports them; crashes become error rows."""
    proc, q, err = _launch(model, batch, seq, precs, "solo", deadline, opt)
    seen = set()
    while True:
        tag, payload = _get(q, deadline + grace)
        if tag == "RESULT":
            seen.add(payload["precision"])
            yield payload["precision"], payload
        elif tag == "SKIP":
            seen.add(payload["precision"])
            print(f"budget: skipped {model} b{batch} {payload['precision']}", flush=True)
        elif tag in ("EOF", "TIMEOUT"):
            if tag == "TIMEOUT":
                proc.kill()
            break
    _end(proc)
    why = "killed at the budget's end" if proc.returncode and proc.returncode < 0 else \
        _last_err(proc, err)
    for prec in precs:
        if prec not in seen:
            yield prec, {"precision": prec, "error": why}
    err.close()


def run_group(members, deadline, opt):
    """Starts one pair-role child per member; when all are warm, lets them run their timed
    steps at once. Returns ([result or None], error, (t0, t1) of the common timed window)."""
    kids = [_launch(m, b, s, [p], "pair", deadline, opt) for m, b, s, p in members]
    results, error = [None] * len(kids), ""
    ready = [False] * len(kids)
    for i, (proc, q, err) in enumerate(kids):  # wait for every READY
        tag, payload = _get(q, deadline)
        if tag == "READY":
            ready[i] = True
        else:
            results[i] = payload
            error = (payload or {}).get("error") or (
                "budget spent while warming up" if tag == "TIMEOUT" else _last_err(proc, err))
            break
    if all(ready):
        for proc, _, _ in kids:
            proc.stdin.write("go\n")
            proc.stdin.flush()
        for i, (proc, q, err) in enumerate(kids):
            tag, payload = _get(q, deadline)
            if tag == "TIMED":
                results[i] = payload
                error = error or payload.get("error", "")
            else:
                error = error or ("budget spent" if tag == "TIMEOUT" else _last_err(proc, err))
    for proc, _, err in kids:
        try:
            proc.stdin.write("stop\n")
            proc.stdin.flush()
        except OSError:
            pass
        _end(proc)
        err.close()
    ok = [r for r in results if r and "t_start" in r]
    window = (max(r["t_start"] for r in ok), max(r["t_end"] for r in ok)) if ok else None
    return results, error, window


def perf_main(args, ver):
    dry = args.dry_run
    opt = {"dry": dry, "warmup": args.warmup, "steps": args.steps,
           "min_timed_s": args.min_timed_s, "fwd_bwd_iters": args.fwd_bwd_iters}
    precs = [p for p in args.precisions.split(",") if p] if args.precisions else list(
        PERF_PRECISIONS)
    bad = [p for p in precs if p not in PERF_PRECISIONS]
    if bad:
        print(f"unknown precision {bad}; choose from {','.join(PERF_PRECISIONS)}",
              file=sys.stderr)
        return 2
    plan = DRY_PERF_PLAN if dry else PERF_PLAN
    if args.models:
        keep = set(args.models.split(","))
        plan = [p for p in plan if p[0] in keep]
    pairs = (DRY_PAIRS if dry else PAIRS)[:max(0, args.pairs)]
    tmp = tempfile.gettempdir()
    perf_out = args.perf_out or (os.path.join(tmp, "measure_gpu-dry-steps.csv") if dry else
                                 os.path.join(HERE, "..", "data", "measurements", "perf",
                                              "gpu-steps.csv"))
    pairs_out = args.pairs_out or (perf_out[:-len("-steps.csv")] + "-pairs.csv"
                                   if perf_out.endswith("-steps.csv")
                                   else os.path.splitext(perf_out)[0] + "-pairs.csv")
    # one row per (run, kernel name) of the profiled step: which kernels cuDNN, cuBLAS and
    # ATen launch for each op, what a kernel count alone cannot say (docs/perf-model.md)
    kernels_out = (perf_out[:-len("-steps.csv")] + "-kernels.csv"
                   if perf_out.endswith("-steps.csv")
                   else os.path.splitext(perf_out)[0] + "-kernels.csv")
    for path in (perf_out, pairs_out):
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    start = _T0  # the budget counts from the script's start
    end = start + args.budget_s
    reserve = args.pair_reserve_s if args.pair_reserve_s is not None else 25.0 * len(pairs)
    stage_end = end - reserve if pairs else end
    if dry:
        sampler_selftest()
    samp = Samplers(dry)
    print(f"perf: {len(plan)} model x batch, precisions {','.join(precs)}, {len(pairs)} pairs, "
          f"budget {args.budget_s:.0f} s ({reserve:.0f} s kept for pairs); "
          f"util: {samp.util_source}; SM activity: {samp.sm_source}", flush=True)
    print(f"perf: steps -> {perf_out}; pairs -> {pairs_out}", flush=True)
    measured = {}
    try:
        with open(perf_out, "w", newline="") as f, open(kernels_out, "w", newline="") as kf:
            w = csv.DictWriter(f, fieldnames=PERF_FIELDS)
            w.writeheader()
            f.flush()
            kw = csv.writer(kf)
            kw.writerow(["model", "batch", "seq", "precision", "kernel", "count", "total_ms"]
                        + VERSION_FIELDS)
            for model, batch, seq in plan:
                if stage_end - time.time() < args.min_group_s:
                    print(f"budget: stopping before {model} b{batch}", flush=True)
                    break
                for prec, res in run_solo(model, batch, seq, precs, stage_end, opt):
                    row = {k: "" for k in PERF_FIELDS}
                    row.update({"model": model, "batch": batch, "seq": seq or "",
                                "optimizer": PERF_OPTIMIZER, "precision": prec,
                                "input_on_gpu": 1, "warmup": args.warmup, **ver})
                    row.update({k: v for k, v in res.items() if k in row})
                    if "t_start" in res:
                        row.update(samp.window(res["t_start"], res["t_end"]))
                    for k in ("timed_s", "step_ms_median", "step_ms_mean", "step_ms_stdev",
                              "step_ms_min", "wall_step_ms_median", "loop_gpu_ms_median",
                              "loop_fwd_bwd_ms_median", "fwd_bwd_ms_median", "fwd_bwd_ms_mean",
                              "forward_ms_median", "backward_ms_median", "kernel_ms",
                              "kernel_busy_ms", "kernel_span_ms", "memcpy_ms"):
                        row[k] = _r(row[k])
                    for k in ("t_start", "t_end"):
                        row[k] = _r(row[k], 3)
                    if row["step_ms_median"] != "":
                        row["throughput_samples_per_s"] = _r(
                            batch * 1e3 / row["step_ms_median"], 2)
                        if row["kernel_busy_ms"] != "":
                            row["kernel_util"] = _r(row["kernel_busy_ms"] /
                                                    row["step_ms_median"], 4)
                        measured[(model, batch, seq, prec)] = row
                    w.writerow(row)
                    f.flush()
                    for kname, (cnt, ms) in sorted(res.get("kernel_names", {}).items(),
                                                   key=lambda kv: -kv[1][0]):
                        kw.writerow([model, batch, seq or "", prec, kname, cnt, _r(ms)]
                                    + [ver.get(k, "") for k in VERSION_FIELDS])
                    kf.flush()
                    print(f"{model:14s} b{batch:<4d} {prec:8s} step {row['step_ms_median']} ms "
                          f"(mean {row['step_ms_mean']}, n {row['steps']}) fwd+bwd "
                          f"{row['fwd_bwd_ms_median']} util {row['util_gpu_pct']} "
                          f"sm {row['sm_active']} kernels {row['kernels']} "
                          f"({row['kernel_ms']} ms) {row['error']}", flush=True)
        with open(pairs_out, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=PAIR_FIELDS)
            w.writeheader()
            f.flush()
            for i, (a, b) in enumerate(pairs):
                if end - time.time() < args.min_group_s:
                    print(f"budget: stopping before pair {i}", flush=True)
                    break
                row = {k: "" for k in PAIR_FIELDS}
                row.update({"pair": i, **ver})
                errors = []
                for tag, m in (("a", a), ("b", b)):
                    model, batch, seq, prec = m
                    row.update({f"{tag}_model": model, f"{tag}_batch": batch,
                                f"{tag}_seq": seq or "", f"{tag}_precision": prec})
                    alone = measured.get(m)
                    if alone:
                        row[f"{tag}_alone_source"] = "perf row"
                    elif end - time.time() >= args.min_group_s:
                        res, err, win = run_group([m], end, opt)
                        if res[0] and "step_ms_median" in res[0]:
                            alone = {"step_ms_median": _r(res[0]["step_ms_median"])}
                            alone.update(samp.window(*win))
                            measured[m] = alone
                        row[f"{tag}_alone_source"] = "measured alone here"
                        if err:
                            errors.append(f"{tag} alone: {err}")
                    if alone:
                        row[f"{tag}_alone_step_ms"] = alone["step_ms_median"]
                        row[f"{tag}_alone_util_gpu_pct"] = alone.get("util_gpu_pct", "")
                        row[f"{tag}_alone_sm_active"] = alone.get("sm_active", "")
                if end - time.time() >= args.min_group_s:
                    res, err, win = run_group([a, b], end, opt)
                    if err:
                        errors.append(f"together: {err}")
                    for tag, r in zip(("a", "b"), res):
                        if r and "step_ms_median" in r:
                            row[f"{tag}_together_step_ms_median"] = _r(r["step_ms_median"])
                            row[f"{tag}_together_step_ms_mean"] = _r(r["step_ms_mean"])
                            row[f"{tag}_together_steps"] = r["steps"]
                            if row[f"{tag}_alone_step_ms"] != "":
                                row[f"{tag}_slowdown"] = _r(r["step_ms_median"] /
                                                            row[f"{tag}_alone_step_ms"], 4)
                    if win:
                        t0, t1 = win
                        win_cols = samp.window(t0, t1)
                        row.update({"together_window_s": _r(t1 - t0, 3),
                                    "together_util_gpu_pct": win_cols["util_gpu_pct"],
                                    "together_sm_active": win_cols["sm_active"],
                                    "t_start": _r(t0, 3), "t_end": _r(t1, 3),
                                    **{k: win_cols[k] for k in ("util_samples", "util_source",
                                                                "sm_samples", "sm_source")}})
                else:
                    errors.append("budget spent before the collocated run")
                row["error"] = "; ".join(errors)[:300]
                w.writerow(row)
                f.flush()
                print(f"pair {i}: {a[0]} b{a[1]} {a[3]} + {b[0]} b{b[1]} {b[3]}: alone "
                      f"{row['a_alone_step_ms']} / {row['b_alone_step_ms']} ms, together "
                      f"{row['a_together_step_ms_median']} / {row['b_together_step_ms_median']} "
                      f"ms (slowdown {row['a_slowdown']} / {row['b_slowdown']}), util "
                      f"{row['together_util_gpu_pct']} sm {row['together_sm_active']} "
                      f"{row['error']}", flush=True)
    finally:
        samp.stop()
    print(f"perf: done in {time.time() - start:.0f} s of {args.budget_s:.0f}", flush=True)
    return 0


def perf_versions(dry):
    v = versions(dry)
    v["cpu"] = ""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    v["cpu"] = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return v


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.path.join(HERE, "..", "data", "measurements", "gpu.csv"))
    ap.add_argument("--budget-s", type=float, default=420)
    ap.add_argument("--dry-run", action="store_true")
    ap.add_argument("--only", help="comma list: only these models of the memory plan")
    ap.add_argument("--child", nargs=7, help=argparse.SUPPRESS)
    perf = ap.add_argument_group("--perf: step time, utilization, SM activity, collocated pairs "
                                 "(docs/perf-model.md, \"Measuring on a GPU\")")
    perf.add_argument("--perf", action="store_true",
                      help="measure step times instead of memory (writes --perf-out, --pairs-out)")
    perf.add_argument("--perf-out", help="steps CSV (default data/measurements/perf/gpu-steps.csv;"
                      " dry run: a file in the temp folder)")
    perf.add_argument("--pairs-out", help="pairs CSV (default: --perf-out with -pairs.csv)")
    perf.add_argument("--models", help="comma list: only these models of the perf plan")
    perf.add_argument("--precisions", help="comma list of fp32,tf32,amp-fp16,amp-bf16 (all)")
    perf.add_argument("--pairs", type=int, default=3, help="collocated pairs to run (3; 0: none)")
    perf.add_argument("--warmup", type=int, help="untimed steps first (5; dry run 1)")
    perf.add_argument("--steps", type=int, help="timed steps, at least (20; dry run 3)")
    perf.add_argument("--min-timed-s", type=float,
                      help="timed steps last at least this long, for the samplers (2; dry run 0)")
    perf.add_argument("--fwd-bwd-iters", type=int,
                      help="forward+backward-alone iterations (10; dry run 2)")
    perf.add_argument("--pair-reserve-s", type=float,
                      help="budget seconds kept for the pairs (25 per pair)")
    perf.add_argument("--min-group-s", type=float, default=15,
                      help="start no new subprocess with less budget left than this (15)")
    ap.add_argument("--perf-child", nargs=6, help=argparse.SUPPRESS)
    args = ap.parse_args()
    for name, full, dry in (("warmup", 5, 1), ("steps", 20, 3), ("min_timed_s", 2.0, 0.0),
                            ("fwd_bwd_iters", 10, 2)):
        if getattr(args, name) is None:
            setattr(args, name, dry if args.dry_run else full)
    if args.child:
        m, b, s, o, p, lk, at = args.child
        child(m, int(b), int(s) or None, o, p, args.dry_run, lk, at)
        return 0
    if args.perf_child:
        m, b, s, precs, role, deadline = args.perf_child
        perf_child(m, int(b), int(s) or None, precs.split(","), role, float(deadline),
                   {"dry": args.dry_run, "warmup": args.warmup, "steps": args.steps,
                    "min_timed_s": args.min_timed_s, "fwd_bwd_iters": args.fwd_bwd_iters})
        return 0
    if args.perf:
        return perf_main(args, perf_versions(args.dry_run))
    ver = versions(args.dry_run)
    plan = ([("resnet18", 2, None, "adam", "fp32", "cross-entropy", "eager"),
             ("gpt2", 1, 16, "adam", "fp32", "causal-lm", "eager")] if args.dry_run
            else list(configs()))
    if args.only:  # a later run's share of the plan: these models only
        plan = [c for c in plan if c[0] in args.only.split(",")]
    start = time.time()
    with open(args.out, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=FIELDS)
        w.writeheader()
        for model, batch, seq, opt, prec, loss_kind, attention in plan:
            if time.time() - start > args.budget_s:
                print(f"budget spent; stopping before {model} b{batch}", flush=True)
                break
            cmd = [sys.executable, __file__, "--child", model, str(batch), str(seq or 0), opt,
                   prec, loss_kind, attention] + (["--dry-run"] if args.dry_run else [])
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
            row = {"model": csv_model(model, attention), "batch": batch, "seq": seq or "", "optimizer": opt,
                   "precision": prec, "iterations": 4,
                   # the loss child() computes, named as colloc names it (--calibrate and
                   # bench_estimate read it)
                   "loss": loss_kind, "attention": attention,
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
