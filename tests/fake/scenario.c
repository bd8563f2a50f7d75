/*
 * scenario.c — parse a fake GPU scenario (README.md) and answer the fakes'
 * questions about it: which step a call is at, which error is scripted,
 * which figures hold. Test code: it prints what is wrong with a script.
 */
#include "scenario.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_TOKENS 40
#define LINE_MAX_LEN 1024

struct parse {
	const char *path;
	unsigned line;
	char *tok[MAX_TOKENS];
	unsigned n;
};

static int bad(const struct parse *p, const char *what, const char *arg)
{
	fprintf(stderr, "%s:%u: %s%s%s\n", p->path, p->line, what, arg ? ": " : "",
		arg ? arg : "");
	return -1;
}

/* Split line in place: blanks separate, "..." quotes, '#' comments. */
static int tokenize(struct parse *p, char *line)
{
	char *s = line;

	p->n = 0;
	for (;;) {
		while (*s == ' ' || *s == '\t' || *s == '\r' || *s == '\n')
			s++;
		if (!*s || *s == '#')
			return 0;
		if (p->n == MAX_TOKENS)
			return bad(p, "too many words", NULL);
		if (*s == '"') {
			char *end = strchr(s + 1, '"');

			if (!end)
				return bad(p, "unterminated quote", NULL);
			*end = '\0';
			p->tok[p->n++] = s + 1;
			s = end + 1;
			continue;
		}
		p->tok[p->n++] = s;
		while (*s && *s != ' ' && *s != '\t' && *s != '\r' && *s != '\n')
			s++;
		if (*s)
			*s++ = '\0';
	}
}

/* A count of bytes or a plain number: digits, optionally KiB/MiB/GiB. */
static int number(const struct parse *p, const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;
	uint64_t mul = 1;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s || *s == '-')
		return bad(p, "not a number", s);
	if (strcmp(end, "KiB") == 0)
		mul = 1024;
	else if (strcmp(end, "MiB") == 0)
		mul = 1024ULL * 1024;
	else if (strcmp(end, "GiB") == 0)
		mul = 1024ULL * 1024 * 1024;
	else if (*end)
		return bad(p, "not a number", s);
	if (v > UINT64_MAX / mul)
		return bad(p, "number too large", s);
	*out = (uint64_t)v * mul;
	return 0;
}

static int small(const struct parse *p, const char *s, unsigned max, unsigned *out)
{
	uint64_t v = 0;

	if (number(p, s, &v) < 0)
		return -1;
	if (v > max)
		return bad(p, "number out of range", s);
	*out = (unsigned)v;
	return 0;
}

static int integer(const struct parse *p, const char *s, int *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < -100000 || v > 100000)
		return bad(p, "not an error code", s);
	*out = (int)v;
	return 0;
}

static int copy(const struct parse *p, char *dst, size_t len, const char *src)
{
	if (strlen(src) >= len)
		return bad(p, "string too long", src);
	memcpy(dst, src, strlen(src) + 1);
	return 0;
}

/* The value after key at *i, advancing *i past both. */
static const char *value(const struct parse *p, unsigned *i)
{
	if (*i + 1 >= p->n) {
		bad(p, "missing value after", p->tok[*i]);
		return NULL;
	}
	*i += 2;
	return p->tok[*i - 1];
}

static int gpu_index(const struct fake_scenario *sc, const struct parse *p, const char *s,
		     unsigned *g)
{
	if (small(p, s, FAKE_MAX_GPUS - 1, g) < 0)
		return -1;
	if (*g >= sc->n_gpus)
		return bad(p, "no such gpu (declare it first)", s);
	return 0;
}

