/*
 * files.h — small directory helpers shared by the zoo and platform lookups
 * (internal to libcolloc).
 */
#ifndef COLLOC_FILES_H
#define COLLOC_FILES_H

/*
 * List the files of dir whose names end in suffix (".onnx"), as malloc'd
 * stems (the name without the suffix), sorted, into names[0..cap). Returns
 * how many there are (which may exceed cap) or a negated errno; on error
 * nothing is left allocated.
 */
int colloc__list_stems(const char *dir, const char *suffix, char **names, int cap);

#endif
