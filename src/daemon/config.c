/*
 * config.c — collocd's configuration (see config.h): defaults taken from the
 * environment, the `key = value` file, command-line overrides, and writing
 * it all back out in a form this parser reads again.
 *
 * Not here: checks that need the machine (does the socket's directory exist,
 * is admin_group a real group, does the gpus spec name a backend); the
 * daemon makes those when it uses the values.
 */
#include "daemon/config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <netinet/in.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <unistd.h>

#include "colloc/jobs.h"
#include "colloc/units.h"

#define CONFIG_FILE_MAX ((size_t)64 << 10)
#define CONFIG_LINE_MAX 1024
#define COUNT_MAX 1000 /* oom_exclusive_after, oom_max_attempts */
#define LIMIT_MAX 1000000000 /* user_max_queued */
#define FACTOR_MAX 1000.0 /* oom_growth, oom_peak_margin */
#define UTIL_BOUND_MAX 100.0
#define WHY_MAX 256

enum kind {
	KIND_STRING, /* char[]; paths and names */
	KIND_POLICY, /* int, colloc_policy_parse() */
	KIND_SHARING, /* int, enum cd_sharing */
	KIND_SIZE, /* uint64_t bytes */
	KIND_DURATION, /* int64_t ms */
	KIND_BOOL, /* bool */
	KIND_FRACTION, /* double, 0..max, "50%" allowed */
	KIND_FACTOR, /* double, 1..FACTOR_MAX */
	KIND_COUNT, /* int, 1..COUNT_MAX */
	KIND_LIMIT, /* uint64_t, 0..LIMIT_MAX; 0: no limit */
	KIND_LISTEN, /* char[]; "" or HOST:PORT (cd_config_listen_parse) */
};

#define KEY_EMPTY_OK 1u /* a string may be "" */
#define KEY_NONZERO 2u /* 0 is refused */

struct key {
	const char *name;
	size_t off; /* of the field in struct cd_config */
	size_t size; /* of the field: a string's capacity */
	double max; /* KIND_FRACTION */
	int kind; /* enum kind */
	unsigned flags;
};

/* One row of keys[]: the key, how its value reads, and the field it sets. */
#define KEY(key, kind_, field, flags_, max_)                                   \
	{                                                                      \
		.name = (key), .off = offsetof(struct cd_config, field),       \
		.size = sizeof(((struct cd_config *)0)->field), .max = (max_), \
		.kind = (kind_), .flags = (flags_),                            \
	}

/* In the order cd_config_write() prints them (docs/collocd-config.md). */
static const struct key keys[] = {
	KEY("gpus", KIND_STRING, gpus, 0, 0),
	KEY("allow_sim", KIND_BOOL, allow_sim, 0, 0),
	KEY("socket", KIND_STRING, socket_path, 0, 0),
	KEY("db", KIND_STRING, db_path, 0, 0),
	KEY("state_dir", KIND_STRING, state_dir, 0, 0),
	KEY("policy", KIND_POLICY, sched.policy, 0, 0),
	KEY("headroom", KIND_SIZE, sched.headroom_bytes, 0, 0),
	KEY("util_bound", KIND_FRACTION, sched.util_bound, KEY_NONZERO, UTIL_BOUND_MAX),
	KEY("util_bound_soft", KIND_BOOL, sched.util_soft, 0, 0),
	KEY("queue_wait", KIND_BOOL, sched.queue_wait, 0, 0),
	KEY("backfill", KIND_BOOL, sched.backfill, 0, 0),
	KEY("starve", KIND_DURATION, sched.starve_ms, 0, 0),
	KEY("sharing", KIND_SHARING, sharing, 0, 0),
	KEY("sample_interval", KIND_DURATION, sample_ms, KEY_NONZERO, 0),
	KEY("admin_group", KIND_STRING, admin_group, KEY_EMPTY_OK, 0),
	KEY("default_mem", KIND_SIZE, default_mem_bytes, KEY_NONZERO, 0),
	KEY("default_util", KIND_FRACTION, default_util, 0, 1.0),
	KEY("oom_growth", KIND_FACTOR, oom.growth, 0, 0),
	KEY("oom_peak_margin", KIND_FACTOR, oom.peak_margin, 0, 0),
	KEY("oom_exclusive_after", KIND_COUNT, oom.exclusive_after, 0, 0),
	KEY("oom_max_attempts", KIND_COUNT, oom.max_attempts, 0, 0),
	KEY("kill_grace", KIND_DURATION, kill_grace_ms, 0, 0),
	KEY("reserve", KIND_DURATION, reserve_ms, 0, 0),
	KEY("mps_control", KIND_STRING, mps_control, 0, 0),
	KEY("mps_thread_share", KIND_FRACTION, mps_thread_share, 0, 1.0),
	KEY("metrics", KIND_LISTEN, metrics, KEY_EMPTY_OK, 0),
	KEY("retention", KIND_DURATION, retention_ms, 0, 0),
	KEY("overuse_stop", KIND_BOOL, overuse_stop, 0, 0),
	KEY("user_max_queued", KIND_LIMIT, user_max_queued, 0, 0),
	KEY("log_max", KIND_SIZE, log_max_bytes, 0, 0),
	KEY("job_cgroups", KIND_BOOL, job_cgroups, 0, 0),
};
#define N_KEYS (sizeof(keys) / sizeof(keys[0]))

