"""Export colloc's bundled model zoo: graph-only ONNX files plus PyTorch reference facts.

For every model of the zoo this writes, into data/zoo/ (or --out DIR):

  <name>.onnx   the ONNX graph (opset 14) exported by torch.onnx, *without weights*: every
                initializer with more than 64 elements and every Constant value with more than
                4096 elements is marked as external data in "<name>.weights", a file that does not
                exist; dims and data_type are kept, small tensors stay inline (shape arithmetic
                needs them).  Load with onnx.load(path, load_external_data=False).
  <name>.json   facts measured in PyTorch: parameter/buffer counts, and for several batch sizes
                (and sequence lengths) the actual output shapes and the forward FLOPs counted by
                tools/zoo_reference.py (the rules of docs/flops.md).  A C test consumes it.
  README.md     the table of all models (regenerated from the JSON files present in the folder).

Models are built with random initialisation (no weights are downloaded): torchvision
constructors with weights=None, and four transformers written here in plain torch.nn that mirror
Hugging Face checkpoints exactly in parameter count (distilgpt2, gpt2, bert-base-uncased, t5-small).

Run (Debian's torch 1.13 / torchvision 0.14 / onnx 1.12 live in the system interpreter):

    /usr/bin/python3 tools/export_zoo.py                     # whole zoo into data/zoo
    /usr/bin/python3 tools/export_zoo.py --only resnet18,gpt2
    /usr/bin/python3 tools/export_zoo.py --list
    /usr/bin/python3 tools/export_zoo.py --stats             # op-type census of the exported zoo

Export rules: torch.onnx.export(opset_version=14, do_constant_folding=False,
training=TrainingMode.TRAINING) so initializers keep PyTorch's parameter/buffer names and
BatchNormalization keeps training_mode=1.  When a training-mode export fails (torchvision's
StochasticDepth draws with bernoulli_, which opset 14 cannot express) the model is exported in
eval mode instead and the JSON says "mode": "eval" with the reason.  The eval export uses
TrainingMode.PRESERVE on a model in eval(): TrainingMode.EVAL would fold BatchNorm into Conv
(renaming the weights to onnx::Conv_NNN).  During every export torch.onnx's initializer
de-duplication is limited to tensors that share storage (tied weights); by default an eval export
also merges tensors that merely hold equal values (the all-ones BatchNorm weights of a fresh
model) into Identity nodes.

The reference forwards (output shapes, FLOPs) skip the arithmetic of matrix products by default
(zeros of the checked result shape; see zoo_reference._zeros_matmul): Debian's torch uses the
reference BLAS, far too slow for the transformers.  --real-matmul computes them for real.
"""

import argparse
import contextlib
import copy
import io
import json
import math
import os
import sys
import tempfile
import time
import warnings
from collections import Counter

import onnx
import torch
import torch.nn as nn
import torch.nn.functional as F
import torchvision

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import zoo_reference  # noqa: E402  (the FLOP counter, tools/zoo_reference.py)

OPSET = 14
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_OUT = os.path.join(REPO, "data", "zoo")
INLINE_INIT_MAX = 64  # initializers with more elements become external
INLINE_CONST_MAX = 4096  # Constant values with more elements become external


# --------------------------------------------------------------------------------------------
# Transformers in plain torch.nn (our own code, written from the published architectures).
# Module and parameter names follow the Hugging Face checkpoints so initializer names are
# familiar, but every Linear is a torch nn.Linear (weight [out, in]; GPT-2's checkpoint stores
# Conv1D weights as [in, out] -- same parameter count).
# --------------------------------------------------------------------------------------------


def _init_normal(module, std=0.02):
    for m in module.modules():
        if isinstance(m, (nn.Linear, nn.Embedding)):
            nn.init.normal_(m.weight, 0.0, std)
            if getattr(m, "bias", None) is not None:
                nn.init.zeros_(m.bias)


def _causal(t, device):
    """[t, t] bool, True where key position j <= query position i."""
    pos = torch.arange(t, device=device)
    return pos.unsqueeze(0) <= pos.unsqueeze(1)


class GPT2Attention(nn.Module):
    def __init__(self, d_model, n_head, pdrop):
        super().__init__()
        self.d_model, self.n_head, self.head_dim = d_model, n_head, d_model // n_head
        self.c_attn = nn.Linear(d_model, 3 * d_model)  # fused q, k, v projection
        self.c_proj = nn.Linear(d_model, d_model)
        self.attn_dropout = nn.Dropout(pdrop)
        self.resid_dropout = nn.Dropout(pdrop)
        # True: one F.scaled_dot_product_attention call (torch >= 2.0), as transformers' GPT-2
        # with attn_implementation="sdpa" and no padding mask (is_causal, the attention dropout
        # inside the kernel); tools/measure_gpu.py sets it for its SDPA runs, never the export
        self.sdpa = False

    def forward(self, x, causal):
        b, t = x.shape[0], x.shape[1]
        q, k, v = self.c_attn(x).split(self.d_model, dim=2)
        q, k, v = (z.view(b, t, self.n_head, self.head_dim).transpose(1, 2) for z in (q, k, v))
        if self.sdpa:
            y = F.scaled_dot_product_attention(
                q, k, v, dropout_p=self.attn_dropout.p if self.training else 0.0, is_causal=True)
            return self.resid_dropout(self.c_proj(y.transpose(1, 2).reshape(b, t, self.d_model)))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.head_dim)
        masked = torch.tensor(torch.finfo(scores.dtype).min, dtype=scores.dtype)
        scores = torch.where(causal, scores, masked)
        probs = self.attn_dropout(torch.softmax(scores, dim=-1))
        y = torch.matmul(probs, v).transpose(1, 2).reshape(b, t, self.d_model)
        return self.resid_dropout(self.c_proj(y))


def gelu_new(x):
    """GPT-2's "gelu_new", the tanh approximation of GELU, written out term by term as Hugging
    Face's NewGELUActivation computes it (not F.gelu(approximate="tanh")): autograd then saves
    what it saves in the real GPT2LMHeadModel, which the memory estimator is measured against."""
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


class GPT2MLP(nn.Module):
    def __init__(self, d_model, pdrop):
        super().__init__()
        self.c_fc = nn.Linear(d_model, 4 * d_model)
        self.c_proj = nn.Linear(4 * d_model, d_model)
        self.dropout = nn.Dropout(pdrop)

    def forward(self, x):
        return self.dropout(self.c_proj(gelu_new(self.c_fc(x))))


class GPT2Block(nn.Module):
    def __init__(self, d_model, n_head, pdrop, eps):
        super().__init__()
        self.ln_1 = nn.LayerNorm(d_model, eps=eps)
        self.attn = GPT2Attention(d_model, n_head, pdrop)
        self.ln_2 = nn.LayerNorm(d_model, eps=eps)
        self.mlp = GPT2MLP(d_model, pdrop)

    def forward(self, x, causal):
        x = x + self.attn(self.ln_1(x), causal)
        return x + self.mlp(self.ln_2(x))


