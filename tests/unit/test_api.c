/*
 * The library API of dbcron/db.h on real SQLite files, through the public
 * headers only: every verb the CLI has, its errors and messages, what is
 * written (read back through the API itself and never from the verb's own
 * answer alone), and the run log's keyset iterator across pages and
 * resumed from a cursor.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

#include "dbcron/dbcron.h"

static char dir[] = "/tmp/dbcron-api.XXXXXX";
static char url[600];
static int seq;

/* A fresh database with the schema, through DBCRON_DB_INIT. */
static dbcron_db *fresh(void)
{
	dbcron_db *db = NULL;
	dbcron_err err = {0};
	snprintf(url, sizeof(url), "sqlite:%s/db%d.sqlite", dir, ++seq);
	if (dbcron_db_open_ex(url, DBCRON_DB_INIT, &db, &err))
		fail_msg("open %s: %s", url, err.msg);
	return db;
}

static size_t njobs(dbcron_db *db)
{
	dbcron_job *jobs;
	size_t n;
	dbcron_err err = {0};
	assert_int_equal(dbcron_job_list(db, &jobs, &n, &err), DBCRON_OK);
	dbcron_job_list_free(jobs, n);
	return n;
}

static void test_version(void **state)
{
	assert_string_equal(dbcron_version(), DBCRON_VERSION);
	assert_int_equal(dbcron_version_number(), DBCRON_VERSION_NUMBER);
	assert_true(DBCRON_VERSION_NUMBER >= 100);
}

static void test_open(void **state)
{
	dbcron_db *db = NULL;
	dbcron_err err = {0};
	char path[700], u[700];

	/* no schema yet: refused, the handle untouched */
	snprintf(u, sizeof(u), "sqlite:%s/noschema.sqlite", dir);
	assert_int_equal(dbcron_db_open(u, &db, &err), DBCRON_ESCHEMA);
	assert_null(db);
	assert_true(err.msg[0] != '\0');
	assert_int_equal(dbcron_db_open_ex(u, 1u << 7, &db, &err), DBCRON_EINVAL);

	/* the URL from a file: blanks around it are ignored */
	snprintf(path, sizeof(path), "%s/url", dir);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fprintf(f, "  %s\n\n", u);
	fclose(f);
	assert_int_equal(dbcron_db_open_file(path, DBCRON_DB_INIT, &db, &err), DBCRON_OK);
	assert_int_equal(njobs(db), 0);
	dbcron_db_close(db);
	db = NULL;
	assert_int_equal(dbcron_db_open(u, &db, &err), DBCRON_OK);
	int64_t now = 0;
	assert_int_equal(dbcron_db_now_ms(db, &now, &err), DBCRON_OK);
	assert_true(now > 1700000000000LL);
	dbcron_db_close(db);

	/* two lines: refused, and the message shows the path, not the text */
	f = fopen(path, "w");
	assert_non_null(f);
	fprintf(f, "%s\nsecret-second-line\n", u);
	fclose(f);
	db = NULL;
	assert_int_equal(dbcron_db_open_file(path, 0, &db, &err), DBCRON_EINVAL);
	assert_null(db);
	assert_non_null(strstr(err.msg, path));
	assert_null(strstr(err.msg, "secret"));
	snprintf(path, sizeof(path), "%s/absent", dir);
	assert_int_equal(dbcron_db_open_file(path, 0, &db, &err), DBCRON_EIO);
	dbcron_db_close(NULL);
}

typedef struct seen {
	size_t n;
	size_t idx[8];
	char msg[8][512];
} seen;

static void on_error(void *ctx, size_t idx, const char *name, const char *msg)
{
	seen *s = ctx;
	if (s->n < 8) {
		s->idx[s->n] = idx;
		snprintf(s->msg[s->n], sizeof(s->msg[0]), "%s", msg);
	}
	s->n++;
}

static void test_apply_json(void **state)
{
	dbcron_db *db = fresh();
	dbcron_apply_opts o;
	dbcron_apply_result r;
	dbcron_err err = {0};
	seen s = {0};

	dbcron_apply_opts_init(&o);
	o.on_error = on_error;
	o.ctx = &s;
	/* one bad entry: nothing is written, the entry named */
	const char *bad = "[{\"name\":\"a\",\"every\":\"30s\",\"command\":[\"true\"]},"
			  " {\"name\":\"b\",\"every\":\"soon\",\"command\":[\"true\"]}]";
	assert_int_equal(dbcron_apply_json(db, bad, 0, &o, &r, &err), DBCRON_EINVAL);
	assert_int_equal(r.errors, 1);
	assert_int_equal(s.n, 1);
	assert_int_equal(s.idx[0], 1);
	assert_non_null(strstr(s.msg[0], "every"));
	assert_int_equal(njobs(db), 0);
	dbcron_apply_result_clear(&r);

	assert_int_equal(dbcron_apply_json(db, "{\"name\":\"a\"}", 0, &o, &r, &err), DBCRON_EINVAL);
	assert_int_equal(dbcron_apply_json(db, "[{", 0, &o, &r, &err), DBCRON_EPARSE);

	const char *two = "[{\"name\":\"a\",\"every\":\"30s\",\"command\":[\"true\"]},"
			  " {\"name\":\"b\",\"cron\":\"0 0 3 * * ?\",\"handler\":\"noop\"}]";
	assert_int_equal(dbcron_apply_json(db, two, 0, &o, &r, &err), DBCRON_OK);
	assert_int_equal(r.created, 2);
	assert_int_equal(r.updated, 0);
	assert_null(r.diff_json);
	dbcron_apply_result_clear(&r);
	assert_int_equal(njobs(db), 2);

	/* dry run with prune: says what would change, writes nothing */
	o.prune = true;
	o.dry_run = true;
	const char *onlyc = "[{\"name\":\"a\",\"every\":\"1m\",\"command\":[\"true\"]},"
			    " {\"name\":\"c\",\"every\":\"1m\",\"handler\":\"noop\"}]";
	assert_int_equal(dbcron_apply_json(db, onlyc, 0, &o, &r, &err), DBCRON_OK);
	assert_non_null(r.diff_json);
	assert_non_null(strstr(r.diff_json, "\"create\":[\"c\"]"));
	assert_non_null(strstr(r.diff_json, "\"update\":[\"a\"]"));
	assert_non_null(strstr(r.diff_json, "\"delete\":[\"b\"]"));
	dbcron_apply_result_clear(&r);
	assert_int_equal(njobs(db), 2);
	dbcron_job j;
	dbcron_job_init(&j);
	assert_int_equal(dbcron_job_get(db, "a", &j, &err), DBCRON_OK);
	assert_int_equal(j.interval_ms, 30000);
	dbcron_job_clear(&j);

	/* the same for real: b deleted, a updated, c created */
	o.dry_run = false;
	assert_int_equal(dbcron_apply_json(db, onlyc, 0, &o, &r, &err), DBCRON_OK);
	assert_int_equal(r.created, 1);
	assert_int_equal(r.updated, 1);
	assert_int_equal(r.deleted, 1);
	dbcron_apply_result_clear(&r);
	assert_int_equal(dbcron_job_get(db, "b", &j, &err), DBCRON_ENOTFOUND);
	assert_string_equal(err.msg, "no job named 'b'");
	assert_int_equal(dbcron_job_get(db, "a", &j, &err), DBCRON_OK);
	assert_int_equal(j.interval_ms, 60000);
	dbcron_job_clear(&j);
	dbcron_db_close(db);
}