static const char *const sharing_names[] = {"time-slicing", "mps", "mig"};

/* ---------------------------------------------------------------- defaults */

/* out = a (less trailing slashes) + b, when a is an absolute path and the
 * result, with "/collocd.db" after it, fits a path. Returns false (out
 * possibly clobbered) otherwise. */
static bool join_path(char *out, const char *a, const char *b)
{
	size_t la;
	int n;

	if (!a || a[0] != '/')
		return false; /* unset, empty or relative: XDG says ignore */
	la = strlen(a);
	while (la > 1 && a[la - 1] == '/')
		la--;
	if (la == 1)
		la = 0; /* "/" + "/collocd", not "//collocd" */
	if (la > CD_PATH_MAX)
		return false;
	n = snprintf(out, CD_PATH_MAX, "%.*s%s", (int)la, a, b);
	return n > 0 && (size_t)n + sizeof("/collocd.db") <= CD_PATH_MAX;
}

static void default_state_dir(char *out, uid_t uid)
{
	char pwbuf[4096];
	struct passwd pw, *res = NULL;

	if (uid == 0) {
		snprintf(out, CD_PATH_MAX, "/var/lib/collocd");
		return;
	}
	if (join_path(out, getenv("XDG_STATE_HOME"), "/collocd") ||
	    join_path(out, getenv("HOME"), "/.local/state/collocd"))
		return;
	/* No usable $HOME (a service manager's clean environment): ask the
	 * password database, as a login would have. */
	if (getpwuid_r(uid, &pw, pwbuf, sizeof(pwbuf), &res) == 0 && res &&
	    join_path(out, res->pw_dir, "/.local/state/collocd"))
		return;
	snprintf(out, CD_PATH_MAX, "/tmp/collocd-%lu", (unsigned long)uid);
}

void cd_config_defaults(struct cd_config *cfg)
{
	uid_t uid = geteuid();

	memset(cfg, 0, sizeof(*cfg));
	snprintf(cfg->gpus, sizeof(cfg->gpus), "auto");
	if (uid == 0)
		snprintf(cfg->socket_path, sizeof(cfg->socket_path), "/run/collocd.sock");
	else if (!join_path(cfg->socket_path, getenv("XDG_RUNTIME_DIR"), "/collocd.sock"))
		/* in a directory of its own: /tmp itself lets anyone take the
		 * name first */
		snprintf(cfg->socket_path, sizeof(cfg->socket_path),
			 "/tmp/colloc-%lu/collocd.sock", (unsigned long)uid);
	default_state_dir(cfg->state_dir, uid);
	/* join_path() left room for this */
	snprintf(cfg->db_path, sizeof(cfg->db_path), "%s/collocd.db", cfg->state_dir);
	colloc_sched_config_init(&cfg->sched);
	cfg->sharing = CD_SHARING_TIME_SLICING;
	cfg->sample_ms = 1000;
	cfg->admin_group[0] = '\0';
	cfg->default_mem_bytes = (uint64_t)8 << 30;
	cfg->default_util = 0.5;
	cd_oom_policy_init(&cfg->oom);
	cfg->kill_grace_ms = (int64_t)10 * 1000;
	cfg->reserve_ms = (int64_t)60 * 1000;
	snprintf(cfg->mps_control, sizeof(cfg->mps_control), "nvidia-cuda-mps-control");
	cfg->mps_thread_share = 0;
	/* keep every job unless the admin says otherwise: an upgrade must not
	 * delete anyone's history */
	cfg->retention_ms = 0;
	cfg->overuse_stop = true;
	cfg->user_max_queued = 10000;
	cfg->log_max_bytes = (uint64_t)1 << 30;
	cfg->job_cgroups = true;
}

/* ------------------------------------------------------------------ values */

static const struct key *find_key(const char *name)
{
	for (size_t k = 0; k < N_KEYS; k++)
		if (strcmp(keys[k].name, name) == 0)
			return &keys[k];
	return NULL;
}

static bool all_digits(const char *s, size_t n)
{
	if (n == 0)
		return false;
	for (size_t i = 0; i < n; i++)
		if (s[i] < '0' || s[i] > '9')
			return false;
	return true;
}

/* A size; plain digits are read exactly (colloc_parse_size goes through a
 * double, which cannot hold every 64-bit count of bytes). */
static int parse_size(const char *s, uint64_t *out)
{
	if (all_digits(s, strlen(s)))
		return colloc_parse_u64(s, UINT64_MAX, out) == 0 ? 0 : -1;
	return colloc_parse_size(s, out) == 0 ? 0 : -1;
}

