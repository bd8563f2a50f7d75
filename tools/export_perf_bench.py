"""Export the graphs of the step-time benchmark into data/bench/perf/ (graph-only ONNX).

The measured step times this benchmark predicts come from three public sets (see
data/measurements/perf/README.md and data/bench/perf/README.md):

  NeuSight (sitar-lab/NeuSight, scripts/asplos/summary): one fp32 forward + backward of Hugging
      Face BERT-large (BertForPreTraining), GPT-2 large, "GPT-3 XL" and GPT-3 2.7B (both built as
      GPT2LMHeadModel from NeuSight's configs) and OPT-1.3B (OPTForCausalLM) on A100-80GB / V100.
  Gavel (stanford-futuredata/gavel, simulation_throughputs.json): ResNet-18 on CIFAR-10 and
      ResNet-50 on ImageNet (and other job types without a graph here).
  Pollux (petuum/adaptdl, simulator/traces): ResNet-50 / ImageNet, ResNet-18 / CIFAR-10,
      bert-base-uncased fine-tuned on SQuAD 1.1 (seq 384), YOLOv3 (not exported).

Every file is exported exactly as the zoo is (tools/export_zoo.py): torch.onnx.export with
opset 14, do_constant_folding=False, TrainingMode.TRAINING, initializers named after the PyTorch
parameters, torch.onnx's de-duplication limited to tied weights, symbolic dims `batch` and `seq`
(so `colloc ... --batch N --dim seq=S` rebinds them), then every initializer with more than 64
elements and every Constant with more than 4096 elements is stripped to external data in
`<name>.weights` (a file that does not exist).  The models are randomly initialised; no weights.

One difference in how the bytes are produced, not in what they hold: the big models (up to 2.9
billion parameters) do not fit in one protobuf (2 GiB), so torch.onnx.export is called with
export_params=False -- the parameters then come out as graph inputs -- and the script moves them
back into graph.initializer (same order, names, dims and types; the small ones with their data
from the model), which is what export_params=True would have written before stripping.
`--selftest` checks that this path reproduces data/zoo/*.onnx byte for byte.

ResNet-50 is not exported again: data/zoo/resnet50.onnx is torchvision's resnet50 at 224x224,
the model Gavel and Pollux ran.

    /usr/bin/python3 tools/export_perf_bench.py                  # everything (~15 min, 2 cores)
    /usr/bin/python3 tools/export_perf_bench.py --only opt_13
    /usr/bin/python3 tools/export_perf_bench.py --colloc build/colloc   # + check param counts
    /usr/bin/python3 tools/export_perf_bench.py --selftest       # export path == zoo path
    /usr/bin/python3 tools/export_perf_bench.py --list

The big language models are built without initialising their weights (see _no_init): the
export then peaks at about 12 GiB of memory for gpt3_xl (2.9B parameters) instead of 23 GiB.
"""

import argparse
import contextlib
import copy
import gc
import io
import json
import os
import subprocess
import sys
import tempfile
import time

import onnx
from onnx import numpy_helper
import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import export_zoo as zoo  # noqa: E402
from export_zoo import (  # noqa: E402
    BertLMPredictionHead, BertModel, GPT2LMHead, Spec, _causal, _init_normal)

REPO = zoo.REPO
DEFAULT_OUT = os.path.join(REPO, "data", "bench", "perf")


# --------------------------------------------------------------------------------------------
# Models (our own plain torch.nn code, written from the published architectures; module and
# parameter names follow the Hugging Face / reference implementations the measurements ran).
# --------------------------------------------------------------------------------------------


class BertPreTrainingHeads(nn.Module):
    def __init__(self, d, vocab, eps):
        super().__init__()
        self.predictions = BertLMPredictionHead(d, vocab, eps)
        self.seq_relationship = nn.Linear(d, 2)  # next-sentence prediction

    def forward(self, seq, pooled):
        return self.predictions(seq), self.seq_relationship(pooled)