static int parse_gpu(struct fake_scenario *sc, const struct parse *p)
{
	struct fake_gpu *g;
	unsigned idx = 0;

	if (p->n < 2 || small(p, p->tok[1], FAKE_MAX_GPUS - 1, &idx) < 0)
		return bad(p, "gpu INDEX ...", NULL);
	if (idx != sc->n_gpus)
		return bad(p, "gpus must be declared in order", p->tok[1]);
	g = &sc->gpus[sc->n_gpus++];
	g->mig = -1;
	for (unsigned i = 2; i < p->n;) {
		const char *k = p->tok[i], *v = value(p, &i);
		int rc;

		if (!v)
			return -1;
		if (strcmp(k, "uuid") == 0)
			rc = copy(p, g->uuid, sizeof(g->uuid), v);
		else if (strcmp(k, "name") == 0)
			rc = copy(p, g->name, sizeof(g->name), v);
		else if (strcmp(k, "bus") == 0)
			rc = copy(p, g->bus, sizeof(g->bus), v);
		else if (strcmp(k, "total") == 0)
			rc = number(p, v, &g->total);
		else if (strcmp(k, "reserved") == 0)
			rc = number(p, v, &g->reserved);
		else
			rc = bad(p, "unknown gpu key", k);
		if (rc < 0)
			return -1;
	}
	return 0;
}

static int parse_at(struct fake_scenario *sc, const struct parse *p)
{
	struct fake_at *a;
	bool have_gpu = false;
	uint64_t step = 0;

	if (sc->n_at == FAKE_MAX_AT)
		return bad(p, "too many 'at' lines", NULL);
	a = &sc->at[sc->n_at];
	if (p->n < 2 || number(p, p->tok[1], &step) < 0 || step >= FAKE_NO_STEP)
		return bad(p, "at STEP gpu I ...", NULL);
	a->from = (uint32_t)step;
	for (unsigned i = 2; i < p->n;) {
		const char *k = p->tok[i], *v = value(p, &i);
		int rc;

		if (!v)
			return -1;
		if (strcmp(k, "gpu") == 0) {
			rc = gpu_index(sc, p, v, &a->gpu);
			have_gpu = true;
		} else if (strcmp(k, "used") == 0) {
			rc = number(p, v, &a->used);
			a->mask |= AT_USED;
		} else if (strcmp(k, "util") == 0) {
			rc = small(p, v, 100, &a->util);
			a->mask |= AT_UTIL;
		} else if (strcmp(k, "memutil") == 0) {
			rc = small(p, v, 100, &a->mem_util);
		} else if (strcmp(k, "power") == 0) {
			rc = small(p, v, 10000000, &a->power);
			a->mask |= AT_POWER;
		} else if (strcmp(k, "energy") == 0) {
			rc = number(p, v, &a->energy);
			a->mask |= AT_ENERGY;
		} else {
			rc = bad(p, "unknown 'at' key", k);
		}
		if (rc < 0)
			return -1;
	}
	if (!have_gpu)
		return bad(p, "'at' needs gpu I", NULL);
	sc->n_at++;
	return 0;
}

static int parse_mig(struct fake_scenario *sc, const struct parse *p)
{
	unsigned g = 0;

	if (p->n < 3 || gpu_index(sc, p, p->tok[1], &g) < 0)
		return bad(p, "mig I on|off [max N]", NULL);
	if (strcmp(p->tok[2], "on") == 0)
		sc->gpus[g].mig = 1;
	else if (strcmp(p->tok[2], "off") == 0)
		sc->gpus[g].mig = 0;
	else
		return bad(p, "mig mode is on or off", p->tok[2]);
	sc->gpus[g].mig_max = 7;
	if (p->n == 5 && strcmp(p->tok[3], "max") == 0)
		return small(p, p->tok[4], 1000, &sc->gpus[g].mig_max);
	return p->n == 3 ? 0 : bad(p, "mig I on|off [max N]", NULL);
}

static int parse_migdev(struct fake_scenario *sc, const struct parse *p)
{
	struct fake_mig *m;
	unsigned g = 0, slot = 0;

	if (p->n < 3 || gpu_index(sc, p, p->tok[1], &g) < 0 ||
	    small(p, p->tok[2], FAKE_MAX_MIG - 1, &slot) < 0)
		return bad(p, "migdev I SLOT ...", NULL);
	m = &sc->gpus[g].migs[slot];
	m->present = true;
	for (unsigned i = 3; i < p->n;) {
		const char *k = p->tok[i], *v = value(p, &i);
		int rc;

		if (!v)
			return -1;
		if (strcmp(k, "uuid") == 0)
			rc = copy(p, m->uuid, sizeof(m->uuid), v);
		else if (strcmp(k, "name") == 0)
			rc = copy(p, m->name, sizeof(m->name), v);
		else if (strcmp(k, "gi") == 0)
			rc = small(p, v, 1000, &m->gi);
		else if (strcmp(k, "ci") == 0)
			rc = small(p, v, 1000, &m->ci);
		else if (strcmp(k, "total") == 0)
			rc = number(p, v, &m->total);
		else if (strcmp(k, "used") == 0)
			rc = number(p, v, &m->used);
		else
			rc = bad(p, "unknown migdev key", k);
		if (rc < 0)
			return -1;
	}
	return 0;
}

