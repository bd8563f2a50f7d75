"""Export a PyTorch model to ONNX the way colloc needs it (importable part of colloc-export.py).

colloc estimates training memory from the graph, so the export must keep what training keeps:

  * the model in train() and torch.onnx.TrainingMode.TRAINING: BatchNormalization keeps
    training_mode=1 (not folded into Conv) and every Dropout stays a node;
  * do_constant_folding=False and export_params=True, keep_initializers_as_inputs=False:
    initializers are named after the PyTorch parameters and buffers (`layer1.0.conv1.weight`),
    which is how colloc tells parameters from buffers;
  * no merging of initializers that merely hold equal values (torch.onnx does that in eval
    exports: all fresh BatchNorm weights are ones), only of tied weights;
  * a dynamic batch axis named `batch` on every input (and optionally more named axes).

When the training-mode export fails (torchvision's StochasticDepth draws with bernoulli_, which
torch.onnx cannot export), the model is exported with TrainingMode.PRESERVE in eval() instead
and the result says so (mode "eval" and the reason).

After the export the trainable-parameter initializers must add up to exactly
sum(p.numel() for p in model.parameters() if p.requires_grad) (tied weights counted once);
check_parameters() says what is missing.

Functions (used by tools/colloc-export.py and tools/reference_sweep.py):

  export_model(model, args, input_names, ...) -> Export   the export, ONNX proto with weights
  check_parameters(model, proto) -> (in_graph, in_module, missing)
  graph_only(proto, weights_name, keep_inline=None)       strip weights (export_zoo's rule)
  save(proto, path)                                         onnx.save, external data if > 2 GB
"""

import contextlib
import os
import sys
import tempfile

import onnx
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import export_zoo  # noqa: E402  (make_graph_only, _no_value_dedup, _quiet)

DEFAULT_OPSET = 14
PROTOBUF_LIMIT = 2 * 1024**3 - 1024  # one ModelProto must stay under 2 GiB when serialized


class Export:
    """What export_model() made: proto (weights inline), mode ("training" or "eval"), reason
    (why eval, else None), input_names, output_names, dynamic_axes, opset."""

    def __init__(self, proto, mode, reason, input_names, output_names, dynamic_axes, opset):
        self.proto, self.mode, self.reason = proto, mode, reason
        self.input_names, self.output_names = input_names, output_names
        self.dynamic_axes, self.opset = dynamic_axes, opset
        self.training_error = None  # error_reason() of the failed training export


def max_opset():
    """Newest opset the installed torch.onnx exporter supports."""
    try:
        from torch.onnx import _constants

        return int(_constants.ONNX_MAX_OPSET)
    except (ImportError, AttributeError):
        from torch.onnx import symbolic_helper

        return int(symbolic_helper._onnx_main_opset)


def flatten_outputs(out):
    """The tensors of a model's output in the order torch.onnx numbers them, with names
    suggested by dict keys / namedtuple fields (or None)."""
    if isinstance(out, torch.Tensor):
        return [(None, out)]
    if isinstance(out, dict):
        res = []
        for k, v in out.items():
            res += [(str(k) if n is None else f"{k}.{n}", t) for n, t in flatten_outputs(v)]
        return res
    if isinstance(out, (list, tuple)):
        fields = getattr(out, "_fields", None)
        res = []
        for i, v in enumerate(out):
            key = fields[i] if fields else None
            res += [(key if n is None else (f"{key}.{n}" if key else n), t)
                    for n, t in flatten_outputs(v)]
        return res
    return []


def error_reason(err, limit=240):
    """One line: exception type and the first line of its message (torch.onnx's boilerplate
    "Please feel free to request support..." removed)."""
    msg = str(err).strip().splitlines()[0] if str(err).strip() else ""
    msg = msg.split(" Please feel free")[0].strip()
    if len(msg) > limit:
        msg = msg[:limit - 3] + "..."
    return f"{type(err).__name__}: {msg}" if msg else type(err).__name__


