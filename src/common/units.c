/*
 * units.c — human-friendly numbers in and out (see colloc/units.h).
 */
#include "colloc/units.h"

#include <ctype.h>
#include <stdbool.h>
#include <math.h>
#include <stdio.h>
#include <strings.h>

#include "colloc/error.h"

int colloc_parse_u64(const char *s, uint64_t max, uint64_t *out)
{
	uint64_t v = 0;

	if (!s || !*s)
		return COLLOC_EUSAGE;
	for (; *s; s++) {
		unsigned d;

		if (!isdigit((unsigned char)*s))
			return COLLOC_EUSAGE;
		d = (unsigned)(*s - '0');
		if (d > max || v > (max - d) / 10)
			return COLLOC_EOVERFLOW;
		v = v * 10 + d;
	}
	*out = v;
	return 0;
}

/* A non-negative decimal number (one optional '.') at *p: its value in
 * *out and *p moved past it. Returns 0, or COLLOC_EUSAGE when there are no
 * digits or the value is absurdly large. */
static int read_decimal(const char **p, double *out)
{
	double mant = 0, scale = 1;
	bool digits = false, dot = false;
	const char *q = *p;

	if (!q)
		return COLLOC_EUSAGE;
	for (; *q; q++) {
		if (isdigit((unsigned char)*q)) {
			digits = true;
			if (dot)
				scale /= 10;
			mant = mant * 10 + (*q - '0');
			if (mant > 1e30)
				return COLLOC_EUSAGE;
		} else if (*q == '.' && !dot) {
			dot = true;
		} else {
			break;
		}
	}
	if (!digits)
		return COLLOC_EUSAGE;
	*out = mant * scale;
	*p = q;
	return 0;
}

int colloc_parse_size(const char *s, uint64_t *out)
{
	static const struct {
		const char *suffix;
		double mult;
	} units[] = {
		{"", 1},
		{"b", 1},
		{"k", 1e3},
		{"kb", 1e3},
		{"kib", 1024.0},
		{"m", 1e6},
		{"mb", 1e6},
		{"mib", 1048576.0},
		{"g", 1e9},
		{"gb", 1e9},
		{"gib", 1073741824.0},
		{"t", 1e12},
		{"tb", 1e12},
		{"tib", 1099511627776.0},
	};
	double mant;
	const char *p = s;

	if (read_decimal(&p, &mant))
		return COLLOC_EUSAGE;
	while (*p == ' ')
		p++;
	for (size_t k = 0; k < sizeof(units) / sizeof(units[0]); k++) {
		if (strcasecmp(p, units[k].suffix) == 0) {
			double v = mant * units[k].mult;

			/* 2^64 is exactly representable; at or past it won't fit. */
			if (!(v < 18446744073709551616.0))
				return COLLOC_EUSAGE;
			/* llround() stops at INT64_MAX; doubles from 2^63 up
			 * are whole numbers and convert exactly. */
			*out = v < 9223372036854775808.0 ? (uint64_t)llround(v)
							 : (uint64_t)v;
			return 0;
		}
	}
	return COLLOC_EUSAGE;
}

/* n in units of base with three significant digits; k counts the
 * divisions. A value that would print as "1024 KiB" moves up a unit. */
static const char *format_scaled(uint64_t n, double base, const char *const *sfx,
				 char *buf, size_t len)
{
	double v = (double)n;
	int k = 0;

	while (v >= base && k < 6) {
		v /= base;
		k++;
	}
	if (k > 0 && v >= 999.5 && k < 6) {
		v /= base;
		k++;
	}
	if (k == 0)
		snprintf(buf, len, "%llu%s%s", (unsigned long long)n,
			 sfx[0][0] ? " " : "", sfx[0]);
	else
		snprintf(buf, len,
			 v < 9.995   ? "%.2f %s"
			 : v < 99.95 ? "%.1f %s"
				     : "%.0f %s",
			 v, sfx[k]);
	return buf;
}

const char *colloc_format_bytes(uint64_t bytes, char *buf, size_t len)
{
	static const char *const sfx[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};

	return format_scaled(bytes, 1024.0, sfx, buf, len);
}

const char *colloc_format_count(uint64_t n, char *buf, size_t len)
{
	static const char *const sfx[] = {"", "K", "M", "G", "T", "P", "E"};

	return format_scaled(n, 1000.0, sfx, buf, len);
}

int colloc_parse_duration_ms(const char *s, uint64_t *out_ms)
{
	static const struct {
		const char *suffix;
		double ms;
	} units[] = {
		{"", 1000.0}, {"ms", 1.0},   {"s", 1000.0},    {"sec", 1000.0},
		{"m", 60e3},  {"min", 60e3}, {"h", 3600000.0},
	};
	double mant;
	const char *p = s;

	if (read_decimal(&p, &mant))
		return COLLOC_EUSAGE;
	for (size_t k = 0; k < sizeof(units) / sizeof(units[0]); k++) {
		if (strcasecmp(p, units[k].suffix) == 0) {
			double v = mant * units[k].ms;

			/* 2^63 ms: far beyond any real duration, and llround()
			 * is defined below it. */
			if (!(v < 9223372036854775808.0))
				return COLLOC_EUSAGE;
			*out_ms = (uint64_t)llround(v);
			return 0;
		}
	}
	return COLLOC_EUSAGE;
}
