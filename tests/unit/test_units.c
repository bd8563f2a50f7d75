/*
 * test_units.c — parsing and printing sizes and counts (units.c).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "colloc/error.h"
#include "colloc/units.h"

static uint64_t size_ok(const char *s)
{
	uint64_t v = 0xdeadbeef;
	int rc = colloc_parse_size(s, &v);

	if (rc) {
		print_error("colloc_parse_size(\"%s\") failed with %d\n", s, rc);
		fail();
	}
	return v;
}

static void size_bad(const char *s)
{
	uint64_t v = 0xdeadbeef;
	int rc = colloc_parse_size(s, &v);

	if (rc != COLLOC_EUSAGE) {
		print_error("colloc_parse_size(\"%s\") gave %d (value %llu), expected "
			    "COLLOC_EUSAGE\n",
			    s ? s : "(null)", rc, (unsigned long long)v);
		fail();
	}
	/* a failed parse leaves the output alone */
	assert_int_equal(v, 0xdeadbeef);
}

static void test_parse_size_plain(void **state)
{
	(void)state;
	assert_int_equal(size_ok("0"), 0);
	assert_int_equal(size_ok("1"), 1);
	assert_int_equal(size_ok("007"), 7);
	assert_int_equal(size_ok("123456789"), 123456789);
	assert_int_equal(size_ok("512B"), 512);
	assert_int_equal(size_ok("512b"), 512);
	/* integers are exact up to 2^53 */
	assert_int_equal(size_ok("9007199254740992"), 9007199254740992ull);
}

static void test_parse_size_suffixes(void **state)
{
	(void)state;
	assert_int_equal(size_ok("1K"), 1000);
	assert_int_equal(size_ok("1kb"), 1000);
	assert_int_equal(size_ok("1KiB"), 1024);
	assert_int_equal(size_ok("1kib"), 1024);
	assert_int_equal(size_ok("1KIB"), 1024);
	assert_int_equal(size_ok("512M"), 512000000);
	assert_int_equal(size_ok("512MB"), 512000000);
	assert_int_equal(size_ok("512MiB"), 536870912);
	assert_int_equal(size_ok("6GiB"), 6442450944ull);
	assert_int_equal(size_ok("6gib"), 6442450944ull);
	assert_int_equal(size_ok("6G"), 6000000000ull);
	assert_int_equal(size_ok("2T"), 2000000000000ull);
	assert_int_equal(size_ok("2TiB"), 2199023255552ull);
	assert_int_equal(size_ok("2 GB"), 2000000000ull);
	/* 2^63 and above (past llround's range) */
	assert_int_equal(size_ok("8388608TiB"), 9223372036854775808ull);
	assert_int_equal(size_ok("16777215TiB"), 18446742974197923840ull);
	assert_int_equal(size_ok("18000000TB"), 18000000000000000000ull);
}

static void test_parse_size_fractions(void **state)
{
	(void)state;
	assert_int_equal(size_ok("1.5GiB"), 1610612736ull);
	assert_int_equal(size_ok("1.5gib"), 1610612736ull);
	assert_int_equal(size_ok("0.5K"), 500);
	assert_int_equal(size_ok(".5K"), 500);
	assert_int_equal(size_ok("1.1KB"), 1100);
	assert_int_equal(size_ok("2."), 2);
	assert_int_equal(size_ok("0.25MiB"), 262144);
	/* fractions of a byte round to the nearest */
	assert_int_equal(size_ok("1.4"), 1);
	assert_int_equal(size_ok("1.6"), 2);
}

static void test_parse_size_errors(void **state)
{
	(void)state;
	size_bad(NULL);
	size_bad("");
	size_bad(" ");
	size_bad("abc");
	size_bad("GiB");
	size_bad(".");
	size_bad("-1");
	size_bad("+1");
	size_bad(" 1");
	size_bad("1.2.3");
	size_bad("1e9");
	size_bad("12x");
	size_bad("1 GiBs");
	size_bad("1PiB"); /* no suffix beyond tera */
	size_bad("1KiB ");
	/* 2^64 and beyond do not fit */
	size_bad("18446744073709551615");
	size_bad("18446744073709551616");
	size_bad("16777216TiB");
	size_bad("20000000T");
	size_bad("9999999999999999999999999999999999");
}

