/*
 * The cron engine against the references: every case of
 * tests/data/cron_quartz_ref.tsv (Quartz 2.3.2 itself),
 * tests/data/cron_unix_ref.tsv (cronie's rules, evaluated through Quartz)
 * and tests/data/cron_dst_ref.tsv (cronie's DST rules, derived by hand).
 *
 * Line format: EXPR <TAB> ZONE <TAB> FROM <TAB> FIRES, FIRES being the
 * successive next fires after FROM in epoch seconds, comma-separated; a
 * final "end" means no further fire, an empty FIRES means none at all.
 * '#' lines are comments.  Each mismatch is printed with expected and got
 * side by side (epoch and RFC 3339 in the zone); the test fails on any
 * mismatch and on a file with fewer than MIN_CASES cases, so it can never
 * pass on an empty or truncated file.  DBCRON_REF_ALL=1 prints every
 * mismatch instead of the first MAX_SHOWN.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dbcron/cron.h"
#include "core/timeutil.h"

#define MIN_CASES 20
#define MAX_SHOWN 60
#define MAX_FIRES 64
#define LINE_MAX_LEN 8192

struct ref_stats {
	int cases;
	int fires;
	int bad;
	int shown;
	int show_all;
};

/* One expected fire: an instant, or "no further fire". */
struct want {
	int64_t t;
	int end;
};

static void fmt_instant(const dbcron_tz *tz, int64_t t, char *buf, size_t len)
{
	char z[48], loc[48];

	dbcron__format_rfc3339(t * 1000, 0, 0, z, sizeof(z));
	dbcron__format_rfc3339(t * 1000, tz ? dbcron_tz_offset(tz, t) : 0, 0,
			       loc, sizeof(loc));
	snprintf(buf, len, "%" PRId64 " (%s = %s)", t, z, loc);
}

static int parse_fires(const char *s, struct want *w, int max, int *n)
{
	*n = 0;
	while (*s) {
		if (*n == max)
			return -1;
		const char *comma = strchr(s, ',');
		size_t len = comma ? (size_t)(comma - s) : strlen(s);
		if (len == 3 && strncmp(s, "end", 3) == 0) {
			w[*n].end = 1;
			w[*n].t = 0;
		} else {
			char num[32];
			char *endp;
			if (len == 0 || len >= sizeof(num))
				return -1;
			memcpy(num, s, len);
			num[len] = '\0';
			errno = 0;
			long long v = strtoll(num, &endp, 10);
			if (errno || *endp)
				return -1;
			w[*n].end = 0;
			w[*n].t = v;
		}
		(*n)++;
		s += len;
		if (*s == ',')
			s++;
	}
	return 0;
}

/* Split "a\tb\tc\td" in place into exactly four fields. */
static int split4(char *line, char *f[4])
{
	f[0] = line;
	for (int i = 1; i < 4; i++) {
		char *tab = strchr(f[i - 1], '\t');
		if (!tab)
			return -1;
		*tab = '\0';
		f[i] = tab + 1;
	}
	return strchr(f[3], '\t') ? -1 : 0;
}

static void report(struct ref_stats *st, const char *file, int lineno,
		   const char *expr, const char *zone, int64_t from,
		   const dbcron_tz *tz, const char *why,
		   const struct want *w, int nw, const struct want *g, int ng)
{
	char a[128], b[128];

	st->bad++;
	if (!st->show_all && st->shown >= MAX_SHOWN)
		return;
	st->shown++;
	fmt_instant(tz, from, a, sizeof(a));
	print_message("MISMATCH %s:%d  expr '%s'  zone %s  from %s: %s\n",
		      file, lineno, expr, zone, a, why);
	int n = nw > ng ? nw : ng;
	for (int i = 0; i < n; i++) {
		if (i < nw && !w[i].end)
			fmt_instant(tz, w[i].t, a, sizeof(a));
		else
			snprintf(a, sizeof(a), "%s", i < nw ? "(none)" : "-");
		if (i < ng && !g[i].end)
			fmt_instant(tz, g[i].t, b, sizeof(b));
		else
			snprintf(b, sizeof(b), "%s", i < ng ? "(none)" : "-");
		print_message("    #%d expected %-60s got %s%s\n", i + 1, a, b,
			      (i < nw && i < ng && w[i].end == g[i].end &&
			       w[i].t == g[i].t) ? "" : "   <--");
	}
}

