/*
 * colloc/zoo.h — find bundled model graphs and data files by name.
 *
 * colloc ships graph-only ONNX files in data/zoo/. A command that takes a
 * MODEL accepts a path or a zoo name; this module turns the name into a path.
 * The data directory is, in order: $COLLOC_DATA_DIR; the source tree's
 * data/ when the running binary lies in the build tree it was configured in;
 * share/colloc beside the binary's prefix (PREFIX/bin/colloc reads
 * PREFIX/share/colloc, wherever `cmake --install --prefix` put it); and the
 * configure-time install path.
 */
#ifndef COLLOC_ZOO_H
#define COLLOC_ZOO_H

#include <stddef.h>

#include "colloc/error.h"

/*
 * Resolve model into a readable file path in buf[0..len). A model that
 * names an existing file, or contains '/' or ends in ".onnx", is taken as a
 * path. Otherwise it must be a zoo name made of [A-Za-z0-9_.-]. Returns 0,
 * or COLLOC_ENOTFOUND with a message listing where it looked.
 */
int colloc_zoo_resolve(const char *model, char *buf, size_t len,
		       struct colloc_diag *diag);

/* The data directory in use (see above); never NULL. */
const char *colloc_data_dir(void);

/*
 * List zoo model names (files data/zoo/NAME.onnx), sorted, into names[0..cap)
 * as malloc'd strings the caller frees; returns the count found (which may
 * exceed cap) or a negative code.
 */
int colloc_zoo_list(char **names, size_t cap);

/*
 * List the bundled Hugging Face configurations (data/hf/NAME/config.json,
 * opened as colloc_model_open("hf:NAME")) the same way.
 */
int colloc_hf_list(char **names, size_t cap);

#endif
