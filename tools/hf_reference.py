"""CPU ground truth for `colloc estimate hf:CONFIG`: plain torch.nn models built from a Hugging
Face config.json, measured as tools/reference_memory.py measures the zoo.

Debian's torch has no `transformers`, so the families colloc builds from a configuration
(src/model/hf.c) are written here in plain torch.nn, module by module as transformers' eager code
computes them (modeling_gpt2.py, modeling_llama.py / qwen2 / mistral, modeling_opt.py,
modeling_gpt_neo.py, modeling_gptj.py; peft's lora.Linear with
lora_dropout 0), at the scaled-down sizes of tests/data/hf/*.json. For every configuration and
setting -- trainable all or LoRA (r 8, alpha 16, peft's default targets), float32 or pure bfloat16
weights (model.to(torch.bfloat16), adapters kept float32 as peft's autocast_adapter_dtype does),
with and without gradient checkpointing -- one training step at batch 4, seq 32 is measured and
recorded in data/reference/hf_cpu.json:

  config, trainable, precision, gradient_checkpointing, batch, seq, torch_version, and the fields
  of reference_memory.measure_training() (saved_bytes_forward_bool_masks, param_bytes, grad_bytes,
  optimizer_state, ...), plus trainable_params / frozen_params (numel) and saved_bytes_forward_cuda:
  saved_bytes_forward_bool_masks with the layer-norm mean and rstd of half-precision inputs at
  float32, as CUDA keeps them (the CPU keeps them in the input's dtype), which colloc models.

Gradient checkpointing is what transformers' gradient_checkpointing_enable() does since 4.35:
torch.utils.checkpoint(layer, *args, use_reentrant=False) around each decoder layer.  Inside a
checkpointed layer the checkpoint's own saved-tensor hooks replace every saved tensor by a
placeholder (the outer meter sees none of them); what stays alive for backward is the layer's
arguments, held by the recomputation's closure.  They are handed to the meter's pack() (so each
storage counts once, beside what the ops outside the layers save): saved_bytes_forward is then
the bytes kept for backward.  checkpoint_layer_saved_bytes is what the recomputation of one layer
keeps again during its backward (the non-checkpointed run's layer-saved bytes / layers), which the
peak adds.

tests/unit/test_hf.c checks colloc against it. Run:  /usr/bin/python3 tools/hf_reference.py
(and with --counts: the published parameter counts of data/hf/'s BERT, RoBERTa and T5
configurations against these models at full size, GPT-J-6B's count against its model card's, and
bert-large-uncased as BertForSequenceClassification, into data/reference/hf_param_counts.json).

BertSeqCls is BertForSequenceClassification / RobertaForSequenceClassification (the configurations
whose architectures name it: tests/data/hf/bert_cls_tiny.json, 3 labels from id2label, and
roberta_cls_tiny.json, 2 labels, classifier_dropout 0.2), trained with cross-entropy on one label
per sequence.
"""

import contextlib
import functools
import json
import math
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.utils.checkpoint
from torch.utils._pytree import tree_flatten

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import reference_memory  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# (new configurations go last: the token ids and labels of the others come from one generator)
CONFIGS = ["gpt2_tiny", "llama_tiny", "qwen2_tiny", "opt_tiny", "gpt_neo_tiny", "bert_tiny",
           "roberta_tiny", "t5_tiny", "t5_v1_1_tiny", "gptj_tiny", "bert_cls_tiny",
           "roberta_cls_tiny"]
BATCH, SEQ = 4, 32
DEC_SEQ = 24  # T5's decoder length (its labels), unlike the encoder's

_METER = []  # the SavedTensorMeter of the measurement in progress


class _Meter(reference_memory.SavedTensorMeter):
    """reference_memory's meter, findable by the checkpoint wrapper below."""

    def __init__(self, *a, **k):
        super().__init__(*a, **k)
        self.held = 0  # bytes counted because a checkpoint keeps them
        self.cuda_stats_extra = 0  # see _Tracker
        _METER[:] = [self]

    def pack(self, t):
        ptr, size = reference_memory.storage_of(t)
        new = ptr and ptr not in self.exclude and ptr not in self.saved
        if new and ptr in self.ops.half_stats:
            self.cuda_stats_extra += size // t.element_size() * (4 - t.element_size())
        return super().pack(t)

    def hold(self, t):
        before = self.totals()[0]
        self.pack(t)
        self.held += self.totals()[0] - before


reference_memory.SavedTensorMeter = _Meter


class _Tracker(reference_memory.OpTracker):
    """reference_memory's op tracker, letting torch.utils.checkpoint's recomputation detach a
    saved wrapped number (the 0.5 of 0.5 * x): under a TorchDispatchMode it reaches Python as a
    float (the meter's pack() works around the same torch 1.13 quirk in the forward)."""

    def __init__(self, *a, **k):
        super().__init__(*a, **k)
        # native_layer_norm's mean and rstd: on the CPU in the input's dtype, on CUDA in float32
        # (layer_norm_kernel.cu: the accumulate type); their storages when the input is half
        self.half_stats = set()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if zoo_reference_op_name(func) == "detach" and args and not isinstance(args[0], torch.Tensor):
            return torch.tensor(args[0])
        out = super().__torch_dispatch__(func, types, args, kwargs)
        name = zoo_reference_op_name(func)
        if name != "bernoulli":
            # a new storage at a dead mask's address is not a mask (the parent's set of mask
            # addresses never forgets one, so a reused address was miscounted as a mask)
            ins = {reference_memory.storage_of(a)[0] for a in tree_flatten((args, kwargs))[0]
                   if isinstance(a, torch.Tensor)}
            for o in tree_flatten(out)[0]:
                if isinstance(o, torch.Tensor) and reference_memory.storage_of(o)[0] not in ins:
                    self.masks.discard(reference_memory.storage_of(o)[0])
        if name == "native_layer_norm" and out[1].element_size() < 4:
            self.half_stats |= {reference_memory.storage_of(x)[0] for x in out[1:3]}
        return out


def zoo_reference_op_name(func):
    return reference_memory.zoo_reference.op_name(func)


reference_memory.OpTracker = _Tracker


