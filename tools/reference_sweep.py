"""CPU reference sweep: colloc's training-memory estimator against PyTorch on models it was never
tuned on.

For every torchvision 0.14 classification model, the 6 segmentation models, the video and
optical-flow models, the detection models (tried; their training forward takes targets, see the
JSON) and the five models of tools/sweep_models.py (LSTM and GRU language models, a small UNet,
the DCGAN generator and discriminator), this

  * exports graph-only ONNX with tools/colloc_export.py (training mode, eval/PRESERVE where
    torch.onnx cannot, PyTorch parameter names, dynamic `batch`) at every opset from 13 to the
    newest the installed exporter supports, with dynamic height/width (and frames, seq) when one
    graph serves both sizes, else one static graph per size; plus, at opset 14, a "with weights"
    variant that keeps every float initializer of up to 4096 elements inline (what a full export
    holds for BatchNorm/LayerNorm weights, biases, layer scales);
  * stores only distinct graphs under data/reference/sweep/ (name_<hash>.onnx; the hash covers
    op types, attributes, the wiring with intermediate names replaced by their order of
    appearance, the graph's inputs/outputs and the initializers' names, shapes, types and inline
    data -- not node names, doc strings or the opset import), so several opsets point at one file;
  * measures what PyTorch keeps for one training step on the CPU with tools/reference_memory.py's
    saved-tensor hooks (reference_memory.measure_training) at batch 2 and 4 for each size, with
    the model in train() -- also where the graph had to be exported in eval mode;
  * writes data/reference/sweep.json (one object per case = model x size x batch; fields are
    described in data/reference/sweep_README.md).

Each model runs in a worker process of its own (an out-of-memory kill loses one model, not the
sweep); its result is kept in --work (default /tmp/colloc-sweep) so an interrupted sweep resumes
where it stopped (--fresh starts over). The merge into --out covers every model with a result
in --work, and keeps the cases the existing --out holds for models without one (a sweep made on
another machine: --only adds models to the committed data instead of replacing it).

    nice -n 10 /usr/bin/python3 tools/reference_sweep.py            # everything (hours on 2 cores)
    /usr/bin/python3 tools/reference_sweep.py --only resnet18,lstm_lm --out /tmp/s.json \\
        --graphs /tmp/sweep
    /usr/bin/python3 tools/reference_sweep.py --list

Matrix products are faked (zeros of the right shape) in the truth measurements, as
tools/reference_memory.py does by default; --real-matmul computes them.
"""

import argparse
import hashlib
import json
import os
import subprocess
import sys
import time
import traceback
from types import SimpleNamespace

import onnx
import torch
import torch.nn as nn
import torch.nn.functional as F
import torchvision

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import colloc_export as ce  # noqa: E402
import export_zoo  # noqa: E402
import reference_memory as rm  # noqa: E402
import sweep_models  # noqa: E402

REPO = export_zoo.REPO
DEFAULT_OUT = os.path.join(REPO, "data", "reference", "sweep.json")
DEFAULT_GRAPHS = os.path.join(REPO, "data", "reference", "sweep")
DEFAULT_WORK = "/tmp/colloc-sweep"
OPSETS = list(range(13, ce.max_opset() + 1))
WEIGHTS_OPSET = 14
BATCHES = (2, 4)
TRACE_BATCH = 2
SIZE_BUDGET = 25 * 1000 * 1000  # bytes of data/reference/sweep/ (du -sb)
OPTIMIZERS = {k: rm.OPTIMIZERS[k] for k in ("sgd", "momentum", "adam", "adamw", "rmsprop",
                                             "adagrad")}


# --------------------------------------------------------------------------------------------
# The models
# --------------------------------------------------------------------------------------------

class Model:
    """One model of the sweep.

    inputs: [(name, [dim | dim name], dtype)] with "batch" first; sizes: [(label, {dim: size})];
    dyn: the dim names that may be dynamic besides batch (empty: always static); one_size: why
    there is only one size (None when there are two); loss(outputs, inputs, gen) ->
    (labels, description, fn)."""

    def __init__(self, name, family, build, source, inputs, sizes, loss, dyn=(), one_size=None,
                 notes=None, export=True):
        self.name, self.family, self.build, self.source = name, family, build, source
        self.inputs, self.sizes, self.loss, self.dyn = inputs, sizes, loss, tuple(dyn)
        self.one_size, self.notes, self.export = one_size, notes, export

    def make_inputs(self, batch, dims, gen):
        vals = []
        for _, shape, dtype in self.inputs:
            sizes = [batch if d == "batch" else dims[d] if isinstance(d, str) else d for d in shape]
            if dtype == torch.int64:
                vals.append(torch.randint(0, self.vocab, sizes, generator=gen))
            else:
                vals.append(torch.randn(sizes, generator=gen))
        return tuple(vals)

    vocab = 1000


def _flat(out):
    return [t for _, t in ce.flatten_outputs(out)]


def loss_classification(num_classes):
    def make(name, inputs, gen):
        # reference_memory's classifier loss: CrossEntropy, + 0.4 x aux logits (inception_v3)
        return rm.make_loss(SimpleNamespace(name=name, num_classes=num_classes), inputs, gen)
    return make