static int parse_proc(struct fake_scenario *sc, const struct parse *p)
{
	struct fake_proc proc = {0};
	unsigned g = 0, pid = 0, repeat = 1;
	uint64_t v64 = 0;

	if (p->n >= 3 && p->tok[2][0] == '@') {
		if (strlen(p->tok[2] + 1) >= sizeof(proc.pidfile) || !p->tok[2][1])
			return bad(p, "pid file path empty or too long", p->tok[2]);
		snprintf(proc.pidfile, sizeof(proc.pidfile), "%s", p->tok[2] + 1);
	}
	if (p->n < 3 || gpu_index(sc, p, p->tok[1], &g) < 0 ||
	    (!proc.pidfile[0] && small(p, p->tok[2], 4000000, &pid) < 0))
		return bad(p, "proc I PID|@PIDFILE used BYTES ...", NULL);
	proc.gpu = g;
	proc.pid = pid;
	proc.slot = -1;
	proc.until = FAKE_NO_STEP;
	for (unsigned i = 3; i < p->n;) {
		const char *k = p->tok[i], *v;
		int rc = 0;
		unsigned u = 0;

		if (strcmp(k, "mps") == 0) {
			proc.mps = true;
			i++;
			continue;
		}
		v = value(p, &i);
		if (!v)
			return -1;
		if (strcmp(k, "used") == 0) {
			if (strcmp(v, "na") == 0)
				proc.used = UINT64_MAX;
			else
				rc = number(p, v, &proc.used);
		} else if (strcmp(k, "mig") == 0) {
			rc = small(p, v, FAKE_MAX_MIG - 1, &u);
			proc.slot = (int)u;
		} else if (strcmp(k, "from") == 0) {
			rc = number(p, v, &v64);
			proc.from = (uint32_t)(v64 < FAKE_NO_STEP ? v64 : FAKE_NO_STEP);
		} else if (strcmp(k, "until") == 0) {
			rc = number(p, v, &v64);
			proc.until = (uint32_t)(v64 < FAKE_NO_STEP ? v64 : FAKE_NO_STEP);
		} else if (strcmp(k, "repeat") == 0) {
			rc = small(p, v, FAKE_MAX_PROCS, &repeat);
		} else {
			rc = bad(p, "unknown proc key", k);
		}
		if (rc < 0)
			return -1;
	}
	for (unsigned r = 0; r < repeat; r++) {
		if (sc->n_procs == FAKE_MAX_PROCS)
			return bad(p, "too many processes", NULL);
		sc->procs[sc->n_procs] = proc;
		sc->procs[sc->n_procs].pid = pid + r;
		sc->n_procs++;
	}
	return 0;
}

static int parse_error(struct fake_scenario *sc, const struct parse *p)
{
	struct fake_error *e;
	uint64_t v64 = 0;

	if (sc->n_errors == FAKE_MAX_ERRORS)
		return bad(p, "too many errors", NULL);
	e = &sc->errors[sc->n_errors];
	if (p->n < 3 || copy(p, e->fn, sizeof(e->fn), p->tok[1]) < 0 ||
	    integer(p, p->tok[2], &e->code) < 0)
		return bad(p, "error FN CODE [gpu I] [whole|mig N] [from S] [until S]",
			   NULL);
	e->target = -1;
	e->slot = FAKE_ANY_DEVICE;
	e->until = FAKE_NO_STEP;
	for (unsigned i = 3; i < p->n;) {
		const char *k = p->tok[i], *v;
		unsigned u = 0;
		int rc;

		if (strcmp(k, "whole") == 0) {
			e->slot = FAKE_WHOLE_GPU;
			i++;
			continue;
		}
		v = value(p, &i);
		if (!v)
			return -1;
		if (strcmp(k, "mig") == 0) {
			rc = small(p, v, FAKE_MAX_MIG - 1, &u);
			e->slot = (int)u;
		} else if (strcmp(k, "gpu") == 0) {
			rc = small(p, v, FAKE_MAX_GPUS - 1, &u);
			e->target = (int)u;
		} else if (strcmp(k, "from") == 0 || strcmp(k, "until") == 0) {
			rc = number(p, v, &v64);
			if (v64 >= FAKE_NO_STEP)
				v64 = FAKE_NO_STEP;
			if (k[0] == 'f')
				e->from = (uint32_t)v64;
			else
				e->until = (uint32_t)v64;
		} else {
			rc = bad(p, "unknown error key", k);
		}
		if (rc < 0)
			return -1;
	}
	sc->n_errors++;
	return 0;
}