def run_layer(layer, ckpt, *args):
    """layer(*args), or torch.utils.checkpoint of it as transformers does (use_reentrant=False);
    the arguments a checkpoint keeps alive are counted as saved."""
    if not ckpt or not torch.is_grad_enabled():
        return layer(*args)
    for a in args:
        if isinstance(a, torch.Tensor) and _METER:
            _METER[0].hold(a)
    return torch.utils.checkpoint.checkpoint(layer, *args, use_reentrant=False)


class LoRALinear(nn.Module):
    """peft's lora.Linear forward (lora_dropout 0 -> identity), adapters in float32."""

    def __init__(self, base, r, alpha):
        super().__init__()
        self.base_layer = base
        self.lora_A = nn.Linear(base.in_features, r, bias=False)
        self.lora_B = nn.Linear(r, base.out_features, bias=False)
        self.scaling = alpha / r

    def forward(self, x):
        result = self.base_layer(x)
        dtype = result.dtype
        x = x.to(self.lora_A.weight.dtype)
        result = result + self.lora_B(self.lora_A(x)) * self.scaling
        return result.to(dtype)


# --- GPT-2 (GPT2LMHeadModel, eager attention) ---------------------------------------------------

def gelu_new(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


class GPT2Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        d = c["n_embd"]
        self.h, self.d = c["n_head"], d
        self.ln_1 = nn.LayerNorm(d, eps=c.get("layer_norm_epsilon", 1e-5))
        self.c_attn = nn.Linear(d, 3 * d)
        self.c_proj = nn.Linear(d, d)
        self.ln_2 = nn.LayerNorm(d, eps=c.get("layer_norm_epsilon", 1e-5))
        self.c_fc = nn.Linear(d, c.get("n_inner") or 4 * d)
        self.mlp_proj = nn.Linear(c.get("n_inner") or 4 * d, d)
        self.attn_drop = nn.Dropout(c.get("attn_pdrop", 0.1))
        self.resid_drop = nn.Dropout(c.get("resid_pdrop", 0.1))
        self.mlp_drop = nn.Dropout(c.get("resid_pdrop", 0.1))

    def forward(self, x, causal):
        b, t, d = x.shape
        hd = d // self.h
        q, k, v = self.c_attn(self.ln_1(x)).split(d, dim=2)
        q, k, v = (z.view(b, t, self.h, hd).transpose(1, 2) for z in (q, k, v))
        s = torch.matmul(q, k.transpose(-1, -2)) / torch.full([], hd ** 0.5, dtype=x.dtype)
        s = torch.where(causal, s, torch.tensor(torch.finfo(s.dtype).min, dtype=s.dtype))
        p = self.attn_drop(torch.softmax(s, dim=-1))
        y = torch.matmul(p, v).transpose(1, 2).reshape(b, t, d)
        x = x + self.resid_drop(self.c_proj(y))
        return x + self.mlp_drop(self.mlp_proj(gelu_new(self.c_fc(self.ln_2(x)))))


class GPT2(nn.Module):
    def __init__(self, c):
        super().__init__()
        d = c["n_embd"]
        self.wte = nn.Embedding(c["vocab_size"], d)
        self.wpe = nn.Embedding(c["n_positions"], d)
        self.drop = nn.Dropout(c.get("embd_pdrop", 0.1))
        self.blocks = nn.ModuleList(GPT2Block(c) for _ in range(c["n_layer"]))
        self.ln_f = nn.LayerNorm(d, eps=c.get("layer_norm_epsilon", 1e-5))

    def lora_targets(self):
        return [(blk, "c_attn") for blk in self.blocks]

    def forward(self, ids):
        t = ids.shape[1]
        pos = torch.arange(t)
        causal = pos.unsqueeze(0) <= pos.unsqueeze(1)
        x = self.drop(self.wte(ids) + self.wpe(pos))
        for blk in self.blocks:
            x = run_layer(blk, self.ckpt, x, causal)
        return F.linear(self.ln_f(x), self.wte.weight)  # tied LM head


# --- LLaMA / Qwen2 (LlamaForCausalLM, eager attention) --------------------------------------------

class RMSNorm(nn.Module):
    def __init__(self, d, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d))
        self.eps = eps

    def forward(self, x):
        dtype = x.dtype
        x = x.to(torch.float32)
        var = x.pow(2).mean(-1, keepdim=True)
        x = x * torch.rsqrt(var + self.eps)
        return self.weight * x.to(dtype)


def rotate_half(x):
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


class LlamaLayer(nn.Module):
    def __init__(self, c, bias):
        super().__init__()
        d, self.h, self.kvh = c["hidden_size"], c["num_attention_heads"], c.get("num_key_value_heads", c["num_attention_heads"])
        self.hd = d // self.h
        eps = c.get("rms_norm_eps", 1e-6)
        self.input_layernorm = RMSNorm(d, eps)
        self.q_proj = nn.Linear(d, self.h * self.hd, bias=bias)
        self.k_proj = nn.Linear(d, self.kvh * self.hd, bias=bias)
        self.v_proj = nn.Linear(d, self.kvh * self.hd, bias=bias)
        self.o_proj = nn.Linear(d, d, bias=False)
        self.post_attention_layernorm = RMSNorm(d, eps)
        self.gate_proj = nn.Linear(d, c["intermediate_size"], bias=False)
        self.up_proj = nn.Linear(d, c["intermediate_size"], bias=False)
        self.down_proj = nn.Linear(c["intermediate_size"], d, bias=False)

    def repeat_kv(self, x):
        b, kvh, t, hd = x.shape
        n = self.h // kvh
        if n == 1:
            return x
        return x[:, :, None, :, :].expand(b, kvh, n, t, hd).reshape(b, kvh * n, t, hd)

    def forward(self, x, cos, sin, mask):
        b, t, d = x.shape
        h = self.input_layernorm(x)
        q = self.q_proj(h).view(b, t, self.h, self.hd).transpose(1, 2)
        k = self.k_proj(h).view(b, t, self.kvh, self.hd).transpose(1, 2)
        v = self.v_proj(h).view(b, t, self.kvh, self.hd).transpose(1, 2)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        k, v = self.repeat_kv(k), self.repeat_kv(v)
        s = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(self.hd)
        s = s + mask
        p = F.softmax(s, dim=-1, dtype=torch.float32).to(q.dtype)
        y = torch.matmul(p, v).transpose(1, 2).contiguous().reshape(b, t, d)
        x = x + self.o_proj(y)
        h = self.post_attention_layernorm(x)
        return x + self.down_proj(F.silu(self.gate_proj(h)) * self.up_proj(h))