static void u64_is(const char *s, uint64_t max, uint64_t want)
{
	uint64_t v = 0;
	int rc = colloc_parse_u64(s, max, &v);

	if (rc || v != want) {
		print_error("colloc_parse_u64(\"%s\", %llu) gave %d, %llu\n", s,
			    (unsigned long long)max, rc, (unsigned long long)v);
		fail();
	}
}

static void u64_fails(const char *s, uint64_t max, int want)
{
	uint64_t v = 42;

	assert_int_equal(colloc_parse_u64(s, max, &v), want);
	assert_int_equal(v, 42);
}

static void test_parse_u64(void **state)
{
	(void)state;
	u64_is("0", UINT64_MAX, 0);
	u64_is("42", UINT64_MAX, 42);
	u64_is("0042", UINT64_MAX, 42);
	u64_is("18446744073709551615", UINT64_MAX, UINT64_MAX);
	u64_fails("18446744073709551616", UINT64_MAX, COLLOC_EOVERFLOW);
	u64_fails("99999999999999999999999", UINT64_MAX, COLLOC_EOVERFLOW);
	u64_is("100", 100, 100);
	u64_fails("101", 100, COLLOC_EOVERFLOW);
	u64_fails("1000", 100, COLLOC_EOVERFLOW);
	u64_is("65535", 65535, 65535);
	u64_fails("65536", 65535, COLLOC_EOVERFLOW);
	/* a single digit above a small max */
	u64_is("5", 5, 5);
	u64_fails("7", 5, COLLOC_EOVERFLOW);
	u64_fails("1", 0, COLLOC_EOVERFLOW);
	u64_is("0", 0, 0);

	u64_fails(NULL, UINT64_MAX, COLLOC_EUSAGE);
	u64_fails("", UINT64_MAX, COLLOC_EUSAGE);
	u64_fails("-1", UINT64_MAX, COLLOC_EUSAGE);
	u64_fails("+1", UINT64_MAX, COLLOC_EUSAGE);
	u64_fails(" 1", UINT64_MAX, COLLOC_EUSAGE);
	u64_fails("1 ", UINT64_MAX, COLLOC_EUSAGE);
	u64_fails("12a", UINT64_MAX, COLLOC_EUSAGE);
	u64_fails("1.0", UINT64_MAX, COLLOC_EUSAGE);
	u64_fails("0x10", UINT64_MAX, COLLOC_EUSAGE);
	u64_fails("1K", UINT64_MAX, COLLOC_EUSAGE);
}

static void test_format_bytes(void **state)
{
	char buf[32];

	(void)state;
	assert_string_equal(colloc_format_bytes(0, buf, sizeof(buf)), "0 B");
	assert_string_equal(colloc_format_bytes(1, buf, sizeof(buf)), "1 B");
	assert_string_equal(colloc_format_bytes(1023, buf, sizeof(buf)), "1023 B");
	assert_string_equal(colloc_format_bytes(1024, buf, sizeof(buf)), "1.00 KiB");
	assert_string_equal(colloc_format_bytes(1536, buf, sizeof(buf)), "1.50 KiB");
	assert_string_equal(colloc_format_bytes(10240, buf, sizeof(buf)), "10.0 KiB");
	assert_string_equal(colloc_format_bytes(102400, buf, sizeof(buf)), "100 KiB");
	assert_string_equal(colloc_format_bytes(1048576, buf, sizeof(buf)), "1.00 MiB");
	assert_string_equal(colloc_format_bytes(1610612736ull, buf, sizeof(buf)),
			    "1.50 GiB");
	assert_string_equal(colloc_format_bytes(6442450944ull, buf, sizeof(buf)),
			    "6.00 GiB");
	assert_string_equal(colloc_format_bytes(1099511627776ull, buf, sizeof(buf)),
			    "1.00 TiB");
	assert_string_equal(colloc_format_bytes(1ull << 50, buf, sizeof(buf)),
			    "1.00 PiB");
	assert_string_equal(colloc_format_bytes(UINT64_MAX, buf, sizeof(buf)),
			    "16.0 EiB");
	/* truncated to the buffer, still terminated, and returns buf */
	assert_ptr_equal(colloc_format_bytes(1536, buf, 4), buf);
	assert_string_equal(buf, "1.5");
}