class GPT2Model(nn.Module):
    def __init__(self, vocab, n_positions, d_model, n_layer, n_head, pdrop, eps):
        super().__init__()
        self.wte = nn.Embedding(vocab, d_model)
        self.wpe = nn.Embedding(n_positions, d_model)
        self.drop = nn.Dropout(pdrop)
        self.h = nn.ModuleList(GPT2Block(d_model, n_head, pdrop, eps) for _ in range(n_layer))
        self.ln_f = nn.LayerNorm(d_model, eps=eps)

    def forward(self, input_ids):
        t = input_ids.shape[1]
        pos = torch.arange(t, device=input_ids.device)
        x = self.drop(self.wte(input_ids) + self.wpe(pos))
        causal = _causal(t, input_ids.device)
        for block in self.h:
            x = block(x, causal)
        return self.ln_f(x)


class GPT2LMHead(nn.Module):
    """GPT-2 language model (GPT2LMHeadModel layout): pre-LN decoder, learned positions, LM head
    tied to the token embedding, dropout 0.1 everywhere, LayerNorm eps 1e-5, GELU tanh."""

    def __init__(self, n_layer, vocab=50257, n_positions=1024, d_model=768, n_head=12,
                 pdrop=0.1, eps=1e-5):
        super().__init__()
        self.transformer = GPT2Model(vocab, n_positions, d_model, n_layer, n_head, pdrop, eps)
        self.lm_head = nn.Linear(d_model, vocab, bias=False)
        _init_normal(self)
        self.lm_head.weight = self.transformer.wte.weight  # tied

    def forward(self, input_ids):
        return self.lm_head(self.transformer(input_ids))


class BertEmbeddings(nn.Module):
    def __init__(self, vocab, max_pos, type_vocab, d, eps, pdrop):
        super().__init__()
        self.word_embeddings = nn.Embedding(vocab, d)
        self.position_embeddings = nn.Embedding(max_pos, d)
        self.token_type_embeddings = nn.Embedding(type_vocab, d)
        self.LayerNorm = nn.LayerNorm(d, eps=eps)
        self.dropout = nn.Dropout(pdrop)

    def forward(self, input_ids):
        pos = torch.arange(input_ids.shape[1], device=input_ids.device)
        token_type = torch.zeros_like(input_ids)  # single-segment input
        x = (self.word_embeddings(input_ids) + self.position_embeddings(pos)
             + self.token_type_embeddings(token_type))
        return self.dropout(self.LayerNorm(x))


class BertSelfAttention(nn.Module):
    def __init__(self, d, n_head, pdrop):
        super().__init__()
        self.d, self.n_head, self.head_dim = d, n_head, d // n_head
        self.query = nn.Linear(d, d)
        self.key = nn.Linear(d, d)
        self.value = nn.Linear(d, d)
        self.dropout = nn.Dropout(pdrop)

    def forward(self, x, mask=None):
        b, t = x.shape[0], x.shape[1]
        q, k, v = (lin(x).view(b, t, self.n_head, self.head_dim).transpose(1, 2)
                   for lin in (self.query, self.key, self.value))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.head_dim)
        if mask is not None:  # Hugging Face's extended attention mask, [b, 1, 1, t]
            scores = scores + mask
        probs = self.dropout(torch.softmax(scores, dim=-1))
        return torch.matmul(probs, v).transpose(1, 2).reshape(b, t, self.d)


class BertResidualOutput(nn.Module):
    """dense -> dropout -> LayerNorm(. + residual): BertSelfOutput and BertOutput."""

    def __init__(self, d_in, d, eps, pdrop):
        super().__init__()
        self.dense = nn.Linear(d_in, d)
        self.LayerNorm = nn.LayerNorm(d, eps=eps)
        self.dropout = nn.Dropout(pdrop)

    def forward(self, h, residual):
        return self.LayerNorm(self.dropout(self.dense(h)) + residual)


class BertAttention(nn.Module):
    def __init__(self, d, n_head, eps, pdrop):
        super().__init__()
        self.self = BertSelfAttention(d, n_head, pdrop)
        self.output = BertResidualOutput(d, d, eps, pdrop)

    def forward(self, x, mask=None):
        h = self.self(x) if mask is None else self.self(x, mask)
        return self.output(h, x)


class BertIntermediate(nn.Module):
    def __init__(self, d, d_ff):
        super().__init__()
        self.dense = nn.Linear(d, d_ff)

    def forward(self, x):
        return F.gelu(self.dense(x))  # exact (erf) GELU, as bert-base-uncased's "gelu"


class BertLayer(nn.Module):
    def __init__(self, d, n_head, d_ff, eps, pdrop):
        super().__init__()
        self.attention = BertAttention(d, n_head, eps, pdrop)
        self.intermediate = BertIntermediate(d, d_ff)
        self.output = BertResidualOutput(d_ff, d, eps, pdrop)

    def forward(self, x, mask=None):
        a = self.attention(x) if mask is None else self.attention(x, mask)
        return self.output(self.intermediate(a), a)


class BertEncoder(nn.Module):
    def __init__(self, n_layer, *args):
        super().__init__()
        self.layer = nn.ModuleList(BertLayer(*args) for _ in range(n_layer))

    def forward(self, x, mask=None):
        for layer in self.layer:
            x = layer(x) if mask is None else layer(x, mask)
        return x


class BertPooler(nn.Module):
    """dense + tanh on the first token ([CLS]): BertModel's pooler."""

    def __init__(self, d):
        super().__init__()
        self.dense = nn.Linear(d, d)
        self.activation = nn.Tanh()

    def forward(self, x):
        return self.activation(self.dense(x[:, 0]))


def bert_extended_attention_mask(input_ids, dtype=torch.float32):
    """What Hugging Face's BertModel adds to the attention scores when called without an
    attention_mask: mask = ones([b, t]); (1.0 - mask[:, None, None, :]) * finfo.min -- all zeros,
    but computed and added in every layer."""
    mask = torch.ones(input_ids.shape[0], input_ids.shape[1], dtype=dtype)
    return (1.0 - mask[:, None, None, :]) * torch.finfo(dtype).min


class BertModel(nn.Module):
    """BERT encoder, by default without the pooler (BertForMaskedLM builds it with
    add_pooling_layer=False).  Options (off by default; the zoo's bert_base uses neither):
    add_pooling_layer=True registers `pooler` (BertPooler; forward still returns the sequence
    output, callers apply self.pooler); attention_mask=True adds Hugging Face's all-zero extended
    attention mask to the scores of every layer, as BertModel does when given no mask or an
    all-ones one."""

    def __init__(self, vocab, max_pos, type_vocab, d, n_layer, n_head, d_ff, eps, pdrop,
                 add_pooling_layer=False, attention_mask=False):
        super().__init__()
        self.embeddings = BertEmbeddings(vocab, max_pos, type_vocab, d, eps, pdrop)
        self.encoder = BertEncoder(n_layer, d, n_head, d_ff, eps, pdrop)
        if add_pooling_layer:
            self.pooler = BertPooler(d)
        self.attention_mask = attention_mask

    def forward(self, input_ids):
        x = self.embeddings(input_ids)
        if not self.attention_mask:
            return self.encoder(x)
        return self.encoder(x, bert_extended_attention_mask(input_ids, x.dtype))


