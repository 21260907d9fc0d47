/*
 * The TZif checker (src/cron/tzif.c) and what dbcron_tz_open makes of bad
 * zone data: every zone file of the host passes, every truncation of a
 * real file and each kind of corruption fails with its reason, and
 * dbcron_tz_open over a TZDIR of bad files returns DBCRON_ETZ with
 * "zone 'X': ..." instead of crashing inside GLib.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/alloc.h"
#include "cron/cron_int.h"
#include "dbcron/cron.h"

#define ZONEINFO "/usr/share/zoneinfo"

typedef struct blob {
	unsigned char *p;
	size_t n;
} blob;

static bool load(const char *path, blob *b)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return false;
	b->p = NULL;
	b->n = 0;
	size_t cap = 0;
	unsigned char buf[4096];
	size_t k;
	while ((k = fread(buf, 1, sizeof(buf), f)) > 0) {
		if (dbcron__grow((void **)&b->p, &cap, b->n + k, 1)) {
			fclose(f);
			return false;
		}
		memcpy(b->p + b->n, buf, k);
		b->n += k;
	}
	fclose(f);
	return true;
}

static blob real_zone(const char *name)
{
	char path[512];
	blob b;
	snprintf(path, sizeof(path), ZONEINFO "/%s", name);
	if (!load(path, &b))
		skip(); /* a host without tzdata */
	return b;
}

static uint32_t be32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void put32(unsigned char *p, uint32_t v)
{
	p[0] = (unsigned char)(v >> 24);
	p[1] = (unsigned char)(v >> 16);
	p[2] = (unsigned char)(v >> 8);
	p[3] = (unsigned char)v;
}

/* Rejected, and the reason holds want. */
static void expect_bad(const blob *b, const char *want, const char *what)
{
	char why[256] = "";
	if (dbcron__tzif_check(b->p, b->n, why, sizeof(why)))
		fail_msg("%s: accepted", what);
	if (!strstr(why, want))
		fail_msg("%s: reason '%s' lacks '%s'", what, why, want);
}

static int walk(const char *dir, int *n)
{
	DIR *d = opendir(dir);
	if (!d)
		return 0;
	int bad = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		char path[1024];
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		struct stat st;
		if (stat(path, &st) != 0)
			continue;
		if (S_ISDIR(st.st_mode)) {
			bad += walk(path, n);
			continue;
		}
		blob b;
		if (!S_ISREG(st.st_mode) || !load(path, &b))
			continue;
		char why[256];
		if (b.n >= 4 && memcmp(b.p, "TZif", 4) == 0) {
			++*n;
			if (!dbcron__tzif_check(b.p, b.n, why, sizeof(why))) {
				print_error("rejected %s: %s\n", path, why);
				bad++;
			}
		}
		dbcron__free(b.p);
	}
	closedir(d);
	return bad;
}

static void test_every_host_zone_passes(void **state)
{
	(void)state;
	int n = 0;
	int bad = walk(ZONEINFO, &n);
	if (n == 0)
		skip();
	assert_int_equal(bad, 0);
	print_message("%d zone files checked\n", n);
}

static void test_every_truncation_fails(void **state)
{
	(void)state;
	static const char *zones[] = {"Europe/Berlin", "America/New_York", "Australia/Lord_Howe",
				      "Asia/Kolkata", "UTC"};
	for (size_t z = 0; z < sizeof(zones) / sizeof(zones[0]); z++) {
		blob b = real_zone(zones[z]);
		char why[256];
		assert_true(dbcron__tzif_check(b.p, b.n, why, sizeof(why)));
		for (size_t len = 0; len < b.n; len++) {
			if (dbcron__tzif_check(b.p, len, why, sizeof(why)))
				fail_msg("%s cut to %zu of %zu bytes: accepted", zones[z], len, b.n);
		}
		dbcron__free(b.p);
	}
}

