/*
 * oom.c — see oom.h: finding the out-of-memory markers frameworks print, and
 * sizing an OOM-killed job's next attempt.
 *
 * Not here: whether the job exited non-zero (the caller knows), re-queueing
 * it (the daemon), or measuring its peak (the monitor).
 */
#include "daemon/oom.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "colloc/units.h"

/* Searched in this order: the first one present wins. PyTorch prints both
 * "torch.OutOfMemoryError: CUDA out of memory." and the second names the
 * cause better, so it comes first. */
static const char *const markers[] = {
	"CUDA out of memory",	      "OutOfMemoryError",
	"CUBLAS_STATUS_ALLOC_FAILED", "CUDA_ERROR_OUT_OF_MEMORY",
	"cudaErrorMemoryAllocation",  "RESOURCE_EXHAUSTED",
};
#define N_MARKERS (sizeof(markers) / sizeof(markers[0]))

/* Overlap between successive file chunks: a marker that starts in one chunk
 * and ends in the next is still seen whole in one of them. Longer than the
 * longest marker above (26 bytes). */
#define MARKER_LEN_MAX 32

#define SCAN_CHUNK ((size_t)16 << 10) /* on the stack */

#define NEED_STEP ((uint64_t)256 << 20)

/* Whether needle[0..nlen) occurs in hay[0..hlen): memmem() without
 * _GNU_SOURCE, and never reading past hlen (log bytes are not strings). */
static bool contains(const char *hay, size_t hlen, const char *needle, size_t nlen)
{
	const char *p = hay;
	const char *end = hay + hlen;

	if (nlen == 0 || nlen > hlen)
		return nlen == 0;
	while ((size_t)(end - p) >= nlen) {
		const char *q = memchr(p, needle[0], (size_t)(end - p) - nlen + 1);

		if (!q)
			return false;
		if (memcmp(q, needle, nlen) == 0)
			return true;
		p = q + 1;
	}
	return false;
}

const char *cd_oom_marker(const char *buf, size_t len)
{
	if (!buf)
		return NULL;
	for (size_t k = 0; k < N_MARKERS; k++)
		if (contains(buf, len, markers[k], strlen(markers[k])))
			return markers[k];
	return NULL;
}

/* Keep the marker that comes first in markers[] between two chunks' finds. */
static const char *earlier_marker(const char *a, const char *b)
{
	for (size_t k = 0; k < N_MARKERS; k++)
		if (markers[k] == a || markers[k] == b)
			return markers[k];
	return NULL;
}

int cd_oom_scan_file(const char *path, uint64_t offset, size_t max_bytes,
		     const char **marker, struct colloc_diag *diag)
{
	char buf[SCAN_CHUNK + MARKER_LEN_MAX];
	const char *found = NULL;
	struct stat st;
	uint64_t size, start, pos;
	size_t carry = 0;
	int fd, rc = 0;

	*marker = NULL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ENOENT)
			return 0; /* the job printed nothing */
		rc = -errno;
		return colloc_diag_set(diag, rc, "%s: %s", path, strerror(-rc));
	}
	if (fstat(fd, &st) != 0) {
		rc = -errno;
		colloc_diag_printf(diag, "%s: %s", path, strerror(-rc));
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		rc = colloc_diag_set(diag, -EINVAL, "%s: not a regular file", path);
		goto out;
	}
	size = st.st_size > 0 ? (uint64_t)st.st_size : 0;
	if (offset >= size || max_bytes == 0)
		goto out; /* nothing new since offset */
	start = size - offset > max_bytes ? size - max_bytes : offset;

	/* Chunks of SCAN_CHUNK, each after the last MARKER_LEN_MAX - 1 bytes
	 * of the one before, so the memory used does not grow with max_bytes. */
	for (pos = start; pos < size;) {
		uint64_t left = size - pos;
		size_t want = left < SCAN_CHUNK ? (size_t)left : SCAN_CHUNK;
		ssize_t got = pread(fd, buf + carry, want, (off_t)pos);
		const char *m;
		size_t have;

		if (got < 0) {
			if (errno == EINTR)
				continue;
			rc = -errno;
			colloc_diag_printf(diag, "%s: %s", path, strerror(-rc));
			goto out;
		}
		if (got == 0)
			break; /* truncated while we read: what is there is all */
		have = carry + (size_t)got;
		m = cd_oom_marker(buf, have);
		if (m) {
			found = earlier_marker(found, m);
			if (found == markers[0])
				break; /* nothing can beat it */
		}
		pos += (uint64_t)got;
		carry = have < MARKER_LEN_MAX - 1 ? have : MARKER_LEN_MAX - 1;
		memmove(buf, buf + have - carry, carry);
	}
	*marker = found;