class BertPredictionHeadTransform(nn.Module):
    def __init__(self, d, eps):
        super().__init__()
        self.dense = nn.Linear(d, d)
        self.LayerNorm = nn.LayerNorm(d, eps=eps)

    def forward(self, x):
        return self.LayerNorm(F.gelu(self.dense(x)))


class BertLMPredictionHead(nn.Module):
    def __init__(self, d, vocab, eps):
        super().__init__()
        self.transform = BertPredictionHeadTransform(d, eps)
        self.decoder = nn.Linear(d, vocab)  # weight tied to the word embeddings
        self.bias = nn.Parameter(torch.zeros(vocab))
        self.decoder.bias = self.bias  # one output bias, registered under both names

    def forward(self, x):
        return self.decoder(self.transform(x))


class BertOnlyMLMHead(nn.Module):
    def __init__(self, d, vocab, eps):
        super().__init__()
        self.predictions = BertLMPredictionHead(d, vocab, eps)

    def forward(self, x):
        return self.predictions(x)


class BertForMaskedLM(nn.Module):
    """bert-base-uncased as a masked LM: post-LN encoder, learned absolute positions (512),
    token-type embeddings (2), LayerNorm eps 1e-12, exact GELU, dropout 0.1, MLM head with a
    dense+GELU+LayerNorm transform and a decoder tied to the word embeddings plus its own bias."""

    def __init__(self, vocab=30522, max_pos=512, type_vocab=2, d=768, n_layer=12, n_head=12,
                 d_ff=3072, eps=1e-12, pdrop=0.1):
        super().__init__()
        self.bert = BertModel(vocab, max_pos, type_vocab, d, n_layer, n_head, d_ff, eps, pdrop)
        self.cls = BertOnlyMLMHead(d, vocab, eps)
        _init_normal(self)
        self.cls.predictions.decoder.weight = self.bert.embeddings.word_embeddings.weight

    def forward(self, input_ids):
        return self.cls(self.bert(input_ids))


class T5LayerNorm(nn.Module):
    """T5's RMS-style layer norm: scale only, no mean subtraction, no bias."""

    def __init__(self, d, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d))
        self.eps = eps

    def forward(self, x):
        variance = x.pow(2).mean(-1, keepdim=True)
        return self.weight * (x * torch.rsqrt(variance + self.eps))


def t5_relative_bucket(rel, bidirectional, num_buckets=32, max_distance=128):
    """Map relative positions (key - query) to T5's buckets: half exact, half log-spaced up to
    max_distance; the encoder distinguishes the sign (bidirectional), the decoder only looks back."""
    offset = 0
    if bidirectional:
        num_buckets //= 2
        offset = (rel > 0).to(torch.long) * num_buckets
        n = rel.abs()
    else:
        n = torch.clamp(-rel, min=0)
    max_exact = num_buckets // 2
    large = max_exact + (torch.log(n.float() / max_exact) / math.log(max_distance / max_exact)
                         * (num_buckets - max_exact)).to(torch.long)
    large = torch.clamp(large, max=num_buckets - 1)
    return offset + torch.where(n < max_exact, n, large)


class T5Attention(nn.Module):
    def __init__(self, d_model, n_head, d_kv, pdrop, relative_bias, is_decoder,
                 num_buckets=32, max_distance=128):
        super().__init__()
        self.n_head, self.d_kv, self.inner = n_head, d_kv, n_head * d_kv
        self.is_decoder, self.num_buckets, self.max_distance = is_decoder, num_buckets, max_distance
        self.q = nn.Linear(d_model, self.inner, bias=False)
        self.k = nn.Linear(d_model, self.inner, bias=False)
        self.v = nn.Linear(d_model, self.inner, bias=False)
        self.o = nn.Linear(self.inner, d_model, bias=False)
        self.dropout = nn.Dropout(pdrop)
        if relative_bias:
            self.relative_attention_bias = nn.Embedding(num_buckets, n_head)

    def compute_bias(self, q_len, k_len, device):
        """[1, heads, q_len, k_len] learned relative position bias."""
        ctx = torch.arange(q_len, device=device).unsqueeze(1)
        mem = torch.arange(k_len, device=device).unsqueeze(0)
        buckets = t5_relative_bucket(mem - ctx, not self.is_decoder, self.num_buckets,
                                     self.max_distance)
        return self.relative_attention_bias(buckets).permute(2, 0, 1).unsqueeze(0)

    def forward(self, x, kv=None, bias=None):
        b, t = x.shape[0], x.shape[1]
        kv = x if kv is None else kv
        s = kv.shape[1]
        q = self.q(x).view(b, t, self.n_head, self.d_kv).transpose(1, 2)
        k = self.k(kv).view(b, s, self.n_head, self.d_kv).transpose(1, 2)
        v = self.v(kv).view(b, s, self.n_head, self.d_kv).transpose(1, 2)
        scores = torch.matmul(q, k.transpose(-1, -2))  # T5 does not scale by 1/sqrt(d_kv)
        if bias is not None:
            scores = scores + bias
        probs = self.dropout(torch.softmax(scores, dim=-1))
        y = torch.matmul(probs, v).transpose(1, 2).reshape(b, t, self.inner)
        return self.o(y)


class T5LayerSelfAttention(nn.Module):
    def __init__(self, d_model, n_head, d_kv, pdrop, relative_bias, is_decoder):
        super().__init__()
        self.SelfAttention = T5Attention(d_model, n_head, d_kv, pdrop, relative_bias, is_decoder)
        self.layer_norm = T5LayerNorm(d_model)
        self.dropout = nn.Dropout(pdrop)

    def forward(self, x, bias):
        return x + self.dropout(self.SelfAttention(self.layer_norm(x), bias=bias))


class T5LayerCrossAttention(nn.Module):
    def __init__(self, d_model, n_head, d_kv, pdrop):
        super().__init__()
        self.EncDecAttention = T5Attention(d_model, n_head, d_kv, pdrop, False, True)
        self.layer_norm = T5LayerNorm(d_model)
        self.dropout = nn.Dropout(pdrop)

    def forward(self, x, memory):
        return x + self.dropout(self.EncDecAttention(self.layer_norm(x), kv=memory))


class T5DenseReluDense(nn.Module):
    def __init__(self, d_model, d_ff, pdrop):
        super().__init__()
        self.wi = nn.Linear(d_model, d_ff, bias=False)
        self.wo = nn.Linear(d_ff, d_model, bias=False)
        self.dropout = nn.Dropout(pdrop)

    def forward(self, x):
        return self.wo(self.dropout(F.relu(self.wi(x))))


class T5LayerFF(nn.Module):
    def __init__(self, d_model, d_ff, pdrop):
        super().__init__()
        self.DenseReluDense = T5DenseReluDense(d_model, d_ff, pdrop)
        self.layer_norm = T5LayerNorm(d_model)
        self.dropout = nn.Dropout(pdrop)

    def forward(self, x):
        return x + self.dropout(self.DenseReluDense(self.layer_norm(x)))