class BertForPreTraining(nn.Module):
    """Hugging Face BertForPreTraining (what AutoModelForPreTraining builds from a BERT config):
    BertModel *with* the pooler, the MLM head (dense + GELU + LayerNorm, decoder tied to the word
    embeddings + its own bias) and the next-sentence head Linear(d, 2) on the pooled [CLS].
    Called without attention_mask, so HF adds an all-zero extended mask to every layer's scores.
    Outputs (prediction_logits [b, t, vocab], seq_relationship_logits [b, 2])."""

    def __init__(self, vocab=30522, max_pos=512, type_vocab=2, d=1024, n_layer=24, n_head=16,
                 d_ff=4096, eps=1e-12, pdrop=0.1):
        super().__init__()
        self.bert = BertModel(vocab, max_pos, type_vocab, d, n_layer, n_head, d_ff, eps, pdrop,
                              add_pooling_layer=True, attention_mask=True)
        self.cls = BertPreTrainingHeads(d, vocab, eps)
        _init_normal(self)
        self.cls.predictions.decoder.weight = self.bert.embeddings.word_embeddings.weight

    def forward(self, input_ids):
        seq = self.bert(input_ids)
        return self.cls(seq, self.bert.pooler(seq))


class BertForQuestionAnswering(nn.Module):
    """Hugging Face BertForQuestionAnswering (bert-base-uncased for SQuAD): BertModel without the
    pooler, qa_outputs Linear(d, 2) split into start and end logits, each [b, t].  run_squad.py
    passes an attention_mask (features padded to max_seq_length), so the extended mask is added."""

    def __init__(self, vocab=30522, max_pos=512, type_vocab=2, d=768, n_layer=12, n_head=12,
                 d_ff=3072, eps=1e-12, pdrop=0.1):
        super().__init__()
        self.bert = BertModel(vocab, max_pos, type_vocab, d, n_layer, n_head, d_ff, eps, pdrop,
                              attention_mask=True)
        self.qa_outputs = nn.Linear(d, 2)
        _init_normal(self)

    def forward(self, input_ids):
        logits = self.qa_outputs(self.bert(input_ids))
        start, end = logits.split(1, dim=-1)
        return start.squeeze(-1).contiguous(), end.squeeze(-1).contiguous()


class OPTLearnedPositionalEmbedding(nn.Embedding):
    """OPT's learned positions: max_positions + 2 rows, looked up at (cumsum(mask) * mask - 1) + 2
    as Hugging Face computes them from the (all-ones) attention mask."""

    OFFSET = 2

    def __init__(self, max_positions, d):
        super().__init__(max_positions + self.OFFSET, d)

    def forward(self, attention_mask):
        mask = attention_mask.long()
        positions = (torch.cumsum(mask, dim=1).type_as(mask) * mask).long() - 1
        return super().forward(positions + self.OFFSET)


class OPTAttention(nn.Module):
    def __init__(self, d, n_head, attn_pdrop):
        super().__init__()
        self.d, self.n_head, self.head_dim = d, n_head, d // n_head
        self.scaling = self.head_dim ** -0.5
        self.k_proj = nn.Linear(d, d)
        self.v_proj = nn.Linear(d, d)
        self.q_proj = nn.Linear(d, d)
        self.out_proj = nn.Linear(d, d)
        self.dropout = nn.Dropout(attn_pdrop)  # 0.0 in OPT-1.3B: PyTorch returns its input

    def _heads(self, x, b, t):
        return x.view(b, t, self.n_head, self.head_dim).transpose(1, 2).contiguous()

    def forward(self, x, mask):
        b, t = x.shape[0], x.shape[1]
        q = self.q_proj(x) * self.scaling
        k = self._heads(self.k_proj(x), b, t)
        v = self._heads(self.v_proj(x), b, t)
        shape = (b * self.n_head, -1, self.head_dim)
        q = self._heads(q, b, t).view(*shape)
        k, v = k.view(*shape), v.view(*shape)
        w = torch.bmm(q, k.transpose(1, 2)).view(b, self.n_head, t, t) + mask
        w = torch.max(w, torch.tensor(torch.finfo(w.dtype).min, dtype=w.dtype))
        w = torch.softmax(w.view(b * self.n_head, t, t), dim=-1)
        y = torch.bmm(self.dropout(w), v).view(b, self.n_head, t, self.head_dim)
        return self.out_proj(y.transpose(1, 2).reshape(b, t, self.d))


