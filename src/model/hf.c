/*
 * hf.c — a training graph built from a Hugging Face config.json, without
 * exporting anything.
 *
 * The configuration names an architecture (model_type) and its sizes. For
 * the families colloc knows, this file writes the forward graph that
 * torch.onnx.export would write for the model's eager PyTorch code
 * (transformers' modeling_gpt2.py, modeling_llama.py; peft's LoRA layers),
 * op by op, as an in-memory ONNX model, and loads it with the ONNX loader.
 * The graph is therefore the same IR an export gives: the op table's
 * training rules (what autograd saves), shape inference, the allocator
 * model and the step-time predictor apply to it unchanged, and parameter
 * names are the state_dict keys (so --freeze patterns read as they do for
 * an exported graph). Weights are declared, never stored.
 *
 * What the graph mirrors, per family:
 *  - gpt2: GPT2LMHeadModel in eager attention: learned positions, pre-LN
 *    blocks, fused c_attn (Conv1D, weight [in, out]), gelu_new written out
 *    term by term, dropout after the embeddings, on the attention
 *    probabilities and after each residual branch, LM head tied to wte.
 *  - llama (also mistral, qwen2): LlamaForCausalLM in eager attention:
 *    RMSNorm computed in float32, rotary embeddings computed once per
 *    forward and shared by the layers, grouped-query attention
 *    (repeat_kv's expand + reshape copy), an additive float causal mask,
 *    softmax in float32, SwiGLU MLP, tied or untied LM head, logits cast
 *    to float32 for the loss. qwen2 adds biases to q, k, v.
 *  - opt: OPTForCausalLM (pre-LN): positions offset by 2, q scaled before
 *    the scores, additive causal mask, ReLU MLP, tied head.
 *  - gpt_neo: GPTNeoForCausalLM: GPT-2's layout with bias-free q/k/v,
 *    unscaled float32 scores; local layers as global ones.
 *  - gptj: GPTJForCausalLM in eager attention: token embedding only, one
 *    LayerNorm per layer feeding attention and MLP in parallel (x + attn +
 *    mlp), bias-free q/k/v/out, rotary embeddings on the first rotary_dim
 *    dims of each head (rotate_every_two, from float32 sin / cos tables, so
 *    the rotated q and k are float32), float32 scores, gelu_new MLP with
 *    biases, an untied LM head with a bias, logits cast to float32.
 *  - bert, roberta: BertForMaskedLM / RobertaForMaskedLM (the checkpoints'
 *    own architectures; no pooler): post-LN encoder layers, learned
 *    positions (RoBERTa's counted from pad_token_id + 1, from the input as
 *    create_position_ids_from_input_ids does) and token types, the all-zero
 *    extended mask added to the scores, exact GELU, the MLM head (dense,
 *    GELU, LayerNorm, decoder tied to the word embeddings plus its bias).
 *    The loss is cross-entropy over every position. With the class named
 *    by --architecture or the configuration's architectures,
 *    BertForSequenceClassification / RobertaForSequenceClassification
 *    instead: the same encoder, then on the first token BERT's pooler
 *    (dense, tanh), dropout and classifier, or RoBERTa's classification
 *    head (dropout, dense, tanh, dropout, out_proj); logits [b, labels],
 *    cross-entropy (MSE for one label); choose_head() has the rules.
 *  - t5: T5ForConditionalGeneration(input_ids, decoder_input_ids): encoder
 *    and decoder stacks, d_kv per head, the relative position bias
 *    computed in each stack's first block (bucketed, an embedding lookup)
 *    and reused by the others, cross-attention on the encoder's output,
 *    T5LayerNorm, ReLU / GELU or gated (v1.1: gated-gelu) feed-forward
 *    with its inner dropout, the LM head tied (scaled by d_model^-0.5) or
 *    not. Cross-entropy against the labels, no shift.
 *
 * Each family is a parser, a table of its blocks' options (struct
 * layer_spec: attention, feed-forward and norm kinds, module names) and
 * its embedding stem and head; the blocks (attention(), mlp(), norm(),
 * the embedding helpers) are shared.
 *
 * --attention sdpa|flash replaces the eager score/softmax/matmul ops with
 * one ONNX Attention node (the op table's fused attention rule: q, k, v,
 * output and log-sum-exp saved); flash reads grouped k/v unrepeated.
 *
 * Gradient checkpointing: each decoder layer's node range is recorded
 * (the region torch.utils.checkpoint wraps when gradient_checkpointing_enable()
 * is on), and the estimator replays it as recomputed (estimate_int.h).
 *
 * Not modelled here: sliding-window masks (memory as full causal
 * attention); integer index tensors the embeddings save (RoBERTa's
 * position ids, T5's buckets: shape arithmetic to the estimator); T5's
 * float16 clamp of the hidden states. colloc_model_open() refuses what it
 * cannot build (sdpa/flash for T5, flash for BERT, opt-350m's layout)
 * rather than guess.
 */
#include "model/model_int.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "colloc/onnx.h"
#include "colloc/zoo.h"
#include "common/files.h"
#include "model/graph_int.h"
#include "onnx.pb-c.h"

/* A config.json is a few kilobytes; a tokenizer or weights file is not. */
#define HF_CONFIG_MAX_BYTES (1u << 20)
/* Bounds on the sizes a configuration may declare: far above any model
 * trained today, low enough that no shape product overflows. */
#define HF_MAX_LAYERS 1024
#define HF_MAX_HIDDEN (1 << 17)
#define HF_MAX_VOCAB (1 << 24)
#define HF_MAX_POSITIONS (1 << 24)
#define HF_MAX_HEADS 4096
#define HF_MAX_LORA_RANK 65536

/* --- the configuration ---------------------------------------------------- */

enum family { FAM_GPT2 = 0, FAM_LLAMA, FAM_OPT, FAM_GPT_NEO, FAM_BERT, FAM_T5, FAM_GPTJ };

struct hf_cfg {
	int family;
	const char *model_type;
	int64_t vocab, hidden, layers, heads, kv_heads, inter, positions;
	int64_t head_dim; /* hidden / heads, or T5's d_kv */
	double eps, resid_pdrop, embd_pdrop, attn_pdrop;
	bool tied, qkv_bias;
	double rope_theta;
	/* bert, roberta: token types; roberta's padding index (its positions
	 * start after it; 0 for bert, whose positions start at 0) */
	int64_t type_vocab, pad_offset;
	/* t5: decoder layers, relative-position buckets, their reach, the
	 * feed-forward's activation (enum act_kind) and gating */
	int64_t dec_layers, buckets, max_distance;
	int act;
	bool gated;
	/* gptj: the rotated dims of each head */
	int64_t rotary_dim;
	/* the head (enum head_kind); a classification head's labels, its
	 * dropout, whether it regresses (one label: MSE) */
	int head;
	int64_t labels;
	double cls_pdrop;
	bool regression;
	/* the configuration's first architecture when it is not a class
	 * built (the family's default is built instead), for a note */
	char arch_unbuilt[80];
};

/* What sits on the encoder (bert, roberta): the family's language-model
 * head (the checkpoints' own class), or a sequence classifier. */
enum head_kind { HEAD_LM = 0, HEAD_SEQ_CLS };

/* Feed-forward activations. */
enum act_kind {
	ACT_GELU_NEW = 0, /* NewGELUActivation, tanh approximation */
	ACT_RELU,
	ACT_SILU, /* x * sigmoid(x) */
	ACT_GELU, /* exact (erf) GELU: F.gelu */
};

/* An integer field: absent -> def (or an error when def < 0). */
static int cfg_int(const cJSON *root, const char *key, int64_t def, int64_t lo,
		   int64_t hi, int64_t *out, const char *file, struct colloc_diag *diag)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, key);

	if (!v || cJSON_IsNull(v)) {
		if (def < 0)
			return colloc_diag_set(diag, COLLOC_EFORMAT,
					       "%s: \"%s\" is missing", file, key);
		*out = def;
		return 0;
	}
	if (!cJSON_IsNumber(v) || v->valuedouble != floor(v->valuedouble) ||
	    v->valuedouble < (double)lo || v->valuedouble > (double)hi)
		return colloc_diag_set(diag, COLLOC_EFORMAT,
				       "%s: \"%s\" must be an integer from %lld to %lld",
				       file, key, (long long)lo, (long long)hi);
	*out = (int64_t)v->valuedouble;
	return 0;
}

static int cfg_num(const cJSON *root, const char *key, double def, double lo, double hi,
		   double *out, const char *file, struct colloc_diag *diag)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, key);

	if (!v || cJSON_IsNull(v)) {
		*out = def;
		return 0;
	}
	if (!cJSON_IsNumber(v) || !(v->valuedouble >= lo && v->valuedouble <= hi))
		return colloc_diag_set(diag, COLLOC_EFORMAT,
				       "%s: \"%s\" must be a number from %g to %g", file,
				       key, lo, hi);
	*out = v->valuedouble;
	return 0;
}

static int cfg_bool(const cJSON *root, const char *key, bool def, bool *out,
		    const char *file, struct colloc_diag *diag)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, key);

	if (!v || cJSON_IsNull(v)) {
		*out = def;
		return 0;
	}
	if (!cJSON_IsBool(v))
		return colloc_diag_set(diag, COLLOC_EFORMAT,
				       "%s: \"%s\" must be true or false", file, key);
	*out = cJSON_IsTrue(v);
	return 0;
}

/* "architectures": ["LlamaForCausalLM"] as "LlamaForCausalLM", for errors. */
static void architectures(const cJSON *root, char *buf, size_t len)
{
	const cJSON *a = cJSON_GetObjectItemCaseSensitive(root, "architectures"), *it;
	size_t pos = 0;

	buf[0] = '\0';
	cJSON_ArrayForEach(it, a)
	{
		int w;

		if (!cJSON_IsString(it))
			continue;
		w = snprintf(buf + pos, len - pos, "%s%.64s", pos ? ", " : "",
			     it->valuestring);
		if (w < 0 || (size_t)w >= len - pos)
			break;
		pos += (size_t)w;
	}
	if (!buf[0])
		snprintf(buf, len, "none given");
}

static int parse_gpt2(const cJSON *r, struct hf_cfg *c, const char *f,
		      struct colloc_diag *d)
{
	int rc;

	c->family = FAM_GPT2;
	if ((rc = cfg_int(r, "vocab_size", 50257, 1, HF_MAX_VOCAB, &c->vocab, f, d)) ||
	    (rc = cfg_int(r, "n_embd", 768, 1, HF_MAX_HIDDEN, &c->hidden, f, d)) ||
	    (rc = cfg_int(r, "n_layer", 12, 1, HF_MAX_LAYERS, &c->layers, f, d)) ||
	    (rc = cfg_int(r, "n_head", 12, 1, HF_MAX_HEADS, &c->heads, f, d)) ||
	    (rc = cfg_int(r, "n_positions", 1024, 1, HF_MAX_POSITIONS, &c->positions, f,
			  d)) ||
	    (rc = cfg_int(r, "n_inner", 4 * c->hidden, 1, 8 * (int64_t)HF_MAX_HIDDEN,
			  &c->inter, f, d)) ||
	    (rc = cfg_num(r, "layer_norm_epsilon", 1e-5, 0, 1, &c->eps, f, d)) ||
	    (rc = cfg_num(r, "resid_pdrop", 0.1, 0, 1, &c->resid_pdrop, f, d)) ||
	    (rc = cfg_num(r, "embd_pdrop", 0.1, 0, 1, &c->embd_pdrop, f, d)) ||
	    (rc = cfg_num(r, "attn_pdrop", 0.1, 0, 1, &c->attn_pdrop, f, d)) ||
	    (rc = cfg_bool(r, "tie_word_embeddings", true, &c->tied, f, d)))
		return rc;
	c->kv_heads = c->heads;
	if (!c->tied)
		return colloc_diag_set(d, COLLOC_EUNSUPPORTED,
				       "%s: gpt2 with an untied LM head is not built", f);
	return 0;
}

static int parse_llama(const cJSON *r, struct hf_cfg *c, const char *f,
		       struct colloc_diag *d)
{
	int rc;

	c->family = FAM_LLAMA;
	c->qkv_bias = strcmp(c->model_type, "qwen2") == 0;
	if ((rc = cfg_int(r, "vocab_size", -1, 1, HF_MAX_VOCAB, &c->vocab, f, d)) ||
	    (rc = cfg_int(r, "hidden_size", -1, 1, HF_MAX_HIDDEN, &c->hidden, f, d)) ||
	    (rc = cfg_int(r, "num_hidden_layers", -1, 1, HF_MAX_LAYERS, &c->layers, f,
			  d)) ||
	    (rc = cfg_int(r, "num_attention_heads", -1, 1, HF_MAX_HEADS, &c->heads, f,
			  d)) ||
	    (rc = cfg_int(r, "num_key_value_heads", c->heads, 1, HF_MAX_HEADS,
			  &c->kv_heads, f, d)) ||
	    (rc = cfg_int(r, "intermediate_size", -1, 1, 8 * (int64_t)HF_MAX_HIDDEN,
			  &c->inter, f, d)) ||
	    (rc = cfg_int(r, "max_position_embeddings", 2048, 1, HF_MAX_POSITIONS,
			  &c->positions, f, d)) ||
	    (rc = cfg_num(r, "rms_norm_eps", 1e-6, 0, 1, &c->eps, f, d)) ||
	    (rc = cfg_num(r, "attention_dropout", 0, 0, 1, &c->attn_pdrop, f, d)) ||
	    (rc = cfg_num(r, "rope_theta", 10000, 1, 1e12, &c->rope_theta, f, d)) ||
	    (rc = cfg_bool(r, "tie_word_embeddings", false, &c->tied, f, d)))
		return rc;
	if (c->heads % c->kv_heads)
		return colloc_diag_set(
			d, COLLOC_EFORMAT,
			"%s: num_attention_heads %lld is not a multiple of "
			"num_key_value_heads %lld",
			f, (long long)c->heads, (long long)c->kv_heads);
	return 0;
}

/* A string field that must be one value when present ("relu"). */
static int cfg_want(const cJSON *root, const char *key, const char *want,
		    const char *file, struct colloc_diag *diag)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, key);

	if (!v || cJSON_IsNull(v))
		return 0;
	if (!cJSON_IsString(v) || strcmp(v->valuestring, want) != 0)
		return colloc_diag_set(diag, COLLOC_EUNSUPPORTED,
				       "%s: \"%s\" other than \"%s\" is not built", file,
				       key, want);
	return 0;
}

/* OPTForCausalLM (modeling_opt.py): pre-LN decoder (do_layer_norm_before),
 * learned positions offset by 2, biased q/k/v/out projections, ReLU MLP,
 * LM head tied to embed_tokens. opt-350m's post-LN blocks and its
 * project_in/out (word_embed_proj_dim != hidden_size) are refused. */
static int parse_opt(const cJSON *r, struct hf_cfg *c, const char *f,
		     struct colloc_diag *d)
{
	int64_t proj;
	bool pre_ln;
	int rc;

	c->family = FAM_OPT;
	c->qkv_bias = true;
	if ((rc = cfg_int(r, "vocab_size", -1, 1, HF_MAX_VOCAB, &c->vocab, f, d)) ||
	    (rc = cfg_int(r, "hidden_size", -1, 1, HF_MAX_HIDDEN, &c->hidden, f, d)) ||
	    (rc = cfg_int(r, "num_hidden_layers", -1, 1, HF_MAX_LAYERS, &c->layers, f,
			  d)) ||
	    (rc = cfg_int(r, "num_attention_heads", -1, 1, HF_MAX_HEADS, &c->heads, f,
			  d)) ||
	    (rc = cfg_int(r, "ffn_dim", -1, 1, 8 * (int64_t)HF_MAX_HIDDEN, &c->inter, f,
			  d)) ||
	    (rc = cfg_int(r, "max_position_embeddings", 2048, 1, HF_MAX_POSITIONS,
			  &c->positions, f, d)) ||
	    (rc = cfg_int(r, "word_embed_proj_dim", c->hidden, 1, HF_MAX_HIDDEN, &proj, f,
			  d)) ||
	    (rc = cfg_num(r, "dropout", 0.1, 0, 1, &c->resid_pdrop, f, d)) ||
	    (rc = cfg_num(r, "attention_dropout", 0, 0, 1, &c->attn_pdrop, f, d)) ||
	    (rc = cfg_bool(r, "do_layer_norm_before", true, &pre_ln, f, d)) ||
	    (rc = cfg_bool(r, "enable_bias", true, &c->qkv_bias, f, d)) ||
	    (rc = cfg_bool(r, "tie_word_embeddings", true, &c->tied, f, d)) ||
	    (rc = cfg_want(r, "activation_function", "relu", f, d)))
		return rc;
	c->kv_heads = c->heads;
	c->eps = 1e-5;
	c->embd_pdrop = 0;
	if (!pre_ln || proj != c->hidden)
		return colloc_diag_set(d, COLLOC_EUNSUPPORTED,
				       "%s: opt with post-layer-norm blocks or a "
				       "word_embed_proj_dim other than hidden_size "
				       "(opt-350m) is not built",
				       f);
	if (!c->tied)
		return colloc_diag_set(d, COLLOC_EUNSUPPORTED,
				       "%s: opt with an untied LM head is not built", f);
	return 0;
}

/* GPTNeoForCausalLM (modeling_gpt_neo.py): GPT-2's layout with separate
 * bias-free q/k/v projections, unscaled float32 scores, gelu_new MLP.
 * Local (sliding-window) layers are built as global ones: the same
 * tensors, the window only masks more. */