class T5Block(nn.Module):
    def __init__(self, d_model, n_head, d_kv, d_ff, pdrop, relative_bias, is_decoder):
        super().__init__()
        layers = [T5LayerSelfAttention(d_model, n_head, d_kv, pdrop, relative_bias, is_decoder)]
        if is_decoder:
            layers.append(T5LayerCrossAttention(d_model, n_head, d_kv, pdrop))
        layers.append(T5LayerFF(d_model, d_ff, pdrop))
        self.layer = nn.ModuleList(layers)

    def forward(self, x, bias, memory=None):
        x = self.layer[0](x, bias)
        if memory is not None:
            x = self.layer[1](x, memory)
        return self.layer[-1](x)


class T5Stack(nn.Module):
    def __init__(self, n_layer, d_model, n_head, d_kv, d_ff, pdrop, is_decoder):
        super().__init__()
        self.is_decoder = is_decoder
        self.block = nn.ModuleList(
            T5Block(d_model, n_head, d_kv, d_ff, pdrop, i == 0, is_decoder) for i in range(n_layer))
        self.final_layer_norm = T5LayerNorm(d_model)
        self.dropout = nn.Dropout(pdrop)

    def forward(self, x, memory=None):
        t = x.shape[1]
        # Only the first block owns a relative_attention_bias; its bias is shared by all blocks.
        bias = self.block[0].layer[0].SelfAttention.compute_bias(t, t, x.device)
        if self.is_decoder:
            causal = _causal(t, x.device)
            zero = torch.tensor(0.0, dtype=x.dtype)
            masked = torch.tensor(torch.finfo(x.dtype).min, dtype=x.dtype)
            bias = bias + torch.where(causal, zero, masked)
        x = self.dropout(x)
        for block in self.block:
            x = block(x, bias, memory)
        return self.dropout(self.final_layer_norm(x))


class T5ForConditionalGeneration(nn.Module):
    """t5-small: encoder-decoder, 6+6 blocks, d_model 512, d_ff 2048 (ReLU), 8 heads of 64,
    relative attention bias with 32 buckets (max distance 128) in the first block of each stack,
    RMS-style T5LayerNorm (eps 1e-6), no biases anywhere, dropout 0.1, shared embedding used by
    encoder, decoder and (tied, scaled by d_model**-0.5) the LM head."""

    def __init__(self, vocab=32128, d_model=512, d_kv=64, d_ff=2048, n_layer=6, n_head=8,
                 pdrop=0.1):
        super().__init__()
        self.d_model = d_model
        self.shared = nn.Embedding(vocab, d_model)
        self.encoder = T5Stack(n_layer, d_model, n_head, d_kv, d_ff, pdrop, False)
        self.decoder = T5Stack(n_layer, d_model, n_head, d_kv, d_ff, pdrop, True)
        self.lm_head = nn.Linear(d_model, vocab, bias=False)
        _init_normal(self, std=0.05)
        nn.init.normal_(self.shared.weight, 0.0, 1.0)
        self.lm_head.weight = self.shared.weight  # tied

    def forward(self, input_ids, decoder_input_ids):
        memory = self.encoder(self.shared(input_ids))
        y = self.decoder(self.shared(decoder_input_ids), memory)
        return self.lm_head(y * (self.d_model ** -0.5))


# --------------------------------------------------------------------------------------------
# The zoo
# --------------------------------------------------------------------------------------------

# Published parameter counts of the mirrored checkpoints (sum of p.numel() over the unique
# parameters of the Hugging Face model, i.e. model.num_parameters(), tied weights counted once):
#   distilgpt2         GPT2LMHeadModel       81,912,576  (model card: "82M parameters")
#   gpt2               GPT2LMHeadModel      124,439,808  (model card: "124M parameters")
#   bert-base-uncased  BertForMaskedLM      109,514,298  (BertModel with pooler: 109,482,240;
#                                                          model card: "110M parameters")
#   t5-small           T5ForConditionalGeneration 60,506,624 (model card / T5 paper: "60M")
PUBLISHED_PARAMS = {
    "distilgpt2": 81912576,
    "gpt2": 124439808,
    "bert_base": 109514298,
    "t5_small": 60506624,
}

TORCHVISION = [
    "resnet18", "resnet50", "resnet101", "wide_resnet50_2", "resnext50_32x4d", "vgg11_bn", "vgg16",
    "alexnet", "mobilenet_v2", "mobilenet_v3_small", "mobilenet_v3_large", "mnasnet1_0",
    "efficientnet_b0", "regnet_x_400mf", "regnet_y_400mf", "convnext_tiny", "densenet121",
    "inception_v3", "googlenet", "shufflenet_v2_x1_0", "squeezenet1_0", "vit_b_16", "swin_t",
]


class Spec:
    """How to build one zoo model and feed it."""

    def __init__(self, name, build, source, inputs, outputs, checks, mirrors=None, notes=None,
                 max_positions=None):
        self.name, self.build, self.source, self.mirrors = name, build, source, mirrors
        # learned position embeddings: the longest sequence the model reads (colloc checks
        # --seq against it); None for models without a position table
        self.max_positions = max_positions
        self.inputs = inputs  # [(name, [dim or dim name], dtype)]
        self.outputs = outputs  # ONNX output names; [(name, {axis: dim name})]
        self.checks = checks  # [(batch, {dim name: size})]
        self.notes = notes

    def make_inputs(self, batch, dims, gen=None):
        vals = []
        for _, shape, dtype in self.inputs:
            sizes = [batch if d == "batch" else dims[d] if isinstance(d, str) else d for d in shape]
            if dtype == torch.int64:
                vals.append(torch.randint(0, 1000, sizes, generator=gen))
            else:
                vals.append(torch.randn(sizes, generator=gen))
        return tuple(vals)


def _cnn(name, ctor=None, kwargs=None, size=224, outputs=("logits",), batches=(1, 3, 8)):
    ctor = ctor or name
    kwargs = dict(kwargs or {})
    args = ", ".join(["weights=None"] + [f"{k}={v!r}" for k, v in kwargs.items()])

    def build():
        return getattr(torchvision.models, ctor)(weights=None, **kwargs)

    spec = Spec(name, build, f"torchvision.models.{ctor}({args})",
                [("input", ["batch", 3, size, size], torch.float32)],
                [(o, {0: "batch"}) for o in outputs], [(b, {}) for b in batches])
    spec.num_classes = kwargs.get("num_classes", 1000)
    return spec


def _lm(name, build, source, mirrors, max_positions):
    return Spec(name, build, source, [("input_ids", ["batch", "seq"], torch.int64)],
                [("logits", {0: "batch", 1: "seq"})],
                [(1, {"seq": 16}), (2, {"seq": 33}), (4, {"seq": 64})], mirrors=mirrors,
                max_positions=max_positions)