static void shell_job(dbcron_job *j, const char *name, const char *every)
{
	static char *argv[] = {"true", NULL};
	dbcron_job_init(j);
	j->name = (char *)name;
	j->kind = DBCRON_SCHED_EVERY;
	j->spec = (char *)every;
	j->executor = DBCRON_EXEC_SHELL;
	j->argv = argv;
	j->argc = 1;
}

static void test_structs(void **state)
{
	dbcron_db *db = fresh();
	dbcron_err err = {0};
	dbcron_job j, got, two[2];

	shell_job(&j, "s", "45s");
	j.max_retries = 7;
	j.tz = "Europe/Berlin";
	dbcron_job_init(&got);
	assert_int_equal(dbcron_job_add(db, &j, &got, &err), DBCRON_OK);
	assert_string_equal(got.name, "s");
	assert_int_equal(got.interval_ms, 45000);
	assert_int_equal(got.max_retries, 7);
	assert_string_equal(got.tz, "Europe/Berlin");
	assert_true(got.id > 0);
	assert_true(got.next_fire_at > 0);
	dbcron_job_clear(&got);

	assert_int_equal(dbcron_job_add(db, &j, NULL, &err), DBCRON_EEXISTS);
	assert_string_equal(err.msg, "job 's' already exists");

	/* a bad struct: the job's own message, nothing written */
	dbcron_job bad;
	shell_job(&bad, "t", "whenever");
	assert_int_equal(dbcron_job_add(db, &bad, NULL, &err), DBCRON_EINVAL);
	assert_non_null(strstr(err.msg, "every"));
	assert_int_equal(njobs(db), 1);
	/* a handler this process does not know: refused with strict, else
	 * applied with a warning (for the nodes that register it) */
	bad.executor = DBCRON_EXEC_HANDLER;
	bad.spec = "1s";
	bad.argv = NULL;
	bad.argc = 0;
	bad.handler = "nobody-registered-this";
	dbcron_apply_opts o;
	dbcron_apply_result ar;
	seen warned = {0};
	dbcron_apply_opts_init(&o);
	o.strict = true;
	o.on_warning = on_error;
	o.ctx = &warned;
	assert_int_equal(dbcron_apply(db, &bad, 1, &o, &ar, &err), DBCRON_EINVAL);
	assert_int_equal(ar.errors, 1);
	dbcron_apply_result_clear(&ar);
	assert_int_equal(njobs(db), 1);
	assert_int_equal(warned.n, 0);
	o.strict = false;
	assert_int_equal(dbcron_apply(db, &bad, 1, &o, &ar, &err), DBCRON_OK);
	assert_int_equal(ar.created, 1);
	dbcron_apply_result_clear(&ar);
	assert_int_equal(warned.n, 1);
	assert_non_null(strstr(warned.msg[0], "nobody-registered-this"));
	assert_int_equal(dbcron_job_delete(db, "t", NULL, &err), DBCRON_OK);
	assert_int_equal(njobs(db), 1);

	/* update: only a stored job */
	shell_job(&j, "u", "10s");
	assert_int_equal(dbcron_job_update(db, &j, NULL, &err), DBCRON_ENOTFOUND);
	assert_string_equal(err.msg, "no job named 'u'");
	assert_int_equal(njobs(db), 1);
	shell_job(&j, "s", "2m");
	dbcron_job_init(&got);
	assert_int_equal(dbcron_job_update(db, &j, &got, &err), DBCRON_OK);
	assert_int_equal(got.interval_ms, 120000);
	assert_int_equal(got.max_retries, 3); /* the whole definition, defaults too */
	dbcron_job_clear(&got);

	/* apply of structs: a handler job and the shell one */
	shell_job(&two[0], "s", "2m");
	dbcron_job_init(&two[1]);
	two[1].name = "h";
	two[1].kind = DBCRON_SCHED_CRON;
	two[1].spec = "0 */5 * * * ?";
	two[1].executor = DBCRON_EXEC_HANDLER;
	two[1].handler = "sleep";
	two[1].arg = "10ms";
	dbcron_apply_result r;
	assert_int_equal(dbcron_apply(db, two, 2, NULL, &r, &err), DBCRON_OK);
	assert_int_equal(r.created, 1);
	assert_int_equal(r.updated, 1);
	dbcron_apply_result_clear(&r);

	dbcron_job *jobs;
	size_t n;
	assert_int_equal(dbcron_job_list(db, &jobs, &n, &err), DBCRON_OK);
	assert_int_equal(n, 2);
	assert_string_equal(jobs[0].name, "h"); /* sorted by name */
	assert_string_equal(jobs[0].handler, "sleep");
	assert_string_equal(jobs[0].arg, "10ms");
	assert_string_equal(jobs[1].name, "s");
	dbcron_job_list_free(jobs, n);
	dbcron_db_close(db);
}

