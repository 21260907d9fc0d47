/*
 * Job definitions from the command line and from apply files.  Owns the one
 * table of keys (long flag = JSON key) and the rules that turn those keys
 * into a dbcron_job: each value is checked alone when it is set (so errors
 * name the flag and the value), the whole definition is checked before the
 * database is touched, and times are resolved against the database clock
 * last.  Invariant kept: a jobdef that passed jobdef_finish() is a job that
 * dbcron_job_validate() accepted, with next_fire_at set.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/jobdef.h"
#include "model/rules.h"
#include "core/alloc.h"
#include "core/timeutil.h"
#include "dbcron/cron.h"
#include "dbcron/handler.h"

const jobdef_key jobdef_keys[] = {
	{JK_NAME, "name", NULL, JD_STR},
	{JK_CRON, "cron", NULL, JD_STR},
	{JK_EVERY, "every", NULL, JD_DUR},
	{JK_AFTER, "after", NULL, JD_DUR},
	{JK_AT, "at", NULL, JD_STR},
	{JK_TZ, "tz", NULL, JD_STR},
	{JK_MISFIRE, "misfire", NULL, JD_STR},
	{JK_MAX_CATCHUP, "max-catchup", "max_catchup", JD_INT},
	{JK_MISFIRE_THRESHOLD, "misfire-threshold", "misfire_threshold", JD_DUR},
	{JK_OVERLAP, "overlap", NULL, JD_STR},
	{JK_NODE_LOSS, "node-loss", "node_loss", JD_STR},
	{JK_RETRIES, "retries", NULL, JD_INT},
	{JK_RETRY_BASE, "retry-base", "retry_base", JD_DUR},
	{JK_RETRY_CAP, "retry-cap", "retry_cap", JD_DUR},
	{JK_JITTER, "jitter", NULL, JD_BOOL},
	{JK_TIMEOUT, "timeout", NULL, JD_DUR},
	{JK_PAUSED, "paused", NULL, JD_BOOL},
	{JK_HANDLER, "handler", NULL, JD_STR},
	{JK_ARG, "arg", NULL, JD_STR},
	{JK_COMMAND, "command", NULL, JD_ARGV},
	{JK__COUNT, NULL, NULL, 0},
};

void jobdef_init(jobdef *d, bool cli)
{
	memset(d, 0, sizeof(*d));
	dbcron_job_init(&d->job);
	d->cli = cli;
}

void jobdef_clear(jobdef *d)
{
	dbcron_job_clear(&d->job);
	memset(d->seen, 0, sizeof(d->seen));
}

const jobdef_key *jobdef_find(const char *name)
{
	for (const jobdef_key *k = jobdef_keys; k->name; k++)
		if (strcmp(k->name, name) == 0 ||
		    (k->snake && strcmp(k->snake, name) == 0))
			return k;
	return NULL;
}

const jobdef_key *jobdef_key_of(jobdef_id id)
{
	return id < JK__COUNT ? &jobdef_keys[id] : NULL;
}

const char *jobdef_label(const jobdef *d, const jobdef_key *k, char *buf,
			 size_t len)
{
	if (d->cli && k->id == JK_COMMAND)
		snprintf(buf, len, "-- COMMAND");
	else if (d->cli)
		snprintf(buf, len, "--%s", k->name);
	else
		snprintf(buf, len, "key '%s'", k->name);
	return buf;
}

/* Prefix err's message with the key's label: "--every: duration ...". */
static int keyed(const jobdef *d, const jobdef_key *k, dbcron_err *err,
		 int code)
{
	char label[64], reason[sizeof(err->msg)];
	snprintf(reason, sizeof(reason), "%s", err->msg);
	/* "--retries 'abc': expected..." reads as the command line did */
	return dbcron_err_set(err, code, "%s%s%s", jobdef_label(d, k, label, sizeof(label)),
			      d->cli && reason[0] == '\'' ? " " : ": ", reason);
}

static int replace_str(char **slot, const char *v, dbcron_err *err)
{
	char *s = dbcron__strdup(v);
	if (!s)
		return dbcron_err_set(err, DBCRON_ENOMEM, "out of memory");
	dbcron__free(*slot);
	*slot = s;
	return DBCRON_OK;
}

static int choice(const char *v, int parsed, const char *choices,
		  dbcron_err *err)
{
	if (parsed < 0)
		return dbcron_err_set(err, DBCRON_EINVAL, "'%s': expected %s", v, choices);
	return DBCRON_OK;
}

static int set_schedule(jobdef *d, dbcron_sched_kind kind, const char *v,
			dbcron_err *err)
{
	d->job.kind = kind;
	return replace_str(&d->job.spec, v, err);
}

