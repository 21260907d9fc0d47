/*
 * libFuzzer target for the crontab reader (model/crontab.c): any bytes, in
 * both formats, give jobs and reports and never an error; every line is at
 * most one job or one report; every job is a definition the model accepts,
 * named crontab-..., and no two jobs share a name.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "model/crontab.h"
#include "model/json.h"

static void count(void *ctx, size_t line, const char *msg)
{
	size_t *n = ctx;
	if (line == 0 || !msg[0])
		abort();
	(*n)++;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > 8192)
		return 0;
	size_t lines = 1;
	for (size_t i = 0; i < size; i++)
		lines += data[i] == '\n';
	for (int system = 0; system < 2; system++) {
		model_crontab_opts o = {.system = system};
		json_t *jobs = NULL;
		size_t refused = 0, reported = 0;
		dbcron_err err = {0};
		if (model_crontab_parse((const char *)data, size, &o, &jobs, &refused, count,
					&reported, &err))
			abort();
		size_t n = json_array_size(jobs);
		if (reported != refused || n + refused > lines)
			abort();
		json_t *seen = json_object();
		for (size_t i = 0; i < n; i++) {
			json_t *job = json_array_get(jobs, i);
			model_jobdef d;
			const char *name = NULL;
			model_jobdef_init(&d, false);
			if (model_jobdef_from_json(&d, job, &name, &err) || !name ||
			    strncmp(name, "crontab-", 8) || json_object_get(seen, name))
				abort();
			json_object_set_new(seen, name, json_true());
			model_jobdef_clear(&d);
		}
		json_decref(seen);
		json_decref(jobs);
	}
	return 0;
}