static void test_verbs(void **state)
{
	dbcron_db *db = fresh();
	dbcron_err err = {0};
	dbcron_job j, got;
	dbcron_job_result r;

	shell_job(&j, "v", "1h");
	assert_int_equal(dbcron_job_add(db, &j, NULL, &err), DBCRON_OK);
	assert_int_equal(dbcron_job_pause(db, "v", &r, &err), DBCRON_OK);
	assert_true(r.changed);
	dbcron_job_init(&got);
	assert_int_equal(dbcron_job_get(db, "v", &got, &err), DBCRON_OK);
	assert_true(got.paused);
	dbcron_job_clear(&got);
	assert_int_equal(dbcron_job_pause(db, "v", &r, &err), DBCRON_OK);
	assert_false(r.changed);
	assert_int_equal(dbcron_job_resume(db, "v", &r, &err), DBCRON_OK);
	assert_true(r.changed);
	assert_true(r.next_fire > 0);
	assert_int_equal(dbcron_job_get(db, "v", &got, &err), DBCRON_OK);
	assert_false(got.paused);
	assert_int_equal(got.next_fire_at, r.next_fire);
	dbcron_job_clear(&got);

	assert_int_equal(dbcron_job_trigger(db, "v", &r, &err), DBCRON_OK);
	assert_true(r.run_id > 0);
	dbcron_run run;
	assert_int_equal(dbcron_run_get(db, r.run_id, &run, &err), DBCRON_OK);
	assert_string_equal(run.job_name, "v");
	assert_int_equal(run.state, DBCRON_RUN_SCHEDULED);
	assert_int_equal(run.fire_at, r.fire_at);
	assert_null(run.claim_token);
	dbcron_run_clear(&run);
	assert_int_equal(dbcron_run_get(db, r.run_id + 1000, &run, &err), DBCRON_ENOTFOUND);

	for (int i = 0; i < 4; i++) {
		assert_int_equal(dbcron_job_pause(db, "nope", NULL, &err), DBCRON_ENOTFOUND);
		assert_string_equal(err.msg, "no job named 'nope'");
		err.msg[0] = '\0';
		int (*verbs[])(dbcron_db *, const char *, dbcron_job_result *, dbcron_err *) = {
			dbcron_job_pause, dbcron_job_resume, dbcron_job_delete, dbcron_job_trigger};
		assert_int_equal(verbs[i](db, "nope", NULL, &err), DBCRON_ENOTFOUND);
		assert_string_equal(err.msg, "no job named 'nope'");
	}
	assert_int_equal(dbcron_job_delete(db, "v", &r, &err), DBCRON_OK);
	assert_true(r.changed);
	assert_int_equal(njobs(db), 0);
	dbcron_db_close(db);
}

/* The audit trail of the database at url: "actor|action|job" a line,
 * oldest first (read with SQLite itself: the library has no reader). */
static void audit_rows(char *out, size_t len)
{
	sqlite3 *h;
	sqlite3_stmt *st;
	size_t at = 0;
	out[0] = '\0';
	assert_int_equal(sqlite3_open_v2(url + strlen("sqlite:"), &h, SQLITE_OPEN_READONLY, NULL),
			 SQLITE_OK);
	assert_int_equal(sqlite3_prepare_v2(h, "SELECT actor || '|' || action || '|' || "
					       "coalesce(job, '-') FROM audit ORDER BY id",
					    -1, &st, NULL),
			 SQLITE_OK);
	while (sqlite3_step(st) == SQLITE_ROW && at < len)
		at += (size_t)snprintf(out + at, len - at, "%s\n", sqlite3_column_text(st, 0));
	sqlite3_finalize(st);
	sqlite3_close(h);
}

/* Each change made through the library leaves an audit row by
 * "lib:PROGRAM", or by the actor the embedder names; a refused one none. */
static void test_audit(void **state)
{
	dbcron_db *db = fresh();
	dbcron_err err = {0};
	dbcron_job j;
	dbcron_job_result r;
	dbcron_apply_result ar;
	char rows[4096];
	(void)state;

	shell_job(&j, "la", "1h");
	assert_int_equal(dbcron_job_add(db, &j, NULL, &err), DBCRON_OK);
	shell_job(&j, "la", "2h");
	assert_int_equal(dbcron_job_update(db, &j, NULL, &err), DBCRON_OK);
	assert_int_equal(dbcron_job_pause(db, "la", &r, &err), DBCRON_OK);
	assert_int_equal(dbcron_job_resume(db, "la", &r, &err), DBCRON_OK);
	assert_int_equal(dbcron_job_trigger(db, "la", &r, &err), DBCRON_OK);
	const char *doc = "[{\"name\": \"lb\", \"every\": \"5m\", \"command\": [\"true\"]}]";
	assert_int_equal(dbcron_apply_json(db, doc, strlen(doc), NULL, &ar, &err), DBCRON_OK);
	dbcron_apply_result_clear(&ar);
	/* refused: a bad cron, a name taken */
	const char *bad = "[{\"name\": \"lc\", \"cron\": \"61 * * * *\", \"command\": [\"true\"]}]";
	assert_int_not_equal(dbcron_apply_json(db, bad, strlen(bad), NULL, &ar, &err), DBCRON_OK);
	dbcron_apply_result_clear(&ar);
	assert_int_equal(dbcron_job_add(db, &j, NULL, &err), DBCRON_EEXISTS);
	dbcron_db_set_actor(db, "lib:billing (user 42)");
	assert_int_equal(dbcron_job_delete(db, "lb", &r, &err), DBCRON_OK);
	dbcron_db_set_actor(db, NULL);
	assert_int_equal(dbcron_job_pause(db, "la", &r, &err), DBCRON_OK);
	audit_rows(rows, sizeof(rows));
	assert_string_equal(rows, "lib:test_api|add|la\n"
				  "lib:test_api|set|la\n"
				  "lib:test_api|pause|la\n"
				  "lib:test_api|resume|la\n"
				  "lib:test_api|trigger|la\n"
				  "lib:test_api|apply|lb\n"
				  "lib:billing (user 42)|delete|lb\n"
				  "lib:test_api|pause|la\n");
	dbcron_db_close(db);
}

