/*
 * colloc/units.h — parsing and printing sizes, counts and durations as
 * people write them ("6GiB", "512M", "1.5e9", "2s", "250ms").
 *
 * Pure functions on caller buffers; nothing is allocated.
 */
#ifndef COLLOC_UNITS_H
#define COLLOC_UNITS_H

#include <stddef.h>
#include <stdint.h>

/*
 * Parse a byte size: a non-negative number (decimal point allowed) with an
 * optional suffix B, K/KB (1000), KiB (1024), M/MB, MiB, G/GB, GiB, T/TB,
 * TiB (case-insensitive). Returns 0, or COLLOC_EUSAGE when s is not a size
 * or does not fit in 64 bits.
 */
int colloc_parse_size(const char *s, uint64_t *out);

/*
 * Parse a non-negative decimal integer with no sign, suffix or spaces.
 * Returns 0, or COLLOC_EUSAGE (garbage) / COLLOC_EOVERFLOW (> max).
 */
int colloc_parse_u64(const char *s, uint64_t max, uint64_t *out);

/*
 * Parse a duration: a non-negative number (decimal point allowed) with an
 * optional unit ms, s, m/min, h (case-insensitive; no unit means seconds),
 * e.g. "2s", "500ms", "1.5m", "1h". The result is rounded to the nearest
 * millisecond. Returns 0, or COLLOC_EUSAGE when s is not a duration or the
 * value does not fit in 63 bits of milliseconds; *out_ms is left alone then.
 */
int colloc_parse_duration_ms(const char *s, uint64_t *out_ms);

/* "1.50 GiB", "512 B": binary units, three significant digits. */
const char *colloc_format_bytes(uint64_t bytes, char *buf, size_t len);

/* "4.11 G", "25.6 M", "980": decimal units for counts such as FLOPs. */
const char *colloc_format_count(uint64_t n, char *buf, size_t len);

#endif