class OPTDecoderLayer(nn.Module):
    def __init__(self, d, n_head, d_ff, pdrop, attn_pdrop):
        super().__init__()
        self.self_attn = OPTAttention(d, n_head, attn_pdrop)
        self.self_attn_layer_norm = nn.LayerNorm(d)
        self.fc1 = nn.Linear(d, d_ff)
        self.fc2 = nn.Linear(d_ff, d)
        self.final_layer_norm = nn.LayerNorm(d)
        self.dropout = nn.Dropout(pdrop)

    def forward(self, x, mask):
        # pre-LN (do_layer_norm_before=True); the FFN runs on [b * t, d] as in Hugging Face.
        x = x + self.dropout(self.self_attn(self.self_attn_layer_norm(x), mask))
        shape = x.shape
        h = x.reshape(-1, x.size(-1))
        y = self.fc2(F.relu(self.fc1(self.final_layer_norm(h))))
        return (h + self.dropout(y)).view(shape)


class OPTDecoder(nn.Module):
    def __init__(self, vocab, max_pos, d, n_layer, n_head, d_ff, pdrop, attn_pdrop, pad_id):
        super().__init__()
        self.embed_tokens = nn.Embedding(vocab, d, padding_idx=pad_id)
        self.embed_positions = OPTLearnedPositionalEmbedding(max_pos, d)
        self.final_layer_norm = nn.LayerNorm(d)
        self.layers = nn.ModuleList(OPTDecoderLayer(d, n_head, d_ff, pdrop, attn_pdrop)
                                    for _ in range(n_layer))

    def forward(self, input_ids):
        b, t = input_ids.shape[0], input_ids.shape[1]
        x = self.embed_tokens(input_ids)
        attention_mask = torch.ones(b, t, dtype=x.dtype)  # HF's default: no padding
        x = x + self.embed_positions(attention_mask)
        zero = torch.tensor(0.0, dtype=x.dtype)
        masked = torch.tensor(torch.finfo(x.dtype).min, dtype=x.dtype)
        causal = torch.where(_causal(t, input_ids.device), zero, masked)
        mask = causal[None, None, :, :].expand(b, 1, t, t)  # HF's 4-d additive causal mask
        for layer in self.layers:
            x = layer(x, mask)
        return self.final_layer_norm(x)


class OPTModel(nn.Module):
    def __init__(self, *args):
        super().__init__()
        self.decoder = OPTDecoder(*args)

    def forward(self, input_ids):
        return self.decoder(input_ids)


class OPTForCausalLM(nn.Module):
    """Hugging Face OPTForCausalLM for facebook/opt-1.3b: 24 pre-LN decoder layers, d=2048,
    32 heads, FFN 8192 with ReLU, learned positions (2048 + offset 2 rows), no embedding
    projection (word_embed_proj_dim = hidden), final LayerNorm, dropout 0.1, attention dropout
    0.0, LayerNorm eps 1e-5, LM head tied to embed_tokens (vocab 50272)."""

    def __init__(self, vocab=50272, max_pos=2048, d=2048, n_layer=24, n_head=32, d_ff=8192,
                 pdrop=0.1, attn_pdrop=0.0, pad_id=1):
        super().__init__()
        self.model = OPTModel(vocab, max_pos, d, n_layer, n_head, d_ff, pdrop, attn_pdrop,
                              pad_id)
        self.lm_head = nn.Linear(d, vocab, bias=False)
        _init_normal(self)
        self.lm_head.weight = self.model.decoder.embed_tokens.weight  # tied

    def forward(self, input_ids):
        return self.lm_head(self.model(input_ids))