static int parse_dcgmat(struct fake_scenario *sc, const struct parse *p)
{
	static const char *const keys[FAKE_RATIOS] = {"gr", "sm", "occ", "tensor",
						      "dram"};
	struct fake_dcgm_at *a;
	uint64_t step = 0;

	if (sc->n_dcgm_at == FAKE_MAX_DCGM_AT)
		return bad(p, "too many dcgmat lines", NULL);
	a = &sc->dcgm_at[sc->n_dcgm_at];
	if (p->n < 3 || number(p, p->tok[1], &step) < 0 || step >= FAKE_NO_STEP ||
	    small(p, p->tok[2], FAKE_MAX_GPUS - 1, &a->id) < 0)
		return bad(p, "dcgmat STEP ID [gr X] ...", NULL);
	a->from = (uint32_t)step;
	for (unsigned i = 3; i < p->n;) {
		const char *k = p->tok[i], *v = value(p, &i);
		unsigned r;

		if (!v)
			return -1;
		for (r = 0; r < FAKE_RATIOS; r++)
			if (strcmp(k, keys[r]) == 0)
				break;
		if (r == FAKE_RATIOS)
			return bad(p, "unknown dcgmat key", k);
		a->mask |= 1u << r;
		if (strcmp(v, "blank") == 0) {
			a->kind[r] = RATIO_BLANK;
		} else if (strcmp(v, "nodata") == 0) {
			a->kind[r] = RATIO_NODATA;
		} else {
			char *end;

			a->kind[r] = RATIO_VALUE;
			a->value[r] = strtod(v, &end);
			if (end == v || *end)
				return bad(p, "not a ratio", v);
		}
	}
	sc->n_dcgm_at++;
	return 0;
}

static int parse_line(struct fake_scenario *sc, struct parse *p)
{
	const char *kw = p->tok[0];
	unsigned u = 0, g = 0;

	if (strcmp(kw, "driver") == 0 && p->n == 2)
		return copy(p, sc->driver, sizeof(sc->driver), p->tok[1]);
	if (strcmp(kw, "count") == 0 && p->n == 2) {
		if (small(p, p->tok[1], 1000, &u) < 0)
			return -1;
		sc->count = (int)u;
		return 0;
	}
	if (strcmp(kw, "gpu") == 0)
		return parse_gpu(sc, p);
	if (strcmp(kw, "at") == 0)
		return parse_at(sc, p);
	if (strcmp(kw, "mig") == 0)
		return parse_mig(sc, p);
	if (strcmp(kw, "migdev") == 0)
		return parse_migdev(sc, p);
	if (strcmp(kw, "proc") == 0)
		return parse_proc(sc, p);
	if (strcmp(kw, "error") == 0)
		return parse_error(sc, p);
	if (strcmp(kw, "hostengine") == 0 && p->n == 1) {
		sc->hostengine = true;
		return 0;
	}
	if (strcmp(kw, "dcgmgpu") == 0 && p->n == 3) {
		if (small(p, p->tok[1], FAKE_MAX_GPUS - 1, &u) < 0 ||
		    gpu_index(sc, p, p->tok[2], &g) < 0)
			return -1;
		if (u != sc->n_dcgm)
			return bad(p, "dcgmgpu ids must be declared in order", p->tok[1]);
		sc->dcgm_gpu[sc->n_dcgm++] = (int)g;
		return 0;
	}
	if (strcmp(kw, "dcgmat") == 0)
		return parse_dcgmat(sc, p);
	if (strcmp(kw, "dcgmblankuuid") == 0 && p->n == 2)
		return small(p, p->tok[1], 1000, &sc->blank_uuids);
	return bad(p, "unknown line", kw);
}