def stochastic_depth_note(model):
    sd = [m for m in model.modules() if type(m).__name__ == "StochasticDepth"]
    if not sd:
        return ""
    return (f"; the model's {len(sd)} StochasticDepth blocks (drop probability up to "
            f"{max(float(m.p) for m in sd):g}) draw their masks with bernoulli_, which torch.onnx "
            f"cannot export")


@contextlib.contextmanager
def _buffers_kept(model):
    """Tracing runs the model: restore its buffers (BatchNorm running statistics) afterwards so
    that the inline values of the graph are those of the model as given, export after export."""
    saved = [(b, b.detach().clone()) for b in model.buffers()]
    try:
        yield
    finally:
        with torch.no_grad():
            for b, v in saved:
                b.copy_(v)


def _probe_outputs(model, args, train):
    """Run the model once (no grad) to learn its outputs: [(suggested name, tensor)]."""
    model.train(train)
    with torch.no_grad(), _buffers_kept(model):
        return flatten_outputs(model(*args))


def _output_names(named):
    if len(named) == 1:
        return ["output"]
    names, seen = [], set()
    for i, (n, _) in enumerate(named):
        n = n.replace(".", "_") if n else f"output{i}"
        if n in seen:
            n = f"{n}_{i}"
        seen.add(n)
        names.append(n)
    return names


def _torch_export(model, args, path, opset, training, input_names, output_names, dynamic_axes):
    with _buffers_kept(model), export_zoo._no_value_dedup():
        torch.onnx.export(model, args, path, opset_version=opset, do_constant_folding=False,
                          training=training, export_params=True,
                          keep_initializers_as_inputs=False, input_names=input_names,
                          output_names=output_names, dynamic_axes=dynamic_axes)


def export_model(model, args, input_names, dynamic_axes=None, opset=DEFAULT_OPSET,
                 output_names=None, allow_eval=True, quiet=True, batch_axis=True,
                 training_error=None, max_load_elems=None):
    """Export `model` called on the tuple `args`; returns an Export.

    dynamic_axes: {input name: {axis: dim name}}; axis 0 of every input is named `batch` unless
    batch_axis=False.  Output batch axes are named `batch` as well where the output's leading
    size is the trace batch.  Raises the exporter's error when even the eval export fails
    (or at once with allow_eval=False).  training_error: the reason a training export of this
    model already failed (e.g. at another opset); the eval export is then made at once.
    max_load_elems: for models over 2 GB, whose export keeps the weights in files, read only
    tensors up to this many elements back (the others keep name, dims and type and are marked
    external with no file: enough for graph_only()); None reads all."""
    args = tuple(args)
    axes = {n: dict(dynamic_axes.get(n, {})) if dynamic_axes else {} for n in input_names}
    if batch_axis:
        for n in input_names:
            axes[n].setdefault(0, "batch")
    trace_batch = (args[0].shape[0] if args and isinstance(args[0], torch.Tensor) and args[0].dim()
                   else None)
    was_training = model.training
    mode, reason, proto, why = "training", None, None, None
    try:
        attempts = [] if training_error else [("training", torch.onnx.TrainingMode.TRAINING)]
        if allow_eval:
            attempts.append(("eval", torch.onnx.TrainingMode.PRESERVE))
        first_err = training_error
        for mode, training in attempts:
            try:
                named = _probe_outputs(model, args, mode == "training")
                outs = list(output_names) if output_names else _output_names(named)
                outs = outs[:len(named)]
                all_axes = dict(axes)
                for (_, t), n in zip(named, outs):
                    if batch_axis and trace_batch is not None and t.dim() and \
                            t.shape[0] == trace_batch:
                        all_axes[n] = {0: "batch"}
                model.train(mode == "training")
                with tempfile.TemporaryDirectory(prefix="colloc-export-") as tmp:
                    path = os.path.join(tmp, "model.onnx")
                    ctx = export_zoo._quiet() if quiet else contextlib.nullcontext()
                    with ctx:
                        _torch_export(model, args, path, opset, training, list(input_names),
                                      outs, all_axes)
                    # Large models (> 2 GB) come with external data files beside `path`.
                    proto = onnx.load(path, load_external_data=False)
                    _load_external(proto, tmp, max_load_elems)
                break
            except Exception as err:  # noqa: BLE001 -- the exporter raises many kinds
                # Keep the message only: the traceback holds Python wrappers of the failed
                # graph's C++ nodes, and once their memory is reused by the next export
                # pybind11 fails ("Unable to cast from non-held to held instance").
                if first_err is None:
                    first_err = error_reason(err)
                if mode == attempts[-1][0]:
                    raise
                err.__traceback__ = None
                del err
        if mode == "eval":
            why = first_err
            reason = (f"training-mode export fails at opset {opset} "
                      f"({why}){stochastic_depth_note(model)}")
    finally:
        model.train(was_training)
    e = Export(proto, mode, reason, list(input_names), outs, all_axes, opset)
    if mode == "eval":
        e.training_error = why
    return e