static void test_corruptions(void **state)
{
	(void)state;
	blob b = real_zone("Europe/Berlin");
	blob m = {dbcron__malloc(b.n + 16), b.n};
	assert_non_null(m.p);
	uint32_t timecnt = be32(b.p + 32), typecnt = be32(b.p + 36);
	assert_true(timecnt > 2 && typecnt > 1);
	size_t types = 44 + (size_t)timecnt * 4, ttinfo = types + timecnt;

#define RESET() memcpy(m.p, b.p, b.n), m.n = b.n
	RESET();
	memcpy(m.p, "TZjf", 4);
	expect_bad(&m, "not a TZif file", "magic");
	RESET();
	m.p[4] = '9';
	expect_bad(&m, "unsupported TZif version", "version");
	RESET();
	put32(m.p + 32, 0xffffffffu); /* timecnt: the sum must not wrap */
	expect_bad(&m, "truncated", "huge timecnt");
	RESET();
	put32(m.p + 36, 0);
	expect_bad(&m, "local time type count is 0", "typecnt 0");
	RESET();
	put32(m.p + 20, typecnt + 1);
	expect_bad(&m, "UT and", "isutcnt");
	RESET();
	m.p[types] = (unsigned char)typecnt;
	expect_bad(&m, "transition 0 has type", "type index");
	RESET();
	memcpy(m.p + 44 + 4, m.p + 44, 4); /* transition 1 = transition 0 */
	expect_bad(&m, "transition 1 is not after", "order");
	RESET();
	put32(m.p + ttinfo, 100000);
	expect_bad(&m, "UTC offset 100000", "offset");
	RESET();
	m.p[ttinfo + 4] = 2;
	expect_bad(&m, "isdst 2", "isdst");
	RESET();
	m.p[ttinfo + 5] = 250;
	expect_bad(&m, "designation byte 250", "designation index");
	RESET();
	m.p[m.n - 2] = '!';
	expect_bad(&m, "footer", "footer text");
	RESET();
	memcpy(m.p + m.n - 1, "\nX", 2), m.n++;
	expect_bad(&m, "trailing data after the footer (1 byte", "trailing byte");
	RESET();
	/* a footer that parses as POSIX but not for GLib: DST without a rule */
	{
		size_t f = b.n - 2;
		while (f > 0 && m.p[f] != '\n')
			f--;
		memcpy(m.p + f + 1, "CET-1CEST\n", 10);
		m.n = f + 11;
		expect_bad(&m, "without a rule", "footer without rule");
	}
#undef RESET
	dbcron__free(m.p);
	dbcron__free(b.p);
}

static void write_file(const char *path, const unsigned char *p, size_t n)
{
	FILE *f = fopen(path, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(p, 1, n, f), n);
	assert_int_equal(fclose(f), 0);
}

/* dbcron_tz_open over a TZDIR of bad files: DBCRON_ETZ with the zone's
 * name and what is wrong; a good copy opens. */
static void test_open_bad_zone_dir(void **state)
{
	(void)state;
	blob b = real_zone("Europe/Berlin");
	char dir[] = "/tmp/dbcron-tzif-XXXXXX", path[600];
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/Cut", dir);
	write_file(path, b.p, b.n / 2);
	snprintf(path, sizeof(path), "%s/Junk", dir);
	write_file(path, (const unsigned char *)"TZif2\377\377\377\377 not a zone", 20);
	snprintf(path, sizeof(path), "%s/Fine", dir);
	write_file(path, b.p, b.n);
	char *old = getenv("TZDIR") ? dbcron__strdup(getenv("TZDIR")) : NULL;
	setenv("TZDIR", dir, 1);

	dbcron_tz *tz = (dbcron_tz *)1;
	dbcron_err err = {0};
	assert_int_equal(dbcron_tz_open("Cut", &tz, &err), DBCRON_ETZ);
	assert_null(tz);
	if (!strstr(err.msg, "zone 'Cut': ") || !strstr(err.msg, "truncated"))
		fail_msg("Cut: %s", err.msg);
	assert_int_equal(dbcron_tz_open("Junk", &tz, &err), DBCRON_ETZ);
	if (!strstr(err.msg, "zone 'Junk': "))
		fail_msg("Junk: %s", err.msg);
	assert_int_equal(dbcron_tz_open("Nothing/Here", &tz, &err), DBCRON_ETZ);
	if (!strstr(err.msg, "unknown time zone 'Nothing/Here' (not in "))
		fail_msg("Nothing/Here: %s", err.msg);
	assert_int_equal(dbcron_tz_open("Fine", &tz, &err), DBCRON_OK);
	assert_int_equal(dbcron_tz_offset(tz, 1751328000), 7200); /* 2025-07-01 */

	if (old)
		setenv("TZDIR", old, 1);
	else
		unsetenv("TZDIR");
	dbcron__free(old);
	static const char *files[] = {"Cut", "Junk", "Fine"};
	for (size_t i = 0; i < 3; i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, files[i]);
		unlink(path);
	}
	rmdir(dir);
	dbcron__free(b.p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_host_zone_passes),
		cmocka_unit_test(test_every_truncation_fails),
		cmocka_unit_test(test_corruptions),
		cmocka_unit_test(test_open_bad_zone_dir),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