class Llama(nn.Module):
    def __init__(self, c):
        super().__init__()
        d = c["hidden_size"]
        self.embed_tokens = nn.Embedding(c["vocab_size"], d)
        bias = c["model_type"] == "qwen2"
        self.layers = nn.ModuleList(LlamaLayer(c, bias) for _ in range(c["num_hidden_layers"]))
        self.norm = RMSNorm(d, c.get("rms_norm_eps", 1e-6))
        self.tied = c.get("tie_word_embeddings", False)
        if not self.tied:
            self.lm_head = nn.Linear(d, c["vocab_size"], bias=False)
        hd = d // c["num_attention_heads"]
        theta = c.get("rope_theta", 10000.0)
        self.register_buffer("inv_freq", 1.0 / theta ** (torch.arange(0, hd, 2).float() / hd), persistent=False)

    def lora_targets(self):
        return [(l, n) for l in self.layers for n in ("q_proj", "v_proj")]

    def forward(self, ids):
        b, t = ids.shape
        x = self.embed_tokens(ids)
        with torch.no_grad():
            pos = torch.arange(t).expand(b, t)
            freqs = pos[:, :, None].float() * self.inv_freq[None, None, :]
            emb = torch.cat((freqs, freqs), dim=-1)
            cos, sin = emb.cos().to(x.dtype)[:, None], emb.sin().to(x.dtype)[:, None]
            mask = torch.full((t, t), torch.finfo(x.dtype).min, dtype=x.dtype).triu(1)
        for layer in self.layers:
            x = run_layer(layer, self.ckpt, x, cos, sin, mask)
        x = self.norm(x)
        logits = F.linear(x, self.embed_tokens.weight if self.tied else self.lm_head.weight)
        return logits.float()


# --- OPT (OPTForCausalLM, eager attention, pre-LN as opt-125m and up except opt-350m) ----------

class OPTLayer(nn.Module):
    def __init__(self, c):
        super().__init__()
        d, self.h = c["hidden_size"], c["num_attention_heads"]
        self.hd = d // self.h
        self.self_attn_layer_norm = nn.LayerNorm(d)
        self.q_proj, self.k_proj = nn.Linear(d, d), nn.Linear(d, d)
        self.v_proj, self.out_proj = nn.Linear(d, d), nn.Linear(d, d)
        self.final_layer_norm = nn.LayerNorm(d)
        self.fc1, self.fc2 = nn.Linear(d, c["ffn_dim"]), nn.Linear(c["ffn_dim"], d)
        self.p = c.get("dropout", 0.1)
        self.attn_p = c.get("attention_dropout", 0.0)

    def forward(self, x, mask):
        b, t, d = x.shape
        h = self.self_attn_layer_norm(x)
        q = (self.q_proj(h) * self.hd ** -0.5).view(b, t, self.h, self.hd).transpose(1, 2)
        k = self.k_proj(h).view(b, t, self.h, self.hd).transpose(1, 2)
        v = self.v_proj(h).view(b, t, self.h, self.hd).transpose(1, 2)
        s = torch.matmul(q, k.transpose(2, 3)) + mask
        if s.dtype == torch.float16:
            p = F.softmax(s, dim=-1, dtype=torch.float32).to(torch.float16)
        else:
            p = F.softmax(s, dim=-1)
        p = F.dropout(p, self.attn_p, self.training)
        y = torch.matmul(p, v).transpose(1, 2).reshape(b, t, d)
        x = x + F.dropout(self.out_proj(y), self.p, self.training)
        h = self.fc2(F.relu(self.fc1(self.final_layer_norm(x))))
        return x + F.dropout(h, self.p, self.training)


class OPT(nn.Module):
    def __init__(self, c):
        super().__init__()
        d = c["hidden_size"]
        self.embed_tokens = nn.Embedding(c["vocab_size"], d)
        self.embed_positions = nn.Embedding(c["max_position_embeddings"] + 2, d)  # offset 2
        self.layers = nn.ModuleList(OPTLayer(c) for _ in range(c["num_hidden_layers"]))
        self.final_layer_norm = nn.LayerNorm(d)

    def lora_targets(self):
        return [(l, n) for l in self.layers for n in ("q_proj", "v_proj")]

    def forward(self, ids):
        t = ids.shape[1]
        x = self.embed_tokens(ids)
        with torch.no_grad():
            mask = torch.full((t, t), torch.finfo(x.dtype).min, dtype=x.dtype).triu(1)
        x = x + self.embed_positions(torch.arange(t) + 2)
        for layer in self.layers:
            x = run_layer(layer, self.ckpt, x, mask)
        return F.linear(self.final_layer_norm(x), self.embed_tokens.weight)  # tied LM head


# --- GPT-Neo (GPTNeoForCausalLM, eager attention; local layers as global: same tensors) ---------