def loss_segmentation(num_classes=21):
    def make(name, inputs, gen):
        x = inputs[0]
        labels = torch.randint(0, num_classes, (x.shape[0], x.shape[2], x.shape[3]), generator=gen)
        ce_loss = nn.CrossEntropyLoss()

        def fn(out):
            loss = ce_loss(out["out"], labels)
            if "aux" in out:
                loss = loss + 0.5 * ce_loss(out["aux"], labels)
            return loss
        return labels, "per-pixel CrossEntropyLoss(out, random labels) (+ 0.5 x aux)", fn
    return make


def loss_lm(name, inputs, gen):
    ids = inputs[0]
    labels = torch.randint(0, sweep_models.VOCAB, (ids.numel(),), generator=gen)
    ce_loss = nn.CrossEntropyLoss()

    def fn(out):
        logits = _flat(out)[0]
        return ce_loss(logits.reshape(-1, logits.shape[-1]), labels)
    return labels, "LM cross-entropy: logits [batch*seq, vocab] vs random next-token ids", fn


def loss_mse(shape_of):
    def make(name, inputs, gen):
        target = torch.randn(shape_of(inputs), generator=gen)

        def fn(out):
            return F.mse_loss(_flat(out)[0], target)
        return target, "MSELoss(output, random target)", fn
    return make


def loss_bce(name, inputs, gen):
    target = torch.ones(inputs[0].shape[0])

    def fn(out):
        return F.binary_cross_entropy(_flat(out)[0].reshape(-1), target)
    return target, "BCELoss(output, ones) (discriminator on real images)", fn


def loss_flow(name, inputs, gen, gamma=0.8):
    x = inputs[0]
    target = torch.randn(x.shape[0], 2, x.shape[2], x.shape[3], generator=gen)

    def fn(out):
        preds = _flat(out)
        n = len(preds)
        return sum(gamma ** (n - i - 1) * (p - target).abs().mean() for i, p in enumerate(preds))
    return target, "RAFT sequence loss: sum_i 0.8^(N-1-i) * L1(flow_i, random flow)", fn


def loss_detection(name, inputs, gen):
    def fn(out):
        return sum(out.values())
    return [], "sum of the model's own training losses (needs targets)", fn


IMAGE = [("input", ["batch", 3, "height", "width"], torch.float32)]
HW = ("height", "width")


def _hw(*sizes):
    return [(str(s), {"height": s, "width": s}) for s in sizes]


# Classifiers that need other sizes than 224 and 160, with the reason.
CLASSIFIER_SIZES = {
    "inception_v3": ((299, 342), None, "its aux head (training mode) pools Mixed_6e to 5x5 and "
                     "applies a 5x5 conv: inputs below 299 fail"),
    "alexnet": ((224,), "adaptive_avg_pool2d((6, 6)) exports only when the feature map is a "
                "multiple of 6x6 (6x6 at 224; 160, 192, 256, 320 and 448 give 4, 5, 7, 9, 13)",
                None),
    "maxvit_t": ((224,), "MaxViT's block and grid partitions are fixed at construction "
                 "(input_size=224)", None),
}
for _v in ("vgg11", "vgg11_bn", "vgg13", "vgg13_bn", "vgg16", "vgg16_bn", "vgg19", "vgg19_bn"):
    CLASSIFIER_SIZES[_v] = ((224, 448), None,
                            "adaptive_avg_pool2d((7, 7)) exports only when the feature map is a "
                            "multiple of 7x7 (7 at 224, 14 at 448; 160 gives 5)")
for _v in ("vit_b_16", "vit_b_32", "vit_l_16", "vit_l_32", "vit_h_14"):
    CLASSIFIER_SIZES[_v] = ((224,), "VisionTransformer asserts the image size it was built for "
                            "(image_size=224) and its position embedding has that many patches",
                            None)

CLASSIFIER_KWARGS = {
    "googlenet": {"aux_logits": False, "init_weights": True},
    "inception_v3": {"init_weights": True},
}
CLASSIFIER_NOTES = {
    "googlenet": "built with aux_logits=False as the zoo's: with its aux classifiers the training "
                 "export fails (adaptive_avg_pool2d 14x14 -> 4x4) and an eval graph lacks the "
                 "aux heads' 6,379,984 parameters",
}


def _kw_source(ctor_path, kwargs):
    args = ", ".join(["weights=None"] + [f"{k}={v!r}" for k, v in kwargs.items()])
    return f"{ctor_path}({args})"


def classification_names():
    tvm = torchvision.models
    if hasattr(tvm, "list_models"):
        return sorted(tvm.list_models(module=tvm))
    # torchvision without list_models: the builders are the lowercase callables that
    # get_model_builder knows.
    names = []
    for k, v in vars(tvm).items():
        if k[0].islower() and callable(v) and not k.startswith("get_"):
            try:
                tvm.get_model_builder(k)
                names.append(k)
            except (ValueError, AttributeError, KeyError):
                pass
    return sorted(names)


def _tv_names(module):
    tvm = torchvision.models
    if hasattr(tvm, "list_models"):
        return sorted(tvm.list_models(module=module))
    return sorted(k for k, v in vars(module).items() if k[0].islower() and callable(v)
                  and hasattr(v, "__wrapped__"))


