/*
 * Jobs with every field of the field table (core/job_fields.h) away from
 * its default, for the round trips of the table-driven codecs: JSON
 * (test_model_fields) and every store (store_conformance.h).  A field
 * added to the table and not set here fails full_job_covers(), so a round
 * trip can never silently skip a new field.
 */
#ifndef DBCRON_TEST_FULL_JOB_H
#define DBCRON_TEST_FULL_JOB_H

#include <stdbool.h>
#include <string.h>

#include "core/alloc.h"
#include "dbcron/job.h"
#include "model/fields.h"

static char **full_job_strv(int n, const char *const *v)
{
	char **out = dbcron__calloc((size_t)n + 1, sizeof(char *));
	for (int i = 0; out && i < n; i++)
		out[i] = dbcron__strdup(v[i]);
	return out;
}

/* What a full job runs (kind): 0 a command, 1 a handler, FULL_HTTP an
 * HTTP call, FULL_SQL a statement; FULL_KINDS of them. */
#define FULL_HTTP 2
#define FULL_SQL 3
#define FULL_KINDS 4

/* A valid job of each kind, every field it can have set to something
 * else than dbcron_job_init's. */
static void full_job(dbcron_job *j, const char *name, int kind)
{
	static const char *const argv[] = {"/bin/echo", "a b", "\xc3\xa9"};
	static const char *const env[] = {"A=1", "B=\"q\" x"};
	dbcron_job_init(j);
	j->name = dbcron__strdup(name);
	j->kind = DBCRON_SCHED_EVERY;
	j->spec = dbcron__strdup("90s");
	j->interval_ms = 90000;
	j->anchor_ms = 1767323000000LL;
	j->at_ms = 1767323111000LL;
	j->tz = dbcron__strdup("Europe/Berlin");
	j->misfire = DBCRON_MISFIRE_CATCH_UP;
	j->max_catchup = 7;
	j->misfire_threshold_ms = 12000;
	j->overlap = DBCRON_OVERLAP_QUEUE;
	j->node_loss = DBCRON_NODE_LOSS_ABANDON;
	j->on_every_node = true;
	j->max_retries = 9;
	j->retry_base_ms = 2000;
	j->retry_cap_ms = 120000;
	j->retry_jitter = true;
	j->start_jitter_ms = 5000;
	j->spread_ms = 30000;
	j->spread_seed = 1234567890123LL;
	j->timeout_ms = 45000;
	j->start_at = 1767323045000LL;
	j->end_at = 1798859045000LL;
	j->max_runs = 250;
	j->exclude_calendar = dbcron__strdup("holidays");
	j->exclude_days = dbcron__strdup("2026-12-24\n2026-12-25");
	j->params = dbcron__strdup("region=eu,X");
	j->paused = true;
	j->next_fire_at = 1767323135000LL;
	j->on_failure = dbcron__strdup("job:full-after\nhttps://[::1]:8443/h?x=1\nexec:/bin/cat -n");
	j->on_success = dbcron__strdup("http://127.0.0.1/ok");
	j->on_misfire = dbcron__strdup("job:late");
	j->max_silence_ms = 7200000;
	j->on_overdue = dbcron__strdup("http://127.0.0.1/late\nexec:/bin/true");
	j->tags = dbcron__strdup("heavy\ndb.eu-1");
	j->priority = -7;
	if (kind == FULL_HTTP) {
		j->executor = DBCRON_EXEC_HTTP;
		j->http = dbcron__strdup("PUT https://api.example.org/v1/${param.region}?x=1");
		j->http_headers = dbcron__strdup("Authorization: Bearer ${TOKEN}\nX-Region: ${param.region}");
		j->http_body = dbcron__strdup("{\"region\": \"${param.region}\"}\n");
		j->http_expect = dbcron__strdup("2xx,304");
		j->http_ca_file = dbcron__strdup("/etc/dbcron/ca.pem");
		j->env_file = dbcron__strdup("/etc/dbcron/full.env");
		return;
	}
	if (kind == FULL_SQL) {
		j->executor = DBCRON_EXEC_SQL;
		j->sql = dbcron__strdup("UPDATE t SET n = n + 1 WHERE r = ${param.region} -- \xc3\xa9");
		j->sql_db_file = dbcron__strdup("/etc/dbcron/other.url");
		return;
	}
	if (kind == 1) {
		j->executor = DBCRON_EXEC_HANDLER;
		j->handler = dbcron__strdup("sleep");
		j->arg = dbcron__strdup("10ms");
		return;
	}
	j->executor = DBCRON_EXEC_SHELL;
	j->argc = 3;
	j->argv = full_job_strv(3, argv);
	j->user = dbcron__strdup("nobody");
	j->group = dbcron__strdup("nogroup");
	j->cwd = dbcron__strdup("/srv/full");
	j->envc = 2;
	j->env = full_job_strv(2, env);
	j->env_file = dbcron__strdup("/etc/dbcron/full.env");
	j->umask = 027;
	j->inherit_env = true;
}

typedef struct full_job_seen {
	bool differs[MODEL_NFIELDS];
} full_job_seen;

static void full_job_mark(void *ctx, const model_field *f, model_jobdef_id key)
{
	(void)key;
	full_job_seen *seen = ctx;
	seen->differs[f - model_fields] = true;
	/* the schedule's rows are reported once, for all of them */
	for (size_t i = 0; f->codec == MODEL_FC_SCHED && i < MODEL_NFIELDS; i++)
		if (model_fields[i].codec == MODEL_FC_SCHED)
			seen->differs[i] = true;
}

/* The name of the first field of the given roles that neither full job
 * sets (NULL: they cover every one). */
static const char *full_job_covers(unsigned roles)
{
	dbcron_job dflt, full[FULL_KINDS];
	full_job_seen seen = {0};
	static char missing[64];
	dbcron_job_init(&dflt);
	for (int k = 0; k < FULL_KINDS; k++) {
		full_job(&full[k], "full", k);
		model_job_diff(&dflt, &full[k], roles, full_job_mark, &seen);
		dbcron_job_clear(&full[k]);
	}
	for (size_t i = 0; i < MODEL_NFIELDS; i++)
		if ((model_fields[i].role & roles) && !seen.differs[i]) {
			snprintf(missing, sizeof(missing), "%s", model_fields[i].member);
			return missing;
		}
	return NULL;
}

#endif
