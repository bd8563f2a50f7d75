#!/usr/bin/python3
"""colloc-export: export your PyTorch model to an ONNX graph that `colloc estimate` can read.

    /usr/bin/python3 tools/colloc-export.py MODULE:CALLABLE --input SHAPE [options]

The export itself lives in tools/colloc_export.py (importable); this is its command line.
"""

import argparse
import importlib
import importlib.util
import json
import os
import shlex
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

EPILOG = """\
SHAPE is one sample's shape without the batch axis, sizes separated by commas or x
(3,224,224 or 3x224x224); the batch axis (dynamic, named `batch`) is put in front and the trace
uses --trace-batch samples. Add :DTYPE to one input to give it its own type (128:int64), and
NAME= in front to name it (input_ids=128:int64); unnamed inputs are `input` (one) or
`input0`, `input1`, ... Integer inputs are traced with zeros, float ones with random normals.

--dynamic NAME=AXIS makes axis AXIS (counted with the batch axis as 0, so the first axis of
SHAPE is 1) dynamic under the name NAME on every input that has it; NAME=INPUT:AXIS on one
input only. Give the size when estimating: colloc estimate ... --dim NAME=SIZE.

The export is torch.onnx.export(model.train(), training=TrainingMode.TRAINING,
do_constant_folding=False, export_params=True, keep_initializers_as_inputs=False): BatchNorm is
not folded into the convolutions, Dropout nodes stay, initializers keep the PyTorch parameter
names, equal-valued initializers are not merged. If the training-mode export fails (e.g.
torchvision's StochasticDepth, which draws with bernoulli_), the model is exported in eval()
with TrainingMode.PRESERVE instead and a note on stderr says why. The trainable parameters in
the graph must add up to sum(p.numel() for p in model.parameters() if p.requires_grad), else
the exit status is 1.

On success the next command to run is printed on stdout.

examples:
  /usr/bin/python3 tools/colloc-export.py examples/export/mlp.py:model --input 784 --graph-only
  /usr/bin/python3 tools/colloc-export.py torchvision.models:resnet18 --kwargs '{"weights": null}' \\
      --input 3,224,224 --dynamic height=2 --dynamic width=3 --out resnet18.onnx
  /usr/bin/python3 tools/colloc-export.py mylm.py:build --input input_ids=128 --dtype int64 \\
      --dynamic seq=1 --opset 17

exit status: 0 exported and checked, 1 export failed or parameters missing from the graph,
2 invalid command line or the callable could not be loaded.
"""


def parse_args(argv):
    ap = argparse.ArgumentParser(
        prog="colloc-export.py", formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Export a PyTorch model (an nn.Module returned by MODULE:CALLABLE) to ONNX "
                    "for `colloc estimate`: training mode, dynamic batch, PyTorch parameter "
                    "names.", epilog=EPILOG)
    ap.add_argument("target", metavar="MODULE:CALLABLE",
                    help="MODULE is a Python file (examples/export/mlp.py) or an importable "
                         "module name (torchvision.models); CALLABLE (dotted names allowed) is "
                         "called with no arguments, or with --kwargs, and returns the nn.Module")
    ap.add_argument("--input", action="append", required=True, metavar="[NAME=]SHAPE[:DTYPE]",
                    help="one model input, in the order forward() takes them; repeat for "
                         "several. Example: --input 3,224,224")
    ap.add_argument("--dtype", default="float32",
                    help="element type of the inputs that give none: float32 (default), "
                         "float16, bfloat16, float64, int64 (token ids), int32, bool. "
                         "Example: --dtype int64")
    ap.add_argument("--kwargs", default=None, metavar="JSON",
                    help="keyword arguments for CALLABLE as a JSON object. "
                         "Example: --kwargs '{\"num_classes\": 10}'")
    ap.add_argument("--out", default=None, metavar="FILE.onnx",
                    help="output file (default: CALLABLE's name + .onnx in the current folder)")
    ap.add_argument("--opset", type=int, default=None, metavar="N",
                    help="ONNX opset (default 14, as the bundled zoo; 13 to the newest the "
                         "installed exporter supports). Example: --opset 17")
    ap.add_argument("--graph-only", action="store_true",
                    help="strip the weights (as tools/export_zoo.py does): initializers over 64 "
                         "elements keep name, shape and type but no data; colloc needs nothing "
                         "more and the file is kilobytes")
    ap.add_argument("--dynamic", action="append", default=[], metavar="NAME=[INPUT:]AXIS",
                    help="another dynamic axis besides `batch`. Example: --dynamic seq=1")
    ap.add_argument("--trace-batch", type=int, default=2, metavar="N",
                    help="batch of the dummy input used for tracing (default 2; BatchNorm in "
                         "training mode needs more than one value per channel)")
    ap.add_argument("--verbose", action="store_true", help="show torch.onnx's own warnings")
    return ap, ap.parse_args(argv)