/* A duration in ms; "<digits>ms" is read exactly, for the same reason. */
static int parse_duration(const char *s, int64_t *out)
{
	size_t n = strlen(s);
	uint64_t v;

	if (n > 2 && strcasecmp(s + n - 2, "ms") == 0 && all_digits(s, n - 2)) {
		char digits[32];

		if (n - 2 >= sizeof(digits))
			return -1;
		memcpy(digits, s, n - 2);
		digits[n - 2] = '\0';
		if (colloc_parse_u64(digits, INT64_MAX, &v) != 0)
			return -1;
	} else if (colloc_parse_duration_ms(s, &v) != 0 || v > INT64_MAX) {
		int64_t ms;

		/* Days and compound forms ("30d", "1h30m"), as time limits
		 * take them (colloc/jobs.h). */
		if (colloc_duration_parse(s, &ms) != 0)
			return -1;
		v = (uint64_t)ms;
	}
	*out = (int64_t)v;
	return 0;
}

/* A finite non-negative decimal ("0.5", "1e-3"; "50%" when percent_ok).
 * Stricter than strtod(): no sign, spaces, hex, inf or nan. */
static int parse_double(const char *s, bool percent_ok, double *out)
{
	char tmp[64];
	size_t n = strlen(s);
	bool pct = false;
	char *end;
	double v;

	if (percent_ok && n > 0 && s[n - 1] == '%') {
		pct = true;
		n--;
	}
	if (n == 0 || n >= sizeof(tmp) || !((s[0] >= '0' && s[0] <= '9') || s[0] == '.'))
		return -1;
	for (size_t i = 0; i < n; i++)
		if (!strchr("0123456789.eE+-", s[i]))
			return -1;
	memcpy(tmp, s, n);
	tmp[n] = '\0';
	/* Underflow to a tiny or zero value is fine (and writes back exactly);
	 * overflow is caught as not finite. */
	v = strtod(tmp, &end);
	if (end != tmp + n || !isfinite(v))
		return -1;
	*out = pct ? v / 100.0 : v;
	return 0;
}

static int parse_bool(const char *s, bool *out)
{
	static const char *const yes[] = {"true", "yes", "on", "1"};
	static const char *const no[] = {"false", "no", "off", "0"};

	for (size_t k = 0; k < sizeof(yes) / sizeof(yes[0]); k++) {
		if (strcasecmp(s, yes[k]) == 0) {
			*out = true;
			return 0;
		}
		if (strcasecmp(s, no[k]) == 0) {
			*out = false;
			return 0;
		}
	}
	return -1;
}

static void list_policies(char *buf, size_t len)
{
	size_t used = 0;

	buf[0] = '\0';
	for (int k = 0; k < COLLOC_POLICY_COUNT_ && used < len; k++) {
		int n = snprintf(buf + used, len - used, "%s%s", k ? ", " : "",
				 colloc_policy_name(k));

		if (n < 0)
			break;
		used += (size_t)n;
	}
}

int cd_config_listen_parse(const char *value, struct cd_listen *out,
			   struct colloc_diag *diag)
{
	static const char form[] =
		"is not HOST:PORT (127.0.0.1:9400, [::1]:9400, localhost:9400)";
	struct cd_listen l;
	const char *colon, *host, *host_end;
	uint64_t port;
	size_t n;

	memset(&l, 0, sizeof(l));
	if (!value)
		return colloc_diag_set(diag, COLLOC_EUSAGE, "no address");
	/* The port follows the last ':'; an IPv6 address has colons of its
	 * own, hence the brackets that keep "[::1]:9400" unambiguous. */
	colon = strrchr(value, ':');
	if (!colon || !all_digits(colon + 1, strlen(colon + 1)) ||
	    strlen(colon + 1) > 5 || colloc_parse_u64(colon + 1, 65535, &port) != 0)
		return colloc_diag_set(diag, COLLOC_EUSAGE, "'%s' %s", value, form);
	host = value;
	host_end = colon;
	if (host[0] == '[') {
		if (host_end - host < 2 || host_end[-1] != ']')
			return colloc_diag_set(diag, COLLOC_EUSAGE, "'%s' %s", value,
					       form);
		host++;
		host_end--;
		l.family = AF_INET6;
	} else {
		l.family = AF_INET;
	}
	n = (size_t)(host_end - host);
	if (n == 0 || n >= sizeof(l.host))
		return colloc_diag_set(diag, COLLOC_EUSAGE, "'%s' %s", value, form);
	memcpy(l.host, host, n);
	l.host[n] = '\0';
	if (l.family == AF_INET && strcmp(l.host, "localhost") == 0)
		snprintf(l.host, sizeof(l.host), "127.0.0.1");
	if (l.family == AF_INET6) {
		struct in6_addr a6;

		if (inet_pton(AF_INET6, l.host, &a6) != 1)
			return colloc_diag_set(diag, COLLOC_EUSAGE,
					       "'%s': '%s' is not an IPv6 address", value,
					       l.host);
		l.loopback = IN6_IS_ADDR_LOOPBACK(&a6);
	} else {
		struct in_addr a4;

		if (strchr(l.host, ':'))
			return colloc_diag_set(diag, COLLOC_EUSAGE,
					       "'%s': write an IPv6 address in brackets "
					       "([::1]:9400)",
					       value);
		if (inet_pton(AF_INET, l.host, &a4) != 1)
			return colloc_diag_set(diag, COLLOC_EUSAGE,
					       "'%s': '%s' is not a numeric IPv4 address "
					       "or localhost",
					       value, l.host);
		l.loopback = (ntohl(a4.s_addr) >> 24) == 127;
	}
	l.port = (uint16_t)port;
	*out = l;
	return 0;
}

