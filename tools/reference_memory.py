"""CPU ground truth for colloc's training-memory estimator, measured in PyTorch.

For every zoo model that tools/export_zoo.py exported in training mode (data/zoo/<name>.json says
"mode": "training"), build the same model (same constructor, random init), put it in train mode
and run one training step at batch 8 (transformers: seq 128; t5_small: seq 128 and dec_seq 128),
then write data/reference/memory_cpu.json, one object keyed by model name:

  batch, dims, mode, torch_version    the setting of the measurement
  loss                                the loss used (see below)
  saved_bytes_forward                 bytes autograd saves for backward during the model's forward
  saved_tensors_forward                 alone (no loss), and how many distinct storages that is
  saved_bytes_forward_loss            the same for forward + loss (what backward() will consume)
  saved_tensors_forward_loss
  dropout_mask_bytes_forward          part of saved_bytes_forward that is dropout masks: on CPU,
                                      F.dropout saves a float32 noise tensor (4 bytes/element)
  saved_bytes_forward_bool_masks      saved_bytes_forward with those masks at 1 byte/element, as
                                      CUDA's fused native_dropout saves them (bool)
  saved_forward_by_producer           diagnostic: saved_bytes_forward split by the grad_fn of the
                                      saved tensor ("View", "Relu", ...) or "<dtype> (no grad)"
  saved_forward_by_dtype              diagnostic: saved_bytes_forward split by dtype
  input_bytes, label_bytes            the batch (excluded from the saved bytes)
  output_bytes                        bytes of the model's outputs (all of them, aux logits too)
  param_bytes, param_tensors          trainable parameters (requires_grad), deduplicated
  buffer_bytes                        buffers (BatchNorm running stats, ...)
  grad_bytes, grad_tensors            sum of p.grad.nbytes after loss.backward()
  optimizer_state                     per optimizer, after one step() of a fresh optimizer:
                                      {"bytes": all tensors in opt.state, scalar step tensors
                                       included, "tensors": their count, "step_bytes" and
                                       "step_tensors": the scalar `step` tensors alone}.
                                      torch 1.13: Adam/AdamW/Adagrad keep `step` as a float32
                                      scalar tensor, RMSprop as a Python int (not counted);
                                      Adagrad creates its state in the constructor for every
                                      parameter, the others in step() only for parameters that
                                      have a gradient
      sgd       SGD(lr=1e-3)                    momentum  SGD(lr=1e-3, momentum=0.9)
      adam      Adam(lr=1e-3)                   adamw     AdamW(lr=1e-3)
      rmsprop   RMSprop(lr=1e-3)                adagrad   Adagrad(lr=1e-3)

Saved bytes are counted with torch.autograd.graph.saved_tensors_hooks: every tensor autograd packs
is attributed to its storage (storage().data_ptr(), storage nbytes); each storage counts once,
however many tensors or views of it are saved, and storages of parameters, buffers, the model
input and the labels are excluded.  A view saved of a larger storage counts the whole storage (it
keeps the whole storage alive).

Losses: CrossEntropyLoss on the logits with random int64 labels for classifiers (inception_v3
adds 0.4 x the aux logits' loss, as torchvision's training recipe does); causal-LM cross-entropy for distilgpt2
and gpt2 (logits[:, :-1] against input_ids[:, 1:], as Hugging Face's GPT2LMHeadModel does, which
copies the shifted logits); masked-LM cross-entropy for bert_base (labels on 15% of the positions,
-100 elsewhere; log-softmax still runs over every position); sequence cross-entropy on the
decoder logits for t5_small.

Debian's torch uses the reference BLAS (about 2.5 GFLOP/s), so by default the matrix products
(mm/addmm/bmm/baddbmm, forward and backward) return zeros of the right shape instead of being
computed (zoo_reference.FlopCounter(fake_matmul=True)); memory does not depend on values, and
autograd decides what to save above the dispatch level where the products are replaced.
--real-matmul computes them (about half an hour for the zoo).

Run:
    /usr/bin/python3 tools/reference_memory.py                    # -> data/reference/memory_cpu.json
    /usr/bin/python3 tools/reference_memory.py --only resnet18,gpt2 --out /tmp/m.json
"""

import argparse
import json
import os
import sys
import time
from collections import Counter

