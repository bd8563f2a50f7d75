/*
 * train_args.c — the training set-up of a MODEL as `colloc estimate` and
 * `colloc submit --model` take it (cli.h, CLI_TRAIN_OPTIONS): one parser,
 * so that both commands accept the same options with the same checks, and
 * one writer, so that submit's history key names what was estimated.
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "colloc/estimate.h"
#include "colloc/model.h"
#include "colloc/units.h"

static void given(struct cli_train *t, int code)
{
	t->given |= 1u << (code - CLI_OPT_SEQ);
}

int cli_train_option(struct cli_train *t, int code, const char *arg)
{
	struct colloc_model_opts *mo = t->mo;
	struct colloc_estimate_opts *eo = t->eo;
	uint64_t v;

	switch (code) {
	case CLI_OPT_SEQ:
		if (cli_parse_seq(arg, t->dims))
			return CLI_USAGE;
		break;
	case CLI_OPT_TRAINABLE:
		if ((mo->trainable = colloc_trainable_parse(arg)) < 0) {
			cli_error("--trainable wants all, none or lora, not '%s'", arg);
			return CLI_USAGE;
		}
		break;
	case CLI_OPT_LORA_RANK:
		if (colloc_parse_u64(arg, 65536, &v) || v == 0) {
			cli_error("--lora-rank wants 1..65536, not '%s'", arg);
			return CLI_USAGE;
		}
		mo->lora_rank = (int)v;
		break;
	case CLI_OPT_LORA_ALPHA:
		if (cli_parse_nonneg(arg, 1e6, &mo->lora_alpha)) {
			cli_error("--lora-alpha wants a number from 0 to 1e6, not '%s'",
				  arg);
			return CLI_USAGE;
		}
		break;
	case CLI_OPT_LORA_TARGETS:
		mo->lora_targets = arg;
		break;
	case CLI_OPT_FREEZE:
		mo->freeze = arg;
		break;
	case CLI_OPT_CHECKPOINTING:
		mo->gradient_checkpointing = true;
		break;
	case CLI_OPT_ATTENTION:
		if ((mo->attention = colloc_attention_parse(arg)) < 0) {
			cli_error("--attention wants eager, sdpa or flash, not '%s'",
				  arg);
			return CLI_USAGE;
		}
		break;
	case CLI_OPT_ARCHITECTURE:
		mo->architecture = arg;
		break;
	case CLI_OPT_NUM_LABELS:
		if (colloc_parse_u64(arg, 1u << 24, &v) || v == 0) {
			cli_error("--num-labels wants 1..%u, not '%s'", 1u << 24, arg);
			return CLI_USAGE;
		}
		mo->num_labels = (int)v;
		break;
	case CLI_OPT_KEEP_GRADS:
		eo->keep_grads = true;
		break;
	case CLI_OPT_GRAD_ACCUM:
		if (colloc_parse_u64(arg, COLLOC_GRAD_ACCUM_MAX, &v) || v == 0) {
			cli_error("--grad-accum wants 1..%d micro-batches, not '%s'",
				  COLLOC_GRAD_ACCUM_MAX, arg);
			return CLI_USAGE;
		}
		eo->grad_accum = (int)v;
		break;
	case CLI_OPT_QUANT_BLOCK:
		if (colloc_parse_u64(arg, 1u << 30, &v) || v == 0) {
			cli_error("--quant-block wants 1..%u elements, not '%s'",
				  1u << 30, arg);
			return CLI_USAGE;
		}
		eo->quant_block_elems = (int)v;
		break;
	case CLI_OPT_PARALLEL:
		if ((eo->parallel = colloc_parallel_parse(arg)) < 0) {
			cli_error("--parallel wants none, ddp, zero1, zero2, zero3 or "
				  "fsdp, "
				  "not '%s'",
				  arg);
			return CLI_USAGE;
		}
		break;
	default:
		return 1;
	}
	given(t, code);
	return CLI_OK;
}

int cli_train_precision(struct cli_train *t, const char *arg)
{
	/* bf16 / fp16: weights stored in half precision, no autocast
	 * (torch_dtype=..., plain training) */
	if (strcmp(arg, "bf16") == 0 || strcmp(arg, "fp16") == 0) {
		t->mo->weight_dtype =
			arg[0] == 'b' ? COLLOC_DT_BFLOAT16 : COLLOC_DT_FLOAT16;
		t->eo->precision = COLLOC_PREC_FP32;
		t->precision_name = arg[0] == 'b' ? "bf16" : "fp16";
		return CLI_OK;
	}
	t->mo->weight_dtype = 0;
	t->precision_name = NULL;
	return cli_parse_precision(arg, t->eo);
}

const char *cli_train_precision_name(const struct cli_train *t)
{
	return t->precision_name ? t->precision_name
				 : colloc_precision_name(t->eo->precision);
}

static bool has(const struct cli_train *t, int code)
{
	return t->given & 1u << (code - CLI_OPT_SEQ);
}

/* The value of option code as the history key writes it after the name
 * (nothing for a flag). */
static bool append_value(const struct cli_train *t, int code, char *buf, size_t len,
			 size_t *pos)
{
	const struct colloc_model_opts *mo = t->mo;
	const struct colloc_estimate_opts *eo = t->eo;

	switch (code) {
	case CLI_OPT_SEQ:
		return cli_appendf(buf, len, pos, " %lld", (long long)t->dims->seq);
	case CLI_OPT_TRAINABLE:
		return cli_appendf(buf, len, pos, " %s",
				   colloc_trainable_name(mo->trainable));
	case CLI_OPT_LORA_RANK:
		return cli_appendf(buf, len, pos, " %d", mo->lora_rank);
	case CLI_OPT_LORA_ALPHA:
		return cli_appendf(buf, len, pos, " %g", mo->lora_alpha);
	case CLI_OPT_LORA_TARGETS:
		return cli_appendf(buf, len, pos, " %s", mo->lora_targets);
	case CLI_OPT_FREEZE:
		return cli_appendf(buf, len, pos, " %s", mo->freeze);
	case CLI_OPT_ATTENTION:
		return cli_appendf(buf, len, pos, " %s",
				   colloc_attention_name(mo->attention));
	case CLI_OPT_ARCHITECTURE:
		return cli_appendf(buf, len, pos, " %s", mo->architecture);
	case CLI_OPT_NUM_LABELS:
		return cli_appendf(buf, len, pos, " %d", mo->num_labels);
	case CLI_OPT_GRAD_ACCUM:
		return cli_appendf(buf, len, pos, " %d", eo->grad_accum);
	case CLI_OPT_QUANT_BLOCK:
		return cli_appendf(buf, len, pos, " %d", eo->quant_block_elems);
	case CLI_OPT_PARALLEL:
		return cli_appendf(buf, len, pos, " %s",
				   colloc_parallel_name(eo->parallel));
	default:
		return true; /* --gradient-checkpointing, --keep-grads */
	}
}

bool cli_train_text(const struct cli_train *t, char *buf, size_t len, size_t *pos)
{
	/* the names and their order: the getopt table itself */
	static const struct option opts[] = {CLI_TRAIN_OPTIONS};
	bool ok = true;

	for (size_t k = 0; ok && k < sizeof(opts) / sizeof(opts[0]); k++)
		if (has(t, opts[k].val))
			ok = cli_appendf(buf, len, pos, " --%s", opts[k].name) &&
			     append_value(t, opts[k].val, buf, len, pos);
	return ok;
}
