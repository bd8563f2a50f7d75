/*
 * model_int.h — what the front door (model.c) and the Hugging Face
 * configuration builder (hf.c) share. Not part of the public API.
 */
#ifndef COLLOC_MODEL_INT_H
#define COLLOC_MODEL_INT_H

#include "colloc/model.h"
#include "common/arena.h"

/* Storage behind struct colloc_model.priv_. */
struct colloc__model_priv {
	struct colloc__arena arena; /* name, path, dims, notes, regions */
	/* --gradient-checkpointing: one region per decoder layer, graph
	 * nodes [ckpt_first[i], ckpt_end[i]) (arena); n_ckpt 0 = none. */
	int n_ckpt;
	int *ckpt_first, *ckpt_end;
	/* Hugging Face configurations: every transformer layer's node range
	 * (as ckpt_*, recorded with or without checkpointing): the units
	 * ZeRO-3 and FSDP gather. n_layers 0 = unknown. */
	int n_layers;
	int *layer_first, *layer_end;
	/* With checkpointing, the same model without its layers (owned),
	 * inferred beside graph: the step time's recomputation is the
	 * difference of their forward passes. */
	struct colloc_graph *stem;
};

/* n bytes of m's arena (zeroed), or NULL when out of memory. */
void *colloc__model_alloc(struct colloc_model *m, size_t n);

/* A copy of s in m's arena, or NULL when out of memory. */
const char *colloc__model_strdup(struct colloc_model *m, const char *s);

/* Append a printf-formatted note to m->notes (dropped when full). */
void colloc__model_note(struct colloc_model *m, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/*
 * Build m->graph from the Hugging Face configuration named by spec (the
 * text after "hf:": a config.json, or a directory holding one) under o,
 * and fill m's family, sequence dims, defaults and max_seq (hf.c). Returns
 * 0 or a negative code with the reason in diag.
 */
int colloc__hf_open(const char *spec, const struct colloc_model_opts *o,
		    struct colloc_model *m, struct colloc_diag *diag);

/* colloc__hf_open() on the text of a config.json (file names it in
 * messages); what the fuzz target drives. */
int colloc__hf_build_buffer(const char *text, size_t len, const char *file,
			    const struct colloc_model_opts *o, struct colloc_model *m,
			    struct colloc_diag *diag);

/* colloc_model_open() of a configuration held in memory (the fuzz target's
 * way in; text need not be NUL-terminated). */
int colloc__model_open_hf_text(const char *text, size_t len,
			       const struct colloc_model_opts *opts,
			       struct colloc_model **out, struct colloc_diag *diag);

/*
 * Mark the trainable parameters of g whose names contain one of the
 * comma-separated patterns (NULL: all of them, for --trainable none) as
 * frozen. *matched counts the parameters frozen. Returns 0, or
 * COLLOC_EUSAGE naming a pattern that matches no parameter.
 */
int colloc__model_freeze(struct colloc_graph *g, const char *patterns, int *matched,
			 struct colloc_diag *diag);

#endif