class GPTNeoBlock(nn.Module):
    def __init__(self, c):
        super().__init__()
        d, self.h = c["hidden_size"], c["num_heads"]
        inner = c.get("intermediate_size") or 4 * d
        eps = c.get("layer_norm_epsilon", 1e-5)
        self.ln_1, self.ln_2 = nn.LayerNorm(d, eps=eps), nn.LayerNorm(d, eps=eps)
        self.q_proj = nn.Linear(d, d, bias=False)
        self.k_proj = nn.Linear(d, d, bias=False)
        self.v_proj = nn.Linear(d, d, bias=False)
        self.out_proj = nn.Linear(d, d)
        self.c_fc, self.c_proj = nn.Linear(d, inner), nn.Linear(inner, d)
        self.attn_drop = nn.Dropout(c.get("attention_dropout", 0.0))
        self.resid_drop = nn.Dropout(c.get("resid_dropout", 0.0))
        self.mlp_drop = nn.Dropout(c.get("resid_dropout", 0.0))

    def forward(self, x, causal):
        b, t, d = x.shape
        hd = d // self.h
        h = self.ln_1(x)
        q, k, v = (z.view(b, t, self.h, hd).permute(0, 2, 1, 3)
                   for z in (self.q_proj(h), self.k_proj(h), self.v_proj(h)))
        s = torch.matmul(q.to(torch.float32), k.to(torch.float32).transpose(-1, -2))
        s = torch.where(causal, s, torch.tensor(torch.finfo(s.dtype).min, dtype=s.dtype))
        p = self.attn_drop(torch.softmax(s, dim=-1).to(v.dtype))
        y = torch.matmul(p, v).permute(0, 2, 1, 3).contiguous().view(b, t, d)
        x = x + self.resid_drop(self.out_proj(y))
        return x + self.mlp_drop(self.c_proj(gelu_new(self.c_fc(self.ln_2(x)))))


class GPTNeo(nn.Module):
    def __init__(self, c):
        super().__init__()
        d = c["hidden_size"]
        self.wte = nn.Embedding(c["vocab_size"], d)
        self.wpe = nn.Embedding(c["max_position_embeddings"], d)
        self.drop = nn.Dropout(c.get("embed_dropout", 0.0))
        self.blocks = nn.ModuleList(GPTNeoBlock(c) for _ in range(c["num_layers"]))
        self.ln_f = nn.LayerNorm(d, eps=c.get("layer_norm_epsilon", 1e-5))

    def lora_targets(self):
        return [(blk, n) for blk in self.blocks for n in ("q_proj", "v_proj")]

    def forward(self, ids):
        t = ids.shape[1]
        pos = torch.arange(t)
        causal = pos.unsqueeze(0) <= pos.unsqueeze(1)
        x = self.drop(self.wte(ids) + self.wpe(pos))
        for blk in self.blocks:
            x = run_layer(blk, self.ckpt, x, causal)
        return F.linear(self.ln_f(x), self.wte.weight)  # tied LM head


# --- GPT-J (GPTJForCausalLM, eager attention) ----------------------------------------------------

def rotate_every_two(x):
    x1, x2 = x[:, :, :, ::2], x[:, :, :, 1::2]
    return torch.stack((-x2, x1), dim=-1).flatten(-2)


def gptj_rotary(x, sin, cos):
    """apply_rotary_pos_emb: sin and cos [1, t, rd / 2] repeated pairwise to [1, t, 1, rd]."""
    sin = torch.repeat_interleave(sin[:, :, None, :], 2, 3)
    cos = torch.repeat_interleave(cos[:, :, None, :], 2, 3)
    return (x * cos) + (rotate_every_two(x) * sin)


class GPTJBlock(nn.Module):
    """GPTJBlock: one ln_1 feeding attention and MLP in parallel, x + attn + mlp."""

    def __init__(self, c):
        super().__init__()
        d, self.h = c["n_embd"], c["n_head"]
        self.hd = d // self.h
        self.rd = c.get("rotary_dim") or self.hd
        inner = c.get("n_inner") or 4 * d
        self.ln_1 = nn.LayerNorm(d, eps=c.get("layer_norm_epsilon", 1e-5))
        self.q_proj = nn.Linear(d, d, bias=False)
        self.k_proj = nn.Linear(d, d, bias=False)
        self.v_proj = nn.Linear(d, d, bias=False)
        self.out_proj = nn.Linear(d, d, bias=False)
        self.fc_in, self.fc_out = nn.Linear(d, inner), nn.Linear(inner, d)
        self.attn_drop = nn.Dropout(c.get("attn_pdrop", 0.0))
        self.resid_drop = nn.Dropout(c.get("resid_pdrop", 0.0))
        self.mlp_drop = nn.Dropout(c.get("resid_pdrop", 0.0))
        # create_sinusoidal_positions: a plain float32 attribute, not a buffer (model.to() leaves
        # it float32, so the rotated q and k come out float32 under half-precision weights)
        inv = 1.0 / (10000 ** (torch.arange(0, self.rd, 2, dtype=torch.int64) / self.rd))
        f = torch.einsum("i , j -> i j", torch.arange(c["n_positions"], dtype=torch.int64).float(),
                         inv).float()
        self.embed_positions = torch.cat((torch.sin(f), torch.cos(f)), dim=1)

    def forward(self, x, causal, pos):
        b, t, d = x.shape
        h = self.ln_1(x)
        q = self.q_proj(h).view(b, t, self.h, self.hd)
        k = self.k_proj(h).view(b, t, self.h, self.hd)
        v = self.v_proj(h).view(b, t, self.h, self.hd).permute(0, 2, 1, 3)
        pos = pos[None]  # position_ids [1, t]
        table = self.embed_positions.repeat(pos.shape[0], 1, 1)
        sincos = torch.gather(table, 1, pos.unsqueeze(-1).repeat(1, 1, table.shape[-1]))
        sin, cos = torch.split(sincos, sincos.shape[-1] // 2, dim=-1)
        r = self.rd
        k = torch.cat([gptj_rotary(k[:, :, :, :r], sin, cos), k[:, :, :, r:]], dim=-1)
        q = torch.cat([gptj_rotary(q[:, :, :, :r], sin, cos), q[:, :, :, r:]], dim=-1)
        k, q = k.permute(0, 2, 1, 3), q.permute(0, 2, 1, 3)
        # _attn: scores in float32, torch.where against the causal mask, / sqrt(hd), softmax,
        # cast to v's dtype
        s = torch.matmul(q.to(torch.float32), k.to(torch.float32).transpose(-1, -2))
        s = torch.where(causal, s, torch.tensor(torch.finfo(s.dtype).min, dtype=s.dtype))
        s = s / torch.sqrt(torch.tensor(self.hd, dtype=torch.float32))
        p = self.attn_drop(F.softmax(s, dim=-1).to(v.dtype))
        y = torch.matmul(p, v).permute(0, 2, 1, 3).contiguous().view(b, t, d)
        a = self.resid_drop(self.out_proj(y))
        m = self.mlp_drop(self.fc_out(gelu_new(self.fc_in(h))))
        return a + m + x


class GPTJ(nn.Module):
    def __init__(self, c):
        super().__init__()
        d = c["n_embd"]
        self.wte = nn.Embedding(c["vocab_size"], d)
        self.drop = nn.Dropout(c.get("embd_pdrop", 0.0))
        self.blocks = nn.ModuleList(GPTJBlock(c) for _ in range(c["n_layer"]))
        self.ln_f = nn.LayerNorm(d, eps=c.get("layer_norm_epsilon", 1e-5))
        self.lm_head = nn.Linear(d, c["vocab_size"])  # untied, with a bias

    def lora_targets(self):
        return [(blk, n) for blk in self.blocks for n in ("q_proj", "v_proj")]

    def forward(self, ids):
        t = ids.shape[1]
        pos = torch.arange(t)
        causal = pos.unsqueeze(0) <= pos.unsqueeze(1)
        x = self.drop(self.wte(ids))
        for blk in self.blocks:
            x = run_layer(blk, self.ckpt, x, causal, pos)
        return self.lm_head(self.ln_f(x)).to(torch.float32)


# --- BERT / RoBERTa (BertForMaskedLM / RobertaForMaskedLM, eager attention) ---------------------

def extended_mask(b, t, dtype, causal=False):
    """get_extended_attention_mask(torch.ones(b, t)): (1 - m[:, None, None, :]) * finfo.min, all
    zeros; for a decoder the causal [b, 1, t, t] mask (create_extended_attention_mask_for_decoder)."""
    m = torch.ones(b, t, dtype=dtype)
    ext = m[:, None, None, :]
    if causal:
        seq = torch.arange(t)
        c = (seq[None, None, :].repeat(b, t, 1) <= seq[None, :, None]).to(dtype)
        ext = c[:, None, :, :] * ext
    return (1.0 - ext) * torch.finfo(dtype).min


class BertSelfAttention(nn.Module):
    def __init__(self, c):
        super().__init__()
        d, self.h = c["hidden_size"], c["num_attention_heads"]
        self.hd = d // self.h
        self.query, self.key, self.value = nn.Linear(d, d), nn.Linear(d, d), nn.Linear(d, d)
        self.dropout = nn.Dropout(c.get("attention_probs_dropout_prob", 0.1))

    def split(self, x):
        b, t, _ = x.shape
        return x.view(b, t, self.h, self.hd).permute(0, 2, 1, 3)

    def forward(self, x, mask):
        b, t, d = x.shape
        q, k, v = self.split(self.query(x)), self.split(self.key(x)), self.split(self.value(x))
        s = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.hd)
        s = s + mask
        p = self.dropout(F.softmax(s, dim=-1))
        return torch.matmul(p, v).permute(0, 2, 1, 3).contiguous().view(b, t, d)


