/*
 * fuzz_hf.c — libFuzzer target for Hugging Face configurations
 * (src/model/hf.c through colloc__model_open_hf_text): any bytes must give
 * a model whose graph infers at a small batch and sequence, or a clear
 * error, never a crash. The first byte picks the options (LoRA, bf16
 * weights) so that every builder path is reached.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "colloc/model.h"
#include "model/model_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct colloc_model_opts o = {0};
	struct colloc_model *m = NULL;
	struct colloc_diag diag = {{0}};
	struct colloc_model_dims d = {2, 8, NULL, 0, false};

	if (size < 1)
		return 0;
	o.trainable = data[0] & 1 ? COLLOC_TRAIN_LORA : COLLOC_TRAIN_ALL;
	o.weight_dtype = data[0] & 2 ? COLLOC_DT_BFLOAT16 : 0;
	if (colloc__model_open_hf_text((const char *)data + 1, size - 1, &o, &m, &diag)) {
		if (diag.msg[0] == '\0')
			abort(); /* every failure explains itself */
		return 0;
	}
	/* Sizes from a hostile file may be huge; inferring is still bounded
	 * (shapes are checked for overflow), estimating is not attempted. */
	if (m->graph->n_nodes < 20000 && colloc_model_infer(m, &d, &diag) && !diag.msg[0])
		abort();
	colloc_model_destroy(m);
	return 0;
}
