/*
 * files.h — small directory helpers shared by the zoo and platform lookups
 * and by collocd (internal to libcolloc; not part of include/).
 */
#ifndef COLLOC_FILES_H
#define COLLOC_FILES_H

#include <sys/types.h>

struct colloc_diag;

/*
 * List the files of dir whose names end in suffix (".onnx"), as malloc'd
 * stems (the name without the suffix), sorted, into names[0..cap). Returns
 * how many there are (which may exceed cap) or a negated errno; on error
 * nothing is left allocated.
 */
int colloc__list_stems(const char *dir, const char *suffix, char **names, int cap);

/*
 * mkdir -p: create path and any missing parents. Parents are made 0755, the
 * last component with mode (0700 for a private directory); directories that
 * exist already are left as they are, whatever their mode. path must be
 * non-empty and shorter than 4096 bytes. Returns 0, COLLOC_ELIMIT for a bad
 * path, or a negated errno with "cannot create DIR: reason" in diag (which
 * may be NULL). Directories made before a failure stay.
 */
int colloc__mkdir_p(const char *path, mode_t mode, struct colloc_diag *diag);

#endif
