/*
 * libFuzzer target for the cron parser and engine: any bytes either parse
 * or give a parse error with a message; a parsed expression describes
 * itself and its next fires, from a few instants in a few zones, are
 * strictly after the instant and found again from one second before.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "dbcron/cron.h"

static dbcron_tz *zones[4];

static void open_zones(void)
{
	static const char *names[4] = {"UTC", "Europe/Berlin", "Australia/Lord_Howe",
				       "America/New_York"};
	for (int i = 0; i < 4; i++)
		if (!zones[i] && dbcron_tz_open(names[i], &zones[i], NULL))
			abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const int64_t from[] = {0, 1743296400 - 1 /* Berlin gap */,
				       1761440400 - 1800 /* Berlin fall-back */,
				       4102444800 /* 2100 */, -1, 253402300000};
	if (size > 4096)
		return 0;
	open_zones();
	char *s = dbcron__malloc(size + 1);
	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';

	dbcron_cron *c = NULL;
	dbcron_err err = {0};
	/* H needs a seed: the input's length stands in for one, so H
	 * expressions are walked too (and without a seed H is refused) */
	int rc = dbcron_cron_parse_seeded(s, (uint64_t)size * 0x9E3779B97F4A7C15ULL, &c, &err);
	if (rc != DBCRON_OK) {
		if (c || err.msg[0] == '\0')
			abort();
		goto out_free_s;
	}
	char buf[128];
	size_t need = dbcron_cron_describe(c, buf, sizeof(buf));
	if (strlen(buf) != (need < sizeof(buf) ? need : sizeof(buf) - 1))
		abort();
	for (int z = 0; z < 4; z++)
		for (size_t i = 0; i < sizeof(from) / sizeof(from[0]); i++) {
			int64_t t = from[i], n, again;
			for (int k = 0; k < 3; k++) {
				if (!dbcron_cron_next(c, zones[z], t, &n))
					break;
				if (n <= t)
					abort();
				if (dbcron_cron_next(c, zones[z], n - 1, &again) != 1 || again != n)
					abort();
				t = n;
			}
		}
	dbcron_cron_free(c);
out_free_s:
	dbcron__free(s);
	return 0;
}