def zoo():
    specs = []
    for name in TORCHVISION:
        if name == "inception_v3":
            # Training mode returns (logits, aux_logits); BatchNorm in the aux head sees 1x1 maps,
            # so batch 1 cannot run in training mode: checks use batches 2, 3, 8.
            specs.append(_cnn(name, kwargs={"init_weights": True}, size=299,
                              outputs=("logits", "aux_logits"), batches=(2, 3, 8)))
        elif name == "googlenet":
            # Without aux_logits=False the training-mode export fails (the aux classifiers pool
            # 14x14 maps to 4x4 with adaptive_avg_pool2d, which ONNX cannot express), and the
            # eval-mode graph would lack the 6,379,984 aux-head parameters that
            # model.parameters() counts.  Without the aux heads it exports in training mode.
            specs.append(_cnn(name, kwargs={"aux_logits": False, "init_weights": True}))
        else:
            specs.append(_cnn(name))
        if name == "mnasnet1_0":
            specs.append(_cnn("mnasnet1_0_c10", "mnasnet1_0", {"num_classes": 10}))
    specs.append(_lm("distilgpt2", lambda: GPT2LMHead(n_layer=6),
                     "tools/export_zoo.py GPT2LMHead(n_layer=6, d_model=768, n_head=12, "
                     "vocab=50257, n_positions=1024)",
                     "distilgpt2 (GPT2LMHeadModel, 81,912,576 parameters)", 1024))
    specs.append(_lm("gpt2", lambda: GPT2LMHead(n_layer=12),
                     "tools/export_zoo.py GPT2LMHead(n_layer=12, d_model=768, n_head=12, "
                     "vocab=50257, n_positions=1024)",
                     "gpt2 (GPT2LMHeadModel, 124,439,808 parameters)", 1024))
    specs.append(_lm("bert_base", BertForMaskedLM,
                     "tools/export_zoo.py BertForMaskedLM(n_layer=12, d=768, n_head=12, d_ff=3072, "
                     "vocab=30522, max_pos=512, type_vocab=2)",
                     "bert-base-uncased (BertForMaskedLM, 109,514,298 parameters)", 512))
    specs.append(Spec(
        "t5_small", T5ForConditionalGeneration,
        "tools/export_zoo.py T5ForConditionalGeneration(n_layer=6+6, d_model=512, d_ff=2048, "
        "n_head=8, d_kv=64, vocab=32128, buckets=32)",
        [("input_ids", ["batch", "seq"], torch.int64),
         ("decoder_input_ids", ["batch", "dec_seq"], torch.int64)],
        [("logits", {0: "batch", 1: "dec_seq"})],
        [(1, {"seq": 16, "dec_seq": 8}), (2, {"seq": 33, "dec_seq": 17}),
         (4, {"seq": 64, "dec_seq": 32})],
        mirrors="t5-small (T5ForConditionalGeneration, 60,506,624 parameters)"))
    return specs


ZOO = {s.name: s for s in zoo()}

# Dims of the dummy input used for tracing: deliberately unlike the check dims and unlike each
# other, so nothing is specialised to a size that happens to coincide.
TRACE_BATCH = 2
TRACE_DIMS = {"seq": 7, "dec_seq": 5}


# --------------------------------------------------------------------------------------------
# Export
# --------------------------------------------------------------------------------------------

_ELEM_SIZE = {
    onnx.TensorProto.FLOAT: 4, onnx.TensorProto.UINT8: 1, onnx.TensorProto.INT8: 1,
    onnx.TensorProto.UINT16: 2, onnx.TensorProto.INT16: 2, onnx.TensorProto.INT32: 4,
    onnx.TensorProto.INT64: 8, onnx.TensorProto.BOOL: 1, onnx.TensorProto.FLOAT16: 2,
    onnx.TensorProto.DOUBLE: 8, onnx.TensorProto.UINT32: 4, onnx.TensorProto.UINT64: 8,
    onnx.TensorProto.BFLOAT16: 2, onnx.TensorProto.COMPLEX64: 8, onnx.TensorProto.COMPLEX128: 16,
}
_DATA_FIELDS = ("raw_data", "float_data", "int32_data", "string_data", "int64_data",
                "double_data", "uint64_data")


def _numel(dims):
    n = 1
    for d in dims:
        n *= int(d)
    return n


def _externalize(tensor, location, offset):
    """Drop a TensorProto's data, point it at `location` (never written); return its byte size."""
    length = _numel(tensor.dims) * _ELEM_SIZE[tensor.data_type]
    for field in _DATA_FIELDS:
        tensor.ClearField(field)
    tensor.data_location = onnx.TensorProto.EXTERNAL
    del tensor.external_data[:]
    for key, value in (("location", location), ("offset", str(offset)), ("length", str(length))):
        entry = tensor.external_data.add()
        entry.key, entry.value = key, value
    return length


def make_graph_only(model, weights_name, keep_inline=None):
    """Strip weight data in place; returns (external tensors, external bytes).  keep_inline, a
    function of an initializer, may keep more of them inline than the 64-element rule does
    (tools/colloc_export.py's "with weights" graphs)."""
    offset, count = 0, 0
    for init in model.graph.initializer:
        if _numel(init.dims) > INLINE_INIT_MAX and not (keep_inline and keep_inline(init)):
            offset += _externalize(init, weights_name, offset)
            count += 1
    for node in model.graph.node:
        if node.op_type != "Constant":
            continue
        for attr in node.attribute:
            if attr.name == "value" and _numel(attr.t.dims) > INLINE_CONST_MAX:
                offset += _externalize(attr.t, weights_name, offset)
                count += 1
    return count, offset


@contextlib.contextmanager
def _quiet():
    """Silence Python warnings and the C++ warnings torch.onnx prints on fd 2."""
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile(mode="w+b") as tmp, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        os.dup2(tmp.fileno(), 2)
        try:
            yield
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)


def set_mode(model, mode):
    model.train(mode == "training")


@contextlib.contextmanager
def _no_value_dedup():
    """Make torch.onnx merge only initializers that share storage (tied weights), never ones
    that merely hold equal values.  In an eval export torch 1.13 also merges equal-valued
    tensors -- e.g. all the fresh BatchNorm weights (ones) -- and feeds them through Identity
    nodes, losing the parameter names."""
    orig = torch._C._jit_pass_onnx_deduplicate_initializers

    def by_storage_only(graph, params_dict, is_train):
        return orig(graph, params_dict, True)

    torch._C._jit_pass_onnx_deduplicate_initializers = by_storage_only
    try:
        yield
    finally:
        torch._C._jit_pass_onnx_deduplicate_initializers = orig


def _export_bytes(spec, model, mode, n_out):
    """torch.onnx.export into memory; n_out = number of outputs the model has in this mode
    (inception_v3 adds aux logits in training, googlenet has none in eval)."""
    set_mode(model, mode)
    args = spec.make_inputs(TRACE_BATCH, TRACE_DIMS, torch.Generator().manual_seed(1))
    output_names = [n for n, _ in spec.outputs][:n_out]
    dynamic_axes = {name: {i: d for i, d in enumerate(shape) if isinstance(d, str)}
                    for name, shape, _ in spec.inputs}
    dynamic_axes.update({name: dict(axes) for name, axes in spec.outputs if name in output_names})
    buf = io.BytesIO()
    training = (torch.onnx.TrainingMode.TRAINING if mode == "training"
                else torch.onnx.TrainingMode.PRESERVE)
    with _quiet(), _no_value_dedup():
        torch.onnx.export(model, args, buf, opset_version=OPSET, do_constant_folding=False,
                          training=training, export_params=True,
                          input_names=[n for n, _, _ in spec.inputs],
                          output_names=output_names, dynamic_axes=dynamic_axes)
    return buf.getvalue()