class CifarBasicBlock(nn.Module):
    def __init__(self, c_in, c, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(c_in, c, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(c)
        self.conv2 = nn.Conv2d(c, c, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(c)
        self.shortcut = nn.Sequential()
        if stride != 1 or c_in != c:
            self.shortcut = nn.Sequential(nn.Conv2d(c_in, c, 1, stride, bias=False),
                                          nn.BatchNorm2d(c))

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out)) + self.shortcut(x)
        return F.relu(out)


class CifarResNet18(nn.Module):
    """The CIFAR-10 ResNet-18 both Gavel and Pollux train (the widely used pytorch-cifar layout;
    same models/resnet.py in both repositories): 3x3 stride-1 stem with 64 channels and no max
    pool, four stages of two BasicBlocks (64, 128, 256, 512 channels; stride 2 from stage 2 on,
    1x1 conv + BN shortcut where the shape changes), 4x4 average pool, Linear(512, 10).  At 32x32
    the stages run at 32, 16, 8 and 4 pixels -- unlike torchvision's resnet18 (7x7 stride-2 stem +
    max pool), whose stages run at 8, 4, 2, 1 and which needs ~15x fewer FLOPs."""

    def __init__(self, num_classes=10):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 64, 3, 1, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        c_in, stages = 64, []
        for i, c in enumerate((64, 128, 256, 512)):
            stride = 1 if i == 0 else 2
            stages.append(nn.Sequential(CifarBasicBlock(c_in, c, stride),
                                        CifarBasicBlock(c, c, 1)))
            c_in = c
        self.layer1, self.layer2, self.layer3, self.layer4 = stages
        self.linear = nn.Linear(512, num_classes)

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.layer4(self.layer3(self.layer2(self.layer1(out))))
        out = F.avg_pool2d(out, 4)
        return self.linear(out.view(out.size(0), -1))


# --------------------------------------------------------------------------------------------
# The benchmark's models
# --------------------------------------------------------------------------------------------


def _lm(name, build, source, outputs=None, seq=None, lean=False):
    spec = Spec(name, build, source, [("input_ids", ["batch", "seq"], torch.int64)],
                outputs or [("logits", {0: "batch", 1: "seq"})], [])
    spec.measured_seq = seq
    spec.lean = lean
    return spec


_INIT_FUNCS = ("uniform_", "normal_", "trunc_normal_", "constant_", "ones_", "zeros_",
               "xavier_uniform_", "xavier_normal_", "kaiming_uniform_", "kaiming_normal_")


@contextlib.contextmanager
def _no_init():
    """Build a model without initialising its parameters (torch.nn.init's fill functions do
    nothing), so their fresh pages stay unbacked.  torch.onnx's tracer clones every parameter
    (torch.jit._trace.ONNXTracedModule), so an initialised 2.9B-parameter model peaks at about
    23 GiB during the export; uninitialised, about half.  Only for models none of whose
    parameters is small enough to stay inline (checked in export_graph): the values never reach
    the file."""
    saved = {n: getattr(nn.init, n) for n in _INIT_FUNCS}
    for n in _INIT_FUNCS:
        setattr(nn.init, n, lambda tensor, *a, **k: tensor)
    try:
        yield
    finally:
        for n, f in saved.items():
            setattr(nn.init, n, f)


def _gpt(n_layer, d, n_head, n_pos):
    return lambda: GPT2LMHead(n_layer=n_layer, vocab=50257, n_positions=n_pos, d_model=d,
                              n_head=n_head)


def bench():
    specs = [
        _lm("bert_large", BertForPreTraining,
            "tools/export_perf_bench.py BertForPreTraining(n_layer=24, d=1024, n_head=16, "
            "d_ff=4096, vocab=30522, max_pos=512, type_vocab=2)",
            [("prediction_logits", {0: "batch", 1: "seq"}),
             ("seq_relationship_logits", {0: "batch"})], seq=512),
        _lm("gpt2_large", _gpt(36, 1280, 20, 1024),
            "tools/export_zoo.py GPT2LMHead(n_layer=36, d_model=1280, n_head=20, vocab=50257, "
            "n_positions=1024)", seq=1024, lean=True),
        _lm("gpt3_xl", _gpt(24, 3072, 24, 2048),
            "tools/export_zoo.py GPT2LMHead(n_layer=24, d_model=3072, n_head=24, vocab=50257, "
            "n_positions=2048)", seq=2048, lean=True),
        _lm("gpt3_27", _gpt(32, 2560, 32, 2048),
            "tools/export_zoo.py GPT2LMHead(n_layer=32, d_model=2560, n_head=32, vocab=50257, "
            "n_positions=2048)", seq=2048, lean=True),
        _lm("opt_13", OPTForCausalLM,
            "tools/export_perf_bench.py OPTForCausalLM(n_layer=24, d=2048, n_head=32, "
            "d_ff=8192, vocab=50272, max_pos=2048)", seq=2048, lean=True),
        _lm("bert_base_squad", BertForQuestionAnswering,
            "tools/export_perf_bench.py BertForQuestionAnswering(n_layer=12, d=768, n_head=12, "
            "d_ff=3072, vocab=30522, max_pos=512, type_vocab=2)",
            [("start_logits", {0: "batch", 1: "seq"}), ("end_logits", {0: "batch", 1: "seq"})],
            seq=384),
    ]
    cifar = Spec("resnet18_cifar", CifarResNet18,
                 "tools/export_perf_bench.py CifarResNet18(num_classes=10)",
                 [("input", ["batch", 3, 32, 32], torch.float32)], [("logits", {0: "batch"})], [])
    cifar.measured_seq = None
    specs.append(cifar)
    tv = zoo._cnn("resnet18_c10", "resnet18", {"num_classes": 10}, size=32)
    tv.measured_seq = None
    specs.append(tv)
    return specs


BENCH = {s.name: s for s in bench()}

# Where each graph's measurements are (data/measurements/perf/), for the manifest.
MEASURED = {
    "bert_large": "neusight train_e2e_dev.csv model=bert_large (seq 512, batch 2 and 8)",
    "gpt2_large": "neusight train_e2e_dev.csv model=gpt2_large (seq 1024, batch 1 and 4)",
    "gpt3_xl": "neusight train_e2e_dev.csv model=gpt3_xl (seq 2048, batch 1)",
    "gpt3_27": "neusight train_e2e_dev.csv model=gpt3_27 (seq 2048, batch 1)",
    "opt_13": "neusight train_e2e_dev.csv model=opt_13 (seq 2048, batch 1 and 2)",
    "bert_base_squad": "pollux single_gpu_step_time.csv model=bert (seq 384, batch 4-12)",
    "resnet18_cifar": ("pollux single_gpu_step_time.csv model=cifar10_resnet18 (batch 32-1024); "
                       "gavel simulation_throughputs.json 'ResNet-18 (batch size 16..256)'"),
    "resnet18_c10": "none: torchvision layout, NOT the model Gavel/Pollux ran (see README)",
}


# --------------------------------------------------------------------------------------------
# Export
# --------------------------------------------------------------------------------------------


def export_graph(spec, model, n_out=None):
    """torch.onnx.export as export_zoo._export_bytes does, but with export_params=False; the
    parameter inputs are then turned back into initializers.  Returns the full ModelProto
    (small initializers with data, the others with dims and type only, no data)."""
    zoo.set_mode(model, "training")
    args = spec.make_inputs(zoo.TRACE_BATCH, zoo.TRACE_DIMS, torch.Generator().manual_seed(1))
    output_names = [n for n, _ in spec.outputs][:n_out]
    dynamic_axes = {name: {i: d for i, d in enumerate(shape) if isinstance(d, str)}
                    for name, shape, _ in spec.inputs}
    dynamic_axes.update({name: dict(axes) for name, axes in spec.outputs if name in output_names})
    buf = io.BytesIO()
    with zoo._quiet(), zoo._no_value_dedup():
        torch.onnx.export(model, args, buf, opset_version=zoo.OPSET, do_constant_folding=False,
                          training=torch.onnx.TrainingMode.TRAINING, export_params=False,
                          input_names=[n for n, _, _ in spec.inputs],
                          output_names=output_names, dynamic_axes=dynamic_axes)
    proto = onnx.load_from_string(buf.getvalue())
    # The values the exporter would have serialised: read after the trace (a training-mode
    # forward updates BatchNorm's running statistics, and export_params=True reads them then).
    state = model.state_dict(keep_vars=False)
    user = {n for n, _, _ in spec.inputs}
    keep, inits = [], []
    for vi in proto.graph.input:
        if vi.name in user:
            keep.append(vi)
            continue
        if vi.name not in state:
            raise RuntimeError(f"{spec.name}: graph input {vi.name} is no parameter or buffer")
        t = vi.type.tensor_type
        dims = [d.dim_value for d in t.shape.dim]
        if any(d.dim_param or not d.HasField("dim_value") for d in t.shape.dim):
            raise RuntimeError(f"{spec.name}: parameter {vi.name} has symbolic dims")
        value = state[vi.name]
        if list(value.shape) != dims:
            raise RuntimeError(f"{spec.name}: {vi.name} {dims} != {list(value.shape)}")
        if zoo._numel(dims) <= zoo.INLINE_INIT_MAX:
            if getattr(spec, "lean", False):
                raise RuntimeError(f"{spec.name}: {vi.name} stays inline but the model was "
                                   "built without initialisation")
            tensor = numpy_helper.from_array(value.detach().cpu().numpy(), vi.name)
        else:
            tensor = onnx.TensorProto(name=vi.name, dims=dims, data_type=t.elem_type)
        if tensor.data_type != t.elem_type:
            raise RuntimeError(f"{spec.name}: {vi.name} data type differs")
        inits.append(tensor)
    del proto.graph.input[:]
    proto.graph.input.extend(keep)
    proto.graph.initializer.extend(inits)
    return proto


def graph_params(proto, model):
    """Trainable parameters that appear as initializers of the graph (tied ones once)."""
    inits = {i.name for i in proto.graph.initializer}
    return sum(p.numel() for n, p in model.named_parameters() if n in inits)


def colloc_params(colloc, path, spec):
    """Trainable parameter count that `colloc inspect --json` reports for the graph."""
    cmd = [colloc, "inspect", path, "--batch", "1"]
    if spec.measured_seq:
        cmd += ["--dim", f"seq={spec.measured_seq}"]
    out = subprocess.run(cmd + ["--json"], check=True, capture_output=True, text=True).stdout
    info = json.loads(out)
    for key in ("trainable_params", "params", "parameters"):
        if key in info:
            v = info[key]
            return v if isinstance(v, int) else v.get("trainable", v.get("count"))
    raise RuntimeError(f"no parameter count in colloc inspect output: {sorted(info)}")


def export_one(spec, out_dir, colloc=None):
    t0 = time.time()
    torch.manual_seed(0)
    with _no_init() if getattr(spec, "lean", False) else contextlib.nullcontext():
        model = spec.build()
    params = sum(p.numel() for p in model.parameters())
    buffers = sum(b.numel() for b in model.buffers())
    proto = export_graph(spec, model)
    problems = zoo._check_graph(spec, proto, set(model.state_dict().keys()))
    in_graph = graph_params(proto, model)
    if in_graph != params:
        problems.append(f"{params - in_graph:,d} parameters are not in the graph")
    n_ext, ext_bytes = zoo.make_graph_only(proto, f"{spec.name}.weights")
    path = os.path.join(out_dir, f"{spec.name}.onnx")
    onnx.save(proto, path)
    size = os.path.getsize(path)
    onnx.load(path, load_external_data=False)
    if size >= 2 * 1024 * 1024:
        problems.append(f"{path} is {size} bytes (>= 2 MB)")
    theirs = colloc_params(colloc, path, spec) if colloc else None
    if theirs is not None and theirs != params:
        problems.append(f"colloc counts {theirs:,d} trainable parameters, PyTorch {params:,d}")
    fact = {"name": spec.name, "file": f"{spec.name}.onnx", "source": spec.source,
            "inputs": [{"name": n, "shape": list(s), "dtype": zoo.dtype_name(d)}
                       for n, s, d in spec.inputs],
            "outputs": [n for n, _ in spec.outputs], "measured_seq": spec.measured_seq,
            "measured": MEASURED.get(spec.name), "trainable_params": int(params),
            "buffers": int(buffers), "opset": zoo.OPSET, "mode": "training",
            "torch_version": torch.__version__}
    del model, proto
    gc.collect()
    print(f"{spec.name:16s} params {params:>14,d} (graph {in_graph:,d}"
          + (f", colloc {theirs:,d}" if theirs is not None else "") + f")  onnx "
          f"{size / 1024:7.1f} KiB ({n_ext} external, {ext_bytes / 2**30:6.2f} GiB left out)  "
          f"{time.time() - t0:5.1f}s", flush=True)
    if problems:
        raise RuntimeError(f"{spec.name}: " + "; ".join(problems))
    return fact


def write_manifest(out_dir, facts):
    path = os.path.join(out_dir, "models.json")
    old = []
    if os.path.exists(path):
        with open(path) as f:
            old = json.load(f)["models"]
    merged = {x["name"]: x for x in old}
    merged.update({x["name"]: x for x in facts})
    order = list(BENCH)
    models = sorted(merged.values(),
                    key=lambda x: order.index(x["name"]) if x["name"] in order else len(order))
    with open(path, "w") as f:
        json.dump({"generated_by": "tools/export_perf_bench.py", "models": models}, f, indent=1)
        f.write("\n")


def selftest(names):
    """The export_params=False path must give the bytes of export_zoo's path (export_params=True,
    then make_graph_only), run here on the same fresh model; data/zoo/<name>.onnx is compared too,
    for information: CNN files can differ from it in the last bits of the inline BatchNorm
    running statistics (the trace's one training-mode forward), which depend on the machine."""
    ok = True
    for name in names:
        spec = zoo.ZOO[name]
        torch.manual_seed(0)
        model = spec.build()
        fresh = copy.deepcopy(model.state_dict())
        # The zoo models checked here have one output in training mode (not inception_v3).
        proto = export_graph(spec, model, n_out=1)
        zoo.make_graph_only(proto, f"{name}.weights")
        model.load_state_dict(fresh)
        ref = onnx.load_from_string(zoo._export_bytes(spec, model, "training", 1))
        zoo.make_graph_only(ref, f"{name}.weights")
        blobs = []
        with tempfile.TemporaryDirectory() as tmp:
            for i, m in enumerate((proto, ref)):
                path = os.path.join(tmp, f"{i}.onnx")
                onnx.save(m, path)
                with open(path, "rb") as f:
                    blobs.append(f.read())
        with open(os.path.join(REPO, "data", "zoo", f"{name}.onnx"), "rb") as f:
            shipped = f.read()
        same = blobs[0] == blobs[1]
        ok &= same
        print(f"{name:16s} {'identical to' if same else 'DIFFERENT from'} the zoo path "
              f"({len(blobs[0])} vs {len(blobs[1])} bytes); "
              f"{'identical to' if blobs[0] == shipped else 'differs from'} data/zoo/{name}.onnx",
              flush=True)
    return ok


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=DEFAULT_OUT)
    ap.add_argument("--only", help="comma-separated model names")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--colloc", help="path of the colloc binary: check its parameter counts")
    ap.add_argument("--selftest", nargs="?", const="resnet18,distilgpt2,bert_base,t5_small",
                    metavar="ZOO_MODELS",
                    help="check the export path against data/zoo (default: %(const)s)")
    a = ap.parse_args()
    torch.set_num_threads(len(os.sched_getaffinity(0)))
    if a.list:
        for s in BENCH.values():
            print(f"{s.name:16s} {s.source}")
        return 0
    if a.selftest:
        return 0 if selftest([n.strip() for n in a.selftest.split(",") if n.strip()]) else 1
    names = list(BENCH) if not a.only else [n.strip() for n in a.only.split(",") if n.strip()]
    unknown = [n for n in names if n not in BENCH]
    if unknown:
        ap.error(f"unknown model(s): {', '.join(unknown)} (see --list)")
    os.makedirs(a.out, exist_ok=True)
    facts, failed = [], []
    for n in names:
        try:
            facts.append(export_one(BENCH[n], a.out, a.colloc))
        except Exception as err:  # noqa: BLE001 -- report and go on
            failed.append(n)
            print(f"{n:16s} FAILED: {err}", flush=True)
    write_manifest(a.out, facts)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