static void test_format_count(void **state)
{
	char buf[32];

	(void)state;
	assert_string_equal(colloc_format_count(0, buf, sizeof(buf)), "0");
	assert_string_equal(colloc_format_count(980, buf, sizeof(buf)), "980");
	assert_string_equal(colloc_format_count(999, buf, sizeof(buf)), "999");
	assert_string_equal(colloc_format_count(1000, buf, sizeof(buf)), "1.00 K");
	assert_string_equal(colloc_format_count(25600000, buf, sizeof(buf)), "25.6 M");
	assert_string_equal(colloc_format_count(4110000000ull, buf, sizeof(buf)),
			    "4.11 G");
	assert_string_equal(colloc_format_count(123000000000000ull, buf, sizeof(buf)),
			    "123 T");
	assert_string_equal(colloc_format_count(UINT64_MAX, buf, sizeof(buf)), "18.4 E");
}

static void test_strerror(void **state)
{
	(void)state;
	assert_string_equal(colloc_strerror(0), "success");
	assert_string_equal(colloc_strerror(COLLOC_EFORMAT), "malformed input");
	assert_string_equal(colloc_strerror(COLLOC_EOVERFLOW), "arithmetic overflow");
	assert_string_equal(colloc_strerror(-2), strerror(2));
	assert_string_equal(colloc_strerror(-5000), "unknown error");
	assert_string_equal(colloc_strerror(7), "unknown error");
}

static void test_diag(void **state)
{
	struct colloc_diag d;

	(void)state;
	colloc_diag_clear(&d);
	assert_string_equal(d.msg, "");
	assert_int_equal(colloc_diag_set(&d, COLLOC_ESHAPE, "dim %d", 3), COLLOC_ESHAPE);
	assert_string_equal(d.msg, "dim 3");
	assert_int_equal(colloc_diag_prefix(&d, COLLOC_ESHAPE, "node %d", 7),
			 COLLOC_ESHAPE);
	assert_string_equal(d.msg, "node 7: dim 3");
	colloc_diag_clear(&d);
	colloc_diag_prefixf(&d, COLLOC_ELIMIT, "f.onnx");
	assert_string_equal(d.msg, "f.onnx: input exceeds a limit");
	/* NULL diagnostics are allowed everywhere */
	colloc_diag_clear(NULL);
	assert_int_equal(colloc_diag_set(NULL, -5, "x"), -5);
	assert_int_equal(colloc_diag_prefix(NULL, -6, "y"), -6);
	/* long messages are truncated, not overflowed */
	{
		char big[2 * COLLOC_DIAG_MAX];

		memset(big, 'a', sizeof(big) - 1);
		big[sizeof(big) - 1] = '\0';
		colloc_diag_printf(&d, "%s", big);
		assert_int_equal(strlen(d.msg), COLLOC_DIAG_MAX - 1);
		colloc_diag_prefixf(&d, -1, "p");
		assert_int_equal(strlen(d.msg), COLLOC_DIAG_MAX - 1);
		assert_true(strncmp(d.msg, "p: aaa", 6) == 0);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_size_plain),
		cmocka_unit_test(test_parse_size_suffixes),
		cmocka_unit_test(test_parse_size_fractions),
		cmocka_unit_test(test_parse_size_errors),
		cmocka_unit_test(test_parse_u64),
		cmocka_unit_test(test_format_bytes),
		cmocka_unit_test(test_format_count),
		cmocka_unit_test(test_strerror),
		cmocka_unit_test(test_diag),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
