"""What is alive at the peak of a training run on a GPU, tensor by tensor.

Run on a machine with an NVIDIA GPU (through the device tool: write under $OUT):

    python3 tools/measure_snapshot.py --out data/measurements/h200-peak-tensors.csv \
        [--configs gpt2:4:512,bert_base:16:128]

For each MODEL:BATCH[:SEQ] (zoo models, built as tools/measure_gpu.py builds them, in a fresh
process each), the training loop of measure_gpu.py runs 3 iterations under
torch.cuda.memory._record_memory_history; the allocator's trace is replayed (alloc, then
free_completed) to the moment the allocated bytes peak, and every block alive then is written
with its size and the innermost frames that allocated it. Comparing those rows with
`colloc estimate --explain` names the tensors where the estimate and PyTorch part (the
transformer rows of data/measurements/h200-memory.csv are 6-14% above colloc's allocated peak;
bench_estimate.sh prints them). --dry-run checks the replay on a canned trace, without a GPU.
"""
import argparse
import csv
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
FIELDS = ["model", "batch", "seq", "peak_allocated_bytes", "rank", "bytes", "frames", "torch",
          "gpu", "error"]
MAX_BLOCKS = 40  # largest blocks written per configuration


def replay(trace):
    """(peak bytes, blocks alive at the peak as (size, frames)) of one device's trace."""
    live, total, peak, at_peak = {}, 0, 0, {}
    for ev in trace:
        act, addr, size = ev.get("action"), ev.get("addr"), ev.get("size", 0)
        if act == "alloc":
            live[addr] = (size, ev.get("frames", []))
            total += size
            if total > peak:
                peak, at_peak = total, dict(live)
        elif act == "free_completed" and addr in live:
            total -= live.pop(addr)[0]
    return peak, sorted(at_peak.values(), key=lambda b: -b[0])


def frames_text(frames, n=4):
    out = []
    for f in frames:
        name, fn = f.get("name", ""), os.path.basename(f.get("filename", ""))
        if fn.endswith(".py") or "::" in name:
            out.append(f"{name}@{fn}:{f.get('line', '')}")
        if len(out) >= n:
            break
    return " < ".join(out)


def child(model_name, batch, seq):
    import torch
    sys.path.insert(0, HERE)
    import export_zoo
    import measure_gpu
    spec = [s for s in export_zoo.zoo() if s.name == model_name][0]
    model = spec.build().cuda()
    model.train()
    inputs = tuple(t.cuda() for t in spec.make_inputs(batch, {"seq": seq, "dec_seq": seq}))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    crit = torch.nn.CrossEntropyLoss()
    torch.cuda.memory._record_memory_history(max_entries=200000)
    dev = torch.device("cuda")
    for _ in range(3):  # measure_gpu.py's loop, variables held as there
        out, logits, target, loss = measure_gpu.memory_loop_loss(torch, model, inputs, crit,
                                                                 model_name, dev)
        opt.zero_grad()
        loss.backward()
        opt.step()
    torch.cuda.synchronize()
    snap = torch.cuda.memory._snapshot()
    torch.cuda.memory._record_memory_history(enabled=None)
    peak, blocks = replay(snap["device_traces"][0])
    print("RESULT " + json.dumps({
        "peak": peak, "max_allocated": torch.cuda.max_memory_allocated(),
        "blocks": [(s, frames_text(f)) for s, f in blocks[:MAX_BLOCKS]],
        "torch": torch.__version__, "gpu": torch.cuda.get_device_name(0)}), flush=True)


def selftest():
    trace = [{"action": "alloc", "addr": 1, "size": 100, "frames": [{"name": "a", "filename": "x.py", "line": 1}]},
             {"action": "alloc", "addr": 2, "size": 50, "frames": []},
             {"action": "free_requested", "addr": 1},
             {"action": "free_completed", "addr": 1},
             {"action": "alloc", "addr": 3, "size": 20, "frames": []}]
    peak, blocks = replay(trace)
    assert peak == 150 and [b[0] for b in blocks] == [100, 50], (peak, blocks)
    assert frames_text(trace[0]["frames"]) == "a@x.py:1"
    print("measure_snapshot: replay self-test ok (peak 150 of 100 + 50)")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=os.path.join(HERE, "..", "data", "measurements",
                                                  "peak-tensors.csv"))
    ap.add_argument("--configs", default="gpt2:4:512,bert_base:16:128,resnet18:256")
    ap.add_argument("--dry-run", action="store_true", help="the replay's self-test, no GPU")
    ap.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.dry_run:
        selftest()
        return 0
    if a.child:
        child(a.child[0], int(a.child[1]), int(a.child[2]))
        return 0
    with open(a.out, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=FIELDS)
        w.writeheader()
        for cfg in a.configs.split(","):
            parts = cfg.split(":")
            model, batch, seq = parts[0], int(parts[1]), int(parts[2]) if len(parts) > 2 else 0
            row = {"model": model, "batch": batch, "seq": seq or ""}
            try:
                p = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", model,
                                    str(batch), str(seq)], capture_output=True, text=True,
                                   timeout=240)
                res = [ln for ln in p.stdout.splitlines() if ln.startswith("RESULT ")]
                if not res:
                    tail = (p.stderr.strip().splitlines() or ["no output"])[-1]
                    w.writerow(dict(row, error=tail[:200]))
                    continue
                r = json.loads(res[0][7:])
                for k, (size, fr) in enumerate(r["blocks"]):
                    w.writerow(dict(row, peak_allocated_bytes=r["peak"], rank=k + 1, bytes=size,
                                    frames=fr, torch=r["torch"], gpu=r["gpu"]))
            except subprocess.TimeoutExpired:
                w.writerow(dict(row, error="timed out after 240 s"))
            f.flush()
    print(f"measure_snapshot: -> {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