DTYPES = {"float32": "float32", "float": "float32", "fp32": "float32", "float16": "float16",
          "half": "float16", "fp16": "float16", "bfloat16": "bfloat16", "bf16": "bfloat16",
          "float64": "float64", "double": "float64", "int64": "int64", "long": "int64",
          "int32": "int32", "int": "int32", "bool": "bool"}


def parse_input(text, default_dtype, index, total):
    """[NAME=]SHAPE[:DTYPE] -> (name, [sizes], dtype name)."""
    name = None
    if "=" in text:
        name, text = text.split("=", 1)
    dtype = default_dtype
    if ":" in text:
        text, dtype = text.rsplit(":", 1)
    if dtype not in DTYPES:
        raise ValueError(f"unknown dtype '{dtype}' (one of {', '.join(sorted(set(DTYPES)))})")
    parts = [p for p in text.replace("x", ",").split(",") if p.strip()]
    try:
        shape = [int(p) for p in parts]
    except ValueError:
        raise ValueError(f"bad SHAPE '{text}': sizes are integers, e.g. 3,224,224") from None
    if any(s <= 0 for s in shape):
        raise ValueError(f"bad SHAPE '{text}': sizes must be positive")
    if not name:
        name = "input" if total == 1 else f"input{index}"
    return name, shape, DTYPES[dtype]


def parse_dynamic(items, inputs):
    """NAME=AXIS / NAME=INPUT:AXIS -> {input name: {axis: NAME}}."""
    axes = {n: {} for n, _, _ in inputs}
    for item in items:
        if "=" not in item:
            raise ValueError(f"--dynamic '{item}': expected NAME=AXIS or NAME=INPUT:AXIS")
        dim, where = item.split("=", 1)
        target = None
        if ":" in where:
            target, where = where.rsplit(":", 1)
        try:
            axis = int(where)
        except ValueError:
            raise ValueError(f"--dynamic '{item}': AXIS must be an integer") from None
        if not dim or dim == "batch" or axis == 0:
            raise ValueError(f"--dynamic '{item}': axis 0 is always the dynamic `batch`")
        hit = False
        for n, shape, _ in inputs:
            if (target is None or n == target) and 1 <= axis <= len(shape):
                axes[n][axis] = dim
                hit = True
        if not hit:
            raise ValueError(f"--dynamic '{item}': no input has axis {axis}"
                             + (f" (input '{target}')" if target else ""))
    return axes