class BertResidual(nn.Module):
    """BertSelfOutput / BertOutput: LayerNorm(dropout(dense(h)) + x)."""

    def __init__(self, d_in, d, c):
        super().__init__()
        self.dense = nn.Linear(d_in, d)
        self.LayerNorm = nn.LayerNorm(d, eps=c.get("layer_norm_eps", 1e-12))
        self.dropout = nn.Dropout(c.get("hidden_dropout_prob", 0.1))

    def forward(self, h, x):
        return self.LayerNorm(self.dropout(self.dense(h)) + x)


class BertLayer(nn.Module):
    def __init__(self, c):
        super().__init__()
        d, ff = c["hidden_size"], c["intermediate_size"]
        self.self_attn = BertSelfAttention(c)
        self.attn_output = BertResidual(d, d, c)
        self.intermediate = nn.Linear(d, ff)
        self.output = BertResidual(ff, d, c)

    def forward(self, x, mask):
        a = self.attn_output(self.self_attn(x, mask), x)
        return self.output(F.gelu(self.intermediate(a)), a)


class Bert(nn.Module):
    """BertForMaskedLM (roberta: RobertaForMaskedLM): no pooler; the MLM head's decoder is tied to
    the word embeddings and has its own bias."""

    def __init__(self, c):
        super().__init__()
        d, eps = c["hidden_size"], c.get("layer_norm_eps", 1e-12)
        self.roberta = c["model_type"] == "roberta"
        self.pad = c.get("pad_token_id", 1 if self.roberta else 0)
        self.word_embeddings = nn.Embedding(c["vocab_size"], d)
        self.position_embeddings = nn.Embedding(c["max_position_embeddings"], d)
        self.token_type_embeddings = nn.Embedding(c.get("type_vocab_size", 2), d)
        self.register_buffer("token_type_ids", torch.zeros(1, c["max_position_embeddings"],
                                                           dtype=torch.long), persistent=False)
        self.register_buffer("position_ids", torch.arange(c["max_position_embeddings"])[None],
                             persistent=False)
        self.emb_norm = nn.LayerNorm(d, eps=eps)
        self.emb_drop = nn.Dropout(c.get("hidden_dropout_prob", 0.1))
        self.layers = nn.ModuleList(BertLayer(c) for _ in range(c["num_hidden_layers"]))
        self.head_dense = nn.Linear(d, d)
        self.head_norm = nn.LayerNorm(d, eps=eps)
        self.head_bias = nn.Parameter(torch.zeros(c["vocab_size"]))

    def lora_targets(self):
        return [(l.self_attn, n) for l in self.layers for n in ("query", "value")]

    def forward(self, ids):
        x = self.encode(ids)
        h = self.head_norm(F.gelu(self.head_dense(x)))
        return F.linear(h, self.word_embeddings.weight, self.head_bias)

    def encode(self, ids):
        """BertModel's embeddings and encoder: the last hidden state [b, t, d]."""
        b, t = ids.shape
        if self.roberta:  # create_position_ids_from_input_ids
            m = ids.ne(self.pad).int()
            pos = (torch.cumsum(m, dim=1).type_as(m) * m).long() + self.pad
        else:
            pos = self.position_ids[:, :t]
        tt = self.token_type_ids[:, :t].expand(b, t)
        x = self.word_embeddings(ids) + self.token_type_embeddings(tt)
        x += self.position_embeddings(pos)
        x = self.emb_drop(self.emb_norm(x))
        mask = extended_mask(b, t, x.dtype)
        for layer in self.layers:
            x = run_layer(layer, self.ckpt, x, mask)
        return x