static int set_int_value(jobdef *d, const jobdef_key *k, long long v,
			 dbcron_err *err)
{
	if (k->id == JK_RETRIES) {
		if (v < 0 || v > 1000)
			return dbcron_err_set(err, DBCRON_EINVAL, "%lld is out of range 0-1000", v);
		d->job.max_retries = (int)v;
	} else if (k->id == JK_MAX_CATCHUP) {
		if (v < 1 || v > 100000)
			return dbcron_err_set(err, DBCRON_EINVAL, "%lld is out of range 1-100000", v);
		d->job.max_catchup = (int)v;
	} else {
		return dbcron_err_set(err, DBCRON_EINTERNAL, "not an integer key");
	}
	return DBCRON_OK;
}

/* Value checks that need no clock and no database. */
static int set_text(jobdef *d, const jobdef_key *k, const char *v,
		    dbcron_err *err)
{
	dbcron_job *j = &d->job;
	int64_t ms;
	int rc, p;

	switch (k->id) {
	case JK_NAME:
		return replace_str(&j->name, v, err);
	case JK_CRON: {
		dbcron_cron *c = NULL;
		rc = dbcron_cron_parse(v, &c, err);
		if (rc) {
			/* the engine's message names the field; add the text */
			char reason[sizeof(err->msg)];
			snprintf(reason, sizeof(reason), "%s", err->msg);
			return dbcron_err_set(err, rc, "'%s': %s", v, reason);
		}
		dbcron_cron_free(c);
		return set_schedule(d, DBCRON_SCHED_CRON, v, err);
	}
	case JK_EVERY:
	case JK_AFTER:
		rc = dbcron__parse_duration(v, 0, &ms, err);
		if (rc)
			return rc;
		j->interval_ms = ms;
		return set_schedule(d, k->id == JK_EVERY ? DBCRON_SCHED_EVERY
							 : DBCRON_SCHED_AFTER,
				    v, err);
	case JK_AT:
		/* syntax only here; "now" is the database's, resolved later */
		rc = dbcron__parse_time(v, 0, &ms, err);
		if (rc)
			return rc;
		return set_schedule(d, DBCRON_SCHED_AT, v, err);
	case JK_TZ: {
		dbcron_tz *tz = NULL;
		rc = dbcron_tz_open(v, &tz, err);
		if (rc)
			return rc == DBCRON_ETZ ? dbcron_err_set(err, rc,
				"unknown time zone '%s' (an IANA name such as Europe/Paris)", v) : rc;
		dbcron_tz_free(tz);
		if (!*v) {
			dbcron__free(j->tz);
			j->tz = NULL;
			return DBCRON_OK;
		}
		return replace_str(&j->tz, v, err);
	}
	case JK_MISFIRE:
		p = dbcron_misfire_parse(v);
		if ((rc = choice(v, p, "fire_once, skip or catch_up", err)))
			return rc;
		j->misfire = (dbcron_misfire)p;
		return DBCRON_OK;
	case JK_OVERLAP:
		p = dbcron_overlap_parse(v);
		if ((rc = choice(v, p, "skip, allow, queue or replace", err)))
			return rc;
		j->overlap = (dbcron_overlap)p;
		return DBCRON_OK;
	case JK_NODE_LOSS:
		p = dbcron_node_loss_parse(v);
		if ((rc = choice(v, p, "retry or abandon", err)))
			return rc;
		j->node_loss = (dbcron_node_loss)p;
		return DBCRON_OK;
	case JK_MAX_CATCHUP:
	case JK_RETRIES: {
		char *end;
		errno = 0;
		long long n = strtoll(v, &end, 10);
		if (!*v || *end || errno)
			return dbcron_err_set(err, DBCRON_EINVAL, "'%s': expected an integer", v);
		return set_int_value(d, k, n, err);
	}
	case JK_MISFIRE_THRESHOLD:
	case JK_TIMEOUT:
		/* zero is meaningful: no timeout, every late fire misfires */
		rc = dbcron__parse_duration(v, 1, &ms, err);
		if (rc)
			return rc;
		if (k->id == JK_TIMEOUT)
			j->timeout_ms = ms;
		else
			j->misfire_threshold_ms = ms;
		return DBCRON_OK;
	case JK_RETRY_BASE:
	case JK_RETRY_CAP:
		rc = dbcron__parse_duration(v, 0, &ms, err);
		if (rc)
			return rc;
		if (k->id == JK_RETRY_BASE)
			j->retry_base_ms = ms;
		else
			j->retry_cap_ms = ms;
		return DBCRON_OK;
	case JK_HANDLER:
		if (!dbcron_handler_exists(v))
			return dbcron_err_set(err, DBCRON_EINVAL,
					      "unknown handler '%s' (built in: noop, sleep)", v);
		j->executor = DBCRON_EXEC_HANDLER;
		return replace_str(&j->handler, v, err);
	case JK_ARG:
		return replace_str(&j->arg, v, err);
	default:
		return dbcron_err_set(err, DBCRON_EINTERNAL, "not a text value");
	}
}