def all_models():
    tvm = torchvision.models
    models = []
    for name in classification_names():
        kwargs = CLASSIFIER_KWARGS.get(name, {})
        sizes, one, why = CLASSIFIER_SIZES.get(name, ((224, 160), None, None))
        notes = CLASSIFIER_NOTES.get(name)
        if why:
            notes = (notes + "; " if notes else "") + f"sizes {sizes}: {why}"
        models.append(Model(
            name, "classification",
            (lambda n=name, kw=kwargs: getattr(tvm, n)(weights=None, **kw)),
            _kw_source(f"torchvision.models.{name}", kwargs), IMAGE, _hw(*sizes),
            loss_classification(1000), dyn=HW if len(sizes) > 1 else (), one_size=one,
            notes=notes))
    for name in _tv_names(tvm.segmentation):
        kwargs = {"weights_backbone": None}
        models.append(Model(
            name, "segmentation",
            (lambda n=name, kw=kwargs: getattr(tvm.segmentation, n)(weights=None, **kw)),
            _kw_source(f"torchvision.models.segmentation.{name}", kwargs), IMAGE, _hw(224, 160),
            loss_segmentation(21), dyn=HW))
    for name in _tv_names(tvm.video):
        if name.startswith("mvit") or name == "s3d":
            sizes = [("16x224", {"frames": 16, "height": 224, "width": 224})]
            one = ("MViT's positional embeddings and pooling are built for 16x224x224 clips"
                   if name.startswith("mvit") else
                   "S3D ends in AvgPool3d((2, 7, 7)): it needs 16 frames of 224x224 at least")
            dyn = ()
        else:
            sizes = [("8x112", {"frames": 8, "height": 112, "width": 112}),
                     ("8x96", {"frames": 8, "height": 96, "width": 96})]
            one, dyn = None, ("frames", "height", "width")
        models.append(Model(
            name, "video", (lambda n=name: getattr(tvm.video, n)(weights=None)),
            f"torchvision.models.video.{name}(weights=None)",
            [("input", ["batch", 3, "frames", "height", "width"], torch.float32)], sizes,
            loss_classification(400), dyn=dyn, one_size=one))
    for name in _tv_names(tvm.optical_flow):
        models.append(Model(
            name, "optical_flow", (lambda n=name: getattr(tvm.optical_flow, n)(weights=None)),
            f"torchvision.models.optical_flow.{name}(weights=None)",
            [("image1", ["batch", 3, "height", "width"], torch.float32),
             ("image2", ["batch", 3, "height", "width"], torch.float32)],
            _hw(128, 160), loss_flow, dyn=HW,
            notes="training mode returns the 12 flow refinements (num_flow_updates=12)"))
    for name in _tv_names(tvm.detection):
        kwargs = {"weights_backbone": None}
        models.append(Model(
            name, "detection",
            (lambda n=name, kw=kwargs: getattr(tvm.detection, n)(weights=None, **kw)),
            _kw_source(f"torchvision.models.detection.{name}", kwargs), IMAGE, _hw(224),
            loss_detection, one_size="detection models are tried once", export="detection"))
    lm_inputs = [("input_ids", ["batch", "seq"], torch.int64)]
    for name in ("lstm_lm", "gru_lm"):
        m = Model(name, "rnn", sweep_models.MODELS[name][0], f"tools/sweep_models.py {name}()",
                  lm_inputs, [("seq32", {"seq": 32}), ("seq64", {"seq": 64})], loss_lm,
                  dyn=("seq",))
        m.vocab = sweep_models.VOCAB
        models.append(m)
    models.append(Model("unet", "unet", sweep_models.unet, "tools/sweep_models.py unet()", IMAGE,
                        _hw(128, 96), loss_mse(lambda x: (x[0].shape[0], 1) + x[0].shape[2:]),
                        dyn=HW))
    models.append(Model("dcgan_g", "gan", sweep_models.dcgan_g, "tools/sweep_models.py dcgan_g()",
                        [("z", ["batch", sweep_models.Z_DIM, 1, 1], torch.float32)],
                        [("64", {})], loss_mse(lambda x: (x[0].shape[0], 3, 64, 64)),
                        one_size="the DCGAN generator makes 64x64 images from z [100, 1, 1]"))
    models.append(Model("dcgan_d", "gan", sweep_models.dcgan_d, "tools/sweep_models.py dcgan_d()",
                        [("input", ["batch", 3, 64, 64], torch.float32)], [("64", {})],
                        loss_bce, one_size="the DCGAN discriminator's last 4x4 conv needs 64x64"))
    return {m.name: m for m in models}


# --------------------------------------------------------------------------------------------
# Graph identity
# --------------------------------------------------------------------------------------------

