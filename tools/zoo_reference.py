"""Independent FLOP counter for the colloc model zoo (PyTorch side).

This module implements the counting rules of docs/flops.md on the ATen operators that PyTorch
actually runs, using a ``TorchDispatchMode``.  The C implementation (src/model/cost.c) applies the
same rules to ONNX nodes; the zoo test compares the two totals (they must agree within 1%).

It is a library imported by tools/export_zoo.py, but it can be run on its own to print a per-op
breakdown for one torchvision model:

    /usr/bin/python3 tools/zoo_reference.py resnet50 [--batch 1] [--eval]

Rules (docs/flops.md; a multiply-add counts 2, numel(y) = output elements):

    convolution                          2*numel(y)*(Cin/groups)*prod(kernel) (+numel(y) with bias)
    mm / bmm                             2*M*N*K per batch
    addmm / baddbmm                      2*M*N*K per batch + M*N per batch
    native_batch_norm                    2*numel(y)
    native_layer_norm                    5*numel(y)
    _softmax / _log_softmax              3*numel(y)
    max_pool2d(_with_indices), avg_pool2d    numel(y)*prod(kernel)
    adaptive_avg_pool2d, mean, sum, amax     numel(x)  (input elements)
    elementwise arithmetic / activations 1*numel(y)
    everything else                      0

Elementwise ATen ops counted (in-place ``op_`` forms too): the list of docs/flops.md -- add mul div
sub pow sqrt rsqrt neg exp erf tanh sigmoid relu hardtanh gelu silu hardsigmoid hardswish
native_dropout maximum minimum where -- plus the ATen ops that match the remaining ONNX ops of that
table row: abs, log (Abs, Log), leaky_relu (LeakyRelu), clamp/clamp_min/clamp_max (Clip), rsub (Sub)
and masked_fill (exported as Where).

Dropout: on CPU, ``F.dropout`` does not call ``aten.native_dropout``; it runs
``empty_like -> bernoulli_ -> div_ -> mul``.  The counter recognises that sequence (the ``div_`` on
the freshly drawn noise counts 0, the ``mul`` by the noise counts numel(y)), so one dropout counts
1*numel(y) as a fused ``native_dropout`` (and an ONNX ``Dropout`` node) would.  A dropout with p=0
in training mode is a no-op in PyTorch and counts 0 here, while a training-mode ONNX export still
contains a ``Dropout`` node for it (1 per element on the C side); the difference is far below 1%
for every zoo model.

``FlopCounter(fake_matmul=True)`` returns zeros of the checked result shape for mm/addmm/bmm/
baddbmm instead of computing them (Debian's torch uses the slow reference BLAS); shapes and FLOPs
are unchanged.  tools/export_zoo.py and tools/reference_memory.py use it by default.
"""

from collections import Counter

import torch
from torch.utils._python_dispatch import TorchDispatchMode

_ELEMENTWISE = frozenset(
    """add mul div sub rsub pow sqrt rsqrt neg abs exp log erf tanh sigmoid relu leaky_relu hardtanh
    clamp clamp_min clamp_max gelu silu hardsigmoid hardswish native_dropout maximum minimum where
    masked_fill""".split()
)
_REDUCTIONS = frozenset("adaptive_avg_pool2d _adaptive_avg_pool2d mean sum amax".split())
_POOLS = frozenset("max_pool2d_with_indices max_pool2d avg_pool2d".split())
_SOFTMAX = frozenset("_softmax _log_softmax".split())
_MATMULS = frozenset("mm addmm bmm baddbmm".split())


def _numel(t):
    return t.numel() if isinstance(t, torch.Tensor) else 0


def _first(out):
    return out[0] if isinstance(out, (tuple, list)) else out


def _prod(xs):
    p = 1
    for x in xs:
        p *= int(x)
    return p


def _kernel(k, ndim=2):
    """Pooling kernel_size argument (int or list of 1..ndim ints) -> element count."""
    if isinstance(k, int):
        return k ** ndim
    k = list(k)
    if len(k) == 1:
        return int(k[0]) ** ndim
    return _prod(k)


def op_name(func):
    """'aten.relu_.default' -> 'relu'; '_softmax' keeps its leading underscore."""
    name = func.overloadpacket.__name__
    if name.endswith("_") and not name.endswith("__"):
        name = name[:-1]
    return name


def _matmul_flops(name, args):
    if name in ("mm", "addmm"):
        a, b = (args[0], args[1]) if name == "mm" else (args[1], args[2])
        m, k = a.shape[-2], a.shape[-1]
        n = b.shape[-1]
        f = 2 * m * n * k
        return f + m * n if name == "addmm" else f
    # bmm / baddbmm: (B, M, K) x (B, K, N)
    a, b = (args[0], args[1]) if name == "bmm" else (args[1], args[2])
    batch, m, k = a.shape
    n = b.shape[-1]
    f = 2 * batch * m * n * k
    return f + batch * m * n if name == "baddbmm" else f


