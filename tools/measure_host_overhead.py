"""Measure PyTorch's host-side cost per op, the default of colloc's step-time predictor.

An eager PyTorch training step spends host time on every op: the Python call, the dispatcher,
autograd bookkeeping, and (on a GPU) the kernel launch. With tensors so small that the
arithmetic is negligible, the CPU time per op is that overhead. This script times, on the CPU:

  forward_us   one nn.Linear + ReLU layer's forward ops (per op), autograd recording on
  backward_us  loss.backward() over the same graph, per backward node (autograd engine)
  foreach_us   one torch._foreach_add_ call over 100 tiny tensors, per call and per tensor

and prints them with the interpreter and torch versions. colloc adds the CUDA launch itself
(cudaLaunchKernel, a few microseconds of CPU time per kernel; docs/perf-model.md) on top.
With --device cuda the tensors live on the GPU, so each op's time includes its launch (the
kernels are tiny and the GPU keeps up, so the host's time is what is measured); run it on the
GPU's own machine to get host_op_us / host_bwd_op_us for that machine.

    /usr/bin/python3 tools/measure_host_overhead.py [--repeat 2000] [--device cuda]
"""

import argparse
import platform
import sys
import time

import torch
import torch.nn as nn


def sync():
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        torch.cuda.synchronize()


def per_op_forward(model, x, repeat):
    n_ops = 2 * len([m for m in model if isinstance(m, nn.Linear)])  # linear (addmm) + relu
    for _ in range(50):
        model(x)
    sync()
    t0 = time.perf_counter()
    for _ in range(repeat):
        model(x)
    sync()
    return (time.perf_counter() - t0) / repeat / n_ops * 1e6


def per_node_backward(model, x, repeat):
    y = model(x).sum()
    # nodes: AddmmBackward + TBackward + ReluBackward per layer, AccumulateGrad x2 per layer
    n_nodes = 0
    seen, stack = set(), [y.grad_fn]
    while stack:
        fn = stack.pop()
        if fn is None or fn in seen:
            continue
        seen.add(fn)
        n_nodes += 1
        stack.extend(f for f, _ in fn.next_functions)
    total = 0.0
    for i in range(repeat + 20):
        y = model(x).sum()
        sync()
        t0 = time.perf_counter()
        y.backward()
        sync()
        if i >= 20:
            total += time.perf_counter() - t0
    return total / repeat / n_nodes * 1e6, n_nodes


def per_foreach(repeat, dev, n=100):
    ts = [torch.zeros(4, device=dev) for _ in range(n)]
    us = [torch.ones(4, device=dev) for _ in range(n)]
    for _ in range(20):
        torch._foreach_add_(ts, us)
    sync()
    t0 = time.perf_counter()
    for _ in range(repeat):
        torch._foreach_add_(ts, us)
    sync()
    call = (time.perf_counter() - t0) / repeat * 1e6
    return call, call / n


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=2000)
    ap.add_argument("--device", default="cpu", help="cpu (default) or cuda")
    a = ap.parse_args()
    torch.set_num_threads(1)
    layers = []
    for _ in range(8):
        layers += [nn.Linear(4, 4), nn.ReLU()]
    dev = torch.device(a.device)
    model = nn.Sequential(*layers).to(dev)
    x = torch.randn(2, 4, device=dev)
    fwd = per_op_forward(model, x, a.repeat)
    bwd, nodes = per_node_backward(model, x, a.repeat)
    fe_call, fe_tensor = per_foreach(a.repeat, dev)
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name"))
    except (OSError, StopIteration):
        pass
    where = torch.cuda.get_device_name(0) if dev.type == "cuda" else "cpu tensors"
    print("python %s, torch %s, %s, %s" % (platform.python_version(), torch.__version__, cpu,
                                           where))
    print("forward_us_per_op     %.2f" % fwd)
    print("backward_us_per_node  %.2f  (%d nodes)" % (bwd, nodes))
    print("foreach_us_per_call   %.2f  (%.2f per tensor)" % (fe_call, fe_tensor))
    return 0


if __name__ == "__main__":
    sys.exit(main())