int fake_scenario_load(struct fake_scenario *sc)
{
	const char *path = getenv("FAKE_NVML_SCENARIO");
	struct parse p = {path, 0, {NULL}, 0};
	char line[LINE_MAX_LEN];
	int rc = 0;
	FILE *fp;

	memset(sc, 0, sizeof(*sc));
	sc->count = -1;
	snprintf(sc->driver, sizeof(sc->driver), "550.54.15");
	if (!path || !*path) {
		fprintf(stderr, "fake NVML/DCGM: FAKE_NVML_SCENARIO is not set\n");
		return -1;
	}
	fp = fopen(path, "r");
	if (!fp) {
		fprintf(stderr, "fake NVML/DCGM: %s: %s\n", path, strerror(errno));
		return -1;
	}
	while (rc == 0 && fgets(line, sizeof(line), fp)) {
		p.line++;
		rc = tokenize(&p, line);
		if (rc == 0 && p.n > 0)
			rc = parse_line(sc, &p);
	}
	fclose(fp);
	if (rc < 0)
		return -1;
	/* Without dcgmgpu lines, DCGM numbers the GPUs as NVML does. */
	if (sc->n_dcgm == 0)
		for (unsigned g = 0; g < sc->n_gpus; g++)
			sc->dcgm_gpu[sc->n_dcgm++] = (int)g;
	sc->loaded = true;
	return 0;
}

uint32_t fake_step(const struct fake_scenario *sc, unsigned g)
{
	uint32_t calls = sc->gpus[g].mem_calls;

	return calls ? calls - 1 : 0;
}

/* "nvmlDeviceGetMemoryInfo_v2" and "nvmlDeviceGetMemoryInfo" alike. */
static size_t base_len(const char *fn)
{
	size_t n = strlen(fn);
	size_t k = n;

	while (k > 0 && fn[k - 1] >= '0' && fn[k - 1] <= '9')
		k--;
	if (k < n && k >= 2 && fn[k - 1] == 'v' && fn[k - 2] == '_')
		return k - 2;
	return n;
}

int fake_error(const struct fake_scenario *sc, int target, int slot, const char *fn,
	       uint32_t step)
{
	size_t len = base_len(fn);

	for (unsigned k = 0; k < sc->n_errors; k++) {
		const struct fake_error *e = &sc->errors[k];

		if (e->target >= 0 && e->target != target)
			continue;
		if (e->slot != FAKE_ANY_DEVICE && e->slot != slot)
			continue;
		if (strcmp(e->fn, "*") != 0 &&
		    (base_len(e->fn) != len || strncmp(e->fn, fn, len) != 0))
			continue;
		if (step < e->from || step >= e->until)
			continue;
		return e->code;
	}
	return 0;
}

void fake_values(const struct fake_scenario *sc, unsigned g, uint32_t step,
		 struct fake_at *out)
{
	memset(out, 0, sizeof(*out));
	out->gpu = g;
	/* Lines in file order; a later line from an earlier step loses to an
	 * earlier line from a later one only by its step, not its place. */
	for (unsigned bit = 1; bit <= AT_ENERGY; bit <<= 1) {
		uint32_t best = 0;
		bool found = false;

		for (unsigned k = 0; k < sc->n_at; k++) {
			const struct fake_at *a = &sc->at[k];

			if (a->gpu != g || !(a->mask & bit) || a->from > step ||
			    (found && a->from < best))
				continue;
			best = a->from;
			found = true;
			if (bit == AT_USED)
				out->used = a->used;
			else if (bit == AT_UTIL) {
				out->util = a->util;
				out->mem_util = a->mem_util;
			} else if (bit == AT_POWER)
				out->power = a->power;
			else
				out->energy = a->energy;
		}
	}
}

void fake_log(const char *fn, int rc)
{
	const char *path = getenv("FAKE_NVML_LOG");
	char line[128];
	int fd, n;

	if (!path || !*path)
		return;
	n = snprintf(line, sizeof(line), "%s %d\n", fn, rc);
	if (n < 0 || (size_t)n >= sizeof(line))
		return;
	fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0)
		return;
	if (write(fd, line, (size_t)n) != n)
		fprintf(stderr, "fake NVML/DCGM: %s: short write\n", path);
	close(fd);
}