def graph_key(proto, init_data=True):
    """Hash of what colloc reads of a graph: op types, domains, attributes, wiring (intermediate
    names replaced by their order of appearance), graph inputs/outputs and initializers (names,
    dims, types, where the data is and, with init_data, the inline data).  Node names, doc
    strings, value_info and the opset import do not count."""
    g = proto.graph
    h = hashlib.sha256()
    keep = {i.name for i in g.input} | {o.name for o in g.output} | {i.name for i in g.initializer}
    alias = {}

    def tid(n):
        if n == "" or n in keep:
            return n
        if n not in alias:
            alias[n] = f"%{len(alias)}"
        return alias[n]

    def put(*parts):
        for p in parts:
            h.update(p if isinstance(p, bytes) else str(p).encode())
            h.update(b"\0")

    for vi in list(g.input) + list(g.output):
        put("io", vi.name, vi.type.SerializeToString(deterministic=True))
    for init in g.initializer:
        put("init", init.name, list(init.dims), init.data_type, init.data_location,
            [(e.key, e.value) for e in init.external_data])
        if init_data and init.data_location != onnx.TensorProto.EXTERNAL:
            c = onnx.TensorProto()
            c.CopyFrom(init)
            c.name = ""
            c.doc_string = ""
            put(hashlib.sha256(c.SerializeToString(deterministic=True)).digest())
    for node in g.node:
        put("node", node.domain, node.op_type, [tid(x) for x in node.input],
            [tid(x) for x in node.output])
        for a in node.attribute:
            c = onnx.AttributeProto()
            c.CopyFrom(a)
            c.doc_string = ""
            if c.HasField("t"):
                c.t.name = ""
                c.t.doc_string = ""
            put(c.SerializeToString(deterministic=True))
    return h.hexdigest()


# --------------------------------------------------------------------------------------------
# One model (worker)
# --------------------------------------------------------------------------------------------

def _static_inputs(model, dims):
    """The model's inputs with every dim but batch fixed at `dims`."""
    return {n: {} for n, _, _ in model.inputs}


def _dyn_axes(model, dyn):
    axes = {}
    for n, shape, _ in model.inputs:
        axes[n] = {i: d for i, d in enumerate(shape) if isinstance(d, str) and d in dyn}
    return axes


def canonical(proto):
    """In place: the stored form of a graph. Node names, doc strings and value_info are dropped
    and intermediate tensors renamed t0, t1, ... in order of appearance (a transformer's graph
    shrinks about 4x); graph inputs, outputs and initializers keep their names (PyTorch's
    parameter and buffer names, which colloc reads)."""
    g = proto.graph
    keep = {i.name for i in g.input} | {o.name for o in g.output} | {i.name for i in g.initializer}
    alias = {}

    def tid(n):
        if n == "" or n in keep:
            return n
        if n not in alias:
            alias[n] = f"t{len(alias)}"
        return alias[n]

    for node in g.node:
        node.name = ""
        node.doc_string = ""
        node.input[:] = [tid(x) for x in node.input]
        node.output[:] = [tid(x) for x in node.output]
    del g.value_info[:]
    g.doc_string = ""
    proto.doc_string = ""
    return proto


class GraphStore:
    """Writes distinct graph-only files into `folder` (name_<hash12>.onnx)."""

    def __init__(self, folder):
        self.folder = folder
        os.makedirs(folder, exist_ok=True)

    def put(self, stem, proto):
        canonical(proto)
        key = graph_key(proto)
        fname = f"{stem}_{key[:12]}.onnx"
        path = os.path.join(self.folder, fname)
        if not os.path.exists(path):
            tmp = path + ".tmp"
            onnx.save(proto, tmp)
            os.replace(tmp, path)
        return fname, key