import torch
import torch.nn as nn
from torch.utils._python_dispatch import _pop_mode_temporarily

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import export_zoo  # noqa: E402  (the zoo definitions)
import zoo_reference  # noqa: E402  (FlopCounter: fake matrix products)

REPO = export_zoo.REPO
DEFAULT_OUT = os.path.join(REPO, "data", "reference", "memory_cpu.json")
BATCH = 8
DIMS = {"seq": 128, "dec_seq": 128}
OPTIMIZERS = {
    "sgd": lambda ps: torch.optim.SGD(ps, lr=1e-3),
    "momentum": lambda ps: torch.optim.SGD(ps, lr=1e-3, momentum=0.9),
    "adam": lambda ps: torch.optim.Adam(ps, lr=1e-3),
    "adamw": lambda ps: torch.optim.AdamW(ps, lr=1e-3),
    "rmsprop": lambda ps: torch.optim.RMSprop(ps, lr=1e-3),
    "adagrad": lambda ps: torch.optim.Adagrad(ps, lr=1e-3),
}


def storage_of(t):
    """(data_ptr, nbytes) of the storage behind tensor t."""
    s = t.untyped_storage() if hasattr(t, "untyped_storage") else t.storage()
    return s.data_ptr(), s.nbytes()


def nbytes(t):
    return t.numel() * t.element_size()


class OpTracker(zoo_reference.FlopCounter):
    """The FlopCounter (for its fake matrix products) that also remembers dropout masks: the
    storages bernoulli_ fills (on CPU, F.dropout saves a float32 noise tensor for backward where
    CUDA's fused native_dropout saves a bool mask)."""

    def __init__(self, fake_matmul):
        super().__init__(fake_matmul)
        self.masks = set()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = super().__torch_dispatch__(func, types, args, kwargs)
        if zoo_reference.op_name(func) == "bernoulli" and isinstance(out, torch.Tensor):
            self.masks.add(storage_of(out)[0])
        return out


def _producer(t):
    """What made a saved tensor: its grad_fn's name, or '<dtype> (no grad)' for masks/indices."""
    fn = t.grad_fn
    if fn is not None:
        return type(fn).__name__.replace("Backward0", "").replace("Backward1", "")
    return f"{str(t.dtype).replace('torch.', '')} (no grad)"


class SavedTensorMeter:
    """Counts distinct storages autograd saves for backward, minus excluded ones.

    Each storage is also attributed to the op that produced the saved tensor (its grad_fn) and
    to its dtype, and dropout masks are told apart.  Used under the OpTracker mode `ops`.
    """

    def __init__(self, exclude, ops):
        self.exclude = set(exclude)
        self.ops = ops
        self.mask_bytes = 0  # dropout masks (float32 on CPU)
        self.mask_elems = 0
        self.saved = {}  # storage ptr -> nbytes
        self.by_op = Counter()
        self.by_dtype = Counter()
        self.originals = []  # keeps replaced tensors alive so their addresses are not reused

    def pack(self, t):
        ptr, size = storage_of(t)
        if ptr and ptr not in self.exclude and ptr not in self.saved:
            self.saved[ptr] = size
            self.by_op[_producer(t)] += size
            self.by_dtype[str(t.dtype).replace("torch.", "")] += size
            if ptr in self.ops.masks:
                self.mask_bytes += size
                self.mask_elems += size // t.element_size()
        if t.dim() == 0:
            # torch 1.13: a saved "wrapped number" (the 3.0 of x / 3.0) comes back from the hook
            # as a tensor that autograd detaches in backward; under a TorchDispatchMode the wrapped
            # number reaches Python as a float and detach fails.  A plain copy made outside the
            # mode avoids that (values are unchanged; the bytes were counted above).
            self.originals.append(t)
            with _pop_mode_temporarily():
                t = t.clone()
        return t

    @staticmethod
    def unpack(t):
        return t

    def hooks(self):
        return torch.autograd.graph.saved_tensors_hooks(self.pack, self.unpack)

    def totals(self):
        return sum(self.saved.values()), len(self.saved)


def _outputs(out):
    if isinstance(out, torch.Tensor):
        return [out]
    # torchvision's segmentation models return {"out": ..., "aux": ...}
    return list(out.values()) if isinstance(out, dict) else list(out)