static int parse_gpt_neo(const cJSON *r, struct hf_cfg *c, const char *f,
			 struct colloc_diag *d)
{
	int rc;

	c->family = FAM_GPT_NEO;
	if ((rc = cfg_int(r, "vocab_size", 50257, 1, HF_MAX_VOCAB, &c->vocab, f, d)) ||
	    (rc = cfg_int(r, "hidden_size", 2048, 1, HF_MAX_HIDDEN, &c->hidden, f, d)) ||
	    (rc = cfg_int(r, "num_layers", 24, 1, HF_MAX_LAYERS, &c->layers, f, d)) ||
	    (rc = cfg_int(r, "num_heads", 16, 1, HF_MAX_HEADS, &c->heads, f, d)) ||
	    (rc = cfg_int(r, "max_position_embeddings", 2048, 1, HF_MAX_POSITIONS,
			  &c->positions, f, d)) ||
	    (rc = cfg_int(r, "intermediate_size", 4 * c->hidden, 1,
			  8 * (int64_t)HF_MAX_HIDDEN, &c->inter, f, d)) ||
	    (rc = cfg_num(r, "layer_norm_epsilon", 1e-5, 0, 1, &c->eps, f, d)) ||
	    (rc = cfg_num(r, "resid_dropout", 0, 0, 1, &c->resid_pdrop, f, d)) ||
	    (rc = cfg_num(r, "embed_dropout", 0, 0, 1, &c->embd_pdrop, f, d)) ||
	    (rc = cfg_num(r, "attention_dropout", 0, 0, 1, &c->attn_pdrop, f, d)) ||
	    (rc = cfg_bool(r, "tie_word_embeddings", true, &c->tied, f, d)) ||
	    (rc = cfg_want(r, "activation_function", "gelu_new", f, d)))
		return rc;
	c->kv_heads = c->heads;
	if (!c->tied)
		return colloc_diag_set(d, COLLOC_EUNSUPPORTED,
				       "%s: gpt_neo with an untied LM head is not built",
				       f);
	return 0;
}

/* GPTJForCausalLM (modeling_gptj.py): GPTJConfig's defaults fill absent
 * fields; rotary_dim null (rotary over the whole hidden size, which
 * transformers' code only runs for one head) is refused. */
static int parse_gptj(const cJSON *r, struct hf_cfg *c, const char *f,
		      struct colloc_diag *d)
{
	const cJSON *rd = cJSON_GetObjectItemCaseSensitive(r, "rotary_dim");
	int rc;

	c->family = FAM_GPTJ;
	if ((rc = cfg_int(r, "vocab_size", 50400, 1, HF_MAX_VOCAB, &c->vocab, f, d)) ||
	    (rc = cfg_int(r, "n_embd", 4096, 1, HF_MAX_HIDDEN, &c->hidden, f, d)) ||
	    (rc = cfg_int(r, "n_layer", 28, 1, HF_MAX_LAYERS, &c->layers, f, d)) ||
	    (rc = cfg_int(r, "n_head", 16, 1, HF_MAX_HEADS, &c->heads, f, d)) ||
	    (rc = cfg_int(r, "n_positions", 2048, 1, HF_MAX_POSITIONS, &c->positions, f,
			  d)) ||
	    (rc = cfg_int(r, "n_inner", 4 * c->hidden, 1, 8 * (int64_t)HF_MAX_HIDDEN,
			  &c->inter, f, d)) ||
	    (rc = cfg_int(r, "rotary_dim", 64, 1, HF_MAX_HIDDEN, &c->rotary_dim, f, d)) ||
	    (rc = cfg_num(r, "layer_norm_epsilon", 1e-5, 0, 1, &c->eps, f, d)) ||
	    (rc = cfg_num(r, "resid_pdrop", 0, 0, 1, &c->resid_pdrop, f, d)) ||
	    (rc = cfg_num(r, "embd_pdrop", 0, 0, 1, &c->embd_pdrop, f, d)) ||
	    (rc = cfg_num(r, "attn_pdrop", 0, 0, 1, &c->attn_pdrop, f, d)) ||
	    (rc = cfg_bool(r, "tie_word_embeddings", false, &c->tied, f, d)) ||
	    (rc = cfg_want(r, "activation_function", "gelu_new", f, d)))
		return rc;
	c->kv_heads = c->heads;
	if (cJSON_IsNull(rd))
		return colloc_diag_set(d, COLLOC_EUNSUPPORTED,
				       "%s: gptj without rotary_dim is not built", f);
	if (c->hidden % c->heads == 0 &&
	    (c->rotary_dim % 2 || c->rotary_dim > c->hidden / c->heads))
		return colloc_diag_set(d, COLLOC_EFORMAT,
				       "%s: \"rotary_dim\" must be even and at most the "
				       "head size %lld",
				       f, (long long)(c->hidden / c->heads));
	if (c->tied)
		return colloc_diag_set(d, COLLOC_EUNSUPPORTED,
				       "%s: gptj with a tied LM head is not built", f);
	return 0;
}

/* BertForMaskedLM / RobertaForMaskedLM (modeling_bert.py,
 * modeling_roberta.py): post-LN encoder, learned absolute positions and
 * token types, exact GELU, the masked-LM head (dense, GELU, LayerNorm, a
 * decoder tied to the word embeddings with its own bias). RoBERTa's
 * positions count from pad_token_id + 1. The configuration class's
 * defaults fill absent fields (BertConfig, RobertaConfig). */
static int parse_bert(const cJSON *r, struct hf_cfg *c, const char *f,
		      struct colloc_diag *d)
{
	bool roberta = strcmp(c->model_type, "roberta") == 0;
	int64_t pad = 0;
	int rc;

	c->family = FAM_BERT;
	c->qkv_bias = true;
	c->act = ACT_GELU;
	if ((rc = cfg_int(r, "vocab_size", roberta ? 50265 : 30522, 1, HF_MAX_VOCAB,
			  &c->vocab, f, d)) ||
	    (rc = cfg_int(r, "hidden_size", 768, 1, HF_MAX_HIDDEN, &c->hidden, f, d)) ||
	    (rc = cfg_int(r, "num_hidden_layers", 12, 1, HF_MAX_LAYERS, &c->layers, f,
			  d)) ||
	    (rc = cfg_int(r, "num_attention_heads", 12, 1, HF_MAX_HEADS, &c->heads, f,
			  d)) ||
	    (rc = cfg_int(r, "intermediate_size", 3072, 1, 8 * (int64_t)HF_MAX_HIDDEN,
			  &c->inter, f, d)) ||
	    (rc = cfg_int(r, "max_position_embeddings", 512, 1, HF_MAX_POSITIONS,
			  &c->positions, f, d)) ||
	    (rc = cfg_int(r, "type_vocab_size", 2, 0, HF_MAX_VOCAB, &c->type_vocab, f,
			  d)) ||
	    (rc = cfg_int(r, "pad_token_id", roberta ? 1 : 0, 0, HF_MAX_VOCAB, &pad, f,
			  d)) ||
	    (rc = cfg_num(r, "layer_norm_eps", 1e-12, 0, 1, &c->eps, f, d)) ||
	    (rc = cfg_num(r, "hidden_dropout_prob", 0.1, 0, 1, &c->resid_pdrop, f, d)) ||
	    (rc = cfg_num(r, "attention_probs_dropout_prob", 0.1, 0, 1, &c->attn_pdrop, f,
			  d)) ||
	    (rc = cfg_bool(r, "tie_word_embeddings", true, &c->tied, f, d)) ||
	    (rc = cfg_want(r, "hidden_act", "gelu", f, d)) ||
	    (rc = cfg_want(r, "position_embedding_type", "absolute", f, d)))
		return rc;
	c->kv_heads = c->heads;
	c->embd_pdrop = c->resid_pdrop;
	if (roberta) {
		/* create_position_ids_from_input_ids: pad + 1, pad + 2, ... */
		if (pad + 1 >= c->positions)
			return colloc_diag_set(d, COLLOC_EFORMAT,
					       "%s: max_position_embeddings %lld leaves "
					       "no position after pad_token_id %lld",
					       f, (long long)c->positions,
					       (long long)pad);
		c->pad_offset = pad + 1;
	}
	if (c->type_vocab < 1)
		return colloc_diag_set(d, COLLOC_EFORMAT,
				       "%s: \"type_vocab_size\" must be at least 1", f);
	return 0;
}

/* T5ForConditionalGeneration (modeling_t5.py): encoder-decoder, bias-free
 * projections of d_kv per head, a learned relative-position bias in the
 * first block of each stack shared by the others, T5LayerNorm (RMS, no
 * mean, no bias), ReLU or gated-GELU (t5 v1.1, flan-t5) feed-forward,
 * shared embeddings, the LM head tied (scaled by d_model^-0.5) or not. */
static int parse_t5(const cJSON *r, struct hf_cfg *c, const char *f,
		    struct colloc_diag *d)
{
	static const struct {
		const char *name;
		int act;
		bool gated;
	} ffs[] = {
		{"relu", ACT_RELU, false},	    {"gelu", ACT_GELU, false},
		{"gated-gelu", ACT_GELU_NEW, true}, {"gated-relu", ACT_RELU, true},
		{"gated-silu", ACT_SILU, true},
	};
	const cJSON *ff = cJSON_GetObjectItemCaseSensitive(r, "feed_forward_proj");
	size_t k = 0;
	int rc;

	c->family = FAM_T5;
	if ((rc = cfg_int(r, "vocab_size", 32128, 1, HF_MAX_VOCAB, &c->vocab, f, d)) ||
	    (rc = cfg_int(r, "d_model", 512, 1, HF_MAX_HIDDEN, &c->hidden, f, d)) ||
	    (rc = cfg_int(r, "d_kv", 64, 1, HF_MAX_HIDDEN, &c->head_dim, f, d)) ||
	    (rc = cfg_int(r, "d_ff", 2048, 1, 8 * (int64_t)HF_MAX_HIDDEN, &c->inter, f,
			  d)) ||
	    (rc = cfg_int(r, "num_layers", 6, 1, HF_MAX_LAYERS, &c->layers, f, d)) ||
	    (rc = cfg_int(r, "num_decoder_layers", c->layers, 1, HF_MAX_LAYERS,
			  &c->dec_layers, f, d)) ||
	    (rc = cfg_int(r, "num_heads", 8, 1, HF_MAX_HEADS, &c->heads, f, d)) ||
	    (rc = cfg_int(r, "relative_attention_num_buckets", 32, 2, 1 << 16,
			  &c->buckets, f, d)) ||
	    (rc = cfg_int(r, "relative_attention_max_distance", 128, 1, HF_MAX_POSITIONS,
			  &c->max_distance, f, d)) ||
	    (rc = cfg_num(r, "dropout_rate", 0.1, 0, 1, &c->resid_pdrop, f, d)) ||
	    (rc = cfg_num(r, "layer_norm_epsilon", 1e-6, 0, 1, &c->eps, f, d)) ||
	    (rc = cfg_bool(r, "tie_word_embeddings", true, &c->tied, f, d)))
		return rc;
	if (ff && !cJSON_IsNull(ff)) {
		if (!cJSON_IsString(ff))
			return colloc_diag_set(
				d, COLLOC_EFORMAT,
				"%s: \"feed_forward_proj\" must be a string", f);
		for (k = 0; k < sizeof(ffs) / sizeof(ffs[0]); k++)
			if (strcmp(ff->valuestring, ffs[k].name) == 0)
				break;
		if (k == sizeof(ffs) / sizeof(ffs[0]))
			return colloc_diag_set(
				d, COLLOC_EUNSUPPORTED,
				"%s: feed_forward_proj '%.32s' is not "
				"built (relu, gelu, gated-gelu, gated-relu, "
				"gated-silu are)",
				f, ff->valuestring);
	}
	c->act = ffs[k].act;
	c->gated = ffs[k].gated;
	c->kv_heads = c->heads;
	c->embd_pdrop = c->attn_pdrop = c->resid_pdrop;
	/* relative positions: no table to run past */
	c->positions = 0;
	if (c->heads * c->head_dim > 8 * (int64_t)HF_MAX_HIDDEN)
		return colloc_diag_set(d, COLLOC_EFORMAT,
				       "%s: num_heads x d_kv is larger than %lld", f,
				       8 * (long long)HF_MAX_HIDDEN);
	return 0;
}

/* Each family: its parser, the transformers class built by default (the
 * published checkpoints' architectures) and the sequence-classification
 * class built on request (NULL: none). */
static const struct {
	const char *model_type;
	int (*parse)(const cJSON *, struct hf_cfg *, const char *, struct colloc_diag *);
	const char *lm_class, *cls_class;
} families[] = {
	{"gpt2", parse_gpt2, "GPT2LMHeadModel", NULL},
	{"gpt_neo", parse_gpt_neo, "GPTNeoForCausalLM", NULL},
	{"opt", parse_opt, "OPTForCausalLM", NULL},
	{"llama", parse_llama, "LlamaForCausalLM", NULL},
	{"mistral", parse_llama, "MistralForCausalLM", NULL},
	{"qwen2", parse_llama, "Qwen2ForCausalLM", NULL},
	{"bert", parse_bert, "BertForMaskedLM", "BertForSequenceClassification"},
	{"roberta", parse_bert, "RobertaForMaskedLM", "RobertaForSequenceClassification"},
	{"t5", parse_t5, "T5ForConditionalGeneration", NULL},
	{"gptj", parse_gptj, "GPTJForCausalLM", NULL},
};

/* The default class of c's family. */
static const char *hf_lm_class(const struct hf_cfg *c)
{
	for (size_t k = 0; k < sizeof(families) / sizeof(families[0]); k++)
		if (strcmp(families[k].model_type, c->model_type) == 0)
			return families[k].lm_class;
	return "?";
}

/* The first string of the configuration's "architectures", or NULL. */
static const char *first_architecture(const cJSON *root)
{
	const cJSON *a = cJSON_GetObjectItemCaseSensitive(root, "architectures"), *it;

	cJSON_ArrayForEach(it, a)
	{
		if (cJSON_IsString(it))
			return it->valuestring;
	}
	return NULL;
}

/*
 * The head of family k: the class named by --architecture (o->architecture),
 * else the configuration's first architecture. A family builds its default
 * class and, for bert / roberta, the sequence classifier
 * (BertForSequenceClassification, RobertaForSequenceClassification in
 * modeling_bert.py / modeling_roberta.py); another class named in the file
 * is built as the default, with a note; one named by the option is refused.
 * A classifier's labels as PretrainedConfig counts them (the option, else
 * id2label's entries, else num_labels, else 2), its dropout
 * classifier_dropout or else hidden_dropout_prob, and its loss as the
 * model's forward picks it from problem_type (regression, which one label
 * implies: MSELoss; single-label: CrossEntropyLoss; multi-label, BCE, is
 * not built).
 */
static int choose_head(const cJSON *r, struct hf_cfg *c, size_t k,
		       const struct colloc_model_opts *o, const char *f,
		       struct colloc_diag *d)
{
	const char *want = o && o->architecture && o->architecture[0]
				   ? o->architecture
				   : first_architecture(r);
	const cJSON *id2label = cJSON_GetObjectItemCaseSensitive(r, "id2label"),
		    *pt = cJSON_GetObjectItemCaseSensitive(r, "problem_type");
	int rc;

	c->head = HEAD_LM;
	if (!want || strcmp(want, families[k].lm_class) == 0)
		return 0;
	if (!families[k].cls_class || strcmp(want, families[k].cls_class) != 0) {
		if (o && o->architecture && o->architecture[0])
			return colloc_diag_set(
				d, COLLOC_EUSAGE,
				"--architecture %.64s: model_type %s is built as %s%s%s",
				o->architecture, c->model_type, families[k].lm_class,
				families[k].cls_class ? " or " : "",
				families[k].cls_class ? families[k].cls_class : "");
		snprintf(c->arch_unbuilt, sizeof(c->arch_unbuilt), "%.64s", want);
		return 0;
	}
	c->head = HEAD_SEQ_CLS;
	if (cJSON_IsObject(id2label) && cJSON_GetArraySize(id2label) > 0)
		c->labels = cJSON_GetArraySize(id2label);
	else if ((rc = cfg_int(r, "num_labels", 2, 1, HF_MAX_VOCAB, &c->labels, f, d)))
		return rc;
	if (o && o->num_labels > 0)
		c->labels = o->num_labels;
	if (c->labels > HF_MAX_VOCAB)
		return colloc_diag_set(d, COLLOC_EFORMAT, "%s: more than %d labels", f,
				       HF_MAX_VOCAB);
	if ((rc = cfg_num(r, "classifier_dropout", c->resid_pdrop, 0, 1, &c->cls_pdrop, f,
			  d)))
		return rc;
	c->regression = c->labels == 1;
	if (pt && !cJSON_IsNull(pt)) {
		if (!cJSON_IsString(pt))
			return colloc_diag_set(d, COLLOC_EFORMAT,
					       "%s: \"problem_type\" must be a string",
					       f);
		if (strcmp(pt->valuestring, "regression") == 0)
			c->regression = true;
		else if (strcmp(pt->valuestring, "single_label_classification") == 0)
			c->regression = false;
		else
			return colloc_diag_set(d, COLLOC_EUNSUPPORTED,
					       "%s: problem_type '%.40s' is not built "
					       "(regression and "
					       "single_label_classification are)",
					       f, pt->valuestring);
	}
	return 0;
}

static int parse_config(const char *text, size_t len, const char *file,
			const struct colloc_model_opts *o, struct hf_cfg *c,
			struct colloc_diag *diag)
{
	const cJSON *mt;
	cJSON *root = cJSON_ParseWithLength(text, len);
	char arch[256], known[256];
	size_t pos = 0;
	int rc;