def export_variants(m, model, store, log):
    """Export m at every opset: {size label: {"graphs": {variant: file}, "modes": {...},
    "errors": {...}, "dims": binding}}, plus the dynamic decision."""
    names = [n for n, _, _ in m.inputs]
    result = {label: {"graphs": {}, "modes": {}, "errors": {}, "mode_reasons": {}}
              for label, _ in m.sizes}
    dynamic, dyn_note = False, None
    # Once the training export failed on bernoulli_ (StochasticDepth: torch 1.13 exports it at
    # no opset) the other exports go to eval mode at once, with that reason (and the opset it
    # was tried at): a failed training export of a big graph costs a whole trace.
    known = {"training_error": None}

    def export(args, axes, opset):
        e = ce.export_model(model, args, names, axes, opset=opset,
                            training_error=known["training_error"], max_load_elems=4096)
        if e.mode == "eval" and known["training_error"] is None and \
                "Bernoulli" in (e.training_error or ""):
            known["training_error"] = f"{e.training_error} [tried at opset {opset}]"
        return e

    def one(opset, trace_dims, axes, stem, labels):
        # The same trace input for every opset: tracing updates the BatchNorm running
        # statistics the graph then holds inline, so it must not vary between opsets.
        args = m.make_inputs(TRACE_BATCH, trace_dims, torch.Generator().manual_seed(1))
        t = time.time()
        try:
            e = export(args, axes, opset)
        except Exception as err:  # noqa: BLE001
            reason = ce.error_reason(err, 400)
            for lb in labels:
                result[lb]["errors"][str(opset)] = reason
            log(f"  opset {opset} {stem}: export fails: {reason}")
            return None
        in_graph, in_module, missing = ce.check_parameters(model, e.proto)
        if in_graph != in_module:
            reason = (f"{e.mode} export holds {in_graph} of the {in_module} trainable parameters "
                      f"(missing: {', '.join(missing[:6])}{'...' if len(missing) > 6 else ''})"
                      + (f"; {e.reason}" if e.reason else ""))
            for lb in labels:
                result[lb]["errors"][str(opset)] = reason
            log(f"  opset {opset} {stem}: {reason}")
            return None
        variants = []
        if opset == WEIGHTS_OPSET:
            ce.graph_only(e.proto, f"{m.name}.weights", keep_inline=ce.small_float_inline())
            variants.append((f"{opset}w", store.put(stem + "_w", e.proto)))
        ce.graph_only(e.proto, f"{m.name}.weights")
        variants.insert(0, (str(opset), store.put(stem, e.proto)))
        if len(variants) == 2 and variants[0][1][1] == variants[1][1][1]:
            os.remove(os.path.join(store.folder, variants[1][1][0]))  # same as graph-only
            variants[1] = (variants[1][0], variants[0][1])
        for lb in labels:
            for v, (fname, _) in variants:
                result[lb]["graphs"][v] = fname
                result[lb]["modes"][v] = e.mode
            if e.reason:
                result[lb]["mode_reasons"][str(opset)] = e.reason
        log(f"  opset {opset} {stem}: {e.mode} {len(e.proto.graph.node)} nodes "
            f"{time.time() - t:.1f}s -> {', '.join(f'{v}:{f}' for v, (f, _) in variants)}")
        return e

    labels = [lb for lb, _ in m.sizes]
    if m.dyn and len(m.sizes) > 1:
        # One graph for both sizes when the export traced at either size is the same graph
        # (sizes not baked into constants).
        axes = _dyn_axes(m, m.dyn)
        for check_opset in (WEIGHTS_OPSET, OPSETS[-1]):
            keys = []
            for _, dims in m.sizes[:2]:
                args = m.make_inputs(TRACE_BATCH, dims, torch.Generator().manual_seed(1))
                try:
                    e = export(args, axes, check_opset)
                    keys.append(graph_key(e.proto, init_data=False))
                    del e
                except Exception as err:  # noqa: BLE001
                    dyn_note = (f"dynamic export fails at opset {check_opset} "
                                f"({ce.error_reason(err, 300)})")
                    break
            if len(keys) == 2 or "opset" not in (dyn_note or ""):
                break  # decided, or failing for another reason than the opset
        if len(keys) == 2:
            dyn_note = None
            if keys[0] == keys[1]:
                dynamic = True
                dyn_note = (f"one graph with dynamic {', '.join(m.dyn)}: the exports traced at "
                            f"{m.sizes[0][0]} and {m.sizes[1][0]} are the same graph")
            else:
                dyn_note = (f"the dynamic export traced at {m.sizes[0][0]} differs from the one "
                            f"traced at {m.sizes[1][0]} (sizes baked into the graph): one static "
                            f"graph per size")
        log(f"  {dyn_note}")
    elif m.dyn:
        dyn_note = "one size"
    for opset in OPSETS:
        if dynamic:
            one(opset, m.sizes[0][1], _dyn_axes(m, m.dyn), m.name, labels)
        else:
            for label, dims in m.sizes:
                one(opset, dims, _static_inputs(m, dims), f"{m.name}_{label}", [label])
    for label, dims in m.sizes:
        result[label]["dims"] = {d: v for d, v in dims.items() if dynamic and d in m.dyn}
    return result, dynamic, dyn_note


def run_worker(m, work, graphs, fake_matmul, log):
    out_path = os.path.join(work, f"{m.name}.json")
    t0 = time.time()
    rec = {"model": m.name, "family": m.family, "source": m.source, "notes": m.notes,
           "one_size_reason": m.one_size, "torch_version": torch.__version__,
           "torchvision_version": torchvision.__version__, "complete": False}

    def save():
        rec["elapsed_s"] = round(time.time() - t0, 1)
        with open(out_path + ".tmp", "w") as f:
            json.dump(rec, f, indent=1)
        os.replace(out_path + ".tmp", out_path)

    torch.manual_seed(0)
    model = m.build()
    model.train()
    rec["trainable_params"] = ce.module_trainable(model)
    if m.export == "detection":
        rec["export_error"] = detection_reason(m, model)
        rec["complete"] = True
        save()
        return rec
    store = GraphStore(graphs)
    exports, dynamic, note = export_variants(m, model, store, log)
    rec["dynamic"] = dynamic
    rec["dynamic_note"] = note
    rec["exports"] = exports
    save()
    rec["truth"] = {}
    for label, dims in m.sizes:
        if not exports[label]["graphs"]:
            continue  # nothing to compare with
        for batch in BATCHES:
            t = time.time()
            gen = torch.Generator().manual_seed(3)
            inputs = m.make_inputs(batch, dims, gen)
            labels, loss_desc, loss_fn = m.loss(m.name, inputs, gen)
            for p in model.parameters():
                p.grad = None
            torch.manual_seed(5)
            model.train()
            try:
                r = rm.measure_training(model, inputs, labels, loss_fn, fake_matmul, OPTIMIZERS)
            except Exception as err:  # noqa: BLE001
                r = {"error": ce.error_reason(err, 400)}
                log(f"  truth {label} b{batch}: {r['error']}")
            r = {"loss": loss_desc, "input_shapes": {n: list(x.shape) for (n, _, _), x in
                                                    zip(m.inputs, inputs)}, **r}
            rec["truth"][f"{label}/b{batch}"] = r
            for p in model.parameters():
                p.grad = None
            if "error" not in r:
                log(f"  truth {label} b{batch}: saved {r['saved_bytes_forward'] / 2**20:.1f} MiB "
                    f"(bool masks {r['saved_bytes_forward_bool_masks'] / 2**20:.1f}) "
                    f"{time.time() - t:.1f}s")
            save()
    rec["complete"] = True
    save()
    return rec


