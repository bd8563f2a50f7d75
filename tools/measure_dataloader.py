"""Measure the main-thread cost of a map-style PyTorch DataLoader, per step.

A DataLoader with num_workers=0 over an in-memory TensorDataset (the input pipeline of
GPUMemNet's MLP runs, and of many small training scripts) fetches every sample with
Dataset.__getitem__ and stacks them with default_collate, on the training process's own thread:
the GPU waits for it every step. This script times that on this CPU for a grid of batch sizes and
feature widths and fits

    loader_ms = fixed_ms + per_sample_us * batch / 1000 + per_byte_ns * batch * width * 4 / 1e6

by least squares, printing the coefficients colloc's benchmark passes as the data-loader time
(colloc estimate --data-loader-ms). CPU and torch versions are printed with them.

    /usr/bin/python3 tools/measure_dataloader.py [--repeat 20]
"""

import argparse
import platform
import sys
import time

import numpy as np
import torch
from torch.utils.data import DataLoader, TensorDataset


def time_loader(batch, width, repeat):
    x = torch.randn(4096, width)
    y = torch.randint(0, 10, (4096,))
    dl = DataLoader(TensorDataset(x, y), batch_size=batch, shuffle=True)
    it = iter(dl)
    next(it)
    n, t = 0, 0.0
    while n < repeat:
        t0 = time.perf_counter()
        try:
            next(it)
        except StopIteration:
            it = iter(dl)
            continue
        t += time.perf_counter() - t0
        n += 1
    return t / n * 1e3


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=20)
    a = ap.parse_args()
    torch.set_num_threads(1)
    rows = []
    for batch in (4, 32, 128, 512, 1023):
        for width in (16, 512, 4095):
            ms = min(time_loader(batch, width, a.repeat) for _ in range(3))
            rows.append((batch, width, ms))
            print("batch %5d width %5d  %.3f ms" % (batch, width, ms))
    A = np.array([[1.0, b / 1000.0, b * w * 4 / 1e6] for b, w, _ in rows])
    t = np.array([ms for _, _, ms in rows])
    # least squares on relative error: weight rows by 1/t
    coef, *_ = np.linalg.lstsq(A / t[:, None], np.ones_like(t), rcond=None)
    print("python %s, torch %s, %s" % (platform.python_version(), torch.__version__,
                                       platform.machine()))
    print("fixed_ms %.4f per_sample_us %.3f per_byte_ns %.4f" % tuple(coef))
    return 0


if __name__ == "__main__":
    sys.exit(main())