def _zeros_matmul(name, args):
    """Result of a matrix product with the right shape and dtype, filled with zeros.

    Debian's torch 1.13 uses the reference (netlib) BLAS: about 2.5 GFLOP/s on one core, which
    would make the transformer checks take minutes.  Shapes and FLOPs do not depend on values,
    so the export may skip the arithmetic of mm/addmm/bmm/baddbmm (``fake_matmul=True``).  The
    operand shapes are still checked as the real kernel would.
    """
    a, b = (args[0], args[1]) if name in ("mm", "bmm") else (args[1], args[2])
    if a.dim() != b.dim() or a.shape[-1] != b.shape[-2] or a.shape[:-2] != b.shape[:-2]:
        raise RuntimeError(f"{name}: shapes {tuple(a.shape)} and {tuple(b.shape)} do not match")
    shape = tuple(a.shape[:-1]) + (b.shape[-1],)
    if name in ("addmm", "baddbmm"):
        torch.broadcast_shapes(args[0].shape, shape)  # the added input must broadcast
    return torch.zeros(shape, dtype=torch.result_type(a, b), device=a.device)


class FlopCounter(TorchDispatchMode):
    """Counts forward FLOPs by the rules of docs/flops.md.

    Use as a context manager around a forward pass (``torch.no_grad()`` is fine; the mode sees the
    ATen ops below autograd).  ``total`` holds the sum, ``by_op`` a Counter of FLOPs per op name and
    ``calls`` a Counter of calls per op name (also for ops that count 0).
    """

    def __init__(self, fake_matmul=False):
        super().__init__()
        self.fake_matmul = fake_matmul
        self.total = 0
        self.by_op = Counter()
        self.calls = Counter()
        self._noise = set()  # data_ptr of dropout masks drawn by bernoulli_

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = op_name(func)
        if self.fake_matmul and name in _MATMULS and not kwargs:
            out = _zeros_matmul(name, args)
        else:
            out = func(*args, **kwargs)
        self.calls[name] += 1
        flops = self._flops(name, args, out)
        if flops:
            self.total += flops
            self.by_op[name] += flops
        return out

    def _flops(self, name, args, out):
        y = _first(out)
        if name == "bernoulli":
            if isinstance(y, torch.Tensor):
                self._noise.add(y.data_ptr())
            return 0
        if name in ("mul", "div") and self._noise:
            ptrs = {a.data_ptr() for a in args[:2] if isinstance(a, torch.Tensor)}
            hit = ptrs & self._noise
            if hit:
                if name == "div":  # rescaling the mask: part of the dropout
                    return 0
                self._noise -= hit  # the mask is consumed: input * mask is the dropout
                return _numel(y)
        if name == "convolution":
            x, w, bias = args[0], args[1], args[2]
            groups = int(args[8])
            f = 2 * _numel(y) * (x.shape[1] // groups) * _prod(w.shape[2:])
            return f + _numel(y) if bias is not None else f
        if name in _MATMULS:
            return _matmul_flops(name, args)
        if name == "native_batch_norm":
            return 2 * _numel(y)
        if name == "native_layer_norm":
            return 5 * _numel(y)
        if name in _SOFTMAX:
            return 3 * _numel(y)
        if name in _POOLS:
            return _numel(y) * _kernel(args[1])
        if name in ("grid_sampler_2d", "grid_sampler_3d"):
            # interpolation_mode 0 bilinear, 1 nearest, 2 bicubic (2-D only)
            taps = {0: 2, 1: 0, 2: 4}[int(args[2])] ** (y.dim() - 2)
            return 2 * _numel(y) * taps
        if name in _REDUCTIONS:
            return _numel(args[0])
        if name in _ELEMENTWISE:
            return _numel(y)
        return 0


def count_flops(model, *inputs, fake_matmul=False):
    """Run ``model(*inputs)`` under no_grad with the counter; return (output, FlopCounter)."""
    with torch.no_grad(), FlopCounter(fake_matmul) as counter:
        out = model(*inputs)
    return out, counter


def _main():
    import argparse

    import torchvision

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model", help="torchvision.models constructor name, e.g. resnet50")
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--size", type=int, default=224)
    ap.add_argument("--eval", action="store_true", help="count in eval mode (default: train)")
    a = ap.parse_args()
    torch.manual_seed(0)
    model = getattr(torchvision.models, a.model)(weights=None)
    model.train(not a.eval)
    _, c = count_flops(model, torch.randn(a.batch, 3, a.size, a.size))
    for name, f in c.by_op.most_common():
        print(f"{name:28s} {f:16d}  ({c.calls[name]} calls)")
    print(f"{'total':28s} {c.total:16d}")


if __name__ == "__main__":
    _main()