def detection_reason(m, model):
    """Try the training-mode export of a detection model; return the reason it is impossible."""
    images = [torch.randn(3, 224, 224)]
    target = {"boxes": torch.tensor([[10.0, 20.0, 100.0, 120.0]]),
              "labels": torch.tensor([1], dtype=torch.int64)}
    if "mask" in m.name:
        target["masks"] = torch.zeros(1, 224, 224, dtype=torch.uint8)
    if "keypoint" in m.name:
        target["keypoints"] = torch.zeros(1, 17, 3)
    try:
        ce.export_model(model, (images, [target]), ["images", "targets"], opset=WEIGHTS_OPSET,
                        allow_eval=False, batch_axis=False)
    except Exception as err:  # noqa: BLE001
        return ("no training graph: the training forward takes images and targets (lists of "
                "dicts) and returns a dict of losses; torch.onnx.export(model.train(), "
                f"(images, targets), training=TRAINING) at opset {WEIGHTS_OPSET} fails: "
                f"{ce.error_reason(err, 300)}")
    return "exported in training mode (unexpected): not measured"


# --------------------------------------------------------------------------------------------
# Driver
# --------------------------------------------------------------------------------------------

# Run the cheap ones first, the memory-hungry giants last.
LAST = ["regnet_y_128gf", "vit_h_14", "regnet_y_32gf", "regnet_x_32gf", "vit_l_16", "vit_l_32",
        "efficientnet_v2_l", "efficientnet_b7", "convnext_large", "swin_v2_b", "swin_b",
        "mvit_v1_b", "mvit_v2_s", "s3d", "raft_large"]


def order(names):
    return sorted(names, key=lambda n: LAST.index(n) + 1 if n in LAST else 0)


def cases_of(rec, graphs_rel, folder):
    """Flatten one worker record into case objects (graphs whose file is gone -- left out by
    an earlier merge's budget -- are dropped with a note)."""
    base = {k: rec.get(k) for k in ("model", "family", "source", "trainable_params", "notes",
                                     "one_size_reason")}
    base["torch_version"] = rec["torch_version"]
    base["torchvision_version"] = rec["torchvision_version"]
    if "export_error" in rec or "worker_error" in rec:
        c = dict(base, id=f"{rec['model']}", export_error=rec.get("export_error")
                 or rec.get("worker_error"), graphs={})
        return [c]
    out = []
    for label, ex in rec["exports"].items():
        truths = {k: v for k, v in rec.get("truth", {}).items() if k.startswith(label + "/")}
        if not ex["graphs"]:
            out.append(dict(base, id=f"{rec['model']}/{label}", size=label,
                            export_error="; ".join(f"opset {o}: {r}"
                                                   for o, r in ex["errors"].items()), graphs={}))
            continue
        present = {v: f for v, f in ex["graphs"].items()
                   if os.path.exists(os.path.join(folder, f))}
        missing = sorted(set(ex["graphs"]) - set(present))
        for batch in BATCHES:
            t = truths.get(f"{label}/b{batch}")
            c = dict(base, id=f"{rec['model']}/{label}/b{batch}", size=label, batch=batch,
                     dims=ex["dims"], dynamic=rec["dynamic"], dynamic_note=rec["dynamic_note"],
                     graphs={v: f"{graphs_rel}/{f}" for v, f in sorted(
                         present.items(), key=lambda kv: (int(kv[0].rstrip("w")), kv[0]))},
                     graph_modes=ex["modes"], graph_errors=ex["errors"],
                     eval_reasons=ex["mode_reasons"])
            if missing:
                c["graphs_missing"] = (f"variants {', '.join(missing)}: file gone (left out by an "
                                       f"earlier merge's size budget; rerun with --only "
                                       f"{rec['model']} --fresh to make them again)")
            if t is None:
                c["truth_error"] = "not measured (worker stopped)"
            elif "error" in t:
                c["truth_error"] = t["error"]
                c["loss"] = t["loss"]
            else:
                c["mode"] = "training"
                c.update(t)
            out.append(c)
    return out


