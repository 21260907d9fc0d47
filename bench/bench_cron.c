/*
 * Next-fire benchmark: computations per second and the slowest single
 * computation, per expression, in UTC and in a DST zone.
 *
 * Inputs are 4096 pseudo-random instants in 2020-2030 (fixed seed).  The
 * rate is measured over whole passes; the slowest computation is the
 * largest, over inputs, of the best of 7 timed runs of that input, so a
 * preemption does not count as the engine being slow.
 */
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include "dbcron/cron.h"

#define NIN 4096

static const char *const typical[] = {"0 */5 * * * ?", "0 0 12 ? * MON-FRI", "0 15 10 L * ?",
				      "*/15 9-17 * * 1-5"};
static const char *const nasty[] = {"0 0 0 29 2 ?",          "0 0 0 ? * 6#5",
				    "0 0 0 ? 2 6#5",         "0 0 0 31 2 ?",
				    "0 0 0 1 1 ? 2020",      "0 0 0 29 2 ? 2097-2099",
				    "0 0 0 ? 2 1#5 2026-2027", "0 0 0 1 1 ? 2099"};

static double now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int64_t in[NIN];
static volatile int64_t sink;

static void run(const char *expr, const dbcron_tz *tz)
{
	dbcron_cron *c;
	dbcron_err err = {0};
	int64_t n = 0;

	if (dbcron_cron_parse(expr, &c, &err)) {
		fprintf(stderr, "%s: %s\n", expr, err.msg);
		return;
	}
	long calls = 0;
	double t0 = now_ns(), t1;
	do {
		for (int i = 0; i < NIN; i++) {
			dbcron_cron_next(c, tz, in[i], &n);
			sink += n;
		}
		calls += NIN;
		t1 = now_ns();
	} while (t1 - t0 < 5e8);
	double rate = (double)calls / ((t1 - t0) / 1e9);

	double worst = 0;
	for (int i = 0; i < NIN; i++) {
		double best = 1e18;
		for (int r = 0; r < 7; r++) {
			double a = now_ns();
			dbcron_cron_next(c, tz, in[i], &n);
			double b = now_ns();
			sink += n;
			if (b - a < best)
				best = b - a;
		}
		if (best > worst)
			worst = best;
	}
	printf("| `%s` | %s | %.2f M/s | %.2f |\n", expr, dbcron_tz_name(tz), rate / 1e6,
	       worst / 1e3);
	dbcron_cron_free(c);
}

int main(void)
{
	uint64_t x = 0x9e3779b97f4a7c15ULL;
	const int64_t lo = 1577836800; /* 2020-01-01 */
	const int64_t span = 315532800; /* ten years */
	for (int i = 0; i < NIN; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		in[i] = lo + (int64_t)(x % (uint64_t)span);
	}
	const char *zones[] = {"UTC", "Europe/Berlin"};
	dbcron_tz *tz[2];
	for (int z = 0; z < 2; z++) {
		double a = now_ns();
		if (dbcron_tz_open(zones[z], &tz[z], NULL)) {
			fprintf(stderr, "cannot open %s\n", zones[z]);
			return 1;
		}
		printf("opening %s: %.2f ms\n", zones[z], (now_ns() - a) / 1e6);
	}
	printf("\n| expression | zone | next() per second | slowest (µs) |\n|---|---|---|---|\n");
	for (int z = 0; z < 2; z++)
		for (size_t e = 0; e < sizeof(typical) / sizeof(typical[0]); e++)
			run(typical[e], tz[z]);
	for (int z = 0; z < 2; z++)
		for (size_t e = 0; e < sizeof(nasty) / sizeof(nasty[0]); e++)
			run(nasty[e], tz[z]);
	for (int z = 0; z < 2; z++)
		dbcron_tz_free(tz[z]);
	return 0;
}