def _reference_forward(spec, model, mode, batch, dims, fake_matmul, seed):
    """One PyTorch forward in `mode` under the FLOP counter: (output shapes, FLOPs)."""
    set_mode(model, mode)
    gen = torch.Generator().manual_seed(seed)
    out, counter = zoo_reference.count_flops(model, *spec.make_inputs(batch, dims, gen),
                                             fake_matmul=fake_matmul)
    return [list(t.shape) for t in _as_list(out)], int(counter.total)


def _mode_reason(spec, model, err):
    msg = str(err).strip().splitlines()[0] if str(err).strip() else ""
    msg = msg.split(" Please feel free")[0]
    if len(msg) > 160:
        msg = msg[:157] + "..."
    why = f"{type(err).__name__}: {msg}" if msg else type(err).__name__
    sd = [m for m in model.modules() if type(m).__name__ == "StochasticDepth"]
    if sd:
        return (f"training-mode export fails at opset {OPSET}: the model's {len(sd)} "
                f"StochasticDepth blocks (drop probability up to {sd[-1].p:g}) draw their masks "
                f"with bernoulli_, which torch.onnx cannot export ({why})")
    note = f"; {spec.notes}" if spec.notes else ""
    return f"training-mode export fails at opset {OPSET} ({why}){note}"


def dtype_name(dtype):
    return str(dtype).replace("torch.", "")


def _as_list(out):
    if isinstance(out, torch.Tensor):
        return [out]
    return list(out)


def _check_graph(spec, model_proto, state_keys):
    """Structural checks of the exported graph; returns a list of problems (empty = fine)."""
    problems = []
    g = model_proto.graph
    init_names = {i.name for i in g.initializer}
    real_inputs = [i for i in g.input if i.name not in init_names]
    want = [(n, shape) for n, shape, _ in spec.inputs]
    got = [(i.name, [d.dim_param or d.dim_value for d in i.type.tensor_type.shape.dim])
           for i in real_inputs]
    if got != want:
        problems.append(f"inputs {got} != {want}")
    renamed = sorted(n for n in init_names if n not in state_keys)
    if renamed:
        problems.append(f"initializers not named after parameters/buffers: {renamed[:5]}")
    return problems


def _declared_output_shapes(model_proto):
    return {o.name: [d.dim_param or d.dim_value for d in o.type.tensor_type.shape.dim]
            for o in model_proto.graph.output}


def export_one(spec, out_dir, fake_matmul=True):
    t0 = time.time()
    torch.manual_seed(0)
    model = spec.build()
    # The forwards update BatchNorm running stats; the export starts from the fresh state so
    # that the small tensors kept inline hold their initial values (reproducible files).
    fresh = copy.deepcopy(model.state_dict())

    # Reference facts: real PyTorch forwards at several sizes, in the exported mode.  The first
    # one also tells how many outputs the model has in that mode.
    def forward(mode, i):
        batch, dims = spec.checks[i]
        return _reference_forward(spec, model, mode, batch, dims, fake_matmul, seed=2 + i)

    mode, reason = "training", None
    first = forward(mode, 0)
    try:
        model.load_state_dict(fresh)
        data = _export_bytes(spec, model, mode, len(first[0]))
    except Exception as err:  # noqa: BLE001 -- any exporter failure means: fall back to eval
        mode, reason = "eval", _mode_reason(spec, model, err)
        first = forward(mode, 0)
        model.load_state_dict(fresh)
        data = _export_bytes(spec, model, mode, len(first[0]))
    results = [first] + [forward(mode, i) for i in range(1, len(spec.checks))]

    proto = onnx.load_from_string(data)
    del data
    onnx.checker.check_model(proto)  # full model (weights still inline) must be valid ONNX
    problems = _check_graph(spec, proto, set(model.state_dict().keys()))
    out_names = [o.name for o in proto.graph.output]
    declared = _declared_output_shapes(proto)

    n_ext, ext_bytes = make_graph_only(proto, f"{spec.name}.weights")
    path = os.path.join(out_dir, f"{spec.name}.onnx")
    onnx.save(proto, path)
    size = os.path.getsize(path)
    onnx.load(path, load_external_data=False)  # must load without the (absent) weights
    if size >= 2 * 1024 * 1024:
        problems.append(f"{path} is {size} bytes (>= 2 MB)")

    checks = []
    for (batch, dims), (shapes, flops) in zip(spec.checks, results):
        if len(shapes) != len(out_names):
            problems.append(f"batch {batch}: PyTorch gives {len(shapes)} outputs, "
                            f"ONNX {len(out_names)}")
        env = dict(dims, batch=batch)
        rec = []
        for name, shape in zip(out_names, shapes):
            want = [env[d] if isinstance(d, str) else d for d in declared[name]]
            if want != shape:
                problems.append(f"{name} at {env}: ONNX declares {declared[name]}, torch {shape}")
            rec.append({"name": name, "shape": shape})
        checks.append({"batch": batch, "dims": dims, "outputs": rec, "flops_forward": flops})

    params = sum(p.numel() for p in model.parameters())
    graph_inits = {i.name for i in proto.graph.initializer}
    off_graph = sum(p.numel() for n, p in model.named_parameters() if n not in graph_inits)
    if spec.name in PUBLISHED_PARAMS and params != PUBLISHED_PARAMS[spec.name]:
        problems.append(f"{params} parameters, published {PUBLISHED_PARAMS[spec.name]}")
    facts = {
        "name": spec.name,
        "file": f"{spec.name}.onnx",
        "source": spec.source,
        "mirrors": spec.mirrors,
        "mode": mode,
        "mode_reason": reason,
        "opset": OPSET,
        "torch_version": torch.__version__,
        "torchvision_version": torchvision.__version__,
        "inputs": [{"name": n, "shape": list(s), "dtype": dtype_name(d)} for n, s, d in spec.inputs],
        **({"max_positions": spec.max_positions} if spec.max_positions else {}),
        "trainable_params": int(params),
        "buffers": int(sum(b.numel() for b in model.buffers())),
        "buffer_tensors": len(list(model.buffers())),
        "batchnorm_modules": sum(isinstance(m, nn.modules.batchnorm._BatchNorm)
                                 for m in model.modules()),
        "checks": checks,
    }
    with open(os.path.join(out_dir, f"{spec.name}.json"), "w") as f:
        json.dump(facts, f, indent=1)
        f.write("\n")
    if problems:
        raise RuntimeError(f"{spec.name}: " + "; ".join(problems))
    dt = time.time() - t0
    print(f"{spec.name:20s} {mode:8s} opset {OPSET}  params {params:>11,d}  "
          f"onnx {size / 1024:7.1f} KiB ({n_ext} external tensors, {ext_bytes / 2**20:7.1f} MiB "
          f"left out)  GFLOPs@{checks[0]['batch']}={checks[0]['flops_forward'] / 1e9:.3f}  "
          f"{dt:5.1f}s" + (f"  ({off_graph:,d} params not in the graph)" if off_graph else ""),
          flush=True)
    return facts