out:
	close(fd);
	return rc;
}

/* The last occurrence of needle in hay[0..hlen), or NULL. */
static const char *last_of(const char *hay, size_t hlen, const char *needle)
{
	size_t nlen = strlen(needle);
	const char *found = NULL;

	for (size_t off = 0; hlen >= nlen && off <= hlen - nlen;) {
		const char *q = memchr(hay + off, needle[0], hlen - nlen - off + 1);

		if (!q)
			break;
		if (memcmp(q, needle, nlen) == 0)
			found = q;
		off = (size_t)(q - hay) + 1;
	}
	return found;
}

/* "20.00 GiB", "512 MiB", "0 bytes" at p (before end) as bytes; 0 when
 * it is not a size. */
static uint64_t torch_size(const char *p, const char *end)
{
	static const struct {
		const char *unit;
		double scale;
	} units[] = {{"bytes", 1.0},	    {"B", 1.0},
		     {"KiB", 1024.0},	    {"MiB", 1048576.0},
		     {"GiB", 1073741824.0}, {"TiB", 1099511627776.0}};
	char num[32];
	size_t n = 0;
	double v;

	while (p < end && *p == ' ')
		p++;
	while (p < end && n + 1 < sizeof(num) && ((*p >= '0' && *p <= '9') || *p == '.'))
		num[n++] = *p++;
	num[n] = '\0';
	if (n == 0)
		return 0;
	v = strtod(num, NULL);
	while (p < end && *p == ' ')
		p++;
	for (size_t k = 0; k < sizeof(units) / sizeof(units[0]); k++) {
		size_t ul = strlen(units[k].unit);

		if ((size_t)(end - p) >= ul && memcmp(p, units[k].unit, ul) == 0) {
			double b = v * units[k].scale;

			return b >= 1.8e19 ? UINT64_MAX : (uint64_t)b;
		}
	}
	return 0;
}

bool cd_oom_exceeds_capacity(const char *buf, size_t len, uint64_t gpu_total_bytes,
			     uint64_t *tried_bytes, uint64_t *capacity_bytes)
{
	static const char tried_s[] = "Tried to allocate ";
	static const char new_cap[] = "total capacity of ";
	static const char old_cap[] = " total capacity";
	const char *t, *end = buf ? buf + len : NULL, *c;
	uint64_t tried, cap = 0;

	*tried_bytes = 0;
	*capacity_bytes = 0;
	if (!buf || !(t = last_of(buf, len, tried_s)))
		return false;
	tried = torch_size(t + strlen(tried_s), end);
	/* The capacity follows on the same message: look only after it. */
	c = last_of(t, (size_t)(end - t), new_cap);
	if (c) {
		cap = torch_size(c + strlen(new_cap), end);
	} else if ((c = last_of(t, (size_t)(end - t), old_cap))) {
		/* "(GPU 0; 15.78 GiB total capacity": the size precedes. */
		const char *s = c;

		while (s > t && s[-1] != ';' && s[-1] != '(')
			s--;
		cap = torch_size(s, c);
	}
	if (!cap)
		cap = gpu_total_bytes;
	*tried_bytes = tried;
	*capacity_bytes = cap;
	return tried > 0 && cap > 0 && tried > cap;
}

#define CAPACITY_SCAN_MAX ((size_t)64 << 10)

int cd_oom_scan_capacity(const char *path, uint64_t offset, size_t max_bytes,
			 uint64_t gpu_total_bytes, bool *exceeds, uint64_t *tried_bytes,
			 uint64_t *capacity_bytes, struct colloc_diag *diag)
{
	struct stat st;
	uint64_t size, start;
	size_t want, got = 0;
	char *buf;
	int fd, rc = 0;

	*exceeds = false;
	*tried_bytes = 0;
	*capacity_bytes = 0;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ENOENT)
			return 0;
		rc = -errno;
		return colloc_diag_set(diag, rc, "%s: %s", path, strerror(-rc));
	}
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return colloc_diag_set(diag, -EINVAL, "%s: not a readable regular file",
				       path);
	}
	size = st.st_size > 0 ? (uint64_t)st.st_size : 0;
	if (max_bytes > CAPACITY_SCAN_MAX)
		max_bytes = CAPACITY_SCAN_MAX;
	if (offset >= size || max_bytes == 0) {
		close(fd);
		return 0;
	}
	start = size - offset > max_bytes ? size - max_bytes : offset;
	want = (size_t)(size - start);
	buf = malloc(want);
	if (!buf) {
		close(fd);
		return colloc_diag_set(diag, -ENOMEM, "%s: out of memory", path);
	}
	while (got < want) {
		ssize_t k = pread(fd, buf + got, want - got, (off_t)(start + got));

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			break;
		got += (size_t)k;
	}
	*exceeds = cd_oom_exceeds_capacity(buf, got, gpu_total_bytes, tried_bytes,
					   capacity_bytes);
	free(buf);
	close(fd);
	return 0;
}