def load_callable(target):
    """MODULE:CALLABLE -> the callable (MODULE a .py file or an importable module)."""
    if ":" not in target:
        raise ValueError(f"'{target}': expected MODULE:CALLABLE, e.g. examples/export/mlp.py:model")
    mod_name, attr = target.rsplit(":", 1)
    if mod_name.endswith(".py") or os.path.sep in mod_name or os.path.exists(mod_name):
        path = os.path.abspath(mod_name)
        if not os.path.isfile(path):
            raise ValueError(f"{mod_name}: no such file")
        sys.path.insert(0, os.path.dirname(path))
        spec = importlib.util.spec_from_file_location(
            os.path.splitext(os.path.basename(path))[0], path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    else:
        sys.path.insert(0, os.getcwd())
        module = importlib.import_module(mod_name)
    obj = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise ValueError(f"{mod_name} has no '{attr}'")
        obj = getattr(obj, part)
    if not callable(obj):
        raise ValueError(f"{target} is not callable")
    return obj


def main(argv=None):
    ap, a = parse_args(argv)
    try:
        inputs = [parse_input(t, a.dtype, i, len(a.input)) for i, t in enumerate(a.input)]
        if len({n for n, _, _ in inputs}) != len(inputs):
            raise ValueError("two inputs have the same name")
        axes = parse_dynamic(a.dynamic, inputs)
        kwargs = json.loads(a.kwargs) if a.kwargs else {}
        if not isinstance(kwargs, dict):
            raise ValueError("--kwargs must be a JSON object")
        if a.trace_batch < 1:
            raise ValueError("--trace-batch must be at least 1")
    except (ValueError, json.JSONDecodeError) as err:
        ap.error(str(err))

    import torch  # after argument parsing: --help works without torch

    sys.path.insert(0, HERE)
    import colloc_export as ce

    newest = ce.max_opset()
    opset = a.opset if a.opset is not None else ce.DEFAULT_OPSET
    if not 13 <= opset <= newest:
        ap.error(f"--opset {opset}: this torch.onnx exports opsets 13 to {newest}")
    try:
        build = load_callable(a.target)
    except Exception as err:  # noqa: BLE001 -- a user's module may raise anything on import
        print(f"colloc-export: error: cannot load {a.target}: {ce.error_reason(err)}",
              file=sys.stderr)
        return 2
    try:
        model = build(**kwargs)
    except Exception as err:  # noqa: BLE001
        print(f"colloc-export: error: {a.target}(**{kwargs}) failed: {ce.error_reason(err)}",
              file=sys.stderr)
        return 2
    if not isinstance(model, torch.nn.Module):
        print(f"colloc-export: error: {a.target} returned {type(model).__name__}, "
              f"not a torch.nn.Module", file=sys.stderr)
        return 2

    gen = torch.Generator().manual_seed(0)
    args = []
    for _, shape, dt in inputs:
        dtype = getattr(torch, dt)
        sizes = [a.trace_batch] + shape
        if dtype.is_floating_point:
            args.append(torch.randn(sizes, generator=gen).to(dtype))
        elif dtype == torch.bool:
            args.append(torch.ones(sizes, dtype=torch.bool))
        else:
            args.append(torch.zeros(sizes, dtype=dtype))

    try:
        e = ce.export_model(model, args, [n for n, _, _ in inputs], axes, opset=opset,
                            quiet=not a.verbose)
    except Exception as err:  # noqa: BLE001
        print(f"colloc-export: error: torch.onnx.export failed in training and in eval mode: "
              f"{ce.error_reason(err, 600)}", file=sys.stderr)
        return 1
    if e.mode != "training":
        print(f"colloc-export: note: {e.reason}; exported the model in eval() with "
              f"TrainingMode.PRESERVE instead (BatchNorm normalises with running statistics and "
              f"there are no Dropout nodes in this graph)", file=sys.stderr)
    in_graph, in_module, missing = ce.check_parameters(model, e.proto)
    if in_graph != in_module:
        shown = ", ".join(missing[:8]) + (f", ... ({len(missing)} in all)" if len(missing) > 8
                                          else "")
        print(f"colloc-export: error: the graph holds {in_graph:,} trainable parameters, the "
              f"module has {in_module:,} (sum of p.numel() for p in parameters() if "
              f"p.requires_grad); not in the graph by name: {shown or '(none: renamed?)'}. "
              f"Parameters the forward pass does not use, or that the exporter folded or "
              f"renamed, cannot be estimated; nothing was written", file=sys.stderr)
        return 1

    out = a.out or f"{a.target.rsplit(':', 1)[1].split('.')[-1]}.onnx"
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    if a.graph_only:
        stem = os.path.splitext(os.path.basename(out))[0]
        n_ext, ext_bytes = ce.graph_only(e.proto, f"{stem}.weights")
    ce.save(e.proto, out)
    size = os.path.getsize(out)
    print(f"colloc-export: wrote {out} ({size / 1024:.1f} KiB, opset {opset}, {e.mode} mode, "
          f"{in_module:,} trainable parameters"
          + (f", {n_ext} tensors ({ext_bytes / 2**20:.1f} MiB) stripped" if a.graph_only else "")
          + ")", file=sys.stderr)
    cmd = ["colloc", "estimate", out, "--batch", str(a.trace_batch)]
    named = {}
    for (n, shape, _), ax in zip(inputs, [axes[n] for n, _, _ in inputs]):
        for axis, dim in ax.items():
            named.setdefault(dim, shape[axis - 1])
    for dim, size in named.items():
        cmd += ["--dim", f"{dim}={size}"]
    print(" ".join(shlex.quote(c) for c in cmd))
    return 0


if __name__ == "__main__":
    sys.exit(main())