# --------------------------------------------------------------------------------------------
# README and statistics
# --------------------------------------------------------------------------------------------

README_HEAD = """# colloc model zoo (graph-only ONNX)

Generated by `tools/export_zoo.py` -- do not edit by hand; regenerate with

    /usr/bin/python3 tools/export_zoo.py            # everything, about 4-6 minutes on 2 cores
    /usr/bin/python3 tools/export_zoo.py --only gpt2,resnet50

(Debian's `python3-torch` 1.13, `python3-torchvision` 0.14 and `python3-onnx` 1.12 in the system
interpreter; no network, no weights: every model is randomly initialised.)

Each model has two files:

- `<name>.onnx`: the graph exported by `torch.onnx.export(opset_version=14,
  do_constant_folding=False, training=TrainingMode.TRAINING)`, **without weights**. Every
  initializer with more than 64 elements and every `Constant` value with more than 4096 elements
  has its data removed and is marked `data_location = EXTERNAL` with `external_data`
  `location=<name>.weights` (a file that does not exist), `offset` and `length` (the bytes it would
  take; offsets are consecutive). `dims` and `data_type` are kept, and small tensors stay inline
  because shape arithmetic needs them. Load with `onnx.load(path, load_external_data=False)`;
  `onnx.checker` is not expected to pass on the stripped file (it does pass on the full export,
  which the script checks before stripping). Initializer names are PyTorch's parameter and buffer
  names (`layer1.0.conv1.weight`, `bn1.running_mean`, ...); BatchNorm's `num_batches_tracked`
  does not appear in the graph.
- `<name>.json`: facts measured in PyTorch for the C tests: parameter and buffer counts and, for
  several batch sizes (and sequence lengths), the actual output shapes and the forward FLOPs
  counted by `tools/zoo_reference.py` with the rules of `docs/flops.md`, in the mode of the export.

Modes: models are exported in **training** mode (BatchNormalization with `training_mode=1` and
three outputs, `Dropout` nodes with `training_mode=true`) whenever torch.onnx can do it. The others
are exported in **eval** mode (BatchNormalization with `training_mode=0`, no Dropout nodes) and
their JSON says why in `mode_reason`: the models with torchvision's `StochasticDepth` (it draws its
mask with `bernoulli_`, which has no opset-14 export). The eval export uses
`TrainingMode.PRESERVE` on a model in `eval()` rather than `TrainingMode.EVAL`, because the latter
folds BatchNorm into the preceding Conv (renaming weights to `onnx::Conv_NNN`); and torch.onnx's
initializer de-duplication is limited to tied weights, because by default an eval export merges
equal-valued initializers (the all-ones BatchNorm weights of a fresh model) into `Identity` nodes.
torchvision 0.14's `swin_t` calls `F.dropout` without `training=` (so with p=0 but "training" even
in eval mode): its eval graph keeps 24 `Dropout` nodes with ratio 0.

Licences: the torchvision architectures come from torchvision (BSD-3-Clause); only the graph is
shipped, no weights. The four transformers are our own plain-`torch.nn` code in
`tools/export_zoo.py`, written from the published architecture descriptions to mirror the named
Hugging Face checkpoints exactly in parameter count (no weights, no Hugging Face code).

## Models

| model | built from | mode | opset | trainable params | BN modules | .onnx size | licence |
| --- | --- | --- | --- | ---: | ---: | ---: | --- |
"""

README_TAIL = """
## Notes

- Inputs: CNNs take `input` `[batch, 3, 224, 224]` float32 (`inception_v3`: 299x299); the
  language models take `input_ids` `[batch, seq]` int64, and `t5_small` also `decoder_input_ids`
  `[batch, dec_seq]`. Output `logits` (`[batch, classes]`, `[batch, seq, vocab]` or
  `[batch, dec_seq, vocab]`). The dynamic axes are named exactly `batch`, `seq`, `dec_seq`.
- In training mode `inception_v3` has a second output `aux_logits`. Its checks use batches 2, 3
  and 8: its aux head applies BatchNorm to 1x1 maps, which PyTorch refuses at batch 1 in training.
- `googlenet` is built with `aux_logits=False`: with its aux classifiers the training-mode export
  fails (they pool 14x14 maps to 4x4 with `adaptive_avg_pool2d`, which ONNX cannot express) and an
  eval-mode graph would not contain the 6,379,984 aux-head parameters that `model.parameters()`
  counts. Without them it exports in training mode with 6,624,904 parameters.
- `mnasnet1_0_c10` is `mnasnet1_0(num_classes=10)` (matches a measurement set).
- Both `wide_resnet50_2` and `resnext50_32x4d` are included.
- Training-mode graphs keep a `Dropout` node (ratio input, `training_mode` input `true`) for every
  dropout the model applies, also those with p=0 (`vit_b_16`'s encoder dropouts): PyTorch skips
  those at run time, so the FLOP counter of `tools/zoo_reference.py` counts them 0 while a `Dropout`
  node counts 1 per element (far below 1% of any model).
- FLOPs: the facts' `flops_forward` follow `docs/flops.md` on the ATen ops PyTorch runs. Where ONNX
  decomposes an op the C count on the graph is a little higher (SiLU = Sigmoid + Mul, GELU, and
  LayerNorm before opset 17): +0.77% for `efficientnet_b0`, +0.45% for `convnext_tiny`, about
  +0.1% for the transformers, exact (to the 1 FLOP per BatchNorm of `num_batches_tracked += 1`)
  for the plain CNNs.

## Training-memory reference

`data/reference/memory_cpu.json` holds, for every model exported in training mode, what PyTorch
actually keeps for one training step at batch 8 (transformers: seq 128, `t5_small` also dec_seq
128): bytes autograd saves for backward (forward alone, and forward + loss), parameter, gradient
and optimizer-state bytes for SGD, SGD with momentum, Adam, AdamW, RMSprop and Adagrad. On CPU
`F.dropout` saves a float32 noise tensor where CUDA's fused dropout saves a bool mask, so it also
gives the saved bytes with 1-byte masks (`saved_bytes_forward_bool_masks`). Its fields are
described at the top of `tools/reference_memory.py`; regenerate with

    /usr/bin/python3 tools/reference_memory.py      # about 1 minute on 2 cores

## The transformers

All four are written in plain `torch.nn` in `tools/export_zoo.py`. Module and parameter names
follow the Hugging Face checkpoints (`transformer.h.0.attn.c_attn.weight`,
`bert.encoder.layer.0.attention.self.query.weight`, `encoder.block.0.layer.0.SelfAttention.q.weight`,
...), but every projection is an `nn.Linear` (weight `[out, in]`; GPT-2's checkpoint stores its
Conv1D weights transposed, `[in, out]`). Masks and positions are computed from the input shape
(`Range`), there are no mask buffers. The parameter counts are checked by the script against the
published ones (Hugging Face `model.num_parameters()`, tied weights counted once).

| model | mirrors | layout | params (ours = published) |
| --- | --- | --- | ---: |
| `distilgpt2` | `distilgpt2`, GPT2LMHeadModel | 6 pre-LN decoder layers, d=768, 12 heads, MLP 3072, vocab 50257, n_positions 1024, learned positions, LayerNorm eps 1e-5, GELU tanh approximation (`gelu_new`), dropout 0.1, LM head tied to `wte` | 81,912,576 |
| `gpt2` | `gpt2`, GPT2LMHeadModel | as above with 12 layers | 124,439,808 |
| `bert_base` | `bert-base-uncased`, BertForMaskedLM | word (30522), position (512) and token-type (2) embeddings + LayerNorm; 12 post-LN layers, d=768, 12 heads, FFN 3072, exact (erf) GELU, LayerNorm eps 1e-12, dropout 0.1; no pooler; MLM head = dense 768x768 + GELU + LayerNorm, decoder tied to the word embeddings + its own 30522 bias. `token_type_ids` are all 0 (computed inside) | 109,514,298 |
| `t5_small` | `t5-small`, T5ForConditionalGeneration | 6 encoder + 6 decoder blocks, d_model 512, d_ff 2048 (ReLU), 8 heads x d_kv 64, no biases, relative attention bias (32 buckets, max distance 128; bidirectional in the encoder, causal in the decoder) owned by block 0 of each stack, RMS-style T5LayerNorm (eps 1e-6), unscaled attention, dropout 0.1, shared 32128x512 embedding, LM head tied and scaled by d_model^-0.5 | 60,506,624 |
"""