def _load_external(proto, folder, max_elems):
    """Read external initializer data written by torch.onnx back into the proto."""
    for init in proto.graph.initializer:
        if init.data_location != onnx.TensorProto.EXTERNAL:
            continue
        info = {e.key: e.value for e in init.external_data}
        if max_elems is not None and export_zoo._numel(init.dims) > max_elems:
            del init.external_data[:]
            entry = init.external_data.add()
            entry.key, entry.value = "location", "(not read)"
            continue
        with open(os.path.join(folder, info["location"]), "rb") as f:
            f.seek(int(info.get("offset", 0)))
            data = f.read(int(info["length"])) if "length" in info else f.read()
        init.raw_data = data
        init.data_location = onnx.TensorProto.DEFAULT
        del init.external_data[:]


def module_trainable(model):
    """sum(p.numel()) over model.parameters() that require grad (tied weights once)."""
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


def check_parameters(model, proto):
    """(trainable elements held by initializers, the module's trainable elements, names of
    trainable parameters with no initializer).  An initializer is a parameter's when its name is
    one of the parameter's state_dict names (tied weights have several)."""
    by_name = {}
    for name, t in model.state_dict(keep_vars=True).items():
        if isinstance(t, torch.nn.Parameter) and t.requires_grad:
            by_name[name] = t
    found = {}
    for init in proto.graph.initializer:
        p = by_name.get(init.name)
        if p is not None:
            found[id(p)] = p.numel()
    missing = []
    seen = set()
    for name, p in model.named_parameters():
        if p.requires_grad and id(p) not in found and id(p) not in seen:
            missing.append(name)
        seen.add(id(p))
    return sum(found.values()), module_trainable(model), missing


def graph_only(proto, weights_name, keep_inline=None):
    """Strip weight data in place as tools/export_zoo.py does (initializers over 64 elements and
    Constant values over 4096 become external data in `weights_name`, a file never written);
    keep_inline(initializer) -> bool may keep more inline.  Returns (tensors, bytes) stripped."""
    return export_zoo.make_graph_only(proto, weights_name, keep_inline=keep_inline)


def small_float_inline(limit=4096):
    """keep_inline rule of a "with weights" graph: float initializers up to `limit` elements
    (BatchNorm/LayerNorm weights, biases, layer scales) stay inline with their values."""
    floats = {onnx.TensorProto.FLOAT, onnx.TensorProto.FLOAT16, onnx.TensorProto.BFLOAT16,
              onnx.TensorProto.DOUBLE}

    def keep(init):
        return init.data_type in floats and export_zoo._numel(init.dims) <= limit

    return keep


def save(proto, path):
    """onnx.save; a model too large for one protobuf keeps its weights in PATH.data (the
    proto's tensors are then rewritten to point there)."""
    if proto.ByteSize() > PROTOBUF_LIMIT:
        onnx.save_model(proto, path, save_as_external_data=True, all_tensors_to_one_file=True,
                        location=os.path.basename(path) + ".data", size_threshold=1024)
    else:
        onnx.save(proto, path)