/*
 * Parse value v for key k into cfg's field. Returns 0, or COLLOC_EUSAGE /
 * COLLOC_ELIMIT with why (WHY_MAX bytes) saying what is wrong, cfg
 * untouched.
 */
static int set_value(struct cd_config *cfg, const struct key *k, const char *v, char *why)
{
	char *field = (char *)cfg + k->off;
	size_t n = strlen(v);

	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)v[i];

		if (c < 0x20 || c == 0x7f) {
			snprintf(why, WHY_MAX, "control character 0x%02x in the value",
				 c);
			return COLLOC_EUSAGE;
		}
	}
	switch (k->kind) {
	case KIND_STRING:
		if (n == 0 && !(k->flags & KEY_EMPTY_OK)) {
			snprintf(why, WHY_MAX, "empty value");
			return COLLOC_EUSAGE;
		}
		if (n >= k->size) {
			snprintf(why, WHY_MAX, "value is %zu bytes, the limit is %zu", n,
				 k->size - 1);
			return COLLOC_ELIMIT;
		}
		memcpy(field, v, n + 1);
		return 0;
	case KIND_POLICY: {
		int p = colloc_policy_parse(v);

		if (p < 0) {
			char names[160];

			list_policies(names, sizeof(names));
			snprintf(why, WHY_MAX, "'%s' is not a policy (one of %s)", v,
				 names);
			return COLLOC_EUSAGE;
		}
		memcpy(field, &p, sizeof(p));
		return 0;
	}
	case KIND_SHARING:
		for (int s = 0;
		     s < (int)(sizeof(sharing_names) / sizeof(sharing_names[0])); s++) {
			if (strcmp(v, sharing_names[s]) == 0) {
				memcpy(field, &s, sizeof(s));
				return 0;
			}
		}
		snprintf(why, WHY_MAX,
			 "'%s' is not a sharing mode (time-slicing, mps or mig)", v);
		return COLLOC_EUSAGE;
	case KIND_SIZE: {
		uint64_t b;

		if (parse_size(v, &b) != 0) {
			snprintf(why, WHY_MAX,
				 "'%s' is not a size such as 512MiB or 8GiB", v);
			return COLLOC_EUSAGE;
		}
		if (b == 0 && (k->flags & KEY_NONZERO)) {
			snprintf(why, WHY_MAX, "must be more than 0");
			return COLLOC_EUSAGE;
		}
		memcpy(field, &b, sizeof(b));
		return 0;
	}
	case KIND_DURATION: {
		int64_t ms;

		if (parse_duration(v, &ms) != 0) {
			snprintf(why, WHY_MAX,
				 "'%s' is not a duration such as 500ms, 10s or 30min", v);
			return COLLOC_EUSAGE;
		}
		if (ms == 0 && (k->flags & KEY_NONZERO)) {
			snprintf(why, WHY_MAX, "must be at least 1ms");
			return COLLOC_EUSAGE;
		}
		memcpy(field, &ms, sizeof(ms));
		return 0;
	}
	case KIND_BOOL: {
		bool b;

		if (parse_bool(v, &b) != 0) {
			snprintf(why, WHY_MAX, "'%s' is not true or false", v);
			return COLLOC_EUSAGE;
		}
		memcpy(field, &b, sizeof(b));
		return 0;
	}
	case KIND_FRACTION: {
		double d;

		if (parse_double(v, true, &d) != 0 || d > k->max ||
		    (d == 0 && (k->flags & KEY_NONZERO))) {
			snprintf(why, WHY_MAX,
				 "'%s' is not a number %s 0 %s %g (or %g%%)", v,
				 (k->flags & KEY_NONZERO) ? "above" : "from",
				 (k->flags & KEY_NONZERO) ? "and at most" : "to", k->max,
				 k->max * 100);
			return COLLOC_EUSAGE;
		}
		memcpy(field, &d, sizeof(d));
		return 0;
	}
	case KIND_FACTOR: {
		double d;

		if (parse_double(v, false, &d) != 0 || d < 1.0 || d > FACTOR_MAX) {
			snprintf(why, WHY_MAX, "'%s' is not a factor from 1.0 to %g", v,
				 FACTOR_MAX);
			return COLLOC_EUSAGE;
		}
		memcpy(field, &d, sizeof(d));
		return 0;
	}
	case KIND_LISTEN: {
		struct colloc_diag d = {{0}};
		struct cd_listen l;

		if (n >= k->size) {
			snprintf(why, WHY_MAX, "value is %zu bytes, the limit is %zu", n,
				 k->size - 1);
			return COLLOC_ELIMIT;
		}
		if (n > 0 && cd_config_listen_parse(v, &l, &d) != 0) {
			snprintf(why, WHY_MAX, "%s", d.msg);
			return COLLOC_EUSAGE;
		}
		memcpy(field, v, n + 1);
		return 0;
	}
	case KIND_LIMIT: {
		uint64_t c;

		if (colloc_parse_u64(v, LIMIT_MAX, &c) != 0) {
			snprintf(why, WHY_MAX,
				 "'%s' is not a whole number from 0 (no limit) to %d", v,
				 LIMIT_MAX);
			return COLLOC_EUSAGE;
		}
		memcpy(field, &c, sizeof(c));
		return 0;
	}
	case KIND_COUNT: {
		uint64_t c;
		int i;

		if (colloc_parse_u64(v, COUNT_MAX, &c) != 0 || c < 1) {
			snprintf(why, WHY_MAX, "'%s' is not a whole number from 1 to %d",
				 v, COUNT_MAX);
			return COLLOC_EUSAGE;
		}
		i = (int)c;
		memcpy(field, &i, sizeof(i));
		return 0;
	}
	default:
		break;
	}
	snprintf(why, WHY_MAX, "internal error: key of unknown kind");
	return COLLOC_EUSAGE;
}