	memset(c, 0, sizeof(*c));
	if (!root || !cJSON_IsObject(root)) {
		cJSON_Delete(root);
		return colloc_diag_set(diag, COLLOC_EFORMAT,
				       "%s: not a JSON object (a Hugging Face "
				       "config.json)",
				       file);
	}
	mt = cJSON_GetObjectItemCaseSensitive(root, "model_type");
	architectures(root, arch, sizeof(arch));
	if (!cJSON_IsString(mt) || strlen(mt->valuestring) > 64) {
		rc = colloc_diag_set(diag, COLLOC_EFORMAT,
				     "%s: \"model_type\" is missing (architectures: %s)",
				     file, arch);
		goto out;
	}
	for (size_t k = 0; k < sizeof(families) / sizeof(families[0]); k++) {
		if (strcmp(mt->valuestring, families[k].model_type) != 0)
			continue;
		c->model_type = families[k].model_type;
		rc = families[k].parse(root, c, file, diag);
		if (!rc && !c->head_dim && c->hidden % c->heads)
			rc = colloc_diag_set(diag, COLLOC_EFORMAT,
					     "%s: hidden size %lld is not a multiple of "
					     "%lld heads",
					     file, (long long)c->hidden,
					     (long long)c->heads);
		if (!rc && !c->head_dim)
			c->head_dim = c->hidden / c->heads;
		if (!rc)
			rc = choose_head(root, c, k, o, file, diag);
		goto out;
	}
	known[0] = '\0';
	for (size_t k = 0; k < sizeof(families) / sizeof(families[0]); k++) {
		int w = snprintf(known + pos, sizeof(known) - pos, "%s%s", k ? ", " : "",
				 families[k].model_type);

		if (w > 0 && (size_t)w < sizeof(known) - pos)
			pos += (size_t)w;
	}
	rc = colloc_diag_set(diag, COLLOC_EUNSUPPORTED,
			     "%s: model_type '%s' (architectures: %s) is not one colloc "
			     "builds; known: %s",
			     file, mt->valuestring, arch, known);
out:
	cJSON_Delete(root);
	return rc;
}

/* --- the ONNX emitter ------------------------------------------------------ */

/* protobuf-c's structs take char * for strings it never writes through
 * when packing; the emitter's strings are const. */
static char *unconst(const char *s)
{
	char *p;

	memcpy(&p, &s, sizeof(p));
	return p;
}

struct em {
	struct colloc__arena a;
	Onnx__NodeProto **nodes;
	size_t n_nodes, cap_nodes;
	Onnx__TensorProto **inits;
	size_t n_inits, cap_inits;
	int n_tmp; /* fresh constant names */
	int failed; /* out of memory: every later call is a no-op */
	int wdt; /* ONNX dtype of weights and activations */
};

static void *em_alloc(struct em *e, size_t n)
{
	void *p = e->failed ? NULL : colloc__arena_alloc(&e->a, n ? n : 1);

	if (!p)
		e->failed = 1;
	return p;
}