/* Every run of the walk (ids, newest first) into ids; returns how many. */
static size_t walk(dbcron_db *db, const dbcron_run_filter *f, const char *cursor,
		   size_t stop_after, int64_t *ids, char *cursor_out, size_t clen)
{
	dbcron_run_iter *it = NULL;
	dbcron_err err = {0};
	const dbcron_run *r;
	size_t n = 0;
	assert_int_equal(dbcron_runs_open(db, f, cursor, &it, &err), DBCRON_OK);
	assert_string_equal(dbcron_runs_cursor(it), cursor ? cursor : "");
	while (n < stop_after) {
		assert_int_equal(dbcron_runs_next(it, &r, &err), DBCRON_OK);
		if (!r)
			break;
		assert_null(r->claim_token);
		ids[n++] = r->id;
	}
	if (cursor_out)
		snprintf(cursor_out, clen, "%s", dbcron_runs_cursor(it));
	dbcron_runs_free(it);
	return n;
}

static void test_runs_iter(void **state)
{
	dbcron_db *db = fresh();
	dbcron_err err = {0};
	dbcron_job j;
	dbcron_job_result r;
	int64_t made[7], all[16], part[16], rest[16], few[16];
	char cursor[512];

	shell_job(&j, "x", "1h");
	assert_int_equal(dbcron_job_add(db, &j, NULL, &err), DBCRON_OK);
	shell_job(&j, "y", "1h");
	assert_int_equal(dbcron_job_add(db, &j, NULL, &err), DBCRON_OK);
	for (int i = 0; i < 7; i++) {
		assert_int_equal(dbcron_job_trigger(db, i % 3 ? "x" : "y", &r, &err), DBCRON_OK);
		made[i] = r.run_id;
	}

	/* pages of 2: every run once, newest first by (fire_at, job, ...) */
	dbcron_run_filter f;
	dbcron_run_filter_init(&f);
	f.page_size = 2;
	assert_int_equal(walk(db, &f, NULL, 16, all, NULL, 0), 7);
	for (int i = 0; i < 7; i++) {
		int hits = 0;
		for (int k = 0; k < 7; k++)
			hits += all[k] == made[i];
		assert_int_equal(hits, 1);
	}
	int64_t prev_fire = INT64_MAX;
	for (int i = 0; i < 7; i++) {
		dbcron_run run;
		assert_int_equal(dbcron_run_get(db, all[i], &run, &err), DBCRON_OK);
		assert_true(run.fire_at <= prev_fire);
		prev_fire = run.fire_at;
		dbcron_run_clear(&run);
	}
	/* the same order with one page of everything */
	f.page_size = 0;
	assert_int_equal(walk(db, &f, NULL, 16, few, NULL, 0), 7);
	assert_memory_equal(all, few, sizeof(int64_t) * 7);

	/* stop after 3, resume from the cursor: the other 4, in order */
	f.page_size = 2;
	assert_int_equal(walk(db, &f, NULL, 3, part, cursor, sizeof(cursor)), 3);
	assert_memory_equal(part, all, sizeof(int64_t) * 3);
	assert_int_equal(walk(db, &f, cursor, 16, rest, NULL, 0), 4);
	assert_memory_equal(rest, all + 3, sizeof(int64_t) * 4);

	/* a filter: job y's runs only (triggers 0, 3, 6) */
	f.job = "y";
	assert_int_equal(walk(db, &f, NULL, 16, few, NULL, 0), 3);
	f.job = NULL;
	f.state = DBCRON_RUN_SUCCEEDED;
	assert_int_equal(walk(db, &f, NULL, 16, few, NULL, 0), 0);

	dbcron_run_iter *it = NULL;
	assert_int_equal(dbcron_runs_open(db, &f, "not-a-cursor", &it, &err), DBCRON_EINVAL);
	assert_null(it);
	f.page_size = -1;
	assert_int_equal(dbcron_runs_open(db, &f, NULL, &it, &err), DBCRON_EINVAL);
	dbcron_db_close(db);
}

