/*
 * train_args.c — the training set-up of a MODEL as `colloc estimate` and
 * `colloc submit --model` take it (cli.h, CLI_TRAIN_OPTIONS): one parser,
 * so that both commands accept the same options with the same checks, and
 * one writer, so that submit's history key names what was estimated.
 */
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

bool cli_train_text(const struct cli_train *t, char *buf, size_t len, size_t *pos)
{
	const struct colloc_model_opts *mo = t->mo;
	const struct colloc_estimate_opts *eo = t->eo;
	bool ok = true;

	if (has(t, CLI_OPT_SEQ))
		ok = cli_appendf(buf, len, pos, " --seq %lld", (long long)t->dims->seq);
	if (ok && has(t, CLI_OPT_TRAINABLE))
		ok = cli_appendf(buf, len, pos, " --trainable %s",
				 colloc_trainable_name(mo->trainable));
	if (ok && has(t, CLI_OPT_LORA_RANK))
		ok = cli_appendf(buf, len, pos, " --lora-rank %d", mo->lora_rank);
	if (ok && has(t, CLI_OPT_LORA_ALPHA))
		ok = cli_appendf(buf, len, pos, " --lora-alpha %g", mo->lora_alpha);
	if (ok && has(t, CLI_OPT_LORA_TARGETS))
		ok = cli_appendf(buf, len, pos, " --lora-targets %s", mo->lora_targets);
	if (ok && has(t, CLI_OPT_FREEZE))
		ok = cli_appendf(buf, len, pos, " --freeze %s", mo->freeze);
	if (ok && has(t, CLI_OPT_CHECKPOINTING))
		ok = cli_appendf(buf, len, pos, " --gradient-checkpointing");
	if (ok && has(t, CLI_OPT_ATTENTION))
		ok = cli_appendf(buf, len, pos, " --attention %s",
				 colloc_attention_name(mo->attention));
	if (ok && has(t, CLI_OPT_ARCHITECTURE))
		ok = cli_appendf(buf, len, pos, " --architecture %s", mo->architecture);
	if (ok && has(t, CLI_OPT_NUM_LABELS))
		ok = cli_appendf(buf, len, pos, " --num-labels %d", mo->num_labels);
	if (ok && has(t, CLI_OPT_KEEP_GRADS))
		ok = cli_appendf(buf, len, pos, " --keep-grads");
	if (ok && has(t, CLI_OPT_GRAD_ACCUM))
		ok = cli_appendf(buf, len, pos, " --grad-accum %d", eo->grad_accum);
	if (ok && has(t, CLI_OPT_QUANT_BLOCK))
		ok = cli_appendf(buf, len, pos, " --quant-block %d",
				 eo->quant_block_elems);
	if (ok && has(t, CLI_OPT_PARALLEL))
		ok = cli_appendf(buf, len, pos, " --parallel %s",
				 colloc_parallel_name(eo->parallel));
	return ok;
}