static void run_case(struct ref_stats *st, const char *file, int lineno,
		     char *f[4], dbcron_cron_dialect dialect)
{
	struct want w[MAX_FIRES], g[MAX_FIRES];
	int nw = 0, ng = 0;
	dbcron_err err = {0};
	dbcron_cron *c = NULL;
	dbcron_tz *tz = NULL;
	char *endp;

	errno = 0;
	int64_t from = strtoll(f[2], &endp, 10);
	if (errno || *endp || *f[2] == '\0' ||
	    parse_fires(f[3], w, MAX_FIRES, &nw) != 0)
		fail_msg("%s:%d: malformed reference line", file, lineno);
	if (nw == 0) {
		/* Empty FIRES: never fires after FROM. */
		w[0].end = 1;
		w[0].t = 0;
		nw = 1;
	}
	st->cases++;

	int rc = dbcron_cron_parse(f[0], &c, &err);
	if (rc != DBCRON_OK || !c) {
		char why[600];
		snprintf(why, sizeof(why), "parse failed (%d): %s", rc, err.msg);
		report(st, file, lineno, f[0], f[1], from, NULL, why, w, nw, g, 0);
		goto out;
	}
	if (dialect && dbcron_cron_get_dialect(c) != dialect) {
		report(st, file, lineno, f[0], f[1], from, NULL,
		       "wrong dialect", w, nw, g, 0);
		goto out_free_cron;
	}
	rc = dbcron_tz_open(f[1], &tz, &err);
	if (rc != DBCRON_OK) {
		char why[600];
		snprintf(why, sizeof(why), "zone open failed (%d): %s", rc, err.msg);
		report(st, file, lineno, f[0], f[1], from, NULL, why, w, nw, g, 0);
		goto out_free_cron;
	}

	int64_t t = from;
	int ok = 1;
	for (int i = 0; i < nw; i++) {
		int64_t next = 0;
		int found = dbcron_cron_next(c, tz, t, &next);
		g[i].end = found != 1;
		g[i].t = found == 1 ? next : 0;
		ng++;
		st->fires++;
		if (g[i].end != w[i].end || g[i].t != w[i].t)
			ok = 0;
		if (found != 1)
			break;
		t = next;
	}
	if (!ok)
		report(st, file, lineno, f[0], f[1], from, tz,
		       "fires differ", w, nw, g, ng);

	dbcron_tz_free(tz);
out_free_cron:
	dbcron_cron_free(c);
out:
	return;
}

static void run_file(const char *name, dbcron_cron_dialect dialect)
{
	char path[1024], line[LINE_MAX_LEN];
	struct ref_stats st = {0};
	const char *all = getenv("DBCRON_REF_ALL");

	st.show_all = all && *all && strcmp(all, "0") != 0;
	snprintf(path, sizeof(path), "%s/%s", DBCRON_TEST_DATA, name);
	FILE *fp = fopen(path, "r");
	if (!fp)
		fail_msg("cannot open %s: %s", path, strerror(errno));

	int lineno = 0;
	while (fgets(line, sizeof(line), fp)) {
		lineno++;
		size_t len = strlen(line);
		if (len && line[len - 1] == '\n')
			line[--len] = '\0';
		else if (!feof(fp))
			fail_msg("%s:%d: line longer than %d bytes", name,
				 lineno, LINE_MAX_LEN);
		if (len && line[len - 1] == '\r')
			line[--len] = '\0';
		if (len == 0 || line[0] == '#')
			continue;
		char *f[4] = {NULL, NULL, NULL, NULL};
		if (split4(line, f) != 0)
			fail_msg("%s:%d: want 4 tab-separated fields", name, lineno);
		run_case(&st, name, lineno, f, dialect);
	}
	fclose(fp);

	if (st.bad > st.shown)
		print_message("(%d more mismatches not shown; DBCRON_REF_ALL=1 shows all)\n",
			      st.bad - st.shown);
	print_message("%s: %d cases, %d fires checked, %d cases mismatch\n",
		      name, st.cases, st.fires, st.bad);
	if (st.cases < MIN_CASES)
		fail_msg("%s: only %d cases (< %d): reference file truncated?",
			 name, st.cases, MIN_CASES);
	if (st.bad)
		fail_msg("%s: %d of %d cases disagree with the reference",
			 name, st.bad, st.cases);
}

static void test_quartz_ref(void **state)
{
	(void)state;
	run_file("cron_quartz_ref.tsv", DBCRON_CRON_QUARTZ);
}

static void test_unix_ref(void **state)
{
	(void)state;
	run_file("cron_unix_ref.tsv", DBCRON_CRON_UNIX);
}

static void test_dst_ref(void **state)
{
	(void)state;
	run_file("cron_dst_ref.tsv", 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_quartz_ref),
		cmocka_unit_test(test_unix_ref),
		cmocka_unit_test(test_dst_ref),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