def make_loss(spec, inputs, gen):
    """(labels, description, fn(outputs) -> loss) for one zoo model."""
    ce = nn.CrossEntropyLoss()
    if spec.name in ("distilgpt2", "gpt2"):
        ids = inputs[0]
        labels = ids[:, 1:].reshape(-1).clone()

        def fn(out):
            logits = _outputs(out)[0]
            return ce(logits[:, :-1].reshape(-1, logits.shape[-1]), labels)

        return labels, "causal-LM cross-entropy: logits[:, :-1] vs input_ids[:, 1:]", fn
    if spec.name == "bert_base":
        ids = inputs[0]
        masked = torch.rand(ids.shape, generator=gen) < 0.15
        labels = torch.where(masked, torch.randint(0, 30522, ids.shape, generator=gen),
                             torch.full_like(ids, -100)).reshape(-1)

        def fn(out):
            logits = _outputs(out)[0]
            return ce(logits.reshape(-1, logits.shape[-1]), labels)

        return labels, "masked-LM cross-entropy: 15% of positions labelled, -100 elsewhere", fn
    if spec.name == "t5_small":
        labels = torch.randint(0, 32128, (inputs[1].numel(),), generator=gen)

        def fn(out):
            logits = _outputs(out)[0]
            return ce(logits.reshape(-1, logits.shape[-1]), labels)

        return labels, "sequence cross-entropy on the decoder logits", fn
    labels = torch.randint(0, spec.num_classes, (inputs[0].shape[0],), generator=gen)

    def fn(out):
        outs = _outputs(out)
        loss = ce(outs[0], labels)
        # inception_v3 trains its aux head too, as torchvision's reference recipe does
        # (loss + 0.4 * aux loss), so every parameter gets a gradient and optimizer state.
        for aux in outs[1:]:
            loss = loss + 0.4 * ce(aux, labels)
        return loss

    return labels, "CrossEntropyLoss(logits, random int64 labels) (+ 0.4 x aux logits' loss)", fn


def optimizer_state(model, make):
    opt = make([p for p in model.parameters() if p.requires_grad])
    opt.step()
    total = count = step_bytes = step_count = 0
    for state in opt.state.values():
        for key, value in state.items():
            if isinstance(value, torch.Tensor):
                total += nbytes(value)
                count += 1
                if key == "step":
                    step_bytes += nbytes(value)
                    step_count += 1
    return {"bytes": total, "tensors": count, "step_bytes": step_bytes, "step_tensors": step_count}


def measure_training(model, inputs, labels, loss_fn, fake_matmul=True, optimizers=None):
    """One training step of `model` (already in the mode wanted) on the tuple `inputs`: the
    measured fields of a memory_cpu.json record, from saved_bytes_forward on, in its order.
    labels: the loss's target tensor(s), excluded from the saved bytes like the inputs;
    loss_fn(outputs) -> loss; optimizers: {name: fn(params) -> optimizer}, default all six."""
    labels = [labels] if isinstance(labels, torch.Tensor) else list(labels)
    params = list(model.parameters())
    exclude = {storage_of(p)[0] for p in params}
    exclude |= {storage_of(b)[0] for b in model.buffers()}
    exclude |= {storage_of(x)[0] for x in inputs}
    exclude |= {storage_of(t)[0] for t in labels}
    ops = OpTracker(fake_matmul)
    meter = SavedTensorMeter(exclude, ops)
    with ops:
        with meter.hooks():
            out = model(*inputs)
            fwd_bytes, fwd_count = meter.totals()
            fwd_by_op, fwd_by_dtype = dict(meter.by_op), dict(meter.by_dtype)
            mask_bytes, mask_elems = meter.mask_bytes, meter.mask_elems
            loss = loss_fn(out)
            all_bytes, all_count = meter.totals()
        loss.backward()

    trainable = [p for p in params if p.requires_grad]
    grads = [p.grad for p in trainable if p.grad is not None]
    rec = {
        "saved_bytes_forward": fwd_bytes,
        "saved_tensors_forward": fwd_count,
        "saved_bytes_forward_loss": all_bytes,
        "saved_tensors_forward_loss": all_count,
        "input_bytes": sum(nbytes(x) for x in inputs),
        "label_bytes": sum(nbytes(t) for t in labels),
        "output_bytes": sum(nbytes(o) for o in _outputs(out)),
        "param_bytes": sum(nbytes(p) for p in trainable),
        "param_tensors": len(trainable),
        "buffer_bytes": sum(nbytes(b) for b in model.buffers()),
        "grad_bytes": sum(nbytes(g) for g in grads),
        "grad_tensors": len(grads),
        "optimizer_state": {},
        "dropout_mask_bytes_forward": mask_bytes,
        "saved_bytes_forward_bool_masks": fwd_bytes - mask_bytes + mask_elems,
        "saved_forward_by_producer": dict(sorted(fwd_by_op.items(), key=lambda kv: -kv[1])),
        "saved_forward_by_dtype": fwd_by_dtype,
    }
    del out, loss, meter
    for name, make in (optimizers or OPTIMIZERS).items():
        rec["optimizer_state"][name] = optimizer_state(model, make)
    return rec