/* ------------------------------------------------------------------- parse */

static bool is_space(char c)
{
	return c == ' ' || c == '\t';
}

/* Line number (1-based) of byte pos in buf. */
static int line_of(const char *buf, size_t pos)
{
	int line = 1;

	for (size_t i = 0; i < pos; i++)
		if (buf[i] == '\n')
			line++;
	return line;
}

/*
 * Split one line (NUL-terminated, no '\n', no control characters other than
 * tabs) into key and value, in place. Sets *key to NULL for a blank or
 * comment line. Returns 0, or COLLOC_EFORMAT with why.
 */
static int split_line(char *s, char **key, char **value, char *why)
{
	char *p = s, *k, *kend, *v, *w;

	*key = NULL;
	while (is_space(*p))
		p++;
	if (*p == '\0' || *p == '#')
		return 0;
	k = p;
	while (*p && *p != '=' && !is_space(*p) && *p != '#' && *p != '"')
		p++;
	kend = p;
	while (is_space(*p))
		p++;
	if (*p != '=') {
		if (kend == k)
			snprintf(why, WHY_MAX, "expected 'key = value'");
		else
			snprintf(why, WHY_MAX, "expected '=' after '%.*s'",
				 (int)(kend - k), k);
		return COLLOC_EFORMAT;
	}
	if (kend == k) {
		snprintf(why, WHY_MAX, "missing key before '='");
		return COLLOC_EFORMAT;
	}
	*kend = '\0';
	p++;
	while (is_space(*p))
		p++;

	if (*p == '"') {
		/* Quoted: \" and \\ are the only escapes, unescaped in place. */
		v = w = ++p;
		for (;; p++) {
			if (*p == '\0') {
				snprintf(why, WHY_MAX, "unterminated quote");
				return COLLOC_EFORMAT;
			}
			if (*p == '"')
				break;
			if (*p == '\\') {
				if (p[1] != '"' && p[1] != '\\') {
					snprintf(why, WHY_MAX,
						 "unknown escape in quotes (only \\\" "
						 "and \\\\)");
					return COLLOC_EFORMAT;
				}
				p++;
			}
			*w++ = *p;
		}
		*w = '\0';
		p++;
		while (is_space(*p))
			p++;
		if (*p != '\0' && *p != '#') {
			snprintf(why, WHY_MAX, "unexpected text after the closing quote");
			return COLLOC_EFORMAT;
		}
	} else {
		v = p;
		while (*p && *p != '#') {
			if (*p == '"') {
				snprintf(why, WHY_MAX,
					 "stray '\"' in the value (quote the whole "
					 "value)");
				return COLLOC_EFORMAT;
			}
			p++;
		}
		while (p > v && is_space(p[-1]))
			p--;
		*p = '\0';
	}
	*key = k;
	*value = v;
	return 0;
}

int cd_config_parse(struct cd_config *cfg, const char *buf, size_t len, const char *name,
		    struct colloc_diag *diag)
{
	struct cd_config tmp = *cfg;
	int first_line[N_KEYS] = {0};
	char line[CONFIG_LINE_MAX + 1];
	char why[WHY_MAX];
	size_t pos = 0;
	int lineno = 0;