static void test_nodes_locks(void **state)
{
	dbcron_db *db = fresh();
	dbcron_err err = {0};
	dbcron_node_info *nodes;
	dbcron_lease *locks, lease, holder;
	size_t n;

	assert_int_equal(dbcron_nodes_list(db, &nodes, &n, &err), DBCRON_OK);
	assert_int_equal(n, 0);
	dbcron_nodes_free(nodes, n);
	assert_int_equal(dbcron_lock_acquire(db, "nightly", "me", 60000, &lease, &holder, &err),
			 DBCRON_OK);
	assert_int_equal(dbcron_locks_list(db, &locks, &n, &err), DBCRON_OK);
	assert_int_equal(n, 1);
	assert_string_equal(locks[0].name, "nightly");
	assert_string_equal(locks[0].owner, "me");
	assert_int_equal(locks[0].fence, lease.fence);
	int64_t now;
	assert_int_equal(dbcron_db_now_ms(db, &now, &err), DBCRON_OK);
	assert_true(locks[0].until_ms >= now);
	dbcron_locks_free(locks);

	/* Lock names follow the stored-name rule of job names: a name the run
	 * log ("lock:NAME") could not hold is refused, saying why, and nothing
	 * is written. */
	enum { NAME_MAX_BYTES = 200 }; /* docs/cli.md, "dbcron lock" */
	char longest[NAME_MAX_BYTES + 2];
	memset(longest, 'x', sizeof(longest) - 1);
	longest[sizeof(longest) - 1] = '\0';
	static const struct {
		const char *name, *why;
	} bad[] = {
		{"bad\xff\xfename", "lock name is not valid UTF-8"},
		{"\xe2\x82", "lock name is not valid UTF-8"}, /* '€' cut */
		{"two words", "contains a space"},
		{"tab\there", "contains a control character"},
		{"", "lock name is empty"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err = (dbcron_err){0};
		assert_int_equal(dbcron_lock_acquire(db, bad[i].name, "me", 60000, &lease, &holder,
						     &err),
				 DBCRON_EINVAL);
		assert_non_null(strstr(err.msg, bad[i].why));
	}
	assert_int_equal(dbcron_lock_acquire(db, longest, "me", 60000, &lease, &holder, &err),
			 DBCRON_EINVAL);
	assert_non_null(strstr(err.msg, "at most 200"));
	assert_int_equal(dbcron_locks_list(db, &locks, &n, &err), DBCRON_OK);
	assert_int_equal(n, 1);
	dbcron_locks_free(locks);
	/* multi-byte text is a name like any other, up to 200 bytes */
	longest[NAME_MAX_BYTES] = '\0';
	memcpy(longest + NAME_MAX_BYTES - 3, "\xe2\x82\xac", 3);
	assert_int_equal(dbcron_lock_acquire(db, "n\xc3\xa4" "chtlich-\xe2\x82\xac", "me", 60000,
					     &lease, &holder, &err),
			 DBCRON_OK);
	assert_int_equal(dbcron_lock_acquire(db, longest, "me", 60000, &lease, &holder, &err),
			 DBCRON_OK);
	dbcron_db_close(db);
}

typedef struct node_thread {
	dbcron_node *n;
	int rc;
	dbcron_err err;
} node_thread;

static void *run_node(void *arg)
{
	node_thread *nt = arg;
	nt->rc = dbcron_node_run(nt->n, &nt->err);
	return NULL;
}

/* A node configured with db_file reaches the database the file names: it
 * shows up in the registry there. */
static void test_node_db_file(void **state)
{
	dbcron_db *db = fresh();
	dbcron_err err = {0};
	dbcron_node_config cfg;
	char path[700];
	node_thread nt = {0};

	dbcron_node_config_init(&cfg);
	assert_int_equal(dbcron_node_create(&cfg, &nt.n, &err), DBCRON_EINVAL);
	snprintf(path, sizeof(path), "%s/node-url", dir);
	cfg.db_file = path;
	assert_int_equal(dbcron_node_create(&cfg, &nt.n, &err), DBCRON_EIO);
	assert_non_null(strstr(err.msg, path));
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fprintf(f, "%s\n", url);
	fclose(f);
	cfg.db_url = url;
	assert_int_equal(dbcron_node_create(&cfg, &nt.n, &err), DBCRON_EINVAL);
	cfg.db_url = NULL;
	cfg.node_id = "from-file";
	assert_int_equal(dbcron_node_create(&cfg, &nt.n, &err), DBCRON_OK);
	pthread_t th;
	assert_int_equal(pthread_create(&th, NULL, run_node, &nt), 0);
	bool alive = false;
	for (int i = 0; i < 600 && !alive; i++) { /* a minute at most */
		dbcron_node_info *nodes;
		size_t n;
		assert_int_equal(dbcron_nodes_list(db, &nodes, &n, &err), DBCRON_OK);
		for (size_t k = 0; k < n; k++)
			alive |= strcmp(nodes[k].node_id, "from-file") == 0 &&
				strcmp(nodes[k].state, "alive") == 0;
		dbcron_nodes_free(nodes, n);
		if (!alive)
			nanosleep(&(struct timespec){.tv_nsec = 100000000}, NULL);
	}
	dbcron_node_stop(nt.n);
	pthread_join(th, NULL);
	assert_int_equal(nt.rc, DBCRON_OK);
	assert_true(alive);
	dbcron_node_free(nt.n);
	dbcron_db_close(db);
}

static atomic_int late_calls;

static int late_handler(const dbcron_handler_ctx *ctx, void *user, char *errbuf, size_t errlen)
{
	(void)ctx, (void)user, (void)errbuf, (void)errlen;
	atomic_fetch_add(&late_calls, 1);
	return 0;
}

/* A handler registered while the node runs counts without a restart: the
 * node's next heartbeat records it and its claims take the job's triggered
 * run (before, they would leave it unclaimed: no node had the handler). */
static void test_node_late_handler(void **state)
{
	dbcron_db *db = fresh();
	dbcron_err err = {0};
	dbcron_node_config cfg;
	node_thread nt = {0};
	char name[64];

	dbcron_node_config_init(&cfg);
	cfg.db_url = url;
	cfg.node_id = "late";
	cfg.heartbeat_ms = 200;
	cfg.lease_ms = 1000;
	assert_int_equal(dbcron_node_create(&cfg, &nt.n, &err), DBCRON_OK);
	pthread_t th;
	assert_int_equal(pthread_create(&th, NULL, run_node, &nt), 0);
	bool alive = false;
	for (int i = 0; i < 600 && !alive; i++) {
		dbcron_node_info *nodes;
		size_t n;
		assert_int_equal(dbcron_nodes_list(db, &nodes, &n, &err), DBCRON_OK);
		alive = n == 1 && strcmp(nodes[0].state, "alive") == 0;
		dbcron_nodes_free(nodes, n);
		if (!alive)
			nanosleep(&(struct timespec){.tv_nsec = 100000000}, NULL);
	}
	assert_true(alive);

	snprintf(name, sizeof(name), "late-%d", (int)getpid());
	assert_int_equal(dbcron_handler_register(name, late_handler, NULL), DBCRON_OK);
	dbcron_job j;
	dbcron_job_init(&j);
	j.name = "late-job";
	j.kind = DBCRON_SCHED_EVERY;
	j.spec = "1h";
	j.executor = DBCRON_EXEC_HANDLER;
	j.handler = name;
	j.misfire_threshold_ms = 3600000;
	assert_int_equal(dbcron_job_add(db, &j, NULL, &err), DBCRON_OK);
	dbcron_job_result jr;
	assert_int_equal(dbcron_job_trigger(db, "late-job", &jr, &err), DBCRON_OK);
	int rs = 0;
	for (int i = 0; i < 150 && rs != DBCRON_RUN_SUCCEEDED; i++) { /* 15 s at most */
		dbcron_run run;
		assert_int_equal(dbcron_run_get(db, jr.run_id, &run, &err), DBCRON_OK);
		rs = run.state;
		dbcron_run_clear(&run);
		if (rs != DBCRON_RUN_SUCCEEDED)
			nanosleep(&(struct timespec){.tv_nsec = 100000000}, NULL);
	}
	dbcron_node_stop(nt.n);
	pthread_join(th, NULL);
	assert_int_equal(nt.rc, DBCRON_OK);
	assert_int_equal(rs, DBCRON_RUN_SUCCEEDED);
	assert_int_equal(atomic_load(&late_calls), 1);
	dbcron_node_free(nt.n);
	dbcron_db_close(db);
}

/* What the every-node handler saw: per node ("ev-a", "ev-b"), its index
 * + 1 and total (0: no call), and how many calls. */
static atomic_int every_seen[2][2];
static atomic_int every_calls;

static int every_handler(const dbcron_handler_ctx *ctx, void *user, char *errbuf, size_t errlen)
{
	(void)user, (void)errbuf, (void)errlen;
	int k = strcmp(ctx->node, "ev-a") == 0 ? 0 : 1;
	atomic_store(&every_seen[k][0], ctx->node_index + 1);
	atomic_store(&every_seen[k][1], ctx->node_total);
	atomic_fetch_add(&every_calls, 1);
	return 0;
}

/* An every-node job's trigger runs once on each of two live nodes, and
 * each handler call gets its node's index and the total in its context
 * (docs/scheduler.md "Every node"). */
static void test_node_every_handler(void **state)
{
	dbcron_db *db = fresh();
	dbcron_err err = {0};
	static const char *const ids[] = {"ev-a", "ev-b"};
	node_thread nt[2] = {{0}};
	pthread_t th[2];
	char name[64];

	snprintf(name, sizeof(name), "every-%d", (int)getpid());
	assert_int_equal(dbcron_handler_register(name, every_handler, NULL), DBCRON_OK);
	for (int i = 0; i < 2; i++) {
		dbcron_node_config cfg;
		dbcron_node_config_init(&cfg);
		cfg.db_url = url;
		cfg.node_id = ids[i];
		cfg.heartbeat_ms = 200;
		cfg.lease_ms = 2000;
		assert_int_equal(dbcron_node_create(&cfg, &nt[i].n, &err), DBCRON_OK);
		assert_int_equal(pthread_create(&th[i], NULL, run_node, &nt[i]), 0);
	}
	size_t alive = 0;
	for (int i = 0; i < 600 && alive < 2; i++) {
		dbcron_node_info *nodes;
		size_t n;
		assert_int_equal(dbcron_nodes_list(db, &nodes, &n, &err), DBCRON_OK);
		alive = 0;
		for (size_t k = 0; k < n; k++)
			alive += strcmp(nodes[k].state, "alive") == 0;
		dbcron_nodes_free(nodes, n);
		if (alive < 2)
			nanosleep(&(struct timespec){.tv_nsec = 100000000}, NULL);
	}
	assert_int_equal(alive, 2);
	dbcron_job j;
	dbcron_job_init(&j);
	j.name = "every-job";
	j.kind = DBCRON_SCHED_EVERY;
	j.spec = "1h";
	j.executor = DBCRON_EXEC_HANDLER;
	j.handler = name;
	j.on_every_node = true;
	j.misfire_threshold_ms = 3600000;
	assert_int_equal(dbcron_job_add(db, &j, NULL, &err), DBCRON_OK);
	dbcron_job_result jr;
	assert_int_equal(dbcron_job_trigger(db, "every-job", &jr, &err), DBCRON_OK);
	for (int i = 0; i < 150 && atomic_load(&every_calls) < 2; i++) /* 15 s at most */
		nanosleep(&(struct timespec){.tv_nsec = 100000000}, NULL);
	for (int i = 0; i < 2; i++)
		dbcron_node_stop(nt[i].n);
	for (int i = 0; i < 2; i++) {
		pthread_join(th[i], NULL);
		assert_int_equal(nt[i].rc, DBCRON_OK);
		dbcron_node_free(nt[i].n);
	}
	assert_int_equal(atomic_load(&every_calls), 2);
	for (int k = 0; k < 2; k++) { /* "ev-a" sorts first: index 0 */
		assert_int_equal(atomic_load(&every_seen[k][0]), k + 1);
		assert_int_equal(atomic_load(&every_seen[k][1]), 2);
	}
	dbcron_db_close(db);
}

static atomic_int deaf_started;

/* A handler that never asks whether it should stop: it runs its 1.5 s. */
static int deaf_handler(const dbcron_handler_ctx *ctx, void *user, char *errbuf, size_t errlen)
{
	(void)ctx, (void)user, (void)errbuf, (void)errlen;
	atomic_store(&deaf_started, 1);
	nanosleep(&(struct timespec){.tv_sec = 1, .tv_nsec = 500000000}, NULL);
	return 0;
}

static int wait_state(dbcron_db *db, int64_t id, int want)
{
	dbcron_err err = {0};
	int rs = 0;
	for (int i = 0; i < 150 && rs != want; i++) { /* 15 s at most */
		dbcron_run run;
		assert_int_equal(dbcron_run_get(db, id, &run, &err), DBCRON_OK);
		rs = run.state;
		dbcron_run_clear(&run);
		if (rs != want)
			nanosleep(&(struct timespec){.tv_nsec = 100000000}, NULL);
	}
	return rs;
}

/* dbcron_run_cancel: a handler that ignores the cancel runs to its end and
 * its run is recorded CANCELLED all the same (not SUCCEEDED), with no
 * retry; a run that ended is refused, an unknown id is not found. */
static void test_node_cancel_deaf_handler(void **state)
{
	(void)state;
	dbcron_db *db = fresh();
	dbcron_err err = {0};
	dbcron_node_config cfg;
	node_thread nt = {0};
	char name[64];
	bool done = true;

	snprintf(name, sizeof(name), "deaf-%d", (int)getpid());
	assert_int_equal(dbcron_handler_register(name, deaf_handler, NULL), DBCRON_OK);
	dbcron_node_config_init(&cfg);
	cfg.db_url = url;
	cfg.node_id = "canceller";
	cfg.heartbeat_ms = 200;
	cfg.lease_ms = 1000;
	assert_int_equal(dbcron_node_create(&cfg, &nt.n, &err), DBCRON_OK);
	pthread_t th;
	assert_int_equal(pthread_create(&th, NULL, run_node, &nt), 0);
	dbcron_job j;
	dbcron_job_init(&j);
	j.name = "deaf-job";
	j.kind = DBCRON_SCHED_EVERY;
	j.spec = "1h";
	j.executor = DBCRON_EXEC_HANDLER;
	j.handler = name;
	j.misfire_threshold_ms = 3600000;
	j.retry_base_ms = 1;
	assert_int_equal(dbcron_job_add(db, &j, NULL, &err), DBCRON_OK);
	dbcron_job_result jr;
	assert_int_equal(dbcron_job_trigger(db, "deaf-job", &jr, &err), DBCRON_OK);
	assert_int_equal(wait_state(db, jr.run_id, DBCRON_RUN_RUNNING), DBCRON_RUN_RUNNING);
	assert_int_equal(dbcron_run_cancel(db, jr.run_id, &done, &err), DBCRON_OK);
	assert_false(done);
	assert_int_equal(wait_state(db, jr.run_id, DBCRON_RUN_CANCELLED), DBCRON_RUN_CANCELLED);
	assert_int_equal(dbcron_run_cancel(db, jr.run_id, &done, &err), DBCRON_EEXISTS);
	assert_int_equal(dbcron_run_cancel(db, 987654, &done, &err), DBCRON_ENOTFOUND);
	/* no retry: a retry would be due 1 ms after the end */
	nanosleep(&(struct timespec){.tv_nsec = 600000000}, NULL);
	dbcron_run_filter f;
	dbcron_run_filter_init(&f);
	f.job = "deaf-job";
	int64_t ids[4];
	assert_int_equal(walk(db, &f, NULL, 4, ids, NULL, 0), 1);
	assert_int_equal(ids[0], jr.run_id);
	dbcron_node_stop(nt.n);
	pthread_join(th, NULL);
	assert_int_equal(nt.rc, DBCRON_OK);
	assert_int_equal(atomic_load(&deaf_started), 1);
	dbcron_node_free(nt.n);
	dbcron_db_close(db);
}

typedef struct locked_ctx {
	const char *url; /* a second handle's database */
	int64_t hold_ms;
	bool steal;     /* take the lease over from another owner meanwhile */
	bool saw_lost;
	int64_t fence;
	char name[256];
	int64_t until_during;
} locked_ctx;

static void sleep_ms(int64_t ms)
{
	nanosleep(&(struct timespec){.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L}, NULL);
}

/* Holds the lock hold_ms, reading the lease row through its own handle;
 * with steal, expires it and lets another owner take it first. */
static int locked_fn(const dbcron_lock_guard *g, void *arg)
{
	locked_ctx *c = arg;
	const dbcron_lease *l = dbcron_lock_guard_lease(g);
	dbcron_db *db2;
	dbcron_err err = {0};
	snprintf(c->name, sizeof(c->name), "%s", l->name);
	c->fence = l->fence;
	if (dbcron_db_open(c->url, &db2, &err))
		return 99;
	if (c->steal) {
		/* a frozen holder's lease ends; someone else takes it */
		char sql[700];
		/* the keeper may hold the write lock renewing: wait for it */
		snprintf(sql, sizeof(sql),
			 "sqlite3 -cmd '.timeout 10000' '%s' \"update locks set until_ms = 0 where name = '%s'\"",
			 c->url + 7, l->name);
		/* the keeper may renew between the two (a slow machine): the
		 * lease ends again until the thief has it */
		dbcron_lease mine, holder;
		int tries = 0;
		do {
			if (system(sql) != 0)
				return 98;
			if (++tries > 50)
				return 97;
		} while (dbcron_lock_acquire(db2, l->name, "thief", 60000, &mine, &holder, &err));
	}
	int64_t end_ms = 0, now = 0;
	dbcron_db_now_ms(db2, &now, &err);
	end_ms = now + c->hold_ms;
	while (now < end_ms && !(c->saw_lost = dbcron_lock_lost(g))) {
		sleep_ms(50);
		dbcron_db_now_ms(db2, &now, &err);
	}
	dbcron_lease *locks;
	size_t n;
	if (!dbcron_locks_list(db2, &locks, &n, &err)) {
		for (size_t i = 0; i < n; i++)
			if (strcmp(locks[i].name, l->name) == 0 && strcmp(locks[i].owner, l->owner) == 0)
				c->until_during = locks[i].until_ms;
		dbcron_locks_free(locks);
	}
	dbcron_db_close(db2);
	return 7;
}

/* dbcron_lock_run: the lease is renewed while fn runs past its ttl, then
 * released; a held lock refuses without running fn; a lease taken over
 * meanwhile is reported to fn and to the caller. */
static void test_lock_run(void **state)
{
	dbcron_db *db = fresh(), *db2;
	dbcron_err err = {0};
	int fn_rc = -1;
	locked_ctx c = {.url = url, .hold_ms = 1200};
	int64_t t0;

	assert_int_equal(dbcron_lock_run(db, "", NULL, 300, locked_fn, &c, &fn_rc, &err), DBCRON_EINVAL);
	assert_int_equal(fn_rc, 0);
	assert_int_equal(dbcron_db_now_ms(db, &t0, &err), DBCRON_OK);
	/* 1.2 s under a 300 ms ttl: only renewals keep it */
	assert_int_equal(dbcron_lock_run(db, "nightly", "me", 300, locked_fn, &c, &fn_rc, &err),
			 DBCRON_OK);
	assert_int_equal(fn_rc, 7);
	assert_false(c.saw_lost);
	assert_string_equal(c.name, "nightly");
	assert_true(c.until_during >= t0 + 1200);
	assert_int_equal(dbcron_db_open(url, &db2, &err), DBCRON_OK);
	dbcron_lease got, holder;
	/* released: another owner gets it at once, with a greater fence */
	assert_int_equal(dbcron_lock_acquire(db2, "nightly", "other", 60000, &got, &holder, &err),
			 DBCRON_OK);
	assert_true(got.fence > c.fence);
	/* held by other: fn does not run */
	fn_rc = -1;
	memset(&c, 0, sizeof(c));
	c.url = url;
	assert_int_equal(dbcron_lock_run(db, "nightly", "me", 300, locked_fn, &c, &fn_rc, &err),
			 DBCRON_ELOCKED);
	assert_int_equal(fn_rc, 0);
	assert_string_equal(c.name, "");
	assert_non_null(strstr(err.msg, "held by other"));
	assert_int_equal(dbcron_lock_release(db2, &got, &err), DBCRON_OK);
	/* taken over while fn runs: fn sees it, the caller gets EFENCED */
	c.hold_ms = 3000;
	c.steal = true;
	assert_int_equal(dbcron_lock_run(db, "nightly", "me", 300, locked_fn, &c, &fn_rc, &err),
			 DBCRON_EFENCED);
	assert_int_equal(fn_rc, 7);
	assert_true(c.saw_lost);
	assert_non_null(strstr(err.msg, "lease lost"));
	dbcron_db_close(db2);
	dbcron_db_close(db);
}

typedef struct log_capture {
	pthread_mutex_t mu;
	char buf[16384];
	size_t len;
	int lines;
} log_capture;

static void capture_line(void *ctx, int level, const char *line, size_t len)
{
	log_capture *c = ctx;
	(void)level;
	pthread_mutex_lock(&c->mu);
	if (c->len + len < sizeof(c->buf)) {
		memcpy(c->buf + c->len, line, len);
		c->len += len;
		c->buf[c->len] = '\0';
	}
	c->lines++;
	pthread_mutex_unlock(&c->mu);
}

/* The log level and sink are the node's: two nodes of one process, each
 * with its own callback and level, get only their own lines. */
static void test_node_log_sink(void **state)
{
	dbcron_db *db = fresh();
	dbcron_err err = {0};
	static log_capture info = {.mu = PTHREAD_MUTEX_INITIALIZER};
	static log_capture warn = {.mu = PTHREAD_MUTEX_INITIALIZER};
	dbcron_node_config cfg;
	node_thread a = {0}, b = {0};

	dbcron_node_config_init(&cfg);
	assert_int_equal(cfg.log_level, DBCRON_LOG_DEFAULT);
	cfg.db_url = url;
	cfg.log_level = 9;
	assert_int_equal(dbcron_node_create(&cfg, &a.n, &err), DBCRON_EINVAL);
	assert_non_null(strstr(err.msg, "log_level 9"));
	cfg.node_id = "log-info";
	cfg.log_level = DBCRON_LOG_INFO;
	cfg.log = capture_line;
	cfg.log_ctx = &info;
	assert_int_equal(dbcron_node_create(&cfg, &a.n, &err), DBCRON_OK);
	cfg.node_id = "log-warn";
	cfg.log_level = DBCRON_LOG_WARN;
	cfg.log_ctx = &warn;
	assert_int_equal(dbcron_node_create(&cfg, &b.n, &err), DBCRON_OK);
	pthread_t ta, tb;
	assert_int_equal(pthread_create(&ta, NULL, run_node, &a), 0);
	assert_int_equal(pthread_create(&tb, NULL, run_node, &b), 0);
	for (int i = 0; i < 600; i++) {
		pthread_mutex_lock(&info.mu);
		bool started = strstr(info.buf, "event=node.start") != NULL;
		pthread_mutex_unlock(&info.mu);
		if (started)
			break;
		sleep_ms(100);
	}
	sleep_ms(300);
	dbcron_node_stop(a.n);
	dbcron_node_stop(b.n);
	pthread_join(ta, NULL);
	pthread_join(tb, NULL);
	assert_int_equal(a.rc, DBCRON_OK);
	assert_int_equal(b.rc, DBCRON_OK);
	assert_non_null(strstr(info.buf, "level=info event=node.start node=log-info "));
	assert_non_null(strstr(info.buf, "event=node.stop node=log-info "));
	assert_null(strstr(info.buf, "log-warn"));
	/* warn and above only: the start and stop lines are info */
	assert_int_equal(warn.lines, 0);
	dbcron_node_free(a.n);
	dbcron_node_free(b.n);
	dbcron_db_close(db);
}

int main(void)
{
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_version),    cmocka_unit_test(test_open),
		cmocka_unit_test(test_apply_json), cmocka_unit_test(test_structs),
		cmocka_unit_test(test_verbs),      cmocka_unit_test(test_runs_iter),
		cmocka_unit_test(test_nodes_locks), cmocka_unit_test(test_node_db_file),
		cmocka_unit_test(test_node_late_handler),
		cmocka_unit_test(test_node_every_handler),
		cmocka_unit_test(test_node_cancel_deaf_handler), cmocka_unit_test(test_lock_run),
		cmocka_unit_test(test_node_log_sink), cmocka_unit_test(test_audit),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	char cmd[600];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", dir);
	return rc;
}
