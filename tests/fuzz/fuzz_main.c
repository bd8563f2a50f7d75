/*
 * fuzz_main.c — run a libFuzzer target without libFuzzer.
 *
 * Calls LLVMFuzzerTestOneInput once per file named on the command line;
 * a directory stands for the regular files in it (not recursive, in name
 * order so that runs are repeatable). This is how CTest replays the corpus
 * under ASan/UBSan in ordinary builds, with any compiler. Exits 0 when every
 * input ran (the target returning at all is the test); 2 on usage or I/O
 * errors, or when there was no input at all. A sanitizer report aborts the
 * process on its own.
 */
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Inputs larger than this are a corpus mistake, not a test. */
#define REPLAY_MAX_BYTES ((long)64 << 20)

static int run_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf;
	long len;
	size_t got;

	if (!f) {
		fprintf(stderr, "%s: %s\n", path, strerror(errno));
		return -1;
	}
	if (fseek(f, 0, SEEK_END) != 0 || (len = ftell(f)) < 0 ||
	    len > REPLAY_MAX_BYTES || fseek(f, 0, SEEK_SET) != 0) {
		fprintf(stderr, "%s: cannot size the file\n", path);
		fclose(f);
		return -1;
	}
	/* An exact-size heap copy, so that ASan catches reads past the end. */
	buf = malloc(len ? (size_t)len : 1);
	if (!buf) {
		fclose(f);
		fprintf(stderr, "%s: out of memory\n", path);
		return -1;
	}
	got = fread(buf, 1, (size_t)len, f);
	fclose(f);
	if (got != (size_t)len) {
		fprintf(stderr, "%s: short read\n", path);
		free(buf);
		return -1;
	}
	LLVMFuzzerTestOneInput(buf, got);
	free(buf);
	return 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Run every regular file in dir; returns the number run, or -1. */
static int run_dir(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char **names = NULL;
	size_t n = 0, cap = 0;
	int ran = 0, rc = 0;

	if (!d) {
		fprintf(stderr, "%s: %s\n", dir, strerror(errno));
		return -1;
	}
	while ((e = readdir(d)) != NULL) {
		size_t len = strlen(dir) + strlen(e->d_name) + 2;
		struct stat st;
		char *p;

		if (e->d_name[0] == '.')
			continue;
		p = malloc(len);
		if (!p) {
			rc = -1;
			break;
		}
		snprintf(p, len, "%s/%s", dir, e->d_name);
		if (stat(p, &st) != 0 || !S_ISREG(st.st_mode)) {
			free(p);
			continue;
		}
		if (n == cap) {
			size_t ncap = cap ? 2 * cap : 64;
			char **nn = realloc(names, ncap * sizeof(*nn));

			if (!nn) {
				free(p);
				rc = -1;
				break;
			}
			names = nn;
			cap = ncap;
		}
		names[n++] = p;
	}
	closedir(d);
	if (n)
		qsort(names, n, sizeof(*names), cmp_str);
	for (size_t k = 0; k < n; k++) {
		if (rc == 0) {
			if (run_file(names[k]) != 0)
				rc = -1;
			else
				ran++;
		}
		free(names[k]);
	}
	free(names);
	return rc ? -1 : ran;
}

int main(int argc, char **argv)
{
	int total = 0;

	if (argc < 2) {
		fprintf(stderr, "usage: %s FILE|DIR...\n", argv[0]);
		return 2;
	}
	for (int i = 1; i < argc; i++) {
		struct stat st;
		int n;

		if (stat(argv[i], &st) != 0) {
			fprintf(stderr, "%s: %s\n", argv[i], strerror(errno));
			return 2;
		}
		if (S_ISDIR(st.st_mode)) {
			n = run_dir(argv[i]);
		} else {
			n = run_file(argv[i]) == 0 ? 1 : -1;
		}
		if (n < 0)
			return 2;
		total += n;
	}
	printf("ran %d inputs\n", total);
	if (total == 0) {
		/* an empty corpus is a broken test, not a passing one */
		fprintf(stderr, "no inputs found\n");
		return 2;
	}
	return 0;
}