def carried_cases(out, work, graphs, models, log):
    """The cases of the existing `out` for models without a result in `work`: what an earlier
    run measured (on another machine, whose --work is gone) stays in the merge instead of being
    dropped with its graphs. Graph files missing from `graphs` are left out with a note (as
    cases_of does). Returns ({model: [case]}, {model: worker seconds}, the carried models'
    worker seconds that are not known per model, or None)."""
    if not os.path.exists(out):
        return {}, {}, None
    with open(out) as f:
        old = json.load(f)
    carried = {}
    for c in old.get("cases", []):
        name = c.get("model")
        if os.path.exists(os.path.join(work, f"{name}.json")):
            continue
        if name not in models:
            log(f"  {out}: {name} is no longer a sweep model: left out")
            continue
        c = dict(c)
        present = {v: f for v, f in c.get("graphs", {}).items()
                   if os.path.exists(os.path.join(graphs, os.path.basename(f)))}
        missing = sorted(set(c.get("graphs", {})) - set(present))
        if missing:
            c["graphs"] = present
            c["graphs_missing"] = (f"variants {', '.join(missing)}: file gone from {graphs}; "
                                   f"rerun with --only {name} to make them again")
        carried.setdefault(name, []).append(c)
    old_seconds = old.get("model_seconds", {})
    seconds = {m: s for m, s in old_seconds.items() if m in carried}
    # Older files (and models merged from them) have only a share of worker_seconds that no
    # model_seconds entry accounts for; it stays while none of those models was redone.
    lump = old.get("worker_seconds", 0) - sum(old_seconds.values())
    unattributed = {c.get("model") for c in old.get("cases", [])} - set(old_seconds)
    if lump > 0 and not unattributed <= set(carried):
        log(f"  {out}: {lump:.0f} worker seconds of {', '.join(sorted(unattributed))} are "
            f"not known per model: left out of worker_seconds")
        lump = None
    if carried:
        log(f"kept {sum(len(v) for v in carried.values())} cases of {len(carried)} models "
            f"from {out} (no result in {work})")
    return carried, seconds, lump


def du_bytes(folder):
    try:
        r = subprocess.run(["du", "-sb", folder], capture_output=True, text=True, check=True)
        return int(r.stdout.split()[0])
    except (OSError, subprocess.CalledProcessError, ValueError):
        return sum(os.path.getsize(os.path.join(folder, f)) for f in os.listdir(folder))


def apply_budget(cases, folder, budget, log):
    """Drop graphs until the folder holds at most `budget` bytes: first the second size of the
    models with the largest graphs, then their "with weights" variants. Returns the dropped
    files."""
    dropped = []

    def referenced():
        return {os.path.basename(f) for c in cases for f in c.get("graphs", {}).values()}

    def sizes():
        return sum(os.path.getsize(os.path.join(folder, f)) for f in referenced())

    def model_bytes(model):
        files = {os.path.basename(f) for c in cases if c["model"] == model
                 for f in c.get("graphs", {}).values()}
        return sum(os.path.getsize(os.path.join(folder, f)) for f in files)

    models = sorted({c["model"] for c in cases if c.get("graphs")}, key=model_bytes, reverse=True)
    steps = []
    for model in models:
        labels = []
        for c in cases:
            if c["model"] == model and c.get("graphs") and c["size"] not in labels:
                labels.append(c["size"])
        if len(labels) > 1:
            steps.append(("second size", model, labels[1]))
    for model in models:
        steps.append(("weights variant", model, None))
    for what, model, label in steps:
        before = sizes()
        if before <= budget:
            break
        for c in cases:
            if c["model"] != model or not c.get("graphs"):
                continue
            if what == "second size" and c["size"] == label:
                if not c.get("dynamic"):
                    c["graphs_dropped"] = (f"graphs of this size left out to keep "
                                           f"data/reference/sweep/ under {budget / 1e6:.0f} MB "
                                           f"(largest models first)")
                    c["graphs"] = {}
            elif what == "weights variant":
                w = [v for v in c["graphs"] if v.endswith("w")]
                for v in w:
                    if c["graphs"][v] != c["graphs"].get(v[:-1]):
                        c["graphs"].pop(v)
                        c["weights_variant_dropped"] = (f"left out to keep data/reference/sweep/ "
                                                        f"under {budget / 1e6:.0f} MB")
        if sizes() == before:
            continue  # a dynamic model's sizes share one graph; no weights variant of its own
        log(f"budget: dropped {what} of {model}{' ' + label if label else ''}: "
            f"{sizes() / 1e6:.1f} MB")
        dropped.append(f"{what} of {model}")
    return dropped