	if (!name)
		name = "config";
	if (len > CONFIG_FILE_MAX)
		return colloc_diag_set(
			diag, COLLOC_ELIMIT, "%s:%d: file is over the %zu KiB limit",
			name, line_of(buf, CONFIG_FILE_MAX), CONFIG_FILE_MAX >> 10);
	while (pos < len) {
		const char *start = buf + pos;
		const char *nl = memchr(start, '\n', len - pos);
		const char *end = nl ? nl : buf + len;
		const struct key *k;
		char *key, *value;
		size_t n;
		int rc;

		lineno++;
		pos = (size_t)(end - buf) + (nl ? 1 : 0);
		if (end != start && end[-1] == '\r')
			end--; /* CRLF files */
		n = (size_t)(end - start);
		if (n > CONFIG_LINE_MAX)
			return colloc_diag_set(diag, COLLOC_ELIMIT,
					       "%s:%d: line is over the %d-byte limit",
					       name, lineno, CONFIG_LINE_MAX);
		for (size_t i = 0; i < n; i++) {
			unsigned char c = (unsigned char)start[i];

			if ((c < 0x20 && c != '\t') || c == 0x7f)
				return colloc_diag_set(diag, COLLOC_EFORMAT,
						       "%s:%d: control character 0x%02x "
						       "in column %zu",
						       name, lineno, c, i + 1);
		}
		memcpy(line, start, n);
		line[n] = '\0';

		rc = split_line(line, &key, &value, why);
		if (rc)
			return colloc_diag_set(diag, rc, "%s:%d: %s", name, lineno, why);
		if (!key)
			continue;
		k = find_key(key);
		if (!k)
			return colloc_diag_set(diag, COLLOC_EUSAGE,
					       "%s:%d: unknown key '%s'", name, lineno,
					       key);
		if (first_line[k - keys])
			return colloc_diag_set(
				diag, COLLOC_EFORMAT,
				"%s:%d: repeated key '%s' (first on line %d)", name,
				lineno, key, first_line[k - keys]);
		first_line[k - keys] = lineno;
		rc = set_value(&tmp, k, value, why);
		if (rc)
			return colloc_diag_set(diag, rc, "%s:%d: %s: %s", name, lineno,
					       key, why);
	}
	*cfg = tmp;
	return 0;
}

int cd_config_load(struct cd_config *cfg, const char *path, struct colloc_diag *diag)
{
	/* One byte more than allowed, so that a file over the limit is
	 * refused by cd_config_parse() with its line number. */
	const size_t cap = CONFIG_FILE_MAX + 1;
	size_t len = 0;
	char *buf;
	int fd, rc;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		rc = -errno;
		return colloc_diag_set(diag, rc, "%s: %s", path, strerror(-rc));
	}
	buf = malloc(cap);
	if (!buf) {
		rc = colloc_diag_set(diag, -ENOMEM, "%s: out of memory", path);
		goto out_fd;
	}
	while (len < cap) {
		ssize_t got = read(fd, buf + len, cap - len);

		if (got < 0) {
			if (errno == EINTR)
				continue;
			rc = -errno;
			colloc_diag_printf(diag, "%s: %s", path, strerror(-rc));
			goto out_buf;
		}
		if (got == 0)
			break;
		len += (size_t)got;
	}
	rc = cd_config_parse(cfg, buf, len, path, diag);
out_buf:
	free(buf);
out_fd:
	close(fd);
	return rc;
}

int cd_config_set(struct cd_config *cfg, const char *key, const char *value,
		  struct colloc_diag *diag)
{
	const struct key *k = key ? find_key(key) : NULL;
	char why[WHY_MAX];

	if (!k)
		return colloc_diag_set(diag, COLLOC_EUSAGE, "unknown key '%s'",
				       key ? key : "(null)");
	if (!value)
		return colloc_diag_set(diag, COLLOC_EUSAGE, "%s: no value", key);
	if (set_value(cfg, k, value, why) != 0)
		return colloc_diag_set(diag, COLLOC_EUSAGE, "%s: %s", key, why);
	return 0;
}

/* -------------------------------------------------------------------- gpus */

bool cd_config_gpus_is_auto(const char *spec)
{
	return strcmp(spec, "auto") == 0 || strncmp(spec, "auto:", 5) == 0;
}