def measure(spec, batch, dims, fake_matmul=True):
    torch.manual_seed(0)
    model = spec.build()
    model.train()
    gen = torch.Generator().manual_seed(3)
    inputs = spec.make_inputs(batch, dims, gen)
    labels, loss_desc, loss_fn = make_loss(spec, inputs, gen)
    rec = {
        "batch": batch,
        "dims": {k: v for k, v in dims.items() if any(k in s for _, s, _ in spec.inputs)},
        "mode": "training",
        "torch_version": torch.__version__,
        "loss": loss_desc,
    }
    rec.update(measure_training(model, inputs, labels, loss_fn, fake_matmul))
    return rec


def training_models(zoo_dir):
    """Zoo models whose facts say they were exported in training mode, in zoo order."""
    names = []
    for name in export_zoo.ZOO:
        path = os.path.join(zoo_dir, f"{name}.json")
        if not os.path.exists(path):
            continue
        with open(path) as f:
            if json.load(f)["mode"] == "training":
                names.append(name)
    return names


def main():
    ap = argparse.ArgumentParser(description="Measure training memory facts for the zoo (CPU).")
    ap.add_argument("--only", help="comma-separated model names")
    ap.add_argument("--out", default=DEFAULT_OUT, help="output JSON (default %(default)s)")
    ap.add_argument("--zoo", default=export_zoo.DEFAULT_OUT, help="folder of the zoo facts")
    ap.add_argument("--batch", type=int, default=BATCH)
    ap.add_argument("--seq", type=int, default=DIMS["seq"], help="seq and dec_seq of transformers")
    ap.add_argument("--real-matmul", action="store_true",
                    help="compute matrix products for real (slow with Debian's reference BLAS)")
    a = ap.parse_args()
    available = training_models(a.zoo)
    names = available if not a.only else [n.strip() for n in a.only.split(",") if n.strip()]
    bad = [n for n in names if n not in available]
    if bad:
        ap.error(f"not a training-mode zoo model in {a.zoo}: {', '.join(bad)}")
    dims = {"seq": a.seq, "dec_seq": a.seq}
    torch.set_num_threads(len(os.sched_getaffinity(0)))  # torch starts with 1 thread here
    result = {}
    if a.only and os.path.exists(a.out):
        with open(a.out) as f:
            result = json.load(f)  # update the named models, keep the others
    t0 = time.time()
    for name in names:
        t = time.time()
        rec = measure(export_zoo.ZOO[name], a.batch, dims, fake_matmul=not a.real_matmul)
        result[name] = rec
        print(f"{name:20s} saved fwd {rec['saved_bytes_forward'] / 2**20:9.1f} MiB  "
              f"fwd+loss {rec['saved_bytes_forward_loss'] / 2**20:9.1f} MiB  "
              f"params {rec['param_bytes'] / 2**20:7.1f} MiB  "
              f"adam {rec['optimizer_state']['adam']['bytes'] / 2**20:7.1f} MiB  "
              f"{time.time() - t:5.1f}s", flush=True)
    order = list(export_zoo.ZOO)
    result = {k: result[k] for k in sorted(result, key=lambda k: order.index(k) if k in order else 0)}
    os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
    with open(a.out, "w") as f:
        json.dump(result, f, indent=1)
        f.write("\n")
    print(f"{len(names)} models in {time.time() - t0:.0f}s -> {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
