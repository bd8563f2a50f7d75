/*
 * files.h — small directory helpers shared by the zoo and platform lookups
 * and by collocd (internal to libcolloc; not part of include/).
 */
#ifndef COLLOC_FILES_H
#define COLLOC_FILES_H

#include <stdbool.h>
#include <sys/types.h>

struct colloc_diag;

/*
 * List the files of dir whose names end in suffix (".onnx"), as malloc'd
 * stems (the name without the suffix), sorted, into names[0..cap). Returns
 * how many there are (which may exceed cap) or a negated errno; on error
 * nothing is left allocated. A suffix starting with '/' ("/config.json")
 * lists instead the subdirectories that hold a readable file of that name,
 * by their whole names.
 */
int colloc__list_stems(const char *dir, const char *suffix, char **names, int cap);

/*
 * Whether s can name a file bundled in the data directory (a zoo model, a
 * Hugging Face configuration): 1 to 128 of [A-Za-z0-9._-], not starting
 * with a dot, so no path separator and no "..".
 */
bool colloc__bundled_name_ok(const char *s);

/*
 * mkdir -p: create path and any missing parents. Parents are made 0755, the
 * last component with mode (0700 for a private directory); directories that
 * exist already are left as they are, whatever their mode. path must be
 * non-empty and shorter than 4096 bytes. Returns 0, COLLOC_ELIMIT for a bad
 * path, or a negated errno with "cannot create DIR: reason" in diag (which
 * may be NULL). Directories made before a failure stay.
 */
int colloc__mkdir_p(const char *path, mode_t mode, struct colloc_diag *diag);

/* What colloc__check_owned() accepts. */
enum colloc_owned {
	COLLOC_OWNED_DIR, /* a directory (not a link) */
	COLLOC_OWNED_FILE, /* a regular file (not a link); absent is fine */
	COLLOC_OWNED_SOCKET_DIR, /* a directory; root's is fine too, and one
				  * others may write only when sticky */
};

/*
 * Refuse a path another user could tamper with: it must be of the kind
 * asked, owned by uid, and writable by nobody else (group or others). For a
 * socket's directory, root-owned ones (/run) and sticky world-writable ones
 * (/tmp: nobody can replace another's entry there) are fine. Returns 0, or
 * COLLOC_EUSAGE / a negated errno with a message that names the path, its
 * owner and mode and what to do about it.
 */
int colloc__check_owned(const char *path, enum colloc_owned kind, uid_t uid,
			struct colloc_diag *diag);

#endif