static void note_set(char *note, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void note_set(char *note, size_t len, const char *fmt, ...)
{
	va_list ap;

	if (!note || len == 0)
		return;
	va_start(ap, fmt);
	(void)vsnprintf(note, len, fmt, ap);
	va_end(ap);
}

/* spec, or spec with ",path=STATE_DIR/gpus.sim" when it is a sim spec
 * without a path of its own, into out (CD_PATH_MAX). Returns 0 or
 * COLLOC_ELIMIT. */
static int sim_with_path(const struct cd_config *cfg, const char *spec, char *out,
			 bool *added)
{
	const char *args = NULL;
	const char *env = getenv("COLLOC_SIM_STATE");
	int n;

	*added = false;
	if (strcmp(spec, "sim") == 0)
		args = "";
	else if (strncmp(spec, "sim:", 4) == 0)
		args = spec + 4;
	/* "path=" anywhere after the size takes the rest of the spec
	 * (colloc/simgpu.h): a spec that has one chose its file. */
	if (!args || strncmp(args, "path=", 5) == 0 || strstr(args, ",path=") ||
	    (env && *env)) {
		n = snprintf(out, CD_PATH_MAX, "%s", spec);
	} else {
		n = snprintf(out, CD_PATH_MAX, "sim:%s%spath=%s/%s", args,
			     *args ? "," : "", cfg->state_dir, CD_SIM_STATE_NAME);
		*added = true;
	}
	return n < 0 || n >= CD_PATH_MAX ? COLLOC_ELIMIT : 0;
}

int cd_config_resolve_gpus(struct cd_config *cfg, bool nvml_ok, const char *nvml_why,
			   char *note, size_t note_len, struct colloc_diag *diag)
{
	char spec[CD_PATH_MAX];
	char out[CD_PATH_MAX];
	bool added;
	int rc;

	snprintf(spec, sizeof(spec), "%s", cfg->gpus);
	note_set(note, note_len, "%s", "");
	if (!nvml_why || !*nvml_why)
		nvml_why = "no reason given";
	if (cd_config_gpus_is_auto(spec)) {
		if (nvml_ok) {
			snprintf(cfg->gpus, sizeof(cfg->gpus), "nvml");
			note_set(note, note_len, "gpus %s: NVIDIA's GPUs through NVML",
				 spec);
			return 0;
		}
		if (strcmp(spec, "auto") == 0 && !cfg->allow_sim)
			return colloc_diag_set(
				diag, COLLOC_ENOTFOUND,
				"gpus auto: no NVIDIA GPU can be used (NVML: %s); "
				"collocd "
				"does not serve simulated GPUs unless asked: fix the "
				"driver, or start it with --gpus %s or with allow_sim = "
				"true in its config",
				nvml_why, CD_SIM_FALLBACK);
		snprintf(spec, sizeof(spec), "%s",
			 strcmp(cfg->gpus, "auto") == 0 ? CD_SIM_FALLBACK
							: cfg->gpus + 5);
	}
	if ((rc = sim_with_path(cfg, spec, out, &added)))
		return colloc_diag_set(diag, rc, "gpus '%.64s': the spec is too long",
				       spec);
	if (cd_config_gpus_is_auto(cfg->gpus))
		note_set(note, note_len,
			 "gpus %s: NVML cannot be used (%s); serving SIMULATED GPUs %s "
			 "(%s)",
			 cfg->gpus, nvml_why, out,
			 strcmp(cfg->gpus, "auto") == 0 ? "allow_sim = true"
							: "named in the spec");
	else if (added)
		note_set(note, note_len, "gpus %s: simulated GPUs in %s/%s", cfg->gpus,
			 cfg->state_dir, CD_SIM_STATE_NAME);
	snprintf(cfg->gpus, sizeof(cfg->gpus), "%s", out);
	return 0;
}

/* ------------------------------------------------------------------- write */

/* v as a config value: bare when it reads back the same, else quoted. */
static int format_string(const char *v, char *out, size_t cap)
{
	size_t n = strlen(v), o = 0;
	bool quote = n == 0 || is_space(v[0]) || is_space(v[n - 1]) ||
		     strpbrk(v, "#\"") != NULL;

	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)v[i];

		if (c < 0x20 || c == 0x7f)
			return -EINVAL; /* a line cannot hold it */
	}
	if (quote && o < cap)
		out[o++] = '"';
	for (size_t i = 0; i < n && o < cap; i++) {
		if (quote && (v[i] == '"' || v[i] == '\\'))
			out[o++] = '\\';
		if (o < cap)
			out[o++] = v[i];
	}
	if (quote && o < cap)
		out[o++] = '"';
	if (o >= cap)
		return -ENAMETOOLONG;
	out[o] = '\0';
	return 0;
}

/* The shortest %g that reads back as exactly d. */
static void format_double(double d, char *out, size_t cap)
{
	for (int prec = 15; prec <= 17; prec++) {
		snprintf(out, cap, "%.*g", prec, d);
		if (strtod(out, NULL) == d)
			return;
	}
}

/* Bytes in the largest binary unit that divides them, so that the value
 * reads back exactly (the count in that unit stays within a double's 2^53
 * exact integers; otherwise plain digits, which parse_size reads exactly). */
