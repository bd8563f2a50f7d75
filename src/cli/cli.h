/*
 * cli.h — shared by the colloc subcommands (src/cli/). Each subcommand is a
 * function taking the arguments after its name and returning the process
 * exit status; main.c only dispatches.
 */
#ifndef COLLOC_CLI_H
#define COLLOC_CLI_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "colloc/shape.h"

/* Exit statuses, documented in `colloc --help`, docs/cli.md and
 * docs/cli-jobs.md. `colloc wait` also exits with its job's status. */
enum {
	CLI_OK = 0,
	CLI_ERROR = 1, /* the command ran and failed (bad model, refused, ...) */
	CLI_USAGE = 2, /* the command line was wrong */
	CLI_UNREACHABLE = 3, /* collocd could not be reached or did not answer */
	CLI_TIMEOUT = 124, /* `colloc wait --timeout` ran out (as timeout(1)) */
};

#define CLI_MAX_DIMS 32

/* Symbolic-dimension options shared by commands that take a MODEL. */
struct cli_dims {
	int64_t batch; /* 0 when not given */
	int64_t seq; /* --seq: every sequence dim of the model; 0 = none */
	struct colloc_binding dims[CLI_MAX_DIMS];
	size_t n_dims;
};

/* Append printf output to buf at *pos; false when it no longer fits. */
bool cli_appendf(char *buf, size_t len, size_t *pos, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* Print "colloc: error: ..." to stderr. */
void cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Parse "--batch N" values and "--dim NAME=VALUE" into d; return 0 or
 * CLI_USAGE after printing why. */
int cli_parse_batch(const char *arg, struct cli_dims *d);
int cli_parse_dim(char *arg, struct cli_dims *d);
/* "--seq N": every sequence dim of the model (colloc/model.h). */
int cli_parse_seq(const char *arg, struct cli_dims *d);

/* Parse --optimizer, --precision and --loss values into o; return 0 or
 * CLI_USAGE after printing why. */
struct colloc_estimate_opts;
int cli_parse_optimizer(const char *arg, struct colloc_estimate_opts *o);
int cli_parse_precision(const char *arg, struct colloc_estimate_opts *o);
/* --safety point|bound: which peak memory decisions trust. */
int cli_parse_safety(const char *arg, struct colloc_estimate_opts *o);
/* `colloc estimate --calibrate CSV --platform BASE [--out FILE]`
 * (cmd_calibrate.c): returns the exit status. */
int cli_calibrate(const char *csv, const char *platform, const char *out_path,
		  bool subtracted, const struct colloc_estimate_opts *opts);
int cli_parse_loss(const char *arg, struct colloc_estimate_opts *o);

/*
 * Estimating a MODEL, shared by `colloc estimate` and `colloc submit --model`
 * so that both give the same figure (cmd_estimate.c). Each returns an exit
 * status after printing why it failed, except cli_estimate_at(), which
 * returns a colloc error code with diag set for cli_estimate_error().
 */
struct colloc_estimate;
struct colloc_graph;
struct colloc_model;
struct colloc_model_opts;
struct colloc_platform;
struct colloc_diag;
/* The profile named name (NULL: the built-in one) into p; CLI_OK or CLI_USAGE. */
int cli_platform_load(const char *name, struct colloc_platform *p);
/* model (an .onnx file, a zoo name or hf:CONFIG) opened under mo (NULL:
 * defaults) into *m, which the caller destroys (colloc/model.h); CLI_OK,
 * CLI_USAGE for options that do not apply to it, or CLI_ERROR. */
int cli_model_open(const char *model, const struct colloc_model_opts *mo,
		   struct colloc_model **m);
/* The loss to estimate m with: the one the user named (named), or else the
 * model's own (causal-lm for a configuration's decoder, cross-entropy for
 * ONNX and zoo graphs), into o->loss. estimate, submit and --calibrate alike. */
void cli_model_loss(const struct colloc_model *m, bool named,
		    struct colloc_estimate_opts *o);
/* Infer m at batch with d's seq and named dims (the model's defaults for
 * the rest), then estimate training under opts (colloc_estimate_model). */
int cli_estimate_at(struct colloc_model *m, const struct cli_dims *d, int64_t batch,
		    const struct colloc_estimate_opts *opts, struct colloc_estimate *e,
		    struct colloc_diag *diag);
/* Print "MODEL: why" for cli_estimate_at()'s failure rc; CLI_USAGE when the
 * command line could fix it (a dim left unbound), else CLI_ERROR. */
int cli_estimate_error(const char *model, int rc, const struct colloc_diag *diag);

/*
 * The training set-up of a MODEL beyond batch, optimizer, precision and
 * loss, shared by `colloc estimate` and `colloc submit --model`
 * (train_args.c): CLI_TRAIN_OPTIONS in a command's getopt_long table (it
 * needs <getopt.h>), each option's code handed to cli_train_option(), which
 * fills t's dims (--seq), model options and estimator options and returns 1
 * for a code that is none of them, CLI_OK, or CLI_USAGE after printing
 * why. cli_train_text() appends the options given, in a fixed order
 * (" --seq 512 --trainable lora"), at buf + *pos; false when they do not fit.
 */
enum {
	CLI_OPT_SEQ = 0x100, /* the first; codes no letter can take */
	CLI_OPT_TRAINABLE,
	CLI_OPT_LORA_RANK,
	CLI_OPT_LORA_ALPHA,
	CLI_OPT_LORA_TARGETS,
	CLI_OPT_FREEZE,
	CLI_OPT_CHECKPOINTING,
	CLI_OPT_ATTENTION,
	CLI_OPT_ARCHITECTURE,
	CLI_OPT_NUM_LABELS,
	CLI_OPT_KEEP_GRADS,
	CLI_OPT_GRAD_ACCUM,
	CLI_OPT_QUANT_BLOCK,
	CLI_OPT_PARALLEL,
};
#define CLI_TRAIN_OPTIONS                                                             \
	{"seq", required_argument, NULL, CLI_OPT_SEQ},                                \
		{"trainable", required_argument, NULL, CLI_OPT_TRAINABLE},            \
		{"lora-rank", required_argument, NULL, CLI_OPT_LORA_RANK},            \
		{"lora-alpha", required_argument, NULL, CLI_OPT_LORA_ALPHA},          \
		{"lora-targets", required_argument, NULL, CLI_OPT_LORA_TARGETS},      \
		{"freeze", required_argument, NULL, CLI_OPT_FREEZE},                  \
		{"gradient-checkpointing", no_argument, NULL, CLI_OPT_CHECKPOINTING}, \
		{"attention", required_argument, NULL, CLI_OPT_ATTENTION},            \
		{"architecture", required_argument, NULL, CLI_OPT_ARCHITECTURE},      \
		{"num-labels", required_argument, NULL, CLI_OPT_NUM_LABELS},          \
		{"keep-grads", no_argument, NULL, CLI_OPT_KEEP_GRADS},                \
		{"grad-accum", required_argument, NULL, CLI_OPT_GRAD_ACCUM},          \
		{"quant-block", required_argument, NULL, CLI_OPT_QUANT_BLOCK},        \
	{                                                                             \
		"parallel", required_argument, NULL, CLI_OPT_PARALLEL                 \
	}
struct cli_train {
	struct cli_dims *dims;
	struct colloc_model_opts *mo;
	struct colloc_estimate_opts *eo;
	unsigned given; /* bit (code - CLI_OPT_SEQ) of each option given */
	const char *precision_name; /* "bf16", "fp16": half weights, or NULL */
};
int cli_train_option(struct cli_train *t, int code, const char *arg);
/* --precision fp32|tf32|amp-fp16|amp-bf16 (autocast), or bf16|fp16: weights
 * stored in half precision without autocast (hf: models); CLI_OK or
 * CLI_USAGE after printing why. The name as given back: */
int cli_train_precision(struct cli_train *t, const char *arg);
const char *cli_train_precision_name(const struct cli_train *t);
bool cli_train_text(const struct cli_train *t, char *buf, size_t len, size_t *pos);

/* A number in [0, max] (no units); 0 or CLI_USAGE without printing. */
int cli_parse_nonneg(const char *arg, double max, double *out);

/*
 * Step time and utilization of g, already inferred at batch, under the
 * estimator's options (precision, optimizer, loss, platform) and po's host
 * costs; a colloc error code with diag set on failure. Printing as
 * `colloc estimate` does: fields added to JSON object r, or text; error
 * (non-NULL) says why there is no prediction.
 */
struct colloc_perf;
struct colloc_perf_opts;
struct cJSON;
int cli_perf_at(struct colloc_graph *g, int64_t batch,
		const struct colloc_estimate_opts *eo, struct colloc_perf_opts *po,
		struct colloc_perf *out, struct colloc_diag *diag);
void cli_perf_json(struct cJSON *r, const struct colloc_perf *p, const char *error,
		   bool explain);
void cli_perf_print(const struct colloc_perf *p, const char *error, bool explain);

/* Milliseconds of the monotonic clock (waits and refresh intervals). */
uint64_t cli_mono_ms(void);

/* Elapsed seconds s as squeue writes them: M:SS, H:MM:SS, D-HH:MM:SS, into
 * buf; "-" (not buf) when s is negative, NaN or absurdly large. */
const char *cli_fmt_elapsed(double s, char *buf, size_t len);

/* Exact JSON integers (cJSON numbers are doubles, exact only to 2^53). */
struct cJSON;
struct cJSON *cli_json_u64(uint64_t v);
struct cJSON *cli_json_i64(int64_t v);

int cmd_inspect(int argc, char **argv);
int cmd_estimate(int argc, char **argv);
int cmd_sim(int argc, char **argv);
int cmd_ops(int argc, char **argv);
int cmd_gpus(int argc, char **argv);
/* cmd_slurm.c: gres.conf / slurm.conf lines for Slurm shards (docs/slurm.md). */
int cmd_slurm_gres(int argc, char **argv);

/* Clients of collocd, one file each (cmd_submit.c, cmd_queue.c, ...; their
 * shared skeleton in jobs_common.h; docs/cli-jobs.md). */
int cmd_submit(int argc, char **argv);
int cmd_queue(int argc, char **argv);
int cmd_show(int argc, char **argv);
int cmd_cancel(int argc, char **argv);
int cmd_logs(int argc, char **argv);
int cmd_wait(int argc, char **argv);
int cmd_stats(int argc, char **argv);
int cmd_hold(int argc, char **argv); /* cmd_hold.c */
int cmd_release(int argc, char **argv); /* cmd_hold.c */
int cmd_requeue(int argc, char **argv);
int cmd_update(int argc, char **argv);
int cmd_history(int argc, char **argv);
int cmd_top(int argc, char **argv); /* cmd_top.c: live ncurses view */

#endif
