"""Time one CPU training iteration of a torchvision model under torch.profiler.

This is what xMem-style estimators pay per estimate (they run the real training code on the CPU
and read the allocations off the profiler); tools/bench_estimate.sh prints it next to colloc's
in-process estimate time.

    /usr/bin/python3 tools/bench_train_step.py [--model resnet50] [--batch 32]
"""
import argparse
import time

import torch
import torchvision


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="resnet50")
    ap.add_argument("--batch", type=int, default=32)
    args = ap.parse_args()
    model = getattr(torchvision.models, args.model)(weights=None)
    model.train()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    x = torch.randn(args.batch, 3, 224, 224)
    y = torch.randint(0, 1000, (args.batch,))
    t0 = time.perf_counter()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU],
                                profile_memory=True):
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    print(f"{(time.perf_counter() - t0) * 1e3:.0f}")


if __name__ == "__main__":
    main()