def main():
    ap = argparse.ArgumentParser(description="CPU reference sweep for colloc's estimator.")
    ap.add_argument("--only", help="comma-separated model names")
    ap.add_argument("--skip", help="comma-separated model names to leave out")
    ap.add_argument("--list", action="store_true", help="list the models and exit")
    ap.add_argument("--out", default=DEFAULT_OUT, help="output JSON (default %(default)s)")
    ap.add_argument("--graphs", default=DEFAULT_GRAPHS, help="graph folder (default %(default)s)")
    ap.add_argument("--work", default=DEFAULT_WORK, help="per-model results (resume)")
    ap.add_argument("--fresh", action="store_true", help="ignore results already in --work")
    ap.add_argument("--timeout", type=int, default=5400, help="seconds per model")
    ap.add_argument("--budget", type=int, default=SIZE_BUDGET, help="bytes for --graphs")
    ap.add_argument("--real-matmul", action="store_true")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--merge-only", action="store_true", help="only merge --work into --out")
    a = ap.parse_args()
    torch.set_num_threads(len(os.sched_getaffinity(0)))
    models = all_models()
    if a.list:
        for m in models.values():
            print(f"{m.name:36s} {m.family:14s} {m.source}")
        return 0
    os.makedirs(a.work, exist_ok=True)

    def log(msg):
        print(msg, flush=True)

    if a.worker:
        try:
            run_worker(models[a.worker], a.work, a.graphs, not a.real_matmul, log)
        except Exception:  # noqa: BLE001
            traceback.print_exc()
            return 1
        return 0

    names = order(models) if not a.only else [n.strip() for n in a.only.split(",") if n.strip()]
    if a.skip:
        names = [n for n in names if n not in set(a.skip.split(","))]
    bad = [n for n in names if n not in models]
    if bad:
        ap.error(f"unknown model(s): {', '.join(bad)} (see --list)")
    t0 = time.time()
    for i, name in enumerate(names if not a.merge_only else []):
        path = os.path.join(a.work, f"{name}.json")
        if not a.fresh and os.path.exists(path):
            with open(path) as f:
                if json.load(f).get("complete"):
                    continue
        log(f"[{i + 1}/{len(names)}] {name} ({time.time() - t0:.0f}s)")
        t = time.time()
        try:
            r = subprocess.run([sys.executable, os.path.abspath(__file__), "--worker", name,
                                "--work", a.work, "--graphs", a.graphs]
                               + (["--real-matmul"] if a.real_matmul else []),
                               timeout=a.timeout)
            status = None if r.returncode == 0 else (
                f"worker exited with status {r.returncode}" if r.returncode > 0 else
                f"worker killed by signal {-r.returncode}"
                + (" (out of memory?)" if r.returncode == -9 else ""))
        except subprocess.TimeoutExpired:
            status = f"worker ran past {a.timeout}s"
        if status:
            log(f"  {name}: {status}")
            rec = {}
            if os.path.exists(path):
                with open(path) as f:
                    rec = json.load(f)
            if not rec.get("exports"):
                m = models[name]
                rec = {"model": name, "family": m.family, "source": m.source,
                       "torch_version": torch.__version__,
                       "torchvision_version": torchvision.__version__}
                rec["worker_error"] = status
            rec["complete"] = True
            rec["worker_status"] = status
            with open(path, "w") as f:
                json.dump(rec, f, indent=1)
        log(f"  {name}: {time.time() - t:.0f}s")
    sweep_s = time.time() - t0

    # Merge every model that has a result (not only --only's).  Graphs an earlier merge left
    # out for the size budget wait in --work/dropped: bring them back first, so that the
    # budget is decided anew over everything.
    parked = os.path.join(a.work, "dropped")
    os.makedirs(parked, exist_ok=True)
    for f in os.listdir(parked):
        if not os.path.exists(os.path.join(a.graphs, f)):
            os.replace(os.path.join(parked, f), os.path.join(a.graphs, f))
    graphs_rel = os.path.relpath(a.graphs, os.path.dirname(os.path.abspath(a.out)))
    carried, seconds, lump = carried_cases(a.out, a.work, a.graphs, models, log)
    cases = []
    for name in order(models):
        path = os.path.join(a.work, f"{name}.json")
        if not os.path.exists(path):
            cases.extend(carried.get(name, []))
            continue
        with open(path) as f:
            rec = json.load(f)
        seconds[name] = round(rec.get("elapsed_s", 0.0), 1)
        for c in cases_of(rec, graphs_rel, a.graphs):
            if rec.get("worker_status"):
                c["worker_status"] = rec["worker_status"]
            cases.append(c)
    runtime = sum(seconds.values()) + max(lump or 0, 0)
    dropped = apply_budget(cases, a.graphs, a.budget, log)
    used = {os.path.basename(f) for c in cases for f in c.get("graphs", {}).values()}
    for f in os.listdir(a.graphs):
        if f not in used:
            os.replace(os.path.join(a.graphs, f), os.path.join(parked, f))
    total = du_bytes(a.graphs)
    doc = {
        "generated_by": "tools/reference_sweep.py",
        "torch_version": torch.__version__,
        "torchvision_version": torchvision.__version__,
        "onnx_version": onnx.__version__,
        "opsets": OPSETS,
        "weights_variant_opset": WEIGHTS_OPSET,
        "batches": list(BATCHES),
        "fake_matmul": not a.real_matmul,
        "graph_files": len(used),
        "graph_bytes": total,
        "budget_bytes": a.budget,
        "budget_dropped": dropped,
        "worker_seconds": round(runtime),
        "model_seconds": dict(sorted(seconds.items())),
        "cases": cases,
    }
    with open(a.out, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    n_truth = sum(1 for c in cases if "saved_bytes_forward" in c)
    log(f"{len(cases)} cases ({n_truth} measured), {len(used)} graphs, {total / 1e6:.1f} MB in "
        f"{a.graphs}; workers {runtime:.0f}s, this run {sweep_s:.0f}s -> {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