class BertSeqCls(Bert):
    """BertForSequenceClassification (roberta: RobertaForSequenceClassification), as
    modeling_bert.py / modeling_roberta.py compute it: the encoder (no MLM head), then on the first
    token x[:, 0] BERT's pooler (BertPooler: dense, tanh), dropout and classifier =
    Linear(d, num_labels); RoBERTa has no pooler and its RobertaClassificationHead runs dropout,
    dense, tanh, dropout, out_proj. num_labels as PretrainedConfig reads it (id2label's entries, else
    num_labels, else 2); the dropout classifier_dropout, else hidden_dropout_prob."""

    def __init__(self, c):
        super().__init__(c)
        del self.head_dense, self.head_norm, self.head_bias
        d = c["hidden_size"]
        self.labels = len(c["id2label"]) if c.get("id2label") else c.get("num_labels", 2)
        p = c.get("classifier_dropout")
        self.cls_dense = nn.Linear(d, d)  # bert.pooler.dense / classifier.dense
        self.cls_drop = nn.Dropout(c.get("hidden_dropout_prob", 0.1) if p is None else p)
        self.classifier = nn.Linear(d, self.labels)  # classifier / classifier.out_proj

    def forward(self, ids):
        x = self.encode(ids)[:, 0]
        if self.roberta:
            x = self.cls_drop(x)
        x = torch.tanh(self.cls_dense(x))
        return self.classifier(self.cls_drop(x))


# --- T5 (T5ForConditionalGeneration, eager attention) ------------------------------------------

class T5LayerNorm(nn.Module):
    def __init__(self, d, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d))
        self.eps = eps

    def forward(self, x):
        var = x.to(torch.float32).pow(2).mean(-1, keepdim=True)
        x = x * torch.rsqrt(var + self.eps)
        if self.weight.dtype in (torch.float16, torch.bfloat16):
            x = x.to(self.weight.dtype)
        return self.weight * x


def t5_bucket(rel, bidirectional, num_buckets, max_distance):
    buckets = 0
    if bidirectional:
        num_buckets //= 2
        buckets += (rel > 0).to(torch.long) * num_buckets
        rel = torch.abs(rel)
    else:
        rel = -torch.min(rel, torch.zeros_like(rel))
    max_exact = num_buckets // 2
    is_small = rel < max_exact
    large = max_exact + (torch.log(rel.float() / max_exact) / math.log(max_distance / max_exact)
                         * (num_buckets - max_exact)).to(torch.long)
    large = torch.min(large, torch.full_like(large, num_buckets - 1))
    return buckets + torch.where(is_small, rel, large)


class T5Attention(nn.Module):
    def __init__(self, c, decoder, relative):
        super().__init__()
        d, self.h, self.dk = c["d_model"], c["num_heads"], c["d_kv"]
        inner = self.h * self.dk
        self.decoder = decoder
        self.nb = c.get("relative_attention_num_buckets", 32)
        self.maxd = c.get("relative_attention_max_distance", 128)
        self.q, self.k = nn.Linear(d, inner, bias=False), nn.Linear(d, inner, bias=False)
        self.v, self.o = nn.Linear(d, inner, bias=False), nn.Linear(inner, d, bias=False)
        self.p = c.get("dropout_rate", 0.1)
        self.relative_attention_bias = nn.Embedding(self.nb, self.h) if relative else None

    def forward(self, x, mask, bias, kv=None):
        b, tq, _ = x.shape
        kv = x if kv is None else kv
        tk = kv.shape[1]
        q = self.q(x).view(b, -1, self.h, self.dk).transpose(1, 2)
        k = self.k(kv).view(b, -1, self.h, self.dk).transpose(1, 2)
        v = self.v(kv).view(b, -1, self.h, self.dk).transpose(1, 2)
        s = torch.matmul(q, k.transpose(3, 2))
        if bias is None:
            if self.relative_attention_bias is None:
                bias = torch.zeros((1, self.h, tq, tk), dtype=s.dtype)
            else:
                rel = torch.arange(tk)[None, :] - torch.arange(tq)[:, None]
                bucket = t5_bucket(rel, not self.decoder, self.nb, self.maxd)
                bias = self.relative_attention_bias(bucket).permute([2, 0, 1]).unsqueeze(0)
            bias = bias + mask
        s += bias
        w = F.softmax(s.float(), dim=-1).type_as(s)
        w = F.dropout(w, p=self.p, training=self.training)
        y = torch.matmul(w, v).transpose(1, 2).contiguous().view(b, -1, self.h * self.dk)
        return self.o(y), bias


class T5FF(nn.Module):
    def __init__(self, c):
        super().__init__()
        d, ff = c["d_model"], c["d_ff"]
        proj = c.get("feed_forward_proj", "relu")
        self.gated = proj.startswith("gated-")
        self.act = {"relu": F.relu, "gelu": F.gelu, "gated-gelu": gelu_new,
                    "gated-relu": F.relu, "gated-silu": F.silu}[proj]
        if self.gated:
            self.wi_0, self.wi_1 = nn.Linear(d, ff, bias=False), nn.Linear(d, ff, bias=False)
        else:
            self.wi = nn.Linear(d, ff, bias=False)
        self.wo = nn.Linear(ff, d, bias=False)
        self.dropout = nn.Dropout(c.get("dropout_rate", 0.1))

    def forward(self, x):
        h = self.act(self.wi_0(x)) * self.wi_1(x) if self.gated else self.act(self.wi(x))
        return self.wo(self.dropout(h))