static const char *em_str(struct em *e, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static const char *em_str(struct em *e, const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	char *s;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	s = e->failed ? NULL : colloc__arena_strdup(&e->a, buf);
	if (!s)
		e->failed = 1;
	return s ? s : "";
}

/* Append p to a pointer vector of the heap (freed by em_fini). */
static void em_push(struct em *e, void ***v, size_t *n, size_t *cap, void *p)
{
	if (e->failed || !p)
		return;
	if (*n == *cap) {
		size_t nc = *cap ? 2 * *cap : 256;
		void **nv = realloc(*v, nc * sizeof(**v));

		if (!nv) {
			e->failed = 1;
			return;
		}
		*v = nv;
		*cap = nc;
	}
	(*v)[(*n)++] = p;
}

enum { A_INT = 1, A_FLOAT, A_INTS };
struct attr {
	const char *name;
	int type;
	int64_t i;
	float f;
	const int64_t *ints;
	size_t n;
};

/* A node of type op named name reading in[0..n_in) and writing n_out
 * outputs called name, name_1, ...; returns the first output's name. */
static const char *em_node(struct em *e, const char *op, const char *name,
			   const char *const *in, size_t n_in, int n_out,
			   const struct attr *at, size_t n_at)
{
	static const Onnx__NodeProto ninit = ONNX__NODE_PROTO__INIT;
	static const Onnx__AttributeProto ainit = ONNX__ATTRIBUTE_PROTO__INIT;
	Onnx__NodeProto *n = em_alloc(e, sizeof(*n));

	if (!n)
		return "";
	*n = ninit;
	n->op_type = unconst(op);
	n->name = unconst(name);
	n->input = em_alloc(e, n_in * sizeof(char *));
	n->output = em_alloc(e, (size_t)n_out * sizeof(char *));
	n->attribute = em_alloc(e, n_at * sizeof(Onnx__AttributeProto *));
	if (e->failed)
		return "";
	for (size_t k = 0; k < n_in; k++)
		n->input[k] = unconst(in[k]);
	n->n_input = n_in;
	for (int k = 0; k < n_out; k++)
		n->output[k] = unconst(k ? em_str(e, "%s_%d", name, k) : name);
	n->n_output = (size_t)n_out;
	for (size_t k = 0; k < n_at; k++) {
		Onnx__AttributeProto *a = em_alloc(e, sizeof(*a));

		if (!a)
			return "";
		*a = ainit;
		a->name = unconst(at[k].name);
		a->has_type = 1;
		if (at[k].type == A_INT) {
			a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
			a->has_i = 1;
			a->i = at[k].i;
		} else if (at[k].type == A_FLOAT) {
			a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT;
			a->has_f = 1;
			a->f = at[k].f;
		} else {
			a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS;
			/* copied: callers pass compound literals */
			a->ints = em_alloc(e, at[k].n * sizeof(int64_t));
			if (!a->ints)
				return "";
			memcpy(a->ints, at[k].ints, at[k].n * sizeof(int64_t));
			a->n_ints = at[k].n;
		}
		n->attribute[k] = a;
	}
	n->n_attribute = n_at;
	em_push(e, (void ***)&e->nodes, &e->n_nodes, &e->cap_nodes, n);
	return name;
}

#define IN(...)                             \
	(const char *const[]){__VA_ARGS__}, \
		sizeof((const char *const[]){__VA_ARGS__}) / sizeof(const char *)
#define NOAT NULL, 0
#define AT(...)                             \
	(const struct attr[]){__VA_ARGS__}, \
		sizeof((const struct attr[]){__VA_ARGS__}) / sizeof(struct attr)

static Onnx__TensorProto *em_tensor(struct em *e, const char *name, int dtype,
				    const int64_t *dims, size_t rank)
{
	static const Onnx__TensorProto tinit = ONNX__TENSOR_PROTO__INIT;
	Onnx__TensorProto *t = em_alloc(e, sizeof(*t));

	if (!t)
		return NULL;
	*t = tinit;
	t->name = unconst(name);
	t->has_data_type = 1;
	t->data_type = dtype;
	t->dims = em_alloc(e, rank * sizeof(int64_t));
	if (!t->dims)
		return NULL;
	if (rank)
		memcpy(t->dims, dims, rank * sizeof(int64_t));
	t->n_dims = rank;
	em_push(e, (void ***)&e->inits, &e->n_inits, &e->cap_inits, t);
	return t;
}

/* A parameter (or buffer): dims only, its data "external" and absent, as
 * in a graph-only export. */
static const char *em_weight(struct em *e, const char *name, int dtype, int64_t d0,
			     int64_t d1)
{
	static const Onnx__StringStringEntryProto kinit =
		ONNX__STRING_STRING_ENTRY_PROTO__INIT;
	int64_t dims[2] = {d0, d1};
	Onnx__TensorProto *t = em_tensor(e, name, dtype, dims, d1 > 0 ? 2 : 1);
	Onnx__StringStringEntryProto *kv = em_alloc(e, sizeof(*kv));

	if (!t || !kv ||
	    !(t->external_data = em_alloc(e, sizeof(Onnx__StringStringEntryProto *))))
		return name;
	*kv = kinit;
	kv->key = unconst("location");
	kv->value = unconst("weights.bin");
	t->external_data[0] = kv;
	t->n_external_data = 1;
	t->has_data_location = 1;
	t->data_location = ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
	return name;
}

/* An int64 constant (shape arithmetic): named as an exporter names its
 * constants, so the loader classes it neither parameter nor buffer. */
static const char *em_ints(struct em *e, const int64_t *v, size_t n, bool scalar)
{
	const char *name = em_str(e, "/const/i%d", e->n_tmp++);
	int64_t dims[1] = {(int64_t)n};
	Onnx__TensorProto *t = em_tensor(e, name, ONNX__TENSOR_PROTO__DATA_TYPE__INT64,
					 dims, scalar ? 0 : 1);

	if (!t || !(t->int64_data = em_alloc(e, n * sizeof(int64_t))))
		return name;
	memcpy(t->int64_data, v, n * sizeof(int64_t));
	t->n_int64_data = n;
	return name;
}

#define INTS(...)                                  \
	em_ints(e, (const int64_t[]){__VA_ARGS__}, \
		sizeof((const int64_t[]){__VA_ARGS__}) / sizeof(int64_t), false)
#define INT0(v) em_ints(e, (const int64_t[]){v}, 1, true)

/* A float32 vector constant, named as an exporter names its constants. */
static const char *em_floats(struct em *e, const float *v, size_t n)
{
	const char *name = em_str(e, "/const/f%d", e->n_tmp++);
	int64_t dims[1] = {(int64_t)n};
	Onnx__TensorProto *t =
		em_tensor(e, name, ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, dims, 1);

	if (!t || !(t->float_data = em_alloc(e, n * sizeof(float))))
		return name;
	memcpy(t->float_data, v, n * sizeof(float));
	t->n_float_data = n;
	return name;
}

/* A floating scalar constant of dtype (float32, float16 or bfloat16). */
static const char *em_scalar(struct em *e, double v, int dtype)
{
	const char *name = em_str(e, "/const/f%d", e->n_tmp++);
	Onnx__TensorProto *t = em_tensor(e, name, dtype, NULL, 0);
	float f = (float)v;
	uint32_t bits;

	if (!t)
		return name;
	if (dtype == ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT) {
		if (!(t->float_data = em_alloc(e, sizeof(float))))
			return name;
		t->float_data[0] = f;
		t->n_float_data = 1;
		return name;
	}
	/* float16 / bfloat16 travel in int32_data, one value per element */
	memcpy(&bits, &f, sizeof(bits));
	if (!(t->int32_data = em_alloc(e, sizeof(int32_t))))
		return name;
	if (dtype == ONNX__TENSOR_PROTO__DATA_TYPE__BFLOAT16) {
		t->int32_data[0] = (int32_t)(bits >> 16);
	} else {
		/* float16: the scalars used here are normal numbers or the
		 * most negative finite value */
		uint32_t sign = (bits >> 16) & 0x8000u;
		int32_t ex = (int32_t)((bits >> 23) & 0xff) - 127 + 15;
		uint32_t man = (bits >> 13) & 0x3ffu;

		if (ex >= 31)
			ex = 30, man = 0x3ffu;
		if (ex <= 0)
			ex = 0, man = 0;
		t->int32_data[0] = (int32_t)(sign | ((uint32_t)ex << 10) | man);
	}
	t->n_int32_data = 1;
	return name;
}

/* --- building blocks --------------------------------------------------------- */

struct build {
	struct em e;
	const struct hf_cfg *c;
	const struct colloc_model_opts *o;
	struct colloc_model *m;
	int wdt; /* weight / activation dtype */
	int lora_rank;
	double lora_scale;
	const char *targets;
	int lora_count;
	const char *causal; /* [t, t] mask (bool for gpt2, float for llama) */
	const char *minv; /* MASK_WHERE's masked value, finfo.min */
	const char *cos, *sin; /* llama: [b, 1, t, head_dim]; gptj: [t, rd / 2] */
	const char *pos; /* gptj: positions 0..t-1 (position_ids) */
	const char *dropout_train; /* bool true: Dropout's training_mode */
	/* Decoder layer l is graph nodes [seg_first[l], seg_end[l]): the
	 * region torch.utils.checkpoint wraps (heap, c->layers each). */
	int *seg_first, *seg_end;
};

/* The nodes of layer l start here / end here (seg_* may be NULL: a build
 * without layers). */
static void layer_begin(struct build *b, int64_t l)
{
	if (b->seg_first)
		b->seg_first[l] = (int)b->e.n_nodes;
}

static void layer_end(struct build *b, int64_t l)
{
	if (b->seg_end)
		b->seg_end[l] = (int)b->e.n_nodes;
}

static const int64_t PERM_BHTD[4] = {0, 2, 1, 3};
static const int64_t PERM_LAST2[4] = {0, 1, 3, 2};
static const int64_t PERM_T[2] = {1, 0};

static const char *dropout(struct build *b, const char *x, double p, const char *name)
{
	struct em *e = &b->e;

	/* F.dropout with p = 0 returns its input: no kernel, no mask */
	if (p <= 0)
		return x;
	return em_node(e, "Dropout", name,
		       IN(x, em_scalar(e, p, ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT),
			  b->dropout_train),
		       2, NOAT);
}

/* Does the comma-separated target list name module ("q_proj", or
 * "self.query" within an attention block)? As peft matches target_modules:
 * the whole name or its last dot-separated components. */
static bool lora_target(const struct build *b, const char *module)
{
	const char *p = b->targets;
	size_t n = strlen(module);

	while (p && *p) {
		const char *c = strchr(p, ',');
		size_t k = c ? (size_t)(c - p) : strlen(p);

		if (k > 0 && k <= n && strncmp(p, module + n - k, k) == 0 &&
		    (k == n || module[n - k - 1] == '.'))
			return true;
		p = c ? c + 1 : NULL;
	}
	return false;
}

/* pre + "prefix.module" (or "prefix" alone when module is NULL) + suf */
static const char *mod_name(struct em *e, const char *pre, const char *prefix,
			    const char *module, const char *suf)
{
	return em_str(e, "%s%s%s%s%s", pre, prefix, module ? "." : "",
		      module ? module : "", suf);
}

/*
 * y = x W^T (+ bias) for nn.Linear weights [out, in] (conv1d: GPT-2's
 * Conv1D, weight [in, out], no transpose), with a LoRA adapter when the
 * module is a target: y + B(A(x)) * alpha / r (peft's lora.Linear with
 * lora_dropout 0, an identity). Adapters stay float32 when the base is in
 * half precision (peft's autocast_adapter_dtype), so x is cast up for
 * them and the sum cast back.
 */
static const char *linear(struct build *b, const char *x, const char *prefix,
			  const char *module, int64_t in, int64_t out, bool bias,
			  bool conv1d)
{
	struct em *e = &b->e;
	const char *w, *y;

	/* a module of the model itself (prefix NULL: "classifier") */
	if (!prefix) {
		prefix = module;
		module = NULL;
	}
	if (conv1d) {
		w = em_weight(e, mod_name(e, "", prefix, module, ".weight"), b->wdt, in,
			      out);
		y = em_node(e, "MatMul", mod_name(e, "/", prefix, module, "/MatMul"),
			    IN(x, w), 1, NOAT);
	} else {
		w = em_weight(e, mod_name(e, "", prefix, module, ".weight"), b->wdt, out,
			      in);
		w = em_node(e, "Transpose",
			    mod_name(e, "/", prefix, module, "/Transpose"), IN(w), 1,
			    AT({"perm", A_INTS, 0, 0, PERM_T, 2}));
		y = em_node(e, "MatMul", mod_name(e, "/", prefix, module, "/MatMul"),
			    IN(x, w), 1, NOAT);
	}
	if (bias)
		y = em_node(e, "Add", mod_name(e, "/", prefix, module, "/Add"),
			    IN(y, em_weight(e, mod_name(e, "", prefix, module, ".bias"),
					    b->wdt, out, 0)),
			    1, NOAT);
	if (!module)
		return y; /* no LoRA target: peft's defaults are in the layers */
	if (b->o->trainable == COLLOC_TRAIN_LORA && lora_target(b, module)) {
		int fdt = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
		const char *xa = x, *a, *bb, *s, *base = y;

		if (b->wdt != fdt) {
			xa = em_node(e, "Cast",
				     em_str(e, "/%s.%s/lora/Cast", prefix, module), IN(x),
				     1, AT({"to", A_INT, fdt, 0, NULL, 0}));
			base = em_node(e, "Cast",
				       em_str(e, "/%s.%s/lora/Cast_1", prefix, module),
				       IN(y), 1, AT({"to", A_INT, fdt, 0, NULL, 0}));
		}
		a = em_weight(e, em_str(e, "%s.%s.lora_A.weight", prefix, module), fdt,
			      b->lora_rank, in);
		a = em_node(e, "Transpose",
			    em_str(e, "/%s.%s/lora_A/Transpose", prefix, module), IN(a),
			    1, AT({"perm", A_INTS, 0, 0, PERM_T, 2}));
		a = em_node(e, "MatMul",
			    em_str(e, "/%s.%s/lora_A/MatMul", prefix, module), IN(xa, a),
			    1, NOAT);
		bb = em_weight(e, em_str(e, "%s.%s.lora_B.weight", prefix, module), fdt,
			       out, b->lora_rank);
		bb = em_node(e, "Transpose",
			     em_str(e, "/%s.%s/lora_B/Transpose", prefix, module), IN(bb),
			     1, AT({"perm", A_INTS, 0, 0, PERM_T, 2}));
		bb = em_node(e, "MatMul",
			     em_str(e, "/%s.%s/lora_B/MatMul", prefix, module), IN(a, bb),
			     1, NOAT);
		s = em_node(e, "Mul", em_str(e, "/%s.%s/lora/Mul", prefix, module),
			    IN(bb, em_scalar(e, b->lora_scale, fdt)), 1, NOAT);
		y = em_node(e, "Add", em_str(e, "/%s.%s/lora/Add", prefix, module),
			    IN(base, s), 1, NOAT);
		if (b->wdt != fdt)
			y = em_node(e, "Cast",
				    em_str(e, "/%s.%s/lora/Cast_2", prefix, module),
				    IN(y), 1, AT({"to", A_INT, b->wdt, 0, NULL, 0}));
		b->lora_count++;
	}
	return y;
}

static const char *layernorm(struct build *b, const char *x, const char *prefix)
{
	struct em *e = &b->e;
	int64_t d = b->c->hidden;

	return em_node(e, "LayerNormalization",
		       em_str(e, "/%s/LayerNormalization", prefix),
		       IN(x, em_weight(e, em_str(e, "%s.weight", prefix), b->wdt, d, 0),
			  em_weight(e, em_str(e, "%s.bias", prefix), b->wdt, d, 0)),
		       1,
		       AT({"axis", A_INT, -1, 0, NULL, 0},
			  {"epsilon", A_FLOAT, 0, (float)b->c->eps, NULL, 0}));
}

/* LlamaRMSNorm: float32 x * rsqrt(mean(x^2) + eps), cast back, * weight.
 * torch.onnx writes rsqrt as 1 / sqrt. T5LayerNorm (t5) differs in one
 * place: it multiplies the input as it came, not its float32 copy, by the
 * float32 rsqrt (type promotion gives float32), so with half-precision
 * weights the product saves the half input beside the copy pow saved. */
static const char *rms_norm(struct build *b, const char *x, const char *prefix, bool t5)
{
	struct em *e = &b->e;
	int fdt = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
	const char *xf = x, *v, *r, *n;

	if (b->wdt != fdt)
		xf = em_node(e, "Cast", em_str(e, "/%s/Cast", prefix), IN(x), 1,
			     AT({"to", A_INT, fdt, 0, NULL, 0}));
	v = em_node(e, "Pow", em_str(e, "/%s/Pow", prefix),
		    IN(xf, em_scalar(e, 2.0, fdt)), 1, NOAT);
	v = em_node(e, "ReduceMean", em_str(e, "/%s/ReduceMean", prefix), IN(v), 1,
		    AT({"axes", A_INTS, 0, 0, (const int64_t[]){-1}, 1},
		       {"keepdims", A_INT, 1, 0, NULL, 0}));
	v = em_node(e, "Add", em_str(e, "/%s/Add", prefix),
		    IN(v, em_scalar(e, b->c->eps, fdt)), 1, NOAT);
	r = em_node(e, "Sqrt", em_str(e, "/%s/Sqrt", prefix), IN(v), 1, NOAT);
	r = em_node(e, "Div", em_str(e, "/%s/Div", prefix), IN(em_scalar(e, 1.0, fdt), r),
		    1, NOAT);
	/* the first operand's dtype is the product's: float32 either way */
	n = em_node(e, "Mul", em_str(e, "/%s/Mul", prefix), IN(t5 ? r : xf, t5 ? x : r),
		    1, NOAT);
	if (b->wdt != fdt)
		n = em_node(e, "Cast", em_str(e, "/%s/Cast_1", prefix), IN(n), 1,
			    AT({"to", A_INT, b->wdt, 0, NULL, 0}));
	return em_node(
		e, "Mul", em_str(e, "/%s/Mul_1", prefix),
		IN(em_weight(e, em_str(e, "%s.weight", prefix), b->wdt, b->c->hidden, 0),
		   n),
		1, NOAT);
}

static const char *rmsnorm(struct build *b, const char *x, const char *prefix)
{
	return rms_norm(b, x, prefix, false);
}

static const char *t5_norm(struct build *b, const char *x, const char *prefix)
{
	return rms_norm(b, x, prefix, true);
}

/* [b, t, heads * hd] -> [b, heads, t, hd] */
static const char *split_heads(struct build *b, const char *x, int64_t heads,
			       const char *name)
{
	struct em *e = &b->e;
	int64_t hd = b->c->head_dim;

	x = em_node(e, "Reshape", em_str(e, "%s/Reshape", name),
		    IN(x, INTS(0, 0, heads, hd)), 1, NOAT);
	return em_node(e, "Transpose", em_str(e, "%s/Transpose", name), IN(x), 1,
		       AT({"perm", A_INTS, 0, 0, PERM_BHTD, 4}));
}

/* [b, heads, t, hd] -> [b, t, heads * hd] (transpose(1, 2).reshape) */
static const char *merge_heads(struct build *b, const char *x, const char *name)
{
	struct em *e = &b->e;

	x = em_node(e, "Transpose", em_str(e, "%s/Transpose_o", name), IN(x), 1,
		    AT({"perm", A_INTS, 0, 0, PERM_BHTD, 4}));
	return em_node(e, "Reshape", em_str(e, "%s/Reshape_o", name),
		       IN(x, INTS(0, 0, b->c->heads * b->c->head_dim)), 1, NOAT);
}

/* Softmax over the keys; in float32 (softmax(dtype=torch.float32)) and
 * cast back when the activations are half precision. */
static const char *softmax(struct build *b, const char *s, const char *name, bool upcast)
{
	struct em *e = &b->e;
	int fdt = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;

	if (upcast && b->wdt != fdt)
		s = em_node(e, "Cast", em_str(e, "%s/Cast_s", name), IN(s), 1,
			    AT({"to", A_INT, fdt, 0, NULL, 0}));
	s = em_node(e, "Softmax", em_str(e, "%s/Softmax", name), IN(s), 1,
		    AT({"axis", A_INT, -1, 0, NULL, 0}));
	if (upcast && b->wdt != fdt)
		s = em_node(e, "Cast", em_str(e, "%s/Cast_p", name), IN(s), 1,
			    AT({"to", A_INT, b->wdt, 0, NULL, 0}));
	return s;
}

/* --attention sdpa|flash: F.scaled_dot_product_attention(q, k, v,
 * is_causal=True) or flash_attn_func(causal=True), one fused node
 * (ONNX Attention) over [b, heads, t, hd] operands; k and v may have fewer
 * heads (flash-attn's grouped-query attention). Attention dropout happens
 * inside the kernel (philox): no mask. */
static const char *fused_attention(struct build *b, const char *q, const char *k,
				   const char *v, bool causal, const char *name)
{
	struct em *e = &b->e;
	int64_t hd = b->c->head_dim;

	return em_node(
		e, "Attention", em_str(e, "%s/Attention", name), IN(q, k, v), 1,
		AT({"is_causal", A_INT, causal, 0, NULL, 0},
		   {"q_num_heads", A_INT, b->c->heads, 0, NULL, 0},
		   {"kv_num_heads", A_INT, b->c->kv_heads, 0, NULL, 0},
		   {"scale", A_FLOAT, 0, (float)(1.0 / sqrt((double)hd)), NULL, 0}));
}

/* Positions 0..t-1 of input_ids [b, t], and the query <= key mask. */
static const char *positions(struct build *b, const char **t_len)
{
	struct em *e = &b->e;
	const char *shape, *t;

	shape = em_node(e, "Shape", "/model/Shape", IN("input_ids"), 1, NOAT);
	t = em_node(e, "Gather", "/model/Gather", IN(shape, INT0(1)), 1,
		    AT({"axis", A_INT, 0, 0, NULL, 0}));
	*t_len = shape;
	return em_node(e, "Range", "/model/Range", IN(INT0(0), t, INT0(1)), 1, NOAT);
}

static const char *causal_bool(struct build *b, const char *pos)
{
	struct em *e = &b->e;
	const char *r, *c;

	r = em_node(e, "Unsqueeze", "/model/Unsqueeze", IN(pos, INTS(0)), 1, NOAT);
	c = em_node(e, "Unsqueeze", "/model/Unsqueeze_1", IN(pos, INTS(1)), 1, NOAT);
	/* [t, t]: key position j <= query position i */
	return em_node(e, "LessOrEqual", "/model/LessOrEqual", IN(r, c), 1, NOAT);
}

/* --- blocks ------------------------------------------------------------------ */

/* torch.finfo(dtype).min, the masked scores' value */
static double finfo_min(int dtype)
{
	return dtype == ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16 ? -65504.0
	       : dtype == ONNX__TENSOR_PROTO__DATA_TYPE__BFLOAT16
		       ? -3.3895313892515355e38
		       : -3.4028234663852886e38;
}

/* NewGELUActivation (gelu_new), term by term */
static const char *gelu_new(struct build *b, const char *f, const char *mn)
{
	struct em *e = &b->e;
	const char *g1, *g2;

	g1 = em_node(e, "Mul", em_str(e, "%s/Mul", mn), IN(f, em_scalar(e, 0.5, b->wdt)),
		     1, NOAT);
	g2 = em_node(e, "Pow", em_str(e, "%s/Pow", mn), IN(f, em_scalar(e, 3.0, b->wdt)),
		     1, NOAT);
	g2 = em_node(e, "Mul", em_str(e, "%s/Mul_1", mn),
		     IN(g2, em_scalar(e, 0.044715, b->wdt)), 1, NOAT);
	g2 = em_node(e, "Add", em_str(e, "%s/Add", mn), IN(f, g2), 1, NOAT);
	g2 = em_node(e, "Mul", em_str(e, "%s/Mul_2", mn),
		     IN(g2, em_scalar(e, sqrt(2.0 / 3.14159265358979323846), b->wdt)), 1,
		     NOAT);
	g2 = em_node(e, "Tanh", em_str(e, "%s/Tanh", mn), IN(g2), 1, NOAT);
	g2 = em_node(e, "Add", em_str(e, "%s/Add_1", mn),
		     IN(g2, em_scalar(e, 1.0, b->wdt)), 1, NOAT);
	return em_node(e, "Mul", em_str(e, "%s/Mul_3", mn), IN(g1, g2), 1, NOAT);
}

/* rotate_half(x) = cat(-x[..., hd/2:], x[..., :hd/2]) and
 * x * cos + rotate_half(x) * sin */
static const char *rope(struct build *b, const char *x, const char *name)
{
	struct em *e = &b->e;
	int64_t hd = b->c->head_dim;
	const char *x1, *x2, *r;

	x1 = em_node(e, "Slice", em_str(e, "%s/Slice", name),
		     IN(x, INTS(0), INTS(hd / 2), INTS(3)), 1, NOAT);
	x2 = em_node(e, "Slice", em_str(e, "%s/Slice_1", name),
		     IN(x, INTS(hd / 2), INTS(INT64_MAX), INTS(3)), 1, NOAT);
	x2 = em_node(e, "Neg", em_str(e, "%s/Neg", name), IN(x2), 1, NOAT);
	r = em_node(e, "Concat", em_str(e, "%s/Concat", name), IN(x2, x1), 1,
		    AT({"axis", A_INT, -1, 0, NULL, 0}));
	x = em_node(e, "Mul", em_str(e, "%s/Mul", name), IN(x, b->cos), 1, NOAT);
	r = em_node(e, "Mul", em_str(e, "%s/Mul_1", name), IN(r, b->sin), 1, NOAT);
	return em_node(e, "Add", em_str(e, "%s/Add", name), IN(x, r), 1, NOAT);
}

/* GPTJAttention's sin and cos of one layer (embed_positions gathered at
 * position_ids, computed inside each layer): float32 [t, rd / 2]; the
 * table is a plain float32 attribute, not a buffer, so model.to() leaves
 * it float32. Nothing here needs a gradient. */
static void gptj_sincos(struct build *b, const char *an)
{
	struct em *e = &b->e;
	int fdt = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
	int64_t rd = b->c->rotary_dim;
	float *inv = em_alloc(e, (size_t)(rd / 2) * sizeof(float));
	const char *p;

	if (!inv)
		return;
	for (int64_t j = 0; j < rd / 2; j++)
		inv[j] = (float)(1.0 / pow(10000.0, (double)(2 * j) / (double)rd));
	p = em_node(e, "Cast", em_str(e, "%s/rotary/Cast", an), IN(b->pos), 1,
		    AT({"to", A_INT, fdt, 0, NULL, 0}));
	p = em_node(e, "Unsqueeze", em_str(e, "%s/rotary/Unsqueeze", an), IN(p, INTS(-1)),
		    1, NOAT);
	p = em_node(e, "Mul", em_str(e, "%s/rotary/Mul", an),
		    IN(p, em_floats(e, inv, (size_t)(rd / 2))), 1, NOAT);
	b->sin = em_node(e, "Sin", em_str(e, "%s/rotary/Sin", an), IN(p), 1, NOAT);
	b->cos = em_node(e, "Cos", em_str(e, "%s/rotary/Cos", an), IN(p), 1, NOAT);
}

/* repeat_interleave(t[None, :, None, :], 2, 3) as [1, 1, t, rd] (after the
 * heads' transpose: the same elements): a copy per use */
static const char *gptj_interleave(struct build *b, const char *t, const char *name)
{
	struct em *e = &b->e;

	t = em_node(e, "Unsqueeze", em_str(e, "%s/Unsqueeze", name), IN(t, INTS(-1)), 1,
		    NOAT);
	t = em_node(e, "Expand", em_str(e, "%s/Expand", name), IN(t, INTS(1, 1, 2)), 1,
		    NOAT);
	return em_node(e, "Reshape", em_str(e, "%s/Reshape", name),
		       IN(t, INTS(1, 1, -1, b->c->rotary_dim)), 1, NOAT);
}

/* apply_rotary_pos_emb on x[..., :rd] of x [b, heads, t, hd]:
 * x * cos + rotate_every_two(x) * sin, rotate_every_two(x) =
 * stack((-x[..., 1::2], x[..., ::2]), -1).flatten(-2); the float32 tables
 * promote the products (half x cast up), and cat([rotated, x[..., rd:]])
 * promotes the pass-through part: the result is float32. */
static const char *gptj_rope(struct build *b, const char *x, const char *name)
{
	struct em *e = &b->e;
	int fdt = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
	int64_t rd = b->c->rotary_dim, hd = b->c->head_dim;
	const char *xr = x, *x1, *x2, *r, *co, *si;

	if (rd < hd)
		xr = em_node(e, "Slice", em_str(e, "%s/Slice", name),
			     IN(x, INTS(0), INTS(rd), INTS(3)), 1, NOAT);
	x1 = em_node(e, "Slice", em_str(e, "%s/Slice_1", name),
		     IN(xr, INTS(0), INTS(INT64_MAX), INTS(3), INTS(2)), 1, NOAT);
	x2 = em_node(e, "Slice", em_str(e, "%s/Slice_2", name),
		     IN(xr, INTS(1), INTS(INT64_MAX), INTS(3), INTS(2)), 1, NOAT);
	x2 = em_node(e, "Neg", em_str(e, "%s/Neg", name), IN(x2), 1, NOAT);
	x1 = em_node(e, "Unsqueeze", em_str(e, "%s/Unsqueeze", name), IN(x1, INTS(-1)), 1,
		     NOAT);
	x2 = em_node(e, "Unsqueeze", em_str(e, "%s/Unsqueeze_1", name), IN(x2, INTS(-1)),
		     1, NOAT);
	r = em_node(e, "Concat", em_str(e, "%s/Concat", name), IN(x2, x1), 1,
		    AT({"axis", A_INT, -1, 0, NULL, 0}));
	r = em_node(e, "Reshape", em_str(e, "%s/Reshape", name), IN(r, INTS(0, 0, 0, rd)),
		    1, NOAT);
	if (b->wdt != fdt) {
		xr = em_node(e, "Cast", em_str(e, "%s/Cast", name), IN(xr), 1,
			     AT({"to", A_INT, fdt, 0, NULL, 0}));
		r = em_node(e, "Cast", em_str(e, "%s/Cast_1", name), IN(r), 1,
			    AT({"to", A_INT, fdt, 0, NULL, 0}));
	}
	co = gptj_interleave(b, b->cos, em_str(e, "%s/cos", name));
	si = gptj_interleave(b, b->sin, em_str(e, "%s/sin", name));
	xr = em_node(e, "Mul", em_str(e, "%s/Mul", name), IN(xr, co), 1, NOAT);
	r = em_node(e, "Mul", em_str(e, "%s/Mul_1", name), IN(r, si), 1, NOAT);
	r = em_node(e, "Add", em_str(e, "%s/Add", name), IN(xr, r), 1, NOAT);
	if (rd < hd) {
		const char *xp =
			em_node(e, "Slice", em_str(e, "%s/Slice_3", name),
				IN(x, INTS(rd), INTS(INT64_MAX), INTS(3)), 1, NOAT);

		if (b->wdt != fdt)
			xp = em_node(e, "Cast", em_str(e, "%s/Cast_2", name), IN(xp), 1,
				     AT({"to", A_INT, fdt, 0, NULL, 0}));
		r = em_node(e, "Concat", em_str(e, "%s/Concat_1", name), IN(r, xp), 1,
			    AT({"axis", A_INT, -1, 0, NULL, 0}));
	}
	return r;
}

/* repeat_kv: [b, kvh, t, hd] -> [b, heads, t, hd] through expand (a view)
 * and reshape (a copy, the expanded strides being zero) */
static const char *repeat_kv(struct build *b, const char *x, const char *name)
{
	struct em *e = &b->e;
	int64_t rep = b->c->heads / b->c->kv_heads, hd = b->c->head_dim;

	if (rep == 1)
		return x;
	x = em_node(e, "Unsqueeze", em_str(e, "%s/Unsqueeze", name), IN(x, INTS(2)), 1,
		    NOAT);
	x = em_node(e, "Expand", em_str(e, "%s/Expand", name),
		    IN(x, INTS(1, 1, rep, 1, 1)), 1, NOAT);
	return em_node(e, "Reshape", em_str(e, "%s/Reshape", name),
		       IN(x, INTS(0, b->c->heads, -1, hd)), 1, NOAT);
}

/* LlamaRotaryEmbedding (under no_grad): cos and sin of
 * positions x inv_freq, [b, 1, t, hd], computed once per forward. */
static void rotary(struct build *b, const char *pos, const char *shape)
{
	struct em *e = &b->e;
	int fdt = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
	int64_t hd = b->c->head_dim;
	const char *p, *f, *inv;

	inv = em_weight(e, "model.rotary_emb.inv_freq", fdt, hd / 2, 0);
	p = em_node(e, "Expand", "/model/rotary_emb/Expand", IN(pos, shape), 1, NOAT);
	p = em_node(e, "Cast", "/model/rotary_emb/Cast", IN(p), 1,
		    AT({"to", A_INT, fdt, 0, NULL, 0}));
	p = em_node(e, "Unsqueeze", "/model/rotary_emb/Unsqueeze", IN(p, INTS(-1)), 1,
		    NOAT);
	f = em_node(e, "Mul", "/model/rotary_emb/Mul", IN(p, inv), 1, NOAT);
	f = em_node(e, "Concat", "/model/rotary_emb/Concat", IN(f, f), 1,
		    AT({"axis", A_INT, -1, 0, NULL, 0}));
	b->cos = em_node(e, "Cos", "/model/rotary_emb/Cos", IN(f), 1, NOAT);
	b->sin = em_node(e, "Sin", "/model/rotary_emb/Sin", IN(f), 1, NOAT);
	if (b->wdt != fdt) {
		b->cos = em_node(e, "Cast", "/model/rotary_emb/Cast_1", IN(b->cos), 1,
				 AT({"to", A_INT, b->wdt, 0, NULL, 0}));
		b->sin = em_node(e, "Cast", "/model/rotary_emb/Cast_2", IN(b->sin), 1,
				 AT({"to", A_INT, b->wdt, 0, NULL, 0}));
	}
	b->cos = em_node(e, "Unsqueeze", "/model/rotary_emb/Unsqueeze_1",
			 IN(b->cos, INTS(1)), 1, NOAT);
	b->sin = em_node(e, "Unsqueeze", "/model/rotary_emb/Unsqueeze_2",
			 IN(b->sin, INTS(1)), 1, NOAT);
}

/*
 * What a family's blocks are made of. A family is its parser, one of these
 * tables, its embedding stem and its head; the blocks below read the
 * table, so the op sequence (and every node and parameter name, which
 * --explain and --freeze show) is the one transformers' code for that
 * family runs.
 */
enum norm_kind {
	NORM_LAYER = 0, /* nn.LayerNorm */
	NORM_RMS, /* LlamaRMSNorm / T5LayerNorm: float32 statistics */
};

enum scale_kind {
	SCALE_SCORES = 0, /* (q k^T) / sqrt(hd) */
	SCALE_Q, /* q_proj(x) * hd^-0.5 before the scores (OPT) */
	SCALE_NONE, /* unscaled (GPT-Neo) */
};

enum mask_kind {
	MASK_WHERE = 0, /* torch.where(causal, s, finfo.min) (b->causal bool) */
	MASK_ADD, /* s + additive float mask (b->causal) */
};

enum rope_kind {
	ROPE_NONE = 0,
	ROPE_HALF, /* rotate_half over the head, b->cos / b->sin (llama) */
	ROPE_GPTJ, /* rotate_every_two over rotary_dim, float32 tables
		    * computed in each layer: q and k come out float32 */
};

enum softmax_kind {
	SM_PLAIN = 0, /* softmax in the activations' dtype */
	SM_FLOAT32, /* softmax(dtype=float32), cast back (llama) */
	SM_FLOAT32_FP16, /* in float32 for float16 only (opt) */
	SM_CAST_BACK, /* scores already float32: softmax, cast to v's dtype
		       * (gpt-neo) */
};

struct attn_spec {
	/* q, k, v and output module names; qkv: one fused Conv1D projection
	 * split three ways instead (GPT-2's c_attn) */
	const char *q, *k, *v, *o, *qkv;
	bool conv1d, qkv_bias, o_bias;
	int rope; /* enum rope_kind: rotary embeddings on q and k */
	bool upcast_qk; /* q and k cast to float32 for the scores (which
			 * divide by a float32 sqrt(hd)) */
	bool bidirectional; /* no causal mask (encoders): the fused kernels
			     * run without is_causal */
	int scale, mask, softmax;
	const char *drop; /* the attention dropout's node, after the
			   * attention's node prefix */
};

struct mlp_spec {
	int act; /* enum act_kind */
	/* gated: down(act(gate(x)) * up(x)) (SwiGLU, T5's gated-gelu);
	 * otherwise down(act(up(x))) */
	bool gated;
	const char *up, *gate, *down;
	bool bias, conv1d;
	const char *drop; /* dropout before down (T5), after the block's
			   * node prefix; NULL = none */
};

struct layer_spec {
	const char *layers; /* module list: "transformer.h" */
	/* submodules of a layer, appended to its prefix ("" = the layer) */
	const char *attn, *mlp, *ln1, *ln2;
	int norm;
	struct attn_spec at;
	struct mlp_spec ff;
	/* residual dropouts' nodes, after "/" + the layer's prefix */
	const char *attn_drop, *mlp_drop;
	/* ln1's output feeds attention and MLP alike, x + attn + mlp (GPT-J;
	 * ln2 unused) */
	bool parallel;
};

static const char *norm(struct build *b, int kind, const char *x, const char *prefix)
{
	return kind == NORM_RMS ? rmsnorm(b, x, prefix) : layernorm(b, x, prefix);
}

/* Self-attention over h [b, t, d] by the family's rule; ap is the
 * module's prefix ("transformer.h.0.attn"). Returns the output
 * projection's result. */
static const char *attention(struct build *b, const struct attn_spec *s, const char *h,
			     const char *kv, const char *mask, const char *ap)
{
	struct em *e = &b->e;
	const struct hf_cfg *c = b->c;
	int64_t d = c->hidden, hd = c->head_dim, kvd = c->kv_heads * hd;
	int fdt = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
	const char *an = em_str(e, "/%s", ap);
	const char *q, *k, *v, *y;

	if (s->qkv) {
		q = linear(b, h, ap, s->qkv, d, 3 * d, s->qkv_bias, s->conv1d);
		q = em_node(e, "Split", em_str(e, "%s/Split", an), IN(q, INTS(d, d, d)),
			    3, AT({"axis", A_INT, 2, 0, NULL, 0}));
		k = em_str(e, "%s_1", q);
		v = em_str(e, "%s_2", q);
	} else {
		q = linear(b, h, ap, s->q, d, c->heads * hd, s->qkv_bias, s->conv1d);
		if (s->scale == SCALE_Q)
			q = em_node(e, "Mul", em_str(e, "%s/Mul", an),
				    IN(q, em_scalar(e, 1.0 / sqrt((double)hd), b->wdt)),
				    1, NOAT);
		k = linear(b, kv, ap, s->k, d, kvd, s->qkv_bias, s->conv1d);
		v = linear(b, kv, ap, s->v, d, kvd, s->qkv_bias, s->conv1d);
	}
	q = split_heads(b, q, c->heads, em_str(e, "%s/q", an));
	k = split_heads(b, k, c->kv_heads, em_str(e, "%s/k", an));
	v = split_heads(b, v, c->kv_heads, em_str(e, "%s/v", an));
	if (s->rope == ROPE_HALF) {
		q = rope(b, q, em_str(e, "%s/q_rope", an));
		k = rope(b, k, em_str(e, "%s/k_rope", an));
	} else if (s->rope == ROPE_GPTJ) {
		gptj_sincos(b, an);
		k = gptj_rope(b, k, em_str(e, "%s/k_rope", an));
		q = gptj_rope(b, q, em_str(e, "%s/q_rope", an));
	}
	/* flash-attn reads grouped keys and values as they are; eager and
	 * SDPA attention repeat them (repeat_kv) first */
	if (b->o->attention != COLLOC_ATTN_FLASH) {
		k = repeat_kv(b, k, em_str(e, "%s/k_rep", an));
		v = repeat_kv(b, v, em_str(e, "%s/v_rep", an));
	}
	if (b->o->attention == COLLOC_ATTN_EAGER) {
		const char *sc;

		/* GPT-J's rotated q and k are float32 already */
		if (s->upcast_qk && b->wdt != fdt && s->rope != ROPE_GPTJ) {
			q = em_node(e, "Cast", em_str(e, "%s/Cast", an), IN(q), 1,
				    AT({"to", A_INT, fdt, 0, NULL, 0}));
			k = em_node(e, "Cast", em_str(e, "%s/Cast_1", an), IN(k), 1,
				    AT({"to", A_INT, fdt, 0, NULL, 0}));
		}
		k = em_node(e, "Transpose", em_str(e, "%s/Transpose_k", an), IN(k), 1,
			    AT({"perm", A_INTS, 0, 0, PERM_LAST2, 4}));
		sc = em_node(e, "MatMul", em_str(e, "%s/MatMul", an), IN(q, k), 1, NOAT);
		if (s->scale == SCALE_SCORES)
			sc = em_node(e, "Div", em_str(e, "%s/Div", an),
				     IN(sc, em_scalar(e, sqrt((double)hd),
						      s->upcast_qk ? fdt : b->wdt)),
				     1, NOAT);
		if (s->mask == MASK_WHERE)
			sc = em_node(e, "Where", em_str(e, "%s/Where", an),
				     IN(mask, sc, b->minv), 1, NOAT);
		else
			sc = em_node(e, "Add", em_str(e, "%s/Add", an), IN(sc, mask), 1,
				     NOAT);
		if (s->softmax == SM_CAST_BACK) {
			sc = em_node(e, "Softmax", em_str(e, "%s/Softmax", an), IN(sc), 1,
				     AT({"axis", A_INT, -1, 0, NULL, 0}));
			if (b->wdt != fdt)
				sc = em_node(e, "Cast", em_str(e, "%s/Cast_2", an),
					     IN(sc), 1,
					     AT({"to", A_INT, b->wdt, 0, NULL, 0}));
		} else {
			sc = softmax(
				b, sc, an,
				s->softmax == SM_FLOAT32 ||
					(s->softmax == SM_FLOAT32_FP16 &&
					 b->wdt ==
						 ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16));
		}
		sc = dropout(b, sc, c->attn_pdrop, em_str(e, "%s%s", an, s->drop));
		y = em_node(e, "MatMul", em_str(e, "%s/MatMul_1", an), IN(sc, v), 1,
			    NOAT);
	} else {
		y = fused_attention(b, q, k, v, !s->bidirectional, an);
	}
	y = merge_heads(b, y, an);
	return linear(b, y, ap, s->o, c->heads * hd, d, s->o_bias, s->conv1d);
}

/* act(f), with node names under mn */
static const char *activation(struct build *b, int act, const char *f, const char *mn)
{
	struct em *e = &b->e;

	switch (act) {
	case ACT_RELU:
		return em_node(e, "Relu", em_str(e, "%s/Relu", mn), IN(f), 1, NOAT);
	case ACT_GELU:
		return em_node(e, "Gelu", em_str(e, "%s/Gelu", mn), IN(f), 1, NOAT);
	case ACT_SILU:
		/* SiLU as x * sigmoid(x): the op table's F.silu pattern */
		return em_node(
			e, "Mul", em_str(e, "%s/act_fn/Mul", mn),
			IN(f, em_node(e, "Sigmoid", em_str(e, "%s/act_fn/Sigmoid", mn),
				      IN(f), 1, NOAT)),
			1, NOAT);
	default:
		return gelu_new(b, f, mn);
	}
}

/* The feed-forward block over h; mp is its module prefix. */
static const char *mlp(struct build *b, const struct mlp_spec *s, const char *h,
		       const char *mp)
{
	struct em *e = &b->e;
	const struct hf_cfg *c = b->c;
	int64_t d = c->hidden;
	const char *mn = em_str(e, "/%s", mp), *f, *u;

	if (s->gated) {
		f = linear(b, h, mp, s->gate, d, c->inter, s->bias, s->conv1d);
		u = linear(b, h, mp, s->up, d, c->inter, s->bias, s->conv1d);
		f = activation(b, s->act, f, mn);
		/* gelu_new's own nodes take Mul..Mul_3 */
		f = em_node(
			e, "Mul",
			em_str(e, "%s/%s", mn, s->act == ACT_GELU_NEW ? "Mul_4" : "Mul"),
			IN(f, u), 1, NOAT);
	} else {
		f = linear(b, h, mp, s->up, d, c->inter, s->bias, s->conv1d);
		f = activation(b, s->act, f, mn);
	}
	if (s->drop)
		f = dropout(b, f, c->resid_pdrop, em_str(e, "%s%s", mn, s->drop));
	return linear(b, f, mp, s->down, c->inter, d, s->bias, s->conv1d);
}

/* A pre-norm decoder layer l: x + attn(norm(x)), then + mlp(norm(x)),
 * each branch dropped out (resid_pdrop) before its residual add; with
 * ls->parallel, h = norm(x) and attn(h) + mlp(h) + x. */
static const char *decoder_layer(struct build *b, const struct layer_spec *ls,
				 const char *x, int64_t l)
{
	struct em *e = &b->e;
	double pd = b->c->resid_pdrop;
	const char *p = em_str(e, "%s.%lld", ls->layers, (long long)l), *h, *y;

	layer_begin(b, l);
	h = norm(b, ls->norm, x, em_str(e, "%s%s", p, ls->ln1));
	y = attention(b, &ls->at, h, h, b->causal, em_str(e, "%s%s", p, ls->attn));
	y = dropout(b, y, pd, em_str(e, "/%s%s", p, ls->attn_drop));
	if (ls->parallel) {
		const char *f = mlp(b, &ls->ff, h, em_str(e, "%s%s", p, ls->mlp));

		f = dropout(b, f, pd, em_str(e, "/%s%s", p, ls->mlp_drop));
		y = em_node(e, "Add", em_str(e, "/%s/Add", p), IN(y, f), 1, NOAT);
		x = em_node(e, "Add", em_str(e, "/%s/Add_1", p), IN(y, x), 1, NOAT);
		layer_end(b, l);
		return x;
	}
	x = em_node(e, "Add", em_str(e, "/%s/Add", p), IN(x, y), 1, NOAT);
	h = norm(b, ls->norm, x, em_str(e, "%s%s", p, ls->ln2));
	y = mlp(b, &ls->ff, h, em_str(e, "%s%s", p, ls->mlp));
	y = dropout(b, y, pd, em_str(e, "/%s%s", p, ls->mlp_drop));
	x = em_node(e, "Add", em_str(e, "/%s/Add_1", p), IN(x, y), 1, NOAT);
	layer_end(b, l);
	return x;
}

static const char *decoder_layers(struct build *b, const struct layer_spec *ls,
				  const char *x)
{
	for (int64_t l = 0; l < b->c->layers && !b->e.failed; l++)
		x = decoder_layer(b, ls, x, l);
	return x;
}

/* x + wpe[positions] (learned positions, read at pos + offset) */
static const char *add_positions(struct build *b, const char *pos, int64_t offset,
				 const char *weight, const char *node)
{
	struct em *e = &b->e;
	const char *pe;

	if (offset)
		pos = em_node(e, "Add", em_str(e, "%s/Add", node), IN(pos, INT0(offset)),
			      1, NOAT);
	pe = em_weight(e, weight, b->wdt, b->c->positions + offset, b->c->hidden);
	return em_node(e, "Gather", em_str(e, "%s/Gather", node), IN(pe, pos), 1, NOAT);
}

/* The LM head on the final hidden states x: x @ w^T (+ the parameter
 * bias, [vocab], when named) into "logits", cast to float32 last when
 * cast_logits (LlamaForCausalLM's logits.float()). */
static void lm_head(struct build *b, const char *x, const char *w, const char *bias,
		    bool cast_logits)
{
	struct em *e = &b->e;
	int fdt = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
	bool cast = cast_logits && b->wdt != fdt;

	w = em_node(e, "Transpose", "/lm_head/Transpose", IN(w), 1,
		    AT({"perm", A_INTS, 0, 0, PERM_T, 2}));
	x = em_node(e, "MatMul", cast || bias ? "/lm_head/MatMul" : "logits", IN(x, w), 1,
		    NOAT);
	if (bias)
		x = em_node(e, "Add", cast ? "/lm_head/Add" : "logits",
			    IN(x, em_weight(e, bias, b->wdt, b->c->vocab, 0)), 1, NOAT);
	if (cast)
		em_node(e, "Cast", "logits", IN(x), 1,
			AT({"to", A_INT, fdt, 0, NULL, 0}));
}

/* --- gpt2, gpt_neo ------------------------------------------------------------ */

/* GPT2LMHeadModel, eager attention: fused c_attn (Conv1D), scores / sqrt(hd),
 * torch.where against the causal bias, softmax in the activations' dtype. */
static const struct layer_spec gpt2_layer = {
	.layers = "transformer.h",
	.attn = ".attn",
	.mlp = ".mlp",
	.ln1 = ".ln_1",
	.ln2 = ".ln_2",
	.norm = NORM_LAYER,
	.at = {.qkv = "c_attn",
	       .o = "c_proj",
	       .conv1d = true,
	       .qkv_bias = true,
	       .o_bias = true,
	       .scale = SCALE_SCORES,
	       .mask = MASK_WHERE,
	       .softmax = SM_PLAIN,
	       .drop = "/attn_dropout/Dropout"},
	.ff = {.act = ACT_GELU_NEW,
	       .up = "c_fc",
	       .down = "c_proj",
	       .bias = true,
	       .conv1d = true},
	.attn_drop = ".attn/resid_dropout/Dropout",
	.mlp_drop = ".mlp/dropout/Dropout",
};

/* GPTNeoForCausalLM, eager attention (modeling_gpt_neo.py): q and k cast
 * to float32, unscaled scores, torch.where against the causal bias,
 * softmax, cast back to v's dtype. */
static const struct layer_spec gpt_neo_layer = {
	.layers = "transformer.h",
	.attn = ".attn.attention",
	.mlp = ".mlp",
	.ln1 = ".ln_1",
	.ln2 = ".ln_2",
	.norm = NORM_LAYER,
	.at = {.q = "q_proj",
	       .k = "k_proj",
	       .v = "v_proj",
	       .o = "out_proj",
	       .o_bias = true,
	       .upcast_qk = true,
	       .scale = SCALE_NONE,
	       .mask = MASK_WHERE,
	       .softmax = SM_CAST_BACK,
	       .drop = "/attn_dropout/Dropout"},
	.ff = {.act = ACT_GELU_NEW, .up = "c_fc", .down = "c_proj", .bias = true},
	.attn_drop = ".attn.attention/resid_dropout/Dropout",
	.mlp_drop = ".mlp/dropout/Dropout",
};

/* GPT-2 and GPT-Neo share their stem: wte + wpe, dropout, a bool causal
 * mask; the masked scores take finfo.min of the scores' dtype (float32
 * for GPT-Neo, whose scores are float32). */
static void build_gpt2_like(struct build *b, const struct layer_spec *ls)
{
	struct em *e = &b->e;
	const struct hf_cfg *c = b->c;
	int fdt = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
	bool eager = b->o->attention == COLLOC_ATTN_EAGER, neo = c->family == FAM_GPT_NEO;
	const char *pos, *shape, *x, *wte;

	wte = em_weight(e, "transformer.wte.weight", b->wdt, c->vocab, c->hidden);
	pos = positions(b, &shape);
	/* the fused kernels take is_causal instead of a mask */
	b->causal = eager ? causal_bool(b, pos) : NULL;
	if (eager && neo)
		b->minv = em_scalar(e, finfo_min(fdt), fdt);
	x = em_node(e, "Gather", "/transformer/wte/Gather", IN(wte, "input_ids"), 1,
		    NOAT);
	x = em_node(e, "Add", "/transformer/Add",
		    IN(x, add_positions(b, pos, 0, "transformer.wpe.weight",
					"/transformer/wpe")),
		    1, NOAT);
	x = dropout(b, x, c->embd_pdrop, "/transformer/drop/Dropout");
	if (eager && !neo)
		b->minv = em_scalar(e, finfo_min(b->wdt), b->wdt);
	x = decoder_layers(b, ls, x);
	x = layernorm(b, x, "transformer.ln_f");
	lm_head(b, x, wte, NULL, false);
}

static void build_gpt2(struct build *b)
{
	build_gpt2_like(b, &gpt2_layer);
}

static void build_gpt_neo(struct build *b)
{
	build_gpt2_like(b, &gpt_neo_layer);
}

/* --- gptj --------------------------------------------------------------------- */

/* GPTJForCausalLM, eager attention (modeling_gptj.py): wte only, dropout;
 * per layer ln_1 feeding GPTJAttention and GPTJMLP in parallel; bias-free
 * q/k/v/out, rotary q and k (float32), q k^T in float32, torch.where
 * against the causal bias (finfo(float32).min), / sqrt(hd) (float32;
 * transformers' later code divides before masking: the same tensors),
 * softmax, cast to v's dtype, dropout; fc_in, gelu_new, fc_out with
 * biases; ln_f; lm_head with a bias; logits.to(float32). */
static void build_gptj(struct build *b)
{
	struct em *e = &b->e;
	const struct hf_cfg *c = b->c;
	int fdt = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
	static const struct layer_spec ls = {
		.layers = "transformer.h",
		.attn = ".attn",
		.mlp = ".mlp",
		.ln1 = ".ln_1",
		.norm = NORM_LAYER,
		.at = {.q = "q_proj",
		       .k = "k_proj",
		       .v = "v_proj",
		       .o = "out_proj",
		       .rope = ROPE_GPTJ,
		       .upcast_qk = true,
		       .scale = SCALE_SCORES,
		       .mask = MASK_WHERE,
		       .softmax = SM_CAST_BACK,
		       .drop = "/attn_dropout/Dropout"},
		.ff = {.act = ACT_GELU_NEW,
		       .up = "fc_in",
		       .down = "fc_out",
		       .bias = true},
		.attn_drop = ".attn/resid_dropout/Dropout",
		.mlp_drop = ".mlp/dropout/Dropout",
		.parallel = true,
	};
	const char *shape, *x, *wte;

	wte = em_weight(e, "transformer.wte.weight", b->wdt, c->vocab, c->hidden);
	b->pos = positions(b, &shape);
	b->causal = causal_bool(b, b->pos);
	b->minv = em_scalar(e, finfo_min(fdt), fdt);
	x = em_node(e, "Gather", "/transformer/wte/Gather", IN(wte, "input_ids"), 1,
		    NOAT);
	x = dropout(b, x, c->embd_pdrop, "/transformer/drop/Dropout");
	x = decoder_layers(b, &ls, x);
	x = layernorm(b, x, "transformer.ln_f");
	lm_head(b, x, em_weight(e, "lm_head.weight", b->wdt, c->vocab, c->hidden),
		"lm_head.bias", true);
}

/* --- opt ---------------------------------------------------------------------- */

/* OPTForCausalLM, eager attention (modeling_opt.py): q_proj(x) * hd^-0.5,
 * the additive causal mask, softmax (in float32 for float16 only), a
 * ReLU MLP (fc1, fc2), dropout after attention and MLP, none on the
 * embeddings. enable_bias covers every linear layer. */
static void build_opt(struct build *b)
{
	struct em *e = &b->e;
	const struct hf_cfg *c = b->c;
	bool eager = b->o->attention == COLLOC_ATTN_EAGER;
	struct layer_spec ls = {
		.layers = "model.decoder.layers",
		.attn = ".self_attn",
		.mlp = "",
		.ln1 = ".self_attn_layer_norm",
		.ln2 = ".final_layer_norm",
		.norm = NORM_LAYER,
		.at = {.q = "q_proj",
		       .k = "k_proj",
		       .v = "v_proj",
		       .o = "out_proj",
		       .qkv_bias = c->qkv_bias,
		       .o_bias = c->qkv_bias,
		       .scale = SCALE_Q,
		       .mask = MASK_ADD,
		       .softmax = SM_FLOAT32_FP16,
		       .drop = "/Dropout"},
		.ff = {.act = ACT_RELU, .up = "fc1", .down = "fc2", .bias = c->qkv_bias},
		.attn_drop = "/attn_dropout/Dropout",
		.mlp_drop = "/fc2_dropout/Dropout",
	};
	const char *pos, *shape, *x, *emb;

	emb = em_weight(e, "model.decoder.embed_tokens.weight", b->wdt, c->vocab,
			c->hidden);
	pos = positions(b, &shape);
	b->causal = !eager ? NULL
			   : em_node(e, "Where", "/model/Where",
				     IN(causal_bool(b, pos), em_scalar(e, 0.0, b->wdt),
					em_scalar(e, finfo_min(b->wdt), b->wdt)),
				     1, NOAT);
	x = em_node(e, "Gather", "/model/decoder/embed_tokens/Gather",
		    IN(emb, "input_ids"), 1, NOAT);
	/* OPTLearnedPositionalEmbedding: positions + 2 (fairseq's offset) */
	x = em_node(e, "Add", "/model/decoder/Add",
		    IN(x, add_positions(b, pos, 2, "model.decoder.embed_positions.weight",
					"/model/decoder/embed_positions")),
		    1, NOAT);
	x = decoder_layers(b, &ls, x);
	x = layernorm(b, x, "model.decoder.final_layer_norm");
	lm_head(b, x, emb, NULL, false);
}

/* --- llama -------------------------------------------------------------------- */

/* LlamaForCausalLM, eager attention: RMSNorm, rotary q and k, grouped
 * keys and values repeated, scores / sqrt(hd) + the additive causal mask,
 * softmax in float32, SwiGLU, bias-free but for qwen2's q, k, v. */
static void build_llama(struct build *b)
{
	struct em *e = &b->e;
	const struct hf_cfg *c = b->c;
	bool eager = b->o->attention == COLLOC_ATTN_EAGER;
	struct layer_spec ls = {
		.layers = "model.layers",
		.attn = ".self_attn",
		.mlp = ".mlp",
		.ln1 = ".input_layernorm",
		.ln2 = ".post_attention_layernorm",
		.norm = NORM_RMS,
		.at = {.q = "q_proj",
		       .k = "k_proj",
		       .v = "v_proj",
		       .o = "o_proj",
		       .qkv_bias = c->qkv_bias,
		       .rope = ROPE_HALF,
		       .scale = SCALE_SCORES,
		       .mask = MASK_ADD,
		       .softmax = SM_FLOAT32,
		       .drop = "/Dropout"},
		.ff = {.act = ACT_SILU,
		       .gated = true,
		       .up = "up_proj",
		       .gate = "gate_proj",
		       .down = "down_proj"},
		.attn_drop = "",
		.mlp_drop = "",
	};
	const char *pos, *shape, *x, *emb;

	emb = em_weight(e, "model.embed_tokens.weight", b->wdt, c->vocab, c->hidden);
	pos = positions(b, &shape);
	/* the additive causal mask: 0 where allowed, finfo.min elsewhere
	 * (the fused kernels get is_causal instead: transformers drops a
	 * mask that is purely causal) */
	b->causal = !eager ? NULL
			   : em_node(e, "Where", "/model/Where",
				     IN(causal_bool(b, pos), em_scalar(e, 0.0, b->wdt),
					em_scalar(e, finfo_min(b->wdt), b->wdt)),
				     1, NOAT);
	rotary(b, pos, shape);
	x = em_node(e, "Gather", "/model/embed_tokens/Gather", IN(emb, "input_ids"), 1,
		    NOAT);
	x = decoder_layers(b, &ls, x);
	x = rmsnorm(b, x, "model.norm");
	lm_head(b, x,
		c->tied ? emb
			: em_weight(e, "lm_head.weight", b->wdt, c->vocab, c->hidden),
		NULL, true);
}

/* --- bert, roberta ------------------------------------------------------------- */

/*
 * What BertModel adds to the scores when called without an attention_mask
 * (get_extended_attention_mask of torch.ones(b, t)): (1 - m[:, None, None,
 * :]) * finfo.min, [b, 1, 1, t], all zeros but computed and added in every
 * layer. With causal (a [t, t] bool), the decoder's: causal[None, None] *
 * m[:, None, None, :], [b, 1, t, t]. ids is [b, t]; nothing here needs a
 * gradient.
 */
static const char *extended_mask(struct build *b, const char *ids, const char *causal,
				 const char *name)
{
	struct em *e = &b->e;
	const char *m;

	m = em_node(e, "GreaterOrEqual", em_str(e, "%s/GreaterOrEqual", name),
		    IN(ids, INT0(0)), 1, NOAT);
	m = em_node(e, "Cast", em_str(e, "%s/Cast", name), IN(m), 1,
		    AT({"to", A_INT, b->wdt, 0, NULL, 0}));
	m = em_node(e, "Unsqueeze", em_str(e, "%s/Unsqueeze", name), IN(m, INTS(1, 2)), 1,
		    NOAT);
	if (causal) {
		const char *c =
			em_node(e, "Cast", em_str(e, "%s/Cast_1", name), IN(causal), 1,
				AT({"to", A_INT, b->wdt, 0, NULL, 0}));

		c = em_node(e, "Unsqueeze", em_str(e, "%s/Unsqueeze_1", name),
			    IN(c, INTS(0, 1)), 1, NOAT);
		m = em_node(e, "Mul", em_str(e, "%s/Mul_1", name), IN(c, m), 1, NOAT);
	}
	m = em_node(e, "Sub", em_str(e, "%s/Sub", name), IN(em_scalar(e, 1.0, b->wdt), m),
		    1, NOAT);
	return em_node(e, "Mul", em_str(e, "%s/Mul", name),
		       IN(m, em_scalar(e, finfo_min(b->wdt), b->wdt)), 1, NOAT);
}

/* BertSelfAttention (eager): q, k, v with biases, scores / sqrt(hd) + the
 * extended mask, softmax, dropout; BertSelfOutput's dense. */
static const struct attn_spec bert_attention = {
	.q = "self.query",
	.k = "self.key",
	.v = "self.value",
	.o = "output.dense",
	.qkv_bias = true,
	.o_bias = true,
	.bidirectional = true,
	.scale = SCALE_SCORES,
	.mask = MASK_ADD,
	.softmax = SM_PLAIN,
	.drop = "/self/dropout/Dropout",
};

/* BertIntermediate + BertOutput's dense: up, exact GELU, down */
static const struct mlp_spec bert_mlp = {
	.act = ACT_GELU,
	.up = "intermediate.dense",
	.down = "output.dense",
	.bias = true,
};

/* BertLayer l, post-LN: LayerNorm(x + dropout(attn(x))), then
 * LayerNorm(. + dropout(mlp(.))). */
static const char *bert_layer(struct build *b, const char *stack, const char *x,
			      const char *mask, int64_t l)
{
	struct em *e = &b->e;
	double pd = b->c->resid_pdrop;
	const char *p = em_str(e, "%s.%lld", stack, (long long)l), *y;

	layer_begin(b, l);
	y = attention(b, &bert_attention, x, x, mask, em_str(e, "%s.attention", p));
	y = dropout(b, y, pd, em_str(e, "/%s.attention/output/dropout/Dropout", p));
	x = em_node(e, "Add", em_str(e, "/%s.attention/output/Add", p), IN(y, x), 1,
		    NOAT);
	x = layernorm(b, x, em_str(e, "%s.attention.output.LayerNorm", p));
	y = mlp(b, &bert_mlp, x, p);
	y = dropout(b, y, pd, em_str(e, "/%s/output/dropout/Dropout", p));
	y = em_node(e, "Add", em_str(e, "/%s/output/Add", p), IN(y, x), 1, NOAT);
	x = layernorm(b, y, em_str(e, "%s.output.LayerNorm", p));
	layer_end(b, l);
	return x;
}

/*
 * The sequence classifier on the encoder's output x [b, t, d], reading the
 * first token (x[:, 0], a view of x that the first linear layer saves):
 * BertForSequenceClassification: the pooler (BertPooler: dense, tanh),
 * dropout, classifier = Linear(d, labels); RobertaForSequenceClassification
 * (no pooler): RobertaClassificationHead's dropout, dense, tanh, dropout,
 * out_proj = Linear(d, labels). "logits" is [b, labels].
 */
static void seq_cls_head(struct build *b, const char *x, bool roberta)
{
	struct em *e = &b->e;
	const struct hf_cfg *c = b->c;
	int64_t d = c->hidden;
	const char *h;

	h = em_node(e, "Gather", roberta ? "/classifier/Gather" : "/bert/pooler/Gather",
		    IN(x, INT0(0)), 1, AT({"axis", A_INT, 1, 0, NULL, 0}));
	if (roberta) {
		h = dropout(b, h, c->cls_pdrop, "/classifier/dropout/Dropout");
		h = linear(b, h, "classifier", "dense", d, d, true, false);
		h = em_node(e, "Tanh", "/classifier/Tanh", IN(h), 1, NOAT);
		h = dropout(b, h, c->cls_pdrop, "/classifier/dropout_1/Dropout");
		h = linear(b, h, "classifier", "out_proj", d, c->labels, true, false);
	} else {
		h = linear(b, h, "bert.pooler", "dense", d, d, true, false);
		h = em_node(e, "Tanh", "/bert/pooler/activation/Tanh", IN(h), 1, NOAT);
		h = dropout(b, h, c->cls_pdrop, "/dropout/Dropout");
		h = linear(b, h, NULL, "classifier", d, c->labels, true, false);
	}
	em_node(e, "Identity", "logits", IN(h), 1, NOAT);
}

/* BertForMaskedLM / RobertaForMaskedLM. The masked-LM head is the one the
 * published checkpoints carry (architectures: BertForMaskedLM): the
 * pretraining objective and the usual starting point of domain-adaptive
 * fine-tuning; the model has no pooler (add_pooling_layer=False). */
static void build_bert(struct build *b)
{
	struct em *e = &b->e;
	const struct hf_cfg *c = b->c;
	bool roberta = c->pad_offset > 0;
	const char *base = roberta ? "roberta" : "bert",
		   *head = roberta ? "lm_head" : NULL;
	const char *we, *te, *tt, *pos, *shape, *x, *mask, *h, *w;
	int64_t d = c->hidden;

	we = em_weight(e, em_str(e, "%s.embeddings.word_embeddings.weight", base), b->wdt,
		       c->vocab, d);
	if (roberta) {
		/* create_position_ids_from_input_ids: cumsum of the non-pad
		 * mask, times the mask, + padding_idx */
		const char *m;

		m = em_node(e, "Equal", "/roberta/embeddings/Equal",
			    IN("input_ids", INT0(c->pad_offset - 1)), 1, NOAT);
		m = em_node(e, "Not", "/roberta/embeddings/Not", IN(m), 1, NOAT);
		m = em_node(e, "Cast", "/roberta/embeddings/Cast", IN(m), 1,
			    AT({"to", A_INT, ONNX__TENSOR_PROTO__DATA_TYPE__INT32, 0,
				NULL, 0}));
		pos = em_node(e, "CumSum", "/roberta/embeddings/CumSum", IN(m, INT0(1)),
			      1, NOAT);
		pos = em_node(e, "Mul", "/roberta/embeddings/Mul", IN(pos, m), 1, NOAT);
		pos = em_node(e, "Cast", "/roberta/embeddings/Cast_1", IN(pos), 1,
			      AT({"to", A_INT, ONNX__TENSOR_PROTO__DATA_TYPE__INT64, 0,
				  NULL, 0}));
		pos = em_node(e, "Add", "/roberta/embeddings/Add_pos",
			      IN(pos, INT0(c->pad_offset - 1)), 1, NOAT);
		shape = em_node(e, "Shape", "/roberta/Shape", IN("input_ids"), 1, NOAT);
	} else {
		pos = positions(b, &shape);
	}
	x = em_node(e, "Gather", em_str(e, "/%s/embeddings/word_embeddings/Gather", base),
		    IN(we, "input_ids"), 1, NOAT);
	/* token_type_ids: the registered zeros buffer, expanded to [b, t] */
	tt = em_node(e, "Expand", em_str(e, "/%s/embeddings/Expand", base),
		     IN(INTS(0), shape), 1, NOAT);
	te = em_weight(e, em_str(e, "%s.embeddings.token_type_embeddings.weight", base),
		       b->wdt, c->type_vocab, d);
	x = em_node(e, "Add", em_str(e, "/%s/embeddings/Add", base),
		    IN(x, em_node(e, "Gather",
				  em_str(e, "/%s/embeddings/token_type_embeddings/Gather",
					 base),
				  IN(te, tt), 1, NOAT)),
		    1, NOAT);
	w = em_weight(e, em_str(e, "%s.embeddings.position_embeddings.weight", base),
		      b->wdt, c->positions, d);
	x = em_node(e, "Add", em_str(e, "/%s/embeddings/Add_1", base),
		    IN(x, em_node(e, "Gather",
				  em_str(e, "/%s/embeddings/position_embeddings/Gather",
					 base),
				  IN(w, pos), 1, NOAT)),
		    1, NOAT);
	x = layernorm(b, x, em_str(e, "%s.embeddings.LayerNorm", base));
	x = dropout(b, x, c->embd_pdrop,
		    em_str(e, "/%s/embeddings/dropout/Dropout", base));
	/* the fused kernels run without a mask: transformers drops an
	 * all-ones one */
	mask = b->o->attention == COLLOC_ATTN_EAGER
		       ? extended_mask(b, "input_ids", NULL, em_str(e, "/%s/mask", base))
		       : NULL;
	for (int64_t l = 0; l < c->layers && !e->failed; l++)
		x = bert_layer(b, em_str(e, "%s.encoder.layer", base), x, mask, l);
	if (c->head == HEAD_SEQ_CLS) {
		seq_cls_head(b, x, roberta);
		return;
	}
	/* BertLMPredictionHead: transform (dense, GELU, LayerNorm), then the
	 * decoder, tied to the word embeddings, with its own bias */
	if (!head)
		head = "cls.predictions";
	h = linear(b, x, roberta ? head : em_str(e, "%s.transform", head), "dense", d, d,
		   true, false);
	h = activation(b, ACT_GELU, h, em_str(e, "/%s", head));
	h = layernorm(b, h,
		      roberta ? em_str(e, "%s.layer_norm", head)
			      : em_str(e, "%s.transform.LayerNorm", head));
	w = c->tied ? we
		    : em_weight(e, em_str(e, "%s.decoder.weight", head), b->wdt, c->vocab,
				d);
	w = em_node(e, "Transpose", "/lm_head/Transpose", IN(w), 1,
		    AT({"perm", A_INTS, 0, 0, PERM_T, 2}));
	h = em_node(e, "MatMul", "/lm_head/MatMul", IN(h, w), 1, NOAT);
	em_node(e, "Add", "logits",
		IN(h, em_weight(e, em_str(e, "%s.bias", head), b->wdt, c->vocab, 0)), 1,
		NOAT);
}

/* --- t5 ------------------------------------------------------------------------ */

/* T5Attention (eager): bias-free q, k, v, o of d_kv per head, unscaled
 * scores += position_bias (the relative bias plus the mask), softmax of
 * scores.float() cast back, dropout. */
static const struct attn_spec t5_attention = {
	.q = "q",
	.k = "k",
	.v = "v",
	.o = "o",
	.bidirectional = true,
	.scale = SCALE_NONE,
	.mask = MASK_ADD,
	.softmax = SM_FLOAT32,
	.drop = "/dropout/Dropout",
};

/* [t, t] bool: key j <= query i, for ids [b, t] */
static const char *causal_bool_of(struct build *b, const char *ids, const char *name)
{
	struct em *e = &b->e;
	const char *t, *r;

	t = em_node(e, "Shape", em_str(e, "%s/Shape", name), IN(ids), 1, NOAT);
	t = em_node(e, "Gather", em_str(e, "%s/Gather", name), IN(t, INT0(1)), 1,
		    AT({"axis", A_INT, 0, 0, NULL, 0}));
	r = em_node(e, "Range", em_str(e, "%s/Range", name), IN(INT0(0), t, INT0(1)), 1,
		    NOAT);
	return em_node(e, "LessOrEqual", em_str(e, "%s/LessOrEqual", name),
		       IN(em_node(e, "Unsqueeze", em_str(e, "%s/Unsqueeze", name),
				  IN(r, INTS(0)), 1, NOAT),
			  em_node(e, "Unsqueeze", em_str(e, "%s/Unsqueeze_1", name),
				  IN(r, INTS(1)), 1, NOAT)),
		       1, NOAT);
}

/* [1] tensor: dim 1 of x's shape (a sequence length) */
static const char *seq_len(struct build *b, const char *x, const char *name)
{
	struct em *e = &b->e;
	const char *s = em_node(e, "Shape", em_str(e, "%s/Shape", name), IN(x), 1, NOAT);

	return em_node(e, "Slice", em_str(e, "%s/Slice", name),
		       IN(s, INTS(1), INTS(2), INTS(0)), 1, NOAT);
}

/*
 * T5Attention.compute_bias(q_len, k_len) + mask, as its first layer runs it
 * (the other layers reuse the sum): the relative positions key - query
 * bucketed (_relative_position_bucket: half the buckets exact, half
 * log-spaced up to max_distance; the encoder tells the sign apart, the
 * decoder looks back only), looked up in relative_attention_bias
 * [buckets, heads] (an embedding: it saves the bucket indices), permuted to
 * [1, heads, q, k]. Integer work but for the lookup.
 */
static const char *t5_bias(struct build *b, const char *q_ids, const char *k_ids,
			   bool decoder, const char *mask, const char *ap)
{
	struct em *e = &b->e;
	const struct hf_cfg *c = b->c;
	int fdt = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
	int64_t nb = decoder ? c->buckets : c->buckets / 2, exact = nb / 2;
	const char *an = em_str(e, "/%s", ap), *ctx, *mem, *rel, *off = NULL, *n, *large;

	ctx = em_node(
		e, "Range", em_str(e, "%s/Range", an),
		IN(INT0(0),
		   em_node(e, "Squeeze", em_str(e, "%s/Squeeze", an),
			   IN(seq_len(b, q_ids, em_str(e, "%s/q_len", an)), INTS(0)), 1,
			   NOAT),
		   INT0(1)),
		1, NOAT);
	mem = em_node(
		e, "Range", em_str(e, "%s/Range_1", an),
		IN(INT0(0),
		   em_node(e, "Squeeze", em_str(e, "%s/Squeeze_1", an),
			   IN(seq_len(b, k_ids, em_str(e, "%s/k_len", an)), INTS(0)), 1,
			   NOAT),
		   INT0(1)),
		1, NOAT);
	ctx = em_node(e, "Unsqueeze", em_str(e, "%s/Unsqueeze", an), IN(ctx, INTS(1)), 1,
		      NOAT);
	mem = em_node(e, "Unsqueeze", em_str(e, "%s/Unsqueeze_1", an), IN(mem, INTS(0)),
		      1, NOAT);
	rel = em_node(e, "Sub", em_str(e, "%s/Sub", an), IN(mem, ctx), 1, NOAT);
	if (decoder) {
		/* -min(rel, 0) */
		n = em_node(e, "Min", em_str(e, "%s/Min", an), IN(rel, INT0(0)), 1, NOAT);
		n = em_node(e, "Neg", em_str(e, "%s/Neg", an), IN(n), 1, NOAT);
	} else {
		off = em_node(e, "Greater", em_str(e, "%s/Greater", an), IN(rel, INT0(0)),
			      1, NOAT);
		off = em_node(e, "Cast", em_str(e, "%s/Cast_b", an), IN(off), 1,
			      AT({"to", A_INT, ONNX__TENSOR_PROTO__DATA_TYPE__INT64, 0,
				  NULL, 0}));
		off = em_node(e, "Mul", em_str(e, "%s/Mul_b", an), IN(off, INT0(nb)), 1,
			      NOAT);
		n = em_node(e, "Abs", em_str(e, "%s/Abs", an), IN(rel), 1, NOAT);
	}
	large = em_node(e, "Cast", em_str(e, "%s/Cast_f", an), IN(n), 1,
			AT({"to", A_INT, fdt, 0, NULL, 0}));
	large = em_node(e, "Div", em_str(e, "%s/Div_b", an),
			IN(large, em_scalar(e, (double)exact, fdt)), 1, NOAT);
	large = em_node(e, "Log", em_str(e, "%s/Log", an), IN(large), 1, NOAT);
	large = em_node(
		e, "Mul", em_str(e, "%s/Mul_l", an),
		IN(large, em_scalar(e,
				    (double)(nb - exact) /
					    log((double)c->max_distance / (double)exact),
				    fdt)),
		1, NOAT);
	large = em_node(
		e, "Cast", em_str(e, "%s/Cast_l", an), IN(large), 1,
		AT({"to", A_INT, ONNX__TENSOR_PROTO__DATA_TYPE__INT64, 0, NULL, 0}));
	large = em_node(e, "Add", em_str(e, "%s/Add_l", an), IN(large, INT0(exact)), 1,
			NOAT);
	large = em_node(e, "Min", em_str(e, "%s/Min_l", an), IN(large, INT0(nb - 1)), 1,
			NOAT);
	n = em_node(e, "Where", em_str(e, "%s/Where_b", an),
		    IN(em_node(e, "Less", em_str(e, "%s/Less", an), IN(n, INT0(exact)), 1,
			       NOAT),
		       n, large),
		    1, NOAT);
	if (off)
		n = em_node(e, "Add", em_str(e, "%s/Add_b", an), IN(off, n), 1, NOAT);
	n = em_node(e, "Gather", em_str(e, "%s/relative_attention_bias/Gather", an),
		    IN(em_weight(e, em_str(e, "%s.relative_attention_bias.weight", ap),
				 b->wdt, c->buckets, c->heads),
		       n),
		    1, NOAT);
	n = em_node(e, "Transpose", em_str(e, "%s/Transpose_b", an), IN(n), 1,
		    AT({"perm", A_INTS, 0, 0, (const int64_t[]){2, 0, 1}, 3}));
	n = em_node(e, "Unsqueeze", em_str(e, "%s/Unsqueeze_b", an), IN(n, INTS(0)), 1,
		    NOAT);
	return em_node(e, "Add", em_str(e, "%s/Add_m", an), IN(n, mask), 1, NOAT);
}

/* The cross-attention's position bias: torch.zeros(1, heads, q, k) + the
 * encoder's mask (no relative bias). */
static const char *t5_zero_bias(struct build *b, const char *mask, const char *ap)
{
	struct em *e = &b->e;
	const char *an = em_str(e, "/%s", ap), *shape;

	shape = em_node(e, "Concat", em_str(e, "%s/Concat_z", an),
			IN(INTS(1, b->c->heads),
			   seq_len(b, "decoder_input_ids", em_str(e, "%s/q_len", an)),
			   seq_len(b, "input_ids", em_str(e, "%s/k_len", an))),
			1, AT({"axis", A_INT, 0, 0, NULL, 0}));
	return em_node(e, "Add", em_str(e, "%s/Add_m", an),
		       IN(em_node(e, "Expand", em_str(e, "%s/Expand_z", an),
				  IN(em_scalar(e, 0.0, b->wdt), shape), 1, NOAT),
			  mask),
		       1, NOAT);
}

/* T5's sublayer: x + dropout(attn(layer_norm(x))), or of the FF */
static const char *t5_residual(struct build *b, const char *x, const char *y,
			       const char *sub)
{
	struct em *e = &b->e;

	y = dropout(b, y, b->c->resid_pdrop, em_str(e, "/%s/dropout/Dropout", sub));
	return em_node(e, "Add", em_str(e, "/%s/Add", sub), IN(x, y), 1, NOAT);
}

/* One stack (T5Stack): its blocks are checkpoint regions first..first+n. */
static const char *t5_stack(struct build *b, const char *stack, const char *ids,
			    const char *emb, const char *enc, const char *enc_mask,
			    int64_t n, int64_t first)
{
	struct em *e = &b->e;
	const struct hf_cfg *c = b->c;
	bool dec = enc != NULL;
	struct mlp_spec ff = {.act = c->act,
			      .gated = c->gated,
			      .up = c->gated ? "wi_1" : "wi",
			      .gate = "wi_0",
			      .down = "wo",
			      .drop = "/dropout/Dropout"};
	const char *x, *mask, *bias = NULL, *xbias = NULL;

	x = em_node(e, "Gather", em_str(e, "/%s/embed_tokens/Gather", stack),
		    IN(emb, ids), 1, NOAT);
	mask = extended_mask(b, ids,
			     dec ? causal_bool_of(b, ids, em_str(e, "/%s/causal", stack))
				 : NULL,
			     em_str(e, "/%s/mask", stack));
	x = dropout(b, x, c->resid_pdrop, em_str(e, "/%s/dropout/Dropout", stack));
	for (int64_t l = 0; l < n && !e->failed; l++) {
		const char *p = em_str(e, "%s.block.%lld", stack, (long long)l), *sub, *h;
		struct attn_spec self = t5_attention;

		self.bidirectional = !dec;
		layer_begin(b, first + l);
		sub = em_str(e, "%s.layer.0", p);
		if (l == 0)
			bias = t5_bias(b, ids, ids, dec, mask,
				       em_str(e, "%s.SelfAttention", sub));
		h = t5_norm(b, x, em_str(e, "%s.layer_norm", sub));
		h = attention(b, &self, h, h, bias, em_str(e, "%s.SelfAttention", sub));
		x = t5_residual(b, x, h, sub);
		if (dec) {
			sub = em_str(e, "%s.layer.1", p);
			if (l == 0)
				xbias = t5_zero_bias(
					b, enc_mask,
					em_str(e, "%s.EncDecAttention", sub));
			h = t5_norm(b, x, em_str(e, "%s.layer_norm", sub));
			h = attention(b, &t5_attention, h, enc, xbias,
				      em_str(e, "%s.EncDecAttention", sub));
			x = t5_residual(b, x, h, sub);
		}
		sub = em_str(e, "%s.layer.%d", p, dec ? 2 : 1);
		h = t5_norm(b, x, em_str(e, "%s.layer_norm", sub));
		h = mlp(b, &ff, h, em_str(e, "%s.DenseReluDense", sub));
		x = t5_residual(b, x, h, sub);
		layer_end(b, first + l);
	}
	x = t5_norm(b, x, em_str(e, "%s.final_layer_norm", stack));
	return dropout(b, x, c->resid_pdrop, em_str(e, "/%s/dropout_1/Dropout", stack));
}

/* T5ForConditionalGeneration(input_ids, decoder_input_ids): the logits of
 * the decoder's positions; the loss is cross-entropy against the labels
 * (decoder_input_ids are the labels shifted right). */
static void build_t5(struct build *b)
{
	struct em *e = &b->e;
	const struct hf_cfg *c = b->c;
	const char *emb, *enc, *enc_mask, *x;

	emb = em_weight(e, "shared.weight", b->wdt, c->vocab, c->hidden);
	enc = t5_stack(b, "encoder", "input_ids", emb, NULL, NULL, c->layers, 0);
	/* invert_attention_mask(ones): [b, 1, 1, t_enc] */
	enc_mask = extended_mask(b, "input_ids", NULL, "/decoder/encoder_mask");
	x = t5_stack(b, "decoder", "decoder_input_ids", emb, enc, enc_mask, c->dec_layers,
		     c->layers);
	if (c->tied)
		x = em_node(e, "Mul", "/Mul",
			    IN(x, em_scalar(e, 1.0 / sqrt((double)c->hidden), b->wdt)), 1,
			    NOAT);
	lm_head(b, x,
		c->tied ? emb
			: em_weight(e, "lm_head.weight", b->wdt, c->vocab, c->hidden),
		NULL, false);
}

/* --- the model ------------------------------------------------------------- */

static Onnx__ValueInfoProto *value_info(struct em *e, const char *name, int dtype,
					const char *d0, const char *d1, int64_t d2)
{
	static const Onnx__ValueInfoProto vinit = ONNX__VALUE_INFO_PROTO__INIT;
	static const Onnx__TypeProto tinit = ONNX__TYPE_PROTO__INIT;
	static const Onnx__TypeProto__Tensor ttinit = ONNX__TYPE_PROTO__TENSOR__INIT;
	static const Onnx__TensorShapeProto sinit = ONNX__TENSOR_SHAPE_PROTO__INIT;
	static const Onnx__TensorShapeProto__Dimension dinit =
		ONNX__TENSOR_SHAPE_PROTO__DIMENSION__INIT;
	Onnx__ValueInfoProto *vi = em_alloc(e, sizeof(*vi));
	Onnx__TypeProto *tp = em_alloc(e, sizeof(*tp));
	Onnx__TypeProto__Tensor *tt = em_alloc(e, sizeof(*tt));
	Onnx__TensorShapeProto *sp = em_alloc(e, sizeof(*sp));
	/* [d0, d1], [d0, d1, d2], or [d0, d2] when d1 is NULL */
	size_t rank = d2 > 0 && d1 ? 3 : 2;

	if (e->failed)
		return NULL;
	*vi = vinit;
	*tp = tinit;
	*tt = ttinit;
	*sp = sinit;
	sp->dim = em_alloc(e, rank * sizeof(Onnx__TensorShapeProto__Dimension *));
	if (!sp->dim)
		return NULL;
	for (size_t k = 0; k < rank && !e->failed; k++) {
		Onnx__TensorShapeProto__Dimension *dm = em_alloc(e, sizeof(*dm));

		if (!dm)
			return NULL;
		*dm = dinit;
		if (k == 0 || (k == 1 && d1)) {
			dm->value_case =
				ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
			dm->dim_param = unconst(k ? d1 : d0);
		} else {
			dm->value_case =
				ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
			dm->dim_value = d2;
		}
		sp->dim[k] = dm;
	}
	if (e->failed)
		return NULL;
	sp->n_dim = rank;
	tt->has_elem_type = 1;
	tt->elem_type = dtype;
	tt->shape = sp;
	tp->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
	tp->tensor_type = tt;
	vi->name = unconst(name);
	vi->type = tp;
	return vi;
}

static int load_built(struct build *b, struct colloc_graph **g, const char *file,
		      struct colloc_diag *diag)
{
	static const Onnx__ModelProto minit = ONNX__MODEL_PROTO__INIT;
	static const Onnx__GraphProto ginit = ONNX__GRAPH_PROTO__INIT;
	static const Onnx__OperatorSetIdProto oinit = ONNX__OPERATOR_SET_ID_PROTO__INIT;
	struct em *e = &b->e;
	Onnx__ModelProto mp = minit;
	Onnx__GraphProto gp = ginit;
	Onnx__OperatorSetIdProto os = oinit, *osp = &os;
	Onnx__ValueInfoProto *in[2], *out;
	bool t5 = b->c->family == FAM_T5;
	int rc;

	in[0] = value_info(e, "input_ids", ONNX__TENSOR_PROTO__DATA_TYPE__INT64, "batch",
			   "seq", 0);
	/* T5: the decoder's tokens (the labels shifted right) */
	in[1] = t5 ? value_info(e, "decoder_input_ids",
				ONNX__TENSOR_PROTO__DATA_TYPE__INT64, "batch", "dec_seq",
				0)
		   : NULL;
	out = b->c->head == HEAD_SEQ_CLS
		      ? value_info(e, "logits", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT,
				   "batch", NULL, b->c->labels)
		      : value_info(e, "logits", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT,
				   "batch", t5 ? "dec_seq" : "seq", b->c->vocab);
	if (e->failed || !in[0] || (t5 && !in[1]) || !out)
		return colloc_diag_set(diag, -ENOMEM, "out of memory");
	gp.name = unconst(b->c->model_type);
	gp.node = e->nodes;
	gp.n_node = e->n_nodes;
	gp.initializer = e->inits;
	gp.n_initializer = e->n_inits;
	gp.input = in;
	gp.n_input = t5 ? 2 : 1;
	gp.output = &out;
	gp.n_output = 1;
	os.domain = unconst("");
	os.has_version = 1;
	os.version = 17; /* LayerNormalization */
	mp.has_ir_version = 1;
	mp.ir_version = 8;
	mp.producer_name = unconst("colloc hf");
	mp.producer_version = unconst("");
	mp.opset_import = &osp;
	mp.n_opset_import = 1;
	mp.graph = &gp;
	/* Converted as it is: packing it for the loader to unpack again
	 * gave the same graph at a third of a 70B estimate's time. */
	rc = colloc__onnx_load_model(&mp, NULL, g, diag);
	if (rc)
		return colloc_diag_prefix(diag, rc, "%s: the graph built from it", file);
	return 0;
}

static char *read_config(const char *spec, char *path, size_t plen, size_t *len,
			 struct colloc_diag *diag, int *rc)
{
	struct stat st;
	FILE *f;
	char *buf;
	int w;

	bool here = stat(spec, &st) == 0;
	bool bundled = !here && colloc__bundled_name_ok(spec);

	if (here && S_ISDIR(st.st_mode))
		w = snprintf(path, plen, "%s/config.json", spec);
	else if (bundled)
		/* hf:gpt2: the configuration bundled in DATA/hf/gpt2, as a
		 * bare zoo name is DATA/zoo/NAME.onnx; a file or directory
		 * of that name in the working directory comes first. */
		w = snprintf(path, plen, "%s/hf/%s/config.json", colloc_data_dir(), spec);
	else
		w = snprintf(path, plen, "%s", spec);
	if (w < 0 || (size_t)w >= plen) {
		*rc = colloc_diag_set(diag, COLLOC_ELIMIT, "hf:%s: path too long", spec);
		return NULL;
	}
	f = fopen(path, "rb");
	if (!f && bundled && errno == ENOENT) {
		*rc = colloc_diag_set(
			diag, COLLOC_ENOTFOUND,
			"hf:%s: no file or directory '%s' here and no bundled "
			"configuration %s/hf/%s (hf:PATH/config.json, hf:DIR "
			"holding one, or a name of %s/hf; set COLLOC_DATA_DIR "
			"to use another data directory)",
			spec, spec, colloc_data_dir(), spec, colloc_data_dir());
		return NULL;
	}
	if (!f) {
		*rc = colloc_diag_set(diag, errno == ENOENT ? COLLOC_ENOTFOUND : -errno,
				      "hf:%s: cannot open %s: %s", spec, path,
				      strerror(errno));
		return NULL;
	}
	buf = malloc(HF_CONFIG_MAX_BYTES + 1);
	if (!buf) {
		fclose(f);
		*rc = colloc_diag_set(diag, -ENOMEM, "out of memory");
		return NULL;
	}
	*len = fread(buf, 1, HF_CONFIG_MAX_BYTES + 1, f);
	fclose(f);
	if (*len > HF_CONFIG_MAX_BYTES) {
		free(buf);
		*rc = colloc_diag_set(diag, COLLOC_ELIMIT,
				      "%s: larger than %u bytes: not a config.json", path,
				      HF_CONFIG_MAX_BYTES);
		return NULL;
	}
	buf[*len] = '\0';
	return buf;
}

/* After loading: buffers that are not parameters, LoRA's frozen base. */
static void finish_graph(struct colloc_graph *g, const struct colloc_model_opts *o)
{
	/* inv_freq is a buffer (register_buffer), not a parameter */
	int t = colloc_graph_find_tensor(g, "model.rotary_emb.inv_freq");

	if (t >= 0)
		g->tensors[t].param_class = COLLOC_PARAM_BUFFER;
	if (o->trainable != COLLOC_TRAIN_LORA)
		return;
	/* everything but the adapters is frozen */
	for (int i = 0; i < g->n_tensors; i++) {
		struct colloc_tensor *x = &g->tensors[i];

		if (x->param_class == COLLOC_PARAM_TRAINABLE &&
		    !strstr(x->name, ".lora_A.") && !strstr(x->name, ".lora_B.")) {
			x->param_class = COLLOC_PARAM_BUFFER;
			x->frozen = true;
		}
	}
}

/* Emit and load the graph of c under o into *g; with segs, record each
 * layer's node range in segs[0..c->layers) and segs[c->layers..2 c->layers).
 * *lora_count gets the adapters made. */
static int build_graph(const struct hf_cfg *c, const struct colloc_model_opts *o,
		       struct colloc_model *m, const char *file, int *segs,
		       struct colloc_graph **g, int *lora_count, struct colloc_diag *diag)
{
	struct build b;
	int rc;

	memset(&b, 0, sizeof(b));
	colloc__arena_init(&b.e.a, 0);
	b.c = c;
	b.o = o;
	b.m = m;
	b.wdt = o->weight_dtype ? o->weight_dtype : COLLOC_DT_FLOAT;
	b.lora_rank = o->lora_rank ? o->lora_rank : 8;
	b.lora_scale =
		(o->lora_alpha > 0 ? o->lora_alpha : 2.0 * b.lora_rank) / b.lora_rank;
	/* peft's defaults (TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING) */
	b.targets = o->lora_targets && o->lora_targets[0] ? o->lora_targets
		    : c->family == FAM_GPT2		  ? "c_attn"
		    : c->family == FAM_BERT		  ? "query,value"
		    : c->family == FAM_T5		  ? "q,v"
							  : "q_proj,v_proj";
	if (segs) {
		b.seg_first = segs;
		b.seg_end = segs + c->layers + c->dec_layers;
	}
	{
		Onnx__TensorProto *t =
			em_tensor(&b.e, "/const/training",
				  ONNX__TENSOR_PROTO__DATA_TYPE__BOOL, NULL, 0);

		b.dropout_train = "/const/training";
		if (t && (t->int32_data = em_alloc(&b.e, sizeof(int32_t)))) {
			t->int32_data[0] = 1;
			t->n_int32_data = 1;
		}
	}
	if (c->family == FAM_GPT2)
		build_gpt2(&b);
	else if (c->family == FAM_OPT)
		build_opt(&b);
	else if (c->family == FAM_GPT_NEO)
		build_gpt_neo(&b);
	else if (c->family == FAM_BERT)
		build_bert(&b);
	else if (c->family == FAM_T5)
		build_t5(&b);
	else if (c->family == FAM_GPTJ)
		build_gptj(&b);
	else
		build_llama(&b);
	*lora_count = b.lora_count;
	if (b.e.failed)
		rc = colloc_diag_set(diag, -ENOMEM, "out of memory building %s", file);
	else if (o->trainable == COLLOC_TRAIN_LORA && b.lora_count == 0 && c->layers > 0)
		rc = colloc_diag_set(diag, COLLOC_EUSAGE,
				     "%s: --lora-targets '%s' names no linear layer of "
				     "this %s model",
				     file, b.targets, c->model_type);
	else
		rc = load_built(&b, g, file, diag);
	if (!rc)
		finish_graph(*g, o);
	if (!rc && o->trainable == COLLOC_TRAIN_LORA && c->layers > 0)
		colloc__model_note(m, "lora: r=%d, alpha %g, on %s: %d adapters",
				   b.lora_rank, b.lora_scale * b.lora_rank, b.targets,
				   b.lora_count);
	free(b.e.nodes);
	free(b.e.inits);
	colloc__arena_fini(&b.e.a);
	return rc;
}

int colloc__hf_build_buffer(const char *text, size_t len, const char *file,
			    const struct colloc_model_opts *o, struct colloc_model *m,
			    struct colloc_diag *diag)
{
	struct colloc__model_priv *mp = (struct colloc__model_priv *)m->priv_;
	struct hf_cfg c;
	int rc, lora_count = 0, *segs = NULL;
	int64_t blocks;

	if ((rc = parse_config(text, len, file, o, &c, diag)))
		return rc;
	/* the checkpointed blocks: the decoder's, or encoder's and decoder's */
	blocks = c.layers + c.dec_layers;
	if (c.family == FAM_T5 && o->attention != COLLOC_ATTN_EAGER)
		return colloc_diag_set(diag, COLLOC_EUNSUPPORTED,
				       "%s: t5 adds a learned position bias to the "
				       "scores: eager attention only (transformers "
				       "has no sdpa or flash attention for T5)",
				       file);
	if (c.family == FAM_GPTJ && o->attention != COLLOC_ATTN_EAGER)
		return colloc_diag_set(diag, COLLOC_EUNSUPPORTED,
				       "%s: gptj is built with eager attention only "
				       "(its float32 rotary q and k are not modelled "
				       "for the fused kernels)",
				       file);
	if (c.family == FAM_BERT && o->attention == COLLOC_ATTN_FLASH)
		return colloc_diag_set(diag, COLLOC_EUNSUPPORTED,
				       "%s: %s has no flash_attention_2 in "
				       "transformers: --attention eager or sdpa",
				       file, c.model_type);
	if (o->attention < 0 || o->attention >= COLLOC_ATTN_COUNT_)
		return colloc_diag_set(diag, COLLOC_EUSAGE,
				       "--attention wants eager, sdpa or flash");
	if (o->weight_dtype && o->weight_dtype != COLLOC_DT_FLOAT &&
	    o->weight_dtype != COLLOC_DT_BFLOAT16 && o->weight_dtype != COLLOC_DT_FLOAT16)
		return colloc_diag_set(diag, COLLOC_EUSAGE,
				       "weights must be float32, "
				       "bfloat16 or float16");
	if (o->lora_rank < 0 || o->lora_rank > HF_MAX_LORA_RANK || o->lora_alpha < 0)
		return colloc_diag_set(diag, COLLOC_EUSAGE,
				       "--lora-rank wants 1..%d and --lora-alpha a "
				       "non-negative number",
				       HF_MAX_LORA_RANK);
	/* the layers' node ranges: checkpoint regions, and the units
	 * ZeRO-3 / FSDP gather */
	segs = colloc__model_alloc(m, 2 * (size_t)blocks * sizeof(*segs) + 1);
	if (!segs)
		return colloc_diag_set(diag, -ENOMEM, "out of memory");
	rc = build_graph(&c, o, m, file, segs, &m->graph, &lora_count, diag);
	if (!rc) {
		mp->n_layers = (int)blocks;
		mp->layer_first = segs;
		mp->layer_end = segs + blocks;
	}
	if (!rc && o->gradient_checkpointing) {
		struct hf_cfg stem = c;
		int unused;

		stem.layers = stem.dec_layers = 0;
		mp->n_ckpt = (int)blocks;
		mp->ckpt_first = segs;
		mp->ckpt_end = segs + blocks;
		rc = build_graph(&stem, o, m, file, NULL, &mp->stem, &unused, diag);
		colloc__model_note(
			m,
			"gradient checkpointing: %lld layers recomputed in "
			"backward (torch.utils.checkpoint, use_reentrant=False)",
			(long long)blocks);
	}
	if (!rc) {
		m->family = c.model_type;
		/* roberta's first positions go to the padding index */
		m->max_seq = c.positions - c.pad_offset;
		m->loss = c.head == HEAD_SEQ_CLS && c.regression ? COLLOC_LOSS_MSE
			  : c.family == FAM_BERT || c.family == FAM_T5
				  ? COLLOC_LOSS_CROSS_ENTROPY
				  : COLLOC_LOSS_CAUSAL_LM;
		if (c.head == HEAD_SEQ_CLS)
			colloc__model_note(m,
					   "head: %s, %lld label%s (%s, dropout, "
					   "classifier on the first token; %s)",
					   c.pad_offset > 0
						   ? "RobertaForSequenceClassification"
						   : "BertForSequenceClassification",
					   (long long)c.labels, c.labels == 1 ? "" : "s",
					   c.pad_offset > 0 ? "dense, tanh" : "pooler",
					   c.regression ? "mse" : "cross-entropy");
		else if (c.arch_unbuilt[0])
			colloc__model_note(m, "architectures names %s: built as %s",
					   c.arch_unbuilt, hf_lm_class(&c));
		m->n_seq_dims = c.family == FAM_T5 ? 2 : 1;
		m->seq_dims[0] = colloc__model_strdup(m, "seq");
		m->seq_dims[1] =
			c.family == FAM_T5 ? colloc__model_strdup(m, "dec_seq") : NULL;
		if (!m->seq_dims[0] || (c.family == FAM_T5 && !m->seq_dims[1]))
			rc = colloc_diag_set(diag, -ENOMEM, "out of memory");
		if (o->weight_dtype && o->weight_dtype != COLLOC_DT_FLOAT)
			colloc__model_note(m, "weights and activations in %s",
					   colloc_dtype_name(o->weight_dtype));
		if (o->attention == COLLOC_ATTN_SDPA)
			colloc__model_note(m,
					   "attention: sdpa (F.scaled_dot_product_"
					   "attention%s): q, k, v, output and "
					   "log-sum-exp saved, no [T, T] matrix",
					   c.family == FAM_BERT ? "" : ", is_causal");
		else if (o->attention == COLLOC_ATTN_FLASH)
			colloc__model_note(m, "attention: flash_attention_2 (flash_attn_"
					      "func, causal): q, k, v, output and "
					      "log-sum-exp saved, no [T, T] matrix");
	}
	return rc;
}

int colloc__hf_open(const char *spec, const struct colloc_model_opts *o,
		    struct colloc_model *m, struct colloc_diag *diag)
{
	char path[4096];
	size_t len = 0;
	int rc = 0;
	char *text = read_config(spec, path, sizeof(path), &len, diag, &rc);

	if (!text)
		return rc;
	m->path = colloc__model_strdup(m, path);
	rc = m->path ? colloc__hf_build_buffer(text, len, path, o, m, diag)
		     : colloc_diag_set(diag, -ENOMEM, "out of memory");
	free(text);
	return rc;
}