static int mark_seen(jobdef *d, const jobdef_key *k, dbcron_err *err)
{
	if (d->seen[k->id])
		return dbcron_err_set(err, DBCRON_EINVAL, "given twice");
	d->seen[k->id] = true;
	return DBCRON_OK;
}

int jobdef_set_text(jobdef *d, const jobdef_key *k, const char *value,
		    dbcron_err *err)
{
	int rc = mark_seen(d, k, err);
	if (!rc)
		rc = set_text(d, k, value, err);
	return rc ? keyed(d, k, err, rc) : DBCRON_OK;
}

int jobdef_set_int(jobdef *d, const jobdef_key *k, long long v,
		   dbcron_err *err)
{
	int rc = mark_seen(d, k, err);
	if (!rc)
		rc = set_int_value(d, k, v, err);
	return rc ? keyed(d, k, err, rc) : DBCRON_OK;
}

int jobdef_set_bool(jobdef *d, const jobdef_key *k, bool v, dbcron_err *err)
{
	int rc = mark_seen(d, k, err);
	if (rc)
		return keyed(d, k, err, rc);
	if (k->id == JK_JITTER)
		d->job.retry_jitter = v;
	else if (k->id == JK_PAUSED)
		d->job.paused = v;
	else
		return keyed(d, k, err, dbcron_err_set(err, DBCRON_EINTERNAL, "not a flag"));
	return DBCRON_OK;
}

int jobdef_set_argv(jobdef *d, char *const *argv, int argc, dbcron_err *err)
{
	const jobdef_key *k = jobdef_key_of(JK_COMMAND);
	int rc = mark_seen(d, k, err);
	if (rc)
		return keyed(d, k, err, rc);
	dbcron_job *j = &d->job;
	char **v = dbcron__calloc((size_t)argc + 1, sizeof(char *));
	if (!v)
		return dbcron_err_set(err, DBCRON_ENOMEM, "out of memory");
	for (int i = 0; i < argc; i++) {
		v[i] = dbcron__strdup(argv[i]);
		if (!v[i]) {
			for (int f = 0; f < i; f++)
				dbcron__free(v[f]);
			dbcron__free(v);
			return dbcron_err_set(err, DBCRON_ENOMEM, "out of memory");
		}
	}
	j->argv = v;
	j->argc = argc;
	return DBCRON_OK;
}

int jobdef_check(jobdef *d, dbcron_err *err)
{
	static const jobdef_id scheds[] = {JK_CRON, JK_EVERY, JK_AFTER, JK_AT};
	const char *first = NULL;
	char l1[64], l2[64];

	for (size_t i = 0; i < sizeof(scheds) / sizeof(scheds[0]); i++) {
		if (!d->seen[scheds[i]])
			continue;
		const jobdef_key *k = jobdef_key_of(scheds[i]);
		if (first)
			return dbcron_err_set(err, DBCRON_EINVAL,
					      "two schedules (%s and %s): give exactly one of cron, every, after, at",
					      first, jobdef_label(d, k, l2, sizeof(l2)));
		first = jobdef_label(d, k, l1, sizeof(l1));
	}
	if (!first)
		return dbcron_err_set(err, DBCRON_EINVAL, d->cli
			? "no schedule: give one of --cron EXPR, --every DUR, --after DUR, --at TIME"
			: "no schedule: give one of the keys cron, every, after, at");
	bool cmd = d->seen[JK_COMMAND] && d->job.argc > 0;
	if (d->seen[JK_HANDLER] && d->seen[JK_COMMAND])
		return dbcron_err_set(err, DBCRON_EINVAL, d->cli
			? "both --handler and a command after --: give one"
			: "both 'handler' and 'command': give one");
	if (!d->seen[JK_HANDLER] && !cmd)
		return dbcron_err_set(err, DBCRON_EINVAL, d->cli
			? "no command: give -- COMMAND [ARGS...] or --handler NAME"
			: "no command: give \"command\": [\"prog\", \"arg\"...] or \"handler\"");
	if (cmd && !*d->job.argv[0])
		return dbcron_err_set(err, DBCRON_EINVAL, "the command is an empty string");
	if (d->seen[JK_ARG] && !d->seen[JK_HANDLER])
		return dbcron_err_set(err, DBCRON_EINVAL, d->cli
			? "--arg is only for --handler (a command takes its arguments after --)"
			: "'arg' is only for 'handler' (a command takes its arguments in 'command')");
	return DBCRON_OK;
}