def _licence(facts):
    if facts["mirrors"]:
        return "our code (architecture of the mirrored checkpoint; no weights)"
    return "torchvision, BSD-3-Clause (graph only)"


def write_readme(out_dir):
    rows = []
    order = list(ZOO)
    facts_files = sorted(f for f in os.listdir(out_dir) if f.endswith(".json"))
    all_facts = []
    for fname in facts_files:
        with open(os.path.join(out_dir, fname)) as f:
            all_facts.append(json.load(f))
    all_facts.sort(key=lambda x: order.index(x["name"]) if x["name"] in order else len(order))
    for x in all_facts:
        size = os.path.getsize(os.path.join(out_dir, x["file"]))
        if x["mode"] == "training":
            mode = "training"
        elif "StochasticDepth" in (x["mode_reason"] or ""):
            mode = "eval: StochasticDepth has no export"
        else:
            mode = "eval: see below"
        built = f"`{x['source']}`" if not x["mirrors"] else f"our nn code, mirrors {x['mirrors']}"
        rows.append(f"| `{x['name']}` | {built} | {mode} | {x['opset']} | "
                    f"{x['trainable_params']:,} | {x['batchnorm_modules']} | "
                    f"{size / 1024:.0f} KiB | {_licence(x)} |")
    eval_notes = [f"- `{x['name']}`: {x['mode_reason']}" for x in all_facts if x["mode"] != "training"]
    total = sum(os.path.getsize(os.path.join(out_dir, x["file"])) for x in all_facts)
    text = README_HEAD + "\n".join(rows) + "\n"
    text += f"\n{len(all_facts)} models, {total / 2**20:.1f} MiB of ONNX in all.\n"
    if eval_notes:
        text += "\nExported in eval mode:\n\n" + "\n".join(eval_notes) + "\n"
    text += README_TAIL
    with open(os.path.join(out_dir, "README.md"), "w") as f:
        f.write(text)


def print_stats(out_dir):
    """Census of the exported graphs for the C side: op types, Constant nodes, inline tensors."""
    ops, attrs = Counter(), {}
    const_graphs, inline = {}, {}
    for fname in sorted(os.listdir(out_dir)):
        if not fname.endswith(".onnx"):
            continue
        m = onnx.load(os.path.join(out_dir, fname), load_external_data=False)
        name = fname[:-5]
        n_const = n_ext = 0
        for node in m.graph.node:
            ops[node.op_type] += 1
            attrs.setdefault(node.op_type, set()).update(a.name for a in node.attribute)
            if node.op_type == "Constant":
                n_const += 1
                n_ext += any(a.t.data_location == onnx.TensorProto.EXTERNAL
                             for a in node.attribute)
        if n_const:
            const_graphs[name] = f"{n_const} ({n_ext} external)" if n_ext else n_const
        inline[name] = [(i.name, list(i.dims), onnx.TensorProto.DataType.Name(i.data_type))
                        for i in m.graph.initializer
                        if i.data_location != onnx.TensorProto.EXTERNAL]
    print("op_type counts over the zoo:")
    for op, n in ops.most_common():
        print(f"  {op:22s} {n:6d}   attributes: {sorted(attrs[op])}")
    print("graphs with Constant nodes:", const_graphs)
    print("initializers kept inline (<= 64 elements):")
    for name, lst in inline.items():
        if lst:
            shown = ", ".join(f"{n}{d}:{t}" for n, d, t in lst[:6])
            more = f" ... (+{len(lst) - 6})" if len(lst) > 6 else ""
            print(f"  {name}: {len(lst)}: {shown}{more}")


def main():
    ap = argparse.ArgumentParser(description="Export colloc's graph-only ONNX model zoo.")
    ap.add_argument("--out", default=DEFAULT_OUT, help="output folder (default data/zoo)")
    ap.add_argument("--only", help="comma-separated model names")
    ap.add_argument("--list", action="store_true", help="list the zoo and exit")
    ap.add_argument("--stats", action="store_true", help="print an op census of --out and exit")
    ap.add_argument("--real-matmul", action="store_true",
                    help="compute matrix products in the reference forwards (slow with netlib BLAS)")
    a = ap.parse_args()
    if a.list:
        for s in ZOO.values():
            print(f"{s.name:20s} {s.source}")
        return 0
    if a.stats:
        print_stats(a.out)
        return 0
    names = list(ZOO) if not a.only else [n.strip() for n in a.only.split(",") if n.strip()]
    unknown = [n for n in names if n not in ZOO]
    if unknown:
        ap.error(f"unknown model(s): {', '.join(unknown)} (see --list)")
    os.makedirs(a.out, exist_ok=True)
    torch.set_num_threads(len(os.sched_getaffinity(0)))  # torch starts with 1 thread here
    t0 = time.time()
    failed = []
    for n in names:
        try:
            export_one(ZOO[n], a.out, fake_matmul=not a.real_matmul)
        except Exception as err:  # noqa: BLE001 -- report and go on with the rest of the zoo
            failed.append(n)
            print(f"{n:20s} FAILED: {err}", flush=True)
    write_readme(a.out)
    print(f"{len(names) - len(failed)} of {len(names)} models in {time.time() - t0:.0f}s "
          f"-> {a.out}" + (f"; FAILED: {', '.join(failed)}" if failed else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