class T5Block(nn.Module):
    def __init__(self, c, decoder, first):
        super().__init__()
        d, eps = c["d_model"], c.get("layer_norm_epsilon", 1e-6)
        self.decoder = decoder
        self.self_norm, self.self_attn = T5LayerNorm(d, eps), T5Attention(c, decoder, first)
        if decoder:
            self.cross_norm, self.cross_attn = T5LayerNorm(d, eps), T5Attention(c, True, False)
        self.ff_norm, self.ff = T5LayerNorm(d, eps), T5FF(c)
        self.drop = nn.Dropout(c.get("dropout_rate", 0.1))

    def forward(self, x, mask, bias, enc=None, enc_mask=None, xbias=None):
        y, bias = self.self_attn(self.self_norm(x), mask, bias)
        x = x + self.drop(y)
        if self.decoder:
            y, xbias = self.cross_attn(self.cross_norm(x), enc_mask, xbias, kv=enc)
            x = x + self.drop(y)
        x = x + self.drop(self.ff(self.ff_norm(x)))
        return (x, bias, xbias) if self.decoder else (x, bias)


class T5Stack(nn.Module):
    def __init__(self, c, n, decoder):
        super().__init__()
        self.decoder = decoder
        self.block = nn.ModuleList(T5Block(c, decoder, i == 0) for i in range(n))
        self.final_layer_norm = T5LayerNorm(c["d_model"], c.get("layer_norm_epsilon", 1e-6))
        self.dropout = nn.Dropout(c.get("dropout_rate", 0.1))

    def forward(self, x, ckpt, enc=None):
        b, t, _ = x.shape
        mask = extended_mask(b, t, x.dtype, causal=self.decoder)
        enc_mask = extended_mask(b, enc.shape[1], x.dtype) if self.decoder else None
        bias = xbias = None
        x = self.dropout(x)
        for blk in self.block:
            if self.decoder:
                x, bias, xbias = run_layer(blk, ckpt, x, mask, bias, enc, enc_mask, xbias)
            else:
                x, bias = run_layer(blk, ckpt, x, mask, bias)
        return self.dropout(self.final_layer_norm(x))


class T5(nn.Module):
    def __init__(self, c):
        super().__init__()
        d = c["d_model"]
        self.d = d
        self.shared = nn.Embedding(c["vocab_size"], d)
        self.encoder = T5Stack(c, c["num_layers"], False)
        self.decoder = T5Stack(c, c.get("num_decoder_layers") or c["num_layers"], True)
        self.tied = c.get("tie_word_embeddings", True)
        if not self.tied:
            self.lm_head = nn.Linear(d, c["vocab_size"], bias=False)
        self.n_blocks = len(self.encoder.block) + len(self.decoder.block)

    def lora_targets(self):
        out = []
        for stack in (self.encoder, self.decoder):
            for blk in stack.block:
                for attn in ([blk.self_attn, blk.cross_attn] if stack.decoder else [blk.self_attn]):
                    out += [(attn, "q"), (attn, "v")]
        return out

    def forward(self, ids, dec_ids):
        enc = self.encoder(self.shared(ids), self.ckpt)
        y = self.decoder(self.shared(dec_ids), self.ckpt, enc)
        if self.tied:
            return F.linear(y * (self.d ** -0.5), self.shared.weight)
        return self.lm_head(y)


FAMILIES = {"gpt2": GPT2, "llama": Llama, "qwen2": Llama, "mistral": Llama, "opt": OPT,
            "gpt_neo": GPTNeo, "bert": Bert, "roberta": Bert, "t5": T5, "gptj": GPTJ}


def family(c):
    """The class for a configuration: its family's, or the sequence classifier its
    architectures name."""
    if any(a.endswith("ForSequenceClassification") for a in c.get("architectures", [])):
        return BertSeqCls
    return FAMILIES[c["model_type"]]


def build(name, trainable, precision, ckpt=False):
    with open(os.path.join(ROOT, "tests", "data", "hf", name + ".json")) as f:
        c = json.load(f)
    torch.manual_seed(0)
    model = family(c)(c)
    model.ckpt = ckpt
    if precision == "bf16":
        model = model.to(torch.bfloat16)
    if trainable == "lora":
        for p in model.parameters():
            p.requires_grad_(False)
        for owner, attr in model.lora_targets():
            setattr(owner, attr, LoRALinear(getattr(owner, attr), 8, 16))
    return model.train()


# Published parameter counts (model.num_parameters(): unique parameters, tied weights once) of
# the checkpoints whose config.json is in data/hf/, and what this file's torch.nn models of the
# same configurations count: `hf_reference.py --counts`.  BertModel / RobertaModel are the bare
# encoders with their pooler (dense d x d + bias), as the model cards count them; colloc builds
# the *ForMaskedLM model, which has no pooler and adds the MLM head.
PUBLISHED = {
    "bert-base-uncased": ("BertModel", 109482240),
    "roberta-base": ("RobertaModel", 124645632),
    "t5-small": ("T5ForConditionalGeneration", 60506624),
    "t5-base": ("T5ForConditionalGeneration", 222903552),
    "t5-v1_1-base": ("T5ForConditionalGeneration", 247577856),
}


# Counted beside PUBLISHED, not matched: GPT-J-6B's model card gives n_parameters 6,053,381,344;
# GPTJForCausalLM's modules (wte, 28 blocks, ln_f, lm_head with its bias) count 2,498,560 fewer.
# The difference is recorded, not made up (--counts' exit status is PUBLISHED's alone).
MODEL_CARD = {
    "gpt-j-6b": ("model card n_parameters", 6053381344),
}


# The sequence classifiers of data/hf/ configurations (2 labels, PretrainedConfig's default), counted
# at full size beside PUBLISHED: bert-large-uncased's, the model of the Hugging Face "Efficient
# Training on a Single GPU" figures (data/reference/published_finetune.md), is 335,143,938: its
# BertForMaskedLM count (335,174,458) less the MLM head (dense 1024 x 1024 + 1024, LayerNorm 2048,
# decoder bias 30522) plus the pooler (1024 x 1024 + 1024) and the classifier (1024 x 2 + 2).
SEQ_CLS = {
    "bert-large-uncased": ("BertForSequenceClassification", 335143938),
}