int jobdef_finish(jobdef *d, int64_t now_ms, const dbcron_job *prev,
		  dbcron_err *err)
{
	dbcron_job *j = &d->job;
	int rc = jobdef_check(d, err);
	if (rc)
		return rc;
	if (prev && !d->seen[JK_PAUSED])
		j->paused = prev->paused;
	if (prev) {
		j->id = prev->id;
		j->created_ms = prev->created_ms;
	}

	/* An unchanged schedule keeps its series: re-applying a file must not
	 * move a fire, re-arm a one-shot that already fired, or resolve
	 * "now+5m" again. */
	bool keep = prev && model_same_schedule(j, prev);
	if (j->kind == DBCRON_SCHED_AT) {
		if (keep) {
			j->at_ms = prev->at_ms;
		} else if ((rc = dbcron__parse_time(j->spec, now_ms, &j->at_ms, err))) {
			return keyed(d, jobdef_key_of(JK_AT), err, rc);
		}
	}
	if (j->kind == DBCRON_SCHED_EVERY)
		j->anchor_ms = keep ? prev->anchor_ms : now_ms;

	rc = dbcron_job_validate(j, err);
	if (rc)
		return rc;

	if (keep && !(prev->paused && !j->paused)) {
		j->next_fire_at = prev->next_fire_at;
		return DBCRON_OK;
	}
	switch (j->kind) {
	case DBCRON_SCHED_AT:
		/* a past instant fires at once; the misfire threshold decides
		 * whether it counts as a misfire */
		j->next_fire_at = keep ? prev->next_fire_at : j->at_ms;
		return DBCRON_OK;
	case DBCRON_SCHED_AFTER:
		j->next_fire_at = now_ms + j->interval_ms;
		return DBCRON_OK;
	default: {
		int64_t next;
		int found = dbcron_job_next_fire(j, now_ms, &next, err);
		if (found < 0)
			return -found;
		j->next_fire_at = found ? next : -1;
		return DBCRON_OK;
	}
	}
}

const char *jobdef_schedule_text(const dbcron_job *job, char *buf, size_t len)
{
	char t[64];
	/* "at now+5m" would be stale the moment it was stored */
	if (job->kind == DBCRON_SCHED_AT && job->at_ms >= 0)
		snprintf(buf, len, "at %s", cli_time(job->at_ms, t, sizeof(t)));
	else
		snprintf(buf, len, "%s %s", dbcron_sched_kind_name(job->kind),
			 job->spec ? job->spec : "");
	return buf;
}

const char *cli_time(int64_t ms, char *buf, size_t len)
{
	/* -1 is "unset" everywhere in dbcron; no fire is ever before 1970 */
	if (ms < 0) {
		snprintf(buf, len, "-");
		return buf;
	}
	dbcron__format_rfc3339(ms, 0, ms % 1000 != 0, buf, len);
	return buf;
}

void cliopt_reset(void)
{
	/* 0 makes GNU getopt reinitialise, also its "+" ordering */
	optind = 0;
	opterr = 0;
}

int cliopt_next(cliopt *o, int argc, char **argv, const char *optstring,
		const struct option *longs)
{
	for (;;) {
		int prev = optind ? optind : 1;
		if (o->dashdash || prev >= argc)
			return -1;
		int c = getopt_long(argc, argv, optstring, longs, NULL);
		if (c == -1) {
			/* getopt swallows "--"; the caller wants what follows */
			if (optind == prev + 1 && strcmp(argv[prev], "--") == 0) {
				o->dashdash = true;
				o->rest = argv + optind;
				o->nrest = argc - optind;
				optind = argc;
				return -1;
			}
			if (optind >= argc)
				return -1;
			if (o->npos < CLIOPT_MAXPOS)
				o->pos[o->npos] = argv[optind];
			o->npos++;
			optind++;
			continue;
		}
		if (c == '?') {
			if (optopt)
				cli_usage_error(o->cmd, "unknown option '-%c'", optopt);
			else
				cli_usage_error(o->cmd, "unknown option '%s'", argv[optind - 1]);
			return '?';
		}
		if (c == ':') {
			cli_usage_error(o->cmd, "option '%s' needs a value", argv[optind - 1]);
			return '?';
		}
		return c;
	}
}