void cd_oom_policy_init(struct cd_oom_policy *p)
{
	p->growth = 1.5;
	p->peak_margin = 1.2;
	p->exclusive_after = 2;
	p->max_attempts = 4;
}

/* ceil(x * factor) as bytes, saturating at UINT64_MAX. A factor below 1 (or
 * NaN) counts as 1: the need never shrinks. */
static uint64_t scale_up(uint64_t x, double factor)
{
	double v;

	if (!(factor >= 1.0))
		factor = 1.0;
	v = ceil((double)x * factor);
	/* 2^64 is exact as a double; anything at or past it saturates
	 * (including +inf from a huge factor). */
	if (!(v < 18446744073709551616.0))
		return UINT64_MAX;
	/* (double)x may round x down above 2^53; never return less than x. */
	return (uint64_t)v > x ? (uint64_t)v : x;
}

/* Up to a multiple of NEED_STEP; saturating at UINT64_MAX rather than
 * rounding down, so that the need never shrinks. */
static uint64_t round_up_step(uint64_t x)
{
	if (x > UINT64_MAX - (NEED_STEP - 1))
		return UINT64_MAX;
	return (x + NEED_STEP - 1) & ~(NEED_STEP - 1);
}

void cd_oom_decide(const struct cd_oom_policy *p, int attempts, uint64_t old_need,
		   uint64_t peak_bytes, uint64_t gpu_total_bytes, bool was_exclusive,
		   struct cd_oom_decision *out)
{
	char old_s[32], new_s[32];
	uint64_t need, by_peak;
	bool capped = false;

	memset(out, 0, sizeof(*out));
	if (attempts < 1)
		attempts = 1;
	colloc_format_bytes(old_need, old_s, sizeof(old_s));

	if (attempts >= p->max_attempts) {
		out->action = CD_OOM_GIVE_UP;
		out->mem_need_bytes = old_need;
		snprintf(out->reason, sizeof(out->reason),
			 "out of memory on attempt %d of %d (need %s): giving up",
			 attempts, p->max_attempts, old_s);
		return;
	}
	if (was_exclusive && gpu_total_bytes > 0 && old_need >= gpu_total_bytes) {
		out->action = CD_OOM_GIVE_UP;
		char gpu_s[32];

		out->mem_need_bytes = old_need;
		colloc_format_bytes(gpu_total_bytes, gpu_s, sizeof(gpu_s));
		snprintf(out->reason, sizeof(out->reason),
			 "out of memory on attempt %d with a whole %s GPU to itself: "
			 "giving up",
			 attempts, gpu_s);
		return;
	}

	need = scale_up(old_need, p->growth);
	by_peak = scale_up(peak_bytes, p->peak_margin);
	if (by_peak > need)
		need = by_peak;
	need = round_up_step(need);
	if (need < NEED_STEP)
		need = NEED_STEP; /* an unknown (0) need still asks for something */
	if (gpu_total_bytes > 0 && need >= gpu_total_bytes) {
		need = gpu_total_bytes;
		capped = true;
	}
	out->mem_need_bytes = need;
	colloc_format_bytes(need, new_s, sizeof(new_s));

	/* attempts + 1 is the next attempt's number; compared without the
	 * addition so that INT_MAX cannot overflow. An exclusive job stays
	 * exclusive, and so does one whose need the GPU's size stopped from
	 * growing: sharing the GPU is the only thing left to take away. */
	if (was_exclusive || (int64_t)attempts + 1 >= p->exclusive_after ||
	    (capped && need <= old_need)) {
		out->action = CD_OOM_RETRY_EXCLUSIVE;
		snprintf(out->reason, sizeof(out->reason),
			 "out of memory on attempt %d: need %s -> %s, on GPUs of its own",
			 attempts, old_s, new_s);
	} else {
		out->action = CD_OOM_RETRY;
		snprintf(out->reason, sizeof(out->reason),
			 "out of memory on attempt %d: need %s -> %s", attempts, old_s,
			 new_s);
	}
}