@contextlib.contextmanager
def on_meta():
    """nn.Linear / nn.Embedding / nn.LayerNorm made on the meta device: shapes, no storage (GPT-J-6B
    is 24 GB in float32)."""
    saved = {cls: cls.__init__ for cls in (nn.Linear, nn.Embedding, nn.LayerNorm)}
    for cls, init in saved.items():
        cls.__init__ = functools.partialmethod(init, device="meta")
    try:
        yield
    finally:
        for cls, init in saved.items():
            cls.__init__ = init


def count_published():
    """Build each data/hf/ configuration of PUBLISHED (and MODEL_CARD) at full size and count its
    parameters."""
    out = {}
    for name, (cls, published) in list(PUBLISHED.items()) + list(MODEL_CARD.items()):
        with open(os.path.join(ROOT, "data", "hf", name, "config.json")) as f:
            c = json.load(f)
        if name in MODEL_CARD:
            with on_meta():
                model = FAMILIES[c["model_type"]](c)
        else:
            model = FAMILIES[c["model_type"]](c)
        full = sum(p.numel() for p in model.parameters())
        rec = {"model": type(model).__name__, "params": full, "published_class": cls,
               "published": published}
        if isinstance(model, Bert):
            d = c["hidden_size"]
            head = sum(p.numel() for n, p in model.named_parameters() if n.startswith("head_"))
            rec["encoder_with_pooler"] = full - head + d * d + d
            rec["mlm_head"] = head
            counted = rec["encoder_with_pooler"]
        else:
            counted = full
        rec["matches"] = counted == published
        if name in MODEL_CARD:
            rec["difference"] = published - counted
        out[name] = rec
        print(name, rec, file=sys.stderr)
        del model
    for name, (cls, expected) in SEQ_CLS.items():
        with open(os.path.join(ROOT, "data", "hf", name, "config.json")) as f:
            c = json.load(f)
        with on_meta():
            model = BertSeqCls(c)
        full = sum(p.numel() for p in model.parameters())
        rec = {"model": cls, "params": full, "labels": model.labels, "expected": expected,
               "matches": full == expected}
        out[name + "/" + cls] = rec
        print(name, rec, file=sys.stderr)
    return out


def main():
    if sys.argv[1:] == ["--counts"]:
        out = count_published()
        with open(os.path.join(ROOT, "data", "reference", "hf_param_counts.json"), "w") as f:
            json.dump(out, f, indent=1, sort_keys=True)
            f.write("\n")
        sys.exit(0 if all(out[n]["matches"] for n in PUBLISHED) and
                 all(out[n + "/" + c]["matches"] for n, (c, _) in SEQ_CLS.items()) else 1)
    out = {}
    gen = torch.Generator().manual_seed(0)
    for name in CONFIGS:
        for trainable, precision, ckpt in [(t, p, k) for k in (False, True)
                                           for t in ("all", "lora") for p in ("fp32", "bf16")]:
            if True:
                model = build(name, trainable, precision, ckpt)
                ids = torch.randint(0, 512, (BATCH, SEQ), generator=gen)
                t5 = isinstance(model, T5)
                if isinstance(model, BertSeqCls):
                    # single-label classification: one int64 label per sequence
                    labels = torch.randint(0, model.labels, (BATCH,), generator=gen)

                    def loss_fn(logits):
                        return F.cross_entropy(logits, labels)
                    inputs = (ids,)
                elif isinstance(model, (T5, Bert)):
                    # masked-LM / seq2seq labels: cross-entropy over every position (labels
                    # of -100 change no tensor's size)
                    dec = torch.randint(0, 512, (BATCH, DEC_SEQ), generator=gen) if t5 else None
                    labels = (dec if t5 else ids).reshape(-1).clone()

                    def loss_fn(logits):
                        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels)
                    inputs = (ids, dec) if t5 else (ids,)
                else:
                    # Hugging Face's ForCausalLMLoss since transformers 4.49 (colloc's
                    # causal-lm): the labels shifted by padding with -100, the logits upcast
                    # (a no-op in float32) and flattened, not copied
                    labels = F.pad(ids, (0, 1), value=-100)[:, 1:].reshape(-1).clone()

                    def loss_fn(logits):
                        return F.cross_entropy(logits.float().reshape(-1, logits.shape[-1]),
                                               labels, ignore_index=-100)
                    inputs = (ids,)

                rec = reference_memory.measure_training(model, inputs, labels, loss_fn)
                if ckpt:
                    rec["checkpoint_held_bytes"] = _METER[0].held
                # what CUDA saves: bool dropout masks and float32 layer-norm statistics
                rec["saved_bytes_forward_cuda"] = rec["saved_bytes_forward_bool_masks"] + \
                    _METER[0].cuda_stats_extra
                rec = {"config": "tests/data/hf/%s.json" % name, "trainable": trainable,
                       "precision": precision, "gradient_checkpointing": ckpt,
                       "batch": BATCH, "seq": SEQ, **({"dec_seq": DEC_SEQ} if t5 else {}),
                       "loss": "cross-entropy" if isinstance(model, (T5, Bert)) else "causal-lm",
                       "torch_version": torch.__version__.split("+")[0],
                       "trainable_params": sum(p.numel() for p in model.parameters() if p.requires_grad),
                       "frozen_params": sum(p.numel() for p in model.parameters() if not p.requires_grad),
                       **rec}
                key = "%s/%s/%s%s" % (name, trainable, precision, "/ckpt" if ckpt else "")
                if ckpt:
                    full = out["%s/%s/%s" % (name, trainable, precision)]
                    # the ops outside the layers save the same either way; what the layers
                    # saved without checkpointing, per layer, is what a recomputation keeps
                    layers = getattr(model, "n_blocks", None) or \
                        len(model.blocks if hasattr(model, "blocks") else model.layers)
                    outside = rec["saved_bytes_forward_bool_masks"] - rec["checkpoint_held_bytes"]
                    rec["checkpoint_layer_saved_bytes"] = \
                        (full["saved_bytes_forward_bool_masks"] - outside) // layers
                out[key] = rec
                print(key, rec["saved_bytes_forward_bool_masks"], rec["param_bytes"], file=sys.stderr)
    path = os.path.join(ROOT, "data", "reference", "hf_cpu.json")
    with open(path, "w") as f:
        json.dump(out, f, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main()