static void format_size(uint64_t b, char *out, size_t cap)
{
	static const struct {
		const char *unit;
		int shift;
	} units[] = {{"TiB", 40}, {"GiB", 30}, {"MiB", 20}, {"KiB", 10}};

	for (size_t k = 0; b && k < sizeof(units) / sizeof(units[0]); k++) {
		uint64_t m = (uint64_t)1 << units[k].shift;

		if (b % m == 0 && b / m <= ((uint64_t)1 << 53)) {
			snprintf(out, cap, "%llu%s", (unsigned long long)(b / m),
				 units[k].unit);
			return;
		}
	}
	snprintf(out, cap, "%llu", (unsigned long long)b);
}

static void format_duration(int64_t ms, char *out, size_t cap)
{
	static const struct {
		const char *unit;
		int64_t ms;
	} units[] = {{"d", 86400000}, {"h", 3600000}, {"min", 60000}, {"s", 1000}};

	for (size_t k = 0; ms > 0 && k < sizeof(units) / sizeof(units[0]); k++) {
		if (ms % units[k].ms == 0) {
			snprintf(out, cap, "%lld%s", (long long)(ms / units[k].ms),
				 units[k].unit);
			return;
		}
	}
	snprintf(out, cap, "%lldms", (long long)ms);
}

/* "key = value" for k, within the parser's line limit. Returns 0, or
 * -EINVAL / -ENAMETOOLONG when the value cannot be written readably. */
static int format_line(const struct cd_config *cfg, const struct key *k, char *line,
		       size_t cap)
{
	const char *field = (const char *)cfg + k->off;
	char val[CONFIG_LINE_MAX + 2];

	switch (k->kind) {
	case KIND_STRING:
	case KIND_LISTEN: {
		int rc;

		if (strnlen(field, k->size) == k->size)
			return -EINVAL; /* not NUL-terminated */
		rc = format_string(field, val, sizeof(val));
		if (rc)
			return rc;
		break;
	}
	case KIND_POLICY: {
		int p;

		memcpy(&p, field, sizeof(p));
		if (colloc_policy_parse(colloc_policy_name(p)) != p)
			return -EINVAL; /* "unknown" would not read back */
		snprintf(val, sizeof(val), "%s", colloc_policy_name(p));
		break;
	}
	case KIND_SHARING: {
		int s;

		memcpy(&s, field, sizeof(s));
		if (s < 0 || s >= (int)(sizeof(sharing_names) / sizeof(sharing_names[0])))
			return -EINVAL;
		snprintf(val, sizeof(val), "%s", sharing_names[s]);
		break;
	}
	case KIND_SIZE: {
		uint64_t b;

		memcpy(&b, field, sizeof(b));
		format_size(b, val, sizeof(val));
		break;
	}
	case KIND_DURATION: {
		int64_t ms;

		memcpy(&ms, field, sizeof(ms));
		if (ms < 0)
			return -EINVAL;
		format_duration(ms, val, sizeof(val));
		break;
	}
	case KIND_BOOL: {
		bool b;

		memcpy(&b, field, sizeof(b));
		snprintf(val, sizeof(val), "%s", b ? "true" : "false");
		break;
	}
	case KIND_FRACTION:
	case KIND_FACTOR: {
		double d;

		memcpy(&d, field, sizeof(d));
		if (!isfinite(d))
			return -EINVAL;
		format_double(d, val, sizeof(val));
		break;
	}
	case KIND_COUNT: {
		int c;

		memcpy(&c, field, sizeof(c));
		snprintf(val, sizeof(val), "%d", c);
		break;
	}
	case KIND_LIMIT: {
		uint64_t c;

		memcpy(&c, field, sizeof(c));
		snprintf(val, sizeof(val), "%llu", (unsigned long long)c);
		break;
	}
	default:
		return -EINVAL;
	}
	/* Without the spaces when they would cross the line limit: a file
	 * line "key=value" that parsed can always be written back. */
	for (int tight = 0; tight < 2; tight++) {
		int n = snprintf(line, cap, tight ? "%s=%s\n" : "%s = %s\n", k->name,
				 val);
		if (n > 0 && (size_t)n < cap && (size_t)n - 1 <= CONFIG_LINE_MAX)
			return 0;
	}
	return -ENAMETOOLONG;
}

int cd_config_write(const struct cd_config *cfg, FILE *f)
{
	char line[CONFIG_LINE_MAX + 2];

	/* Check every line first, so that nothing is written unless all of
	 * it can be. */
	for (size_t k = 0; k < N_KEYS; k++) {
		int rc = format_line(cfg, &keys[k], line, sizeof(line));

		if (rc)
			return rc;
	}
	if (fputs("# collocd configuration (docs/collocd-config.md)\n", f) < 0)
		return -EIO;
	for (size_t k = 0; k < N_KEYS; k++) {
		format_line(cfg, &keys[k], line, sizeof(line));
		if (fputs(line, f) < 0)
			return -EIO;
	}
	return fflush(f) == 0 ? 0 : -EIO;
}
