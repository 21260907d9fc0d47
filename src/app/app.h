/*
 * The verbs, once, for every front end: what `dbcron job ...`, `runs`,
 * `nodes`, `locks` and the HTTP API do to the store, and the JSON each
 * answers with.  No printing and no argv here: a front end parses its
 * input, calls one of these and shows the result (or the error, whose
 * message already names the key, the job or the value at fault).
 *
 * Every function takes a store the caller owns and only uses it for the
 * call.  A json_t ** out-parameter receives a new reference the caller
 * owns; it is NULL on every error path.
 */
#ifndef DBCRON_APP_H
#define DBCRON_APP_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dbcron/error.h"
#include "store/store.h"

struct model_jobdef;

/* ------------------------------------------------------------ jobs */

/* Stored jobs, copies the vector owns (app_job_vec_free). */
typedef struct app_job_vec {
	dbcron_job *v;
	size_t n, cap;
	int rc;
} app_job_vec;

/* Every stored job into jv, sorted by name. */
int app_jobs_sorted(store *s, app_job_vec *jv, dbcron_err *err);
void app_job_vec_free(app_job_vec *jv);

/* The handler names live nodes registered (store_handlers_live), sorted:
 * what says whether a handler job can run anywhere now. */
typedef struct app_live {
	char **names;
	size_t n, cap;
	bool failed;
} app_live;

int app_live_load(store *s, app_live *l, dbcron_err *err);
void app_live_clear(app_live *l);
/* Why no live node can run j ("no live node has registered handler 'x'")
 * into buf (len bytes), or NULL when one can.  Only handler jobs are
 * routed: a command runs on any node. */
const char *app_job_unrunnable(const app_live *l, const dbcron_job *j, char *buf, size_t len);

/*
 * The jobs listing, one page of it, for every front end (GET /api/v1/jobs,
 * the dashboard, `dbcron job list`): at most limit (1 to
 * APP_JOBS_PAGE_MAX) of the jobs whose names sort after cursor (NULL or
 * "": from the first), by name in the database's order.  *out is
 * {"jobs": [...], "next_cursor": the page's last name, or null when no job
 * follows, "now_ms": the database's clock}.  Each job is model_job_json
 * (the apply-able definition, with "paused", "command" or "handler"),
 * "unrunnable" (app_job_unrunnable's reason, on a handler job no live
 * node can run), and the listing's keys: "schedule" (kind
 * and text), "description" (app_schedule_words), "next_fire_local" (the
 * stored next fire as RFC 3339 in the job's zone, or null) and "last_run"
 * ({"id", "state", "finished_at_ms", "finished_at"} of the newest run that
 * is not SCHEDULED, store_jobs_last_run; null when none).  Times are
 * absolute: relative ones ("in 4m") are the front end's, against now_ms.
 * A cursor that cannot be a job name is DBCRON_EINVAL.  Three statements
 * whatever the total: the clock, limit + 1 jobs, their last runs.
 */
#define APP_JOBS_PAGE_MAX 1000
int app_jobs_page(store *s, const char *cursor, long limit, json_t **out, dbcron_err *err);

/* app_jobs_page with the dashboard's options: match (NULL or "": every
 * job) keeps the jobs whose name holds it (store_job_search; names only,
 * there are no tags); strip (0 to APP_STRIP_MAX, 0: none) adds "strip" to
 * each job, its last strip runs that are not SCHEDULED, oldest first, each
 * {"id", "state", "fire_at_ms", "attempt"}: one more statement for the
 * page, whatever its size. */
#define APP_STRIP_MAX 200
typedef struct app_jobs_query {
	const char *cursor;
	long limit;
	const char *match;
	long strip;
} app_jobs_query;
int app_jobs_query_page(store *s, const app_jobs_query *q, json_t **out, dbcron_err *err);

/* A job's schedule in words: a cron expression as `dbcron cron check`
 * describes it, any other schedule as model_schedule_text ("every 30s"),
 * into buf (len bytes); returns buf. */
const char *app_schedule_words(const dbcron_job *j, char *buf, size_t len);

/* ms (epoch, >= 0) in j's zone as RFC 3339 with the zone's offset then
 * ("2026-12-02T12:00:00+01:00", milliseconds only when there are some):
 * the listing's "next_fire_local".  NULL when ms < 0 or the zone is not
 * known here. */
const char *app_local_time(const dbcron_job *j, int64_t ms, char *buf, size_t len);

/* Into o: "schedule", "description" (app_schedule_words) and
 * "next_fires" (the next five from the stored next fire, each as at_ms,
 * utc and local, the job's zone; none while paused).  Keys that cannot be
 * made are left out: the definition is already in o. */
void app_job_add_words(json_t *o, const dbcron_job *j);

/* Runs copied out of a listing (app_run_collect), without their claim
 * token or output; the vector owns the copies (app_run_vec_free). */
typedef struct app_run_vec {
	dbcron_run *v;
	size_t n, cap;
	int rc; /* DBCRON_ENOMEM when a copy failed */
} app_run_vec;

/* store_run_cb: a copy of run appended to ctx (an app_run_vec); on out of
 * memory sets rc and stops the listing. */
int app_run_collect(void *ctx, const dbcron_run *run);
void app_run_vec_free(app_run_vec *rv);

/* One job as `job show` shows it: the stored job, its last runs (oldest
 * first, without output) and, on a handler job no live node can run, why
 * (app_job_unrunnable; NULL otherwise, else it points into why).  The
 * view owns all of it (app_job_view_clear). */
typedef struct app_job_view {
	dbcron_job job;
	app_run_vec runs;
	const char *unrunnable;
	char why[400];
	/* the jobs that need it (--needs), "a, b"; "" none */
	char needed_by[512];
} app_job_view;

/* Job name with its last nruns runs into v (cleared on every error).
 * DBCRON_ENOTFOUND "no job named 'x'". */
int app_job_view_get(store *s, const char *name, size_t nruns, app_job_view *v,
		     dbcron_err *err);
void app_job_view_clear(app_job_view *v);

/* app_job_view_get through the JSON codec: model_job_json_with_runs, with
 * "unrunnable" as app_jobs_page; with words also app_job_add_words's keys.
 * DBCRON_ENOTFOUND "no job named 'x'". */
int app_job_get(store *s, const char *name, size_t nruns, bool words, json_t **out,
		dbcron_err *err);

/* What a verb on one job did, for the front end to say. */
typedef struct app_job_result {
	bool changed;      /* pause/resume: false when it already was so */
	int64_t next_fire; /* resume: the new next fire (-1 none) */
	int64_t run_id;    /* trigger: the new run */
	int64_t fire_at;   /* trigger: its fire time */
	bool paused;       /* trigger: the job is paused, so the run waits for resume */
	/* pause and delete wait (at most 10 s) for every live node to see the
	 * change; when one did not confirm, why, else "" */
	char warning[512];
	/* delete --force: the jobs that needed it, now set aside; "" none */
	char detached[512];
} app_job_result;

/* One stored job into *j (dbcron_job_init'ed by the caller).
 * DBCRON_ENOTFOUND "no job named 'x'". */
int app_job_find(store *s, const char *name, dbcron_job *j, dbcron_err *err);

/* DBCRON_ENOTFOUND "no job named 'x'" for each of these. */
int app_job_pause(store *s, const char *name, app_job_result *r, dbcron_err *err);
int app_job_resume(store *s, const char *name, app_job_result *r, dbcron_err *err);
int app_job_delete(store *s, const char *name, app_job_result *r, dbcron_err *err);
/* A job others need is refused (DBCRON_ECONSTRAINT) unless force, which sets
 * them aside and names them in r->detached. */
int app_job_delete_force(store *s, const char *name, bool force, app_job_result *r,
			 dbcron_err *err);
int app_job_trigger(store *s, const char *name, app_job_result *r, dbcron_err *err);
/* A trigger with parameters kv[0..n) ("KEY=VALUE"), checked against the
 * job's --params declaration (model/params.h): a bad or undeclared key is
 * DBCRON_EINVAL and nothing is written.  The run records its parameters
 * (the declared defaults of keys not given included). */
int app_job_trigger_params(store *s, const char *name, const char *const *kv, size_t n,
			   app_job_result *r, dbcron_err *err);

/* ----------------------------------------------------------- backfill */

/* `job backfill` and POST /api/v1/jobs/{name}/backfill (app/backfill.c,
 * docs/scheduler.md "Backfill"): from and to are TIME texts (RFC 3339,
 * epoch seconds, now, now+DUR, now-DUR) read against the database clock. */
typedef struct app_backfill_req {
	const char *name, *from, *to;
	bool dry_run;
	bool force;       /* more than APP_BACKFILL_MAX instants */
	int max_running;  /* 0: no cap; else 1..APP_BACKFILL_CAP_MAX */
} app_backfill_req;
#define APP_BACKFILL_MAX 100000
#define APP_BACKFILL_CAP_MAX 100 /* the claim's bound, STORE_BACKFILL_CAP_MAX */
/* What it did: every instant of the job's schedule in [from_ms, to_ms)
 * (at, ascending, the caller frees it with app_backfill_result_clear),
 * which of them had a run (taken: a dry run only), how many runs it made. */
typedef struct app_backfill_result {
	int64_t from_ms, to_ms;
	int64_t *at;
	bool *taken;
	size_t n;
	int64_t created;
	bool paused; /* the job is paused: the runs wait for a resume */
} app_backfill_result;
/* DBCRON_EINVAL (nothing written) for --to not after --from or after now,
 * a job with no schedule instants (--at, --after, --needs), a cap out of
 * range, or more than APP_BACKFILL_MAX instants without force;
 * DBCRON_ENOTFOUND "no job named 'x'". */
int app_job_backfill(store *s, const app_backfill_req *q, app_backfill_result *r,
		     dbcron_err *err);
void app_backfill_result_clear(app_backfill_result *r);
/* {"job", "from", "to", "instants", "created", "skipped", "dry_run",
 * "paused", "fire_at": [RFC 3339 ...] (a dry run: [{"fire_at", "has_run"}])};
 * the caller's; NULL when out of memory. */
json_t *app_backfill_json(const char *name, const app_backfill_result *r, bool dry_run);

/* ----------------------------------------------------------- calendars */

/* `dbcron calendar add NAME --dates FILE` (app/calendar.c): FILE ("-":
 * stdin) has one YYYY-MM-DD a line, '#' comments and blank lines; a bad
 * line is DBCRON_EINVAL naming the file and line, and nothing is written.
 * *ndays: the distinct days added.  DBCRON_EEXISTS when the name is taken. */
int app_calendar_add(store *s, const char *name, const char *path, size_t *ndays,
		     dbcron_err *err);
/* The same from a JSON array of "YYYY-MM-DD" strings (PUT
 * /api/v1/calendars/NAME): a bad one is DBCRON_EINVAL naming its index. */
int app_calendar_add_json(store *s, const char *name, const json_t *dates, size_t *ndays,
			  dbcron_err *err);
/* The days in a calendar's days text. */
size_t app_calendar_ndays(const char *days);
/* {"name", "days", "created"}: days the count, or with_days the array of
 * "YYYY-MM-DD"; NULL when out of memory. */
json_t *app_calendar_json(const store_calendar *c, bool with_days);
/* Every calendar by name, each app_calendar_json without its days. */
int app_calendars_list(store *s, json_t **out, dbcron_err *err);

/* What a verb did, as GET-less JSON: the HTTP API's reply and what
 * `--format json` prints, one shape for both.  trigger: {"job", "run_id",
 * "fire_at_ms", "paused"[, "warning"]}; pause and resume: {"job", "paused",
 * "changed", "next_fire_at_ms"[, "warning"]}; delete: {"deleted"[,
 * "detached"][, "warning"]}.  The caller's; NULL when out of memory. */
typedef enum app_verb { APP_VERB_TRIGGER, APP_VERB_PAUSE, APP_VERB_RESUME, APP_VERB_DELETE } app_verb;
json_t *app_job_result_json(const char *name, app_verb verb, const app_job_result *r);

/* ----------------------------------------------------------- apply */

/* `job add`: one definition d, checked by the caller (model_jobdef_check
 * and the host checks), resolved against the database's clock and created
 * in one transaction; d->job is then the job as stored (its next fire).
 * DBCRON_EEXISTS when the name is taken; nothing is written on any
 * error. */
int app_job_add(store *s, struct model_jobdef *d, dbcron_err *err);

/* What a write may do to the names it is given. */
typedef enum app_apply_mode {
	APP_APPLY_UPSERT = 0, /* create or update (job apply) */
	APP_APPLY_CREATE,     /* DBCRON_EEXISTS when a name is taken (job add) */
	APP_APPLY_UPDATE,     /* DBCRON_ENOTFOUND when a name is not stored */
} app_apply_mode;

typedef struct app_apply_opts {
	app_apply_mode mode;
	bool prune;      /* delete the jobs that are not in the batch */
	bool dry_run;    /* say what would change, write nothing */
	bool user_check; /* model_jobdef_check_host on every entry */
	bool strict;     /* a handler no local process knows is an error */
	/* without strict, such an entry is reported here (may be NULL), with
	 * the ctx of app_apply, and applied */
	void (*on_warn)(void *ctx, size_t idx, const char *name, const char *msg);
	/* app_apply with no store: the store to write to, into *s */
	int (*open)(void *ctx, store **s);
	/* a document's "tags" (app_apply_doc; borrowed), written with the
	 * jobs; with prune, the caps not in it are deleted; NULL: caps are
	 * left as they are */
	json_t *tags;
} app_apply_opts;

/* One bad entry: its index in the batch (0-based), its "name" when it had
 * one (else NULL) and what is wrong, naming the key. */
typedef void (*app_entry_err_fn)(void *ctx, size_t idx, const char *name,
				 const char *msg);

typedef struct app_apply_result {
	/* updated: stored jobs whose definition changed; unchanged: stored
	 * jobs the batch gave again as they were (model_job_def_json equal) */
	size_t created, updated, unchanged, deleted;
	size_t caps_set, caps_deleted; /* caps that changed (opts tags) */
	size_t nerr; /* entries refused (then nothing was written) */
	/* dry run: {"create": [names], "update": [names that change],
	 * "delete": [...], "unchanged": [names], "fields": {name: [the
	 * definition keys that change]}, and with tags "caps":
	 * {"set": [{"name", "before", "after"}], "delete": [names],
	 * "unchanged": [names]}} */
	json_t *diff;
} app_apply_result;

/*
 * Apply a batch of job definitions, for every front end (`job apply`,
 * POST /api/v1/apply, PUT /api/v1/jobs/NAME, dbcron_apply_json): entries (a
 * `job apply` file's array, borrowed) are checked with no store (every
 * entry alone, then names unique), then resolved against the database's
 * clock and the stored jobs, then written in one transaction.  Each
 * refused entry is reported through on_err (with ctx) and counted in
 * r->nerr; the return is then DBCRON_EINVAL with err saying how many, and
 * nothing was written.  A dry run stops before writing and sets r->diff
 * (the caller's to json_decref, NULL otherwise).  After a write that
 * deleted or paused jobs it waits for the nodes as app_job_delete does
 * (warning, wlen bytes, says which did not confirm, else "").
 *
 * s NULL: o->open is called once the check has passed, so that bad input
 * is refused before a database is opened; the store it gives is the
 * caller's to close.  A non-zero return of open is returned as it is,
 * with err untouched.
 */
/*
 * A `job apply` document split: an array is the jobs (*tags NULL); an
 * object has "jobs" (an array) and may have "tags" (the caps, checked by
 * app_apply), nothing else.  Both borrowed from root.  DBCRON_EINVAL with
 * what is wrong otherwise.
 */
int app_apply_doc(json_t *root, json_t **jobs, json_t **tags, dbcron_err *err);

int app_apply(store *s, json_t *entries, const app_apply_opts *o, app_entry_err_fn on_err,
	      void *ctx, app_apply_result *r, char *warning, size_t wlen, dbcron_err *err);

/* app_apply of job structs (jobs[0..n), borrowed), the library's batch:
 * each read by model_jobdef_from_job, the same per-key rules as its JSON
 * object, with no JSON on the way.  An entry's name is the struct's. */
int app_apply_jobs(store *s, const dbcron_job *jobs, size_t n, const app_apply_opts *o,
		   app_entry_err_fn on_err, void *ctx, app_apply_result *r, char *warning,
		   size_t wlen, dbcron_err *err);

/* ------------------------------------------------- export and edit */

/*
 * Every job as a definition (model_job_def_json), sorted by name (strcmp,
 * whatever the database's collation): what `job export` writes and `job
 * apply` reads back to the same jobs.
 */
int app_jobs_export(store *s, json_t **out, dbcron_err *err);

typedef struct app_job_set_opts {
	bool user_check; /* model_jobdef_check_host, as job add */
	bool strict;     /* a handler no local process knows is an error */
} app_job_set_opts;

typedef struct app_job_set_result {
	bool changed;      /* false when the fields given were as stored */
	int64_t next_fire; /* after the change (-1 none) */
	char warning[512]; /* model_jobdef_check_handler's, or "" */
} app_job_set_result;

/*
 * Change the fields over gives (over->seen; a model_jobdef the caller
 * filled as `job add` does, with no name and no paused: job pause and
 * job resume do that) of the stored job name; the
 * others keep their stored values.  Giving one key of a group replaces the
 * group: a schedule key the schedule, --handler the command and what it
 * runs as, a command the handler and its arg; --env the whole list.  The
 * result is checked as `job add` checks and written as `job apply` writes
 * (one transaction, an unchanged schedule keeps its next fire, a changed
 * one is placed as a new one).  over is consumed (left initialised).
 * DBCRON_ENOTFOUND "no job named 'x'"; nothing is written on any error.
 */
int app_job_set(store *s, const char *name, struct model_jobdef *over, const app_job_set_opts *o,
		app_job_set_result *r, dbcron_err *err);

/* Rename a job (store_job_rename): to is checked as any job name.
 * DBCRON_ENOTFOUND for from, DBCRON_EEXISTS when to is taken. */
int app_job_rename(store *s, const char *from, const char *to, dbcron_err *err);

/* ------------------------------------------------------------ runs */

/* A deep copy of src into dst (the caller's: dbcron_run_clear), without
 * the claim token, and without the output unless with_output.
 * DBCRON_ENOMEM leaves dst cleared. */
int app_run_copy(dbcron_run *dst, const dbcron_run *src, bool with_output);

/*
 * The run log rows matching f, strictly older than the cursor when one is
 * given (the store's order: oldest first, at most f->limit of the newest).
 * A malformed cursor is DBCRON_EINVAL.  Rows go to cb as store_runs_list
 * hands them.
 */
int app_runs_fetch(store *s, const store_run_filter *f, const char *cursor,
		   store_run_cb cb, void *ctx, dbcron_err *err);

/* The cursor that resumes a listing after run r, into buf (len bytes);
 * false when it does not fit.  The text app_runs_page gives as
 * "next_cursor". */
bool app_run_cursor(const dbcron_run *r, char *buf, size_t len);

/*
 * A page of the run log, newest first: runs matching f (f->limit > 0 is
 * the page size), strictly older than the cursor when one is given.  The
 * cursor is opaque text from an earlier page's "next_cursor".  *out is
 * {"runs": [model_run_json...], "next_cursor": text or null}; null when
 * this was the last page.  A malformed cursor is DBCRON_EINVAL.
 */
int app_runs_page(store *s, const store_run_filter *f, const char *cursor,
		  json_t **out, dbcron_err *err);

/* One run as `runs show` shows it: the run with its captured output and,
 * when it has a job name (chained), every attempt of the same fire,
 * first attempt first, at most 100, the run itself among them.  The view
 * owns all of it (app_run_view_clear). */
typedef struct app_run_view {
	dbcron_run run;
	app_run_vec attempts;
	bool chained;
} app_run_view;

/* DBCRON_ENOTFOUND when absent; v is cleared on every error. */
int app_run_view_get(store *s, int64_t id, app_run_view *v, dbcron_err *err);
void app_run_view_clear(app_run_view *v);

/* The JSON codec of a run view: model_run_json of the run, with
 * "attempts" (model_run_json each) when chained.  A new reference, or
 * NULL when out of memory. */
json_t *app_run_view_json(const app_run_view *v);
/* app_run_view_get, then app_run_view_json into *out. */
int app_run_get(store *s, int64_t id, json_t **out, dbcron_err *err);
/*
 * Cancel a run (dbcron runs cancel, POST /api/v1/runs/{id}/cancel): *out
 * is the run as the cancel left it (app_run_view_json) with "cancel":
 * "done" (it had not been claimed: ended CANCELLED now) or "requested"
 * (its node stops it within about a heartbeat).  DBCRON_ENOTFOUND for an
 * unknown id, DBCRON_EEXISTS for a run that already ended: nothing is
 * written for either (store_run_cancel).
 */
int app_run_cancel(store *s, int64_t id, json_t **out, bool *done, dbcron_err *err);

/*
 * The audit trail (issue 29 item 2; store.h "The audit trail"): `dbcron
 * audit`, GET /api/v1/audit and the dashboard read it through here.
 * app_audit_since: --since as TIME (RFC 3339, epoch seconds, now, now+DUR)
 * or DUR back from now (the database's clock), into *ms.
 * app_audit_row_json: {"id", "at_ms", "at" (RFC 3339), "actor", "action",
 * "job" (null for none), "detail" (the stored object)}; a new reference,
 * NULL when out of memory.
 * app_audit_each: the rows of f, oldest first, to cb (the row is the
 * store's, valid during the call).
 * app_audit_list: {"audit": [app_audit_row_json...]}, oldest first.
 */
int app_audit_since(const char *text, int64_t now_ms, int64_t *ms, dbcron_err *err);
json_t *app_audit_row_json(const store_audit_row *r);
int app_audit_each(store *s, const store_audit_filter *f, store_audit_cb cb, void *ctx,
		   dbcron_err *err);
int app_audit_list(store *s, const store_audit_filter *f, json_t **out, dbcron_err *err);

/*
 * Following the run log (`runs --follow`): each poll hands out the runs
 * that ended since the last one, in the order they ended (finished_ms,
 * then id), each once.  A poll re-reads only the runs it watches (seen
 * while not yet ended, each by its primary key) and reads the rows
 * created since by id, so its cost does not grow with the log.  Start
 * (reads every run not yet ended, once), then app_follow_seen each run the
 * front end already showed, then poll.  A run that ended before the start
 * is never handed out.
 */
typedef struct app_follow {
	const char *job; /* borrowed from the filter; NULL: every job */
	int state;       /* 0 or an end state: only runs that end so */
	int64_t since_ms; /* -1, or only runs fired at or after */
	int64_t start_ms; /* database now at the start */
	int64_t last_id;  /* the newest run id read */
	int64_t *pending; /* runs read before they ended */
	size_t npending, cap;
} app_follow;

/* DBCRON_EINVAL when f->state is not an end state (such a run never ends
 * in it).  fw is the caller's (app_follow_clear). */
int app_follow_start(store *s, app_follow *fw, const store_run_filter *f, dbcron_err *err);
/* r was shown: it is not handed out again, unless it had not ended. */
int app_follow_seen(app_follow *fw, const dbcron_run *r);
int app_follow_poll(store *s, app_follow *fw, store_run_cb cb, void *ctx, dbcron_err *err);
void app_follow_clear(app_follow *fw);

/*
 * The dashboard's charts, from one read of the run log (stats.c): over the
 * last minutes (1 to APP_STATS_MINUTES_MAX, whole minutes, the current one
 * last) of job (NULL or "": every job), *out is {"job", "minutes",
 * "from_ms", "now_ms", "per_minute": [{"at_ms", a count by state name
 * ("succeeded": 3, only the states seen), "lateness_p50_ms",
 * "lateness_p99_ms" (started - fire_at of the minute's started runs,
 * nearest rank; absent when none started)}], "timeline": [{"run_id",
 * "job", "node", "state", "started_ms", "finished_ms" (null while
 * running)}]}.  A minute is the minute of a run's fire_at.
 */
#define APP_STATS_MINUTES_MAX 1440
int app_stats(store *s, const char *job, long minutes, json_t **out, dbcron_err *err);
/* ---------------------------------------------------------- events */

/*
 * The outbox (docs/reactions.md), for `dbcron events` and GET
 * /api/v1/events: the newest limit (1 to APP_EVENTS_MAX; <= 0: 100)
 * events of job (NULL: any) in state (NULL: any; "pending", "delivering",
 * "delivered" or "failed", else DBCRON_EINVAL), newest first, as an array
 * of {"id", "job", "run_id", "kind", "target", "state", "attempts",
 * "next_attempt_at", "last_error", "node", "created_at", "finished_at"}
 * (times RFC 3339, null when unset).
 */
#define APP_EVENTS_MAX 10000
int app_events_list(store *s, const char *job, const char *state, long limit, json_t **out,
		    dbcron_err *err);

/* ------------------------------------------------------------ cron */

/* One fire: UTC epoch seconds and the zone's offset then (seconds east).
 * Non-zero stops the walk. */
typedef int (*app_fire_fn)(void *ctx, int64_t t, int32_t offset);

/* The next count fires of expr in zone (NULL: UTC) strictly after after_s,
 * fewer when it stops firing; H takes its values from seed (-1: none, and
 * an H is refused, "H needs a job").  DBCRON_EPARSE (the field at fault)
 * or DBCRON_ETZ. */
int app_cron_next(const char *expr, const char *zone, int64_t seed, int64_t after_s, long count,
		  app_fire_fn cb, void *ctx, dbcron_err *err);
/* The next count fires of stored job j strictly after after_ms as its
 * planner sees them: its window, what is left of --max-runs and its
 * exclusion calendar applied (cron next --job NAME). */
int app_job_next(const dbcron_job *j, int64_t after_ms, long count, app_fire_fn cb, void *ctx,
		 dbcron_err *err);
/* Valid: *dialect "quartz" or "unix" and the expression in words (H as
 * seed gives it, as for app_cron_next). */
int app_cron_check(const char *expr, int64_t seed, const char **dialect, char *desc, size_t len,
		   dbcron_err *err);

/* ------------------------------------------------- nodes and locks */

/* The database's clock, epoch milliseconds: "now" for every verb. */
int app_now_ms(store *s, int64_t *now, dbcron_err *err);
/* The SQLite file behind s, or NULL for a server's database. */
const char *app_db_file(const store *s);
/* Bring the schema to the newest version (`dbcron init`): *from and *to
 * are the versions before and after. */
int app_migrate(store *s, int *from, int *to, dbcron_err *err);
/* url with its password hidden into buf (len bytes), for showing it:
 * store_mask_url, the one masker.  Returns the length it needed. */
size_t app_mask_url(const char *url, char *buf, size_t len);

/* Every node row / lock row to cb, in the store's order. */
int app_nodes_each(store *s, store_node_cb cb, void *ctx, dbcron_err *err);
int app_locks_each(store *s, store_lock_cb cb, void *ctx, dbcron_err *err);
/* Delete the node rows the store may forget (never an alive node, never
 * one whose runs are still to resolve) whose last heartbeat is older than
 * older_ms; *deleted counts them. */
int app_nodes_prune(store *s, int64_t older_ms, int64_t *deleted, dbcron_err *err);
/* One row of the run log written as it is (`dbcron lock`'s attempts). */
int app_log_run(store *s, const dbcron_run *run, dbcron_err *err);

/* A node row as the JSON `dbcron nodes --format json` prints; ages
 * against now_ms (the database's clock). */
json_t *app_node_json(const store_node_row *nr, int64_t now_ms);
/* A lock row as `dbcron locks --format json` prints. */
json_t *app_lock_json(const store_lock_row *l, int64_t now_ms);

/* ------------------------------------------------------------ tags */

/*
 * Concurrency caps (issue 28 item 3, docs/scheduler.md "Concurrency
 * caps"), for `dbcron tag` and /api/v1/tags.  app_tag_set: tag name's cap
 * is max_running live runs in the cluster; DBCRON_EINVAL for a bad name or
 * cap, or for a tag no job carries ("unknown tag": a cap on a typo would
 * cap nothing).  app_tag_delete: DBCRON_ENOTFOUND when the tag has no cap.
 * app_tags_list: every capped tag as {"name", "max_running", "running",
 * "jobs"}, by name; app_tag_json one of them.
 */
int app_tag_set(store *s, const char *name, int max_running, dbcron_err *err);
int app_tag_delete(store *s, const char *name, dbcron_err *err);
int app_tags_list(store *s, json_t **out, dbcron_err *err);

/* Every node / every lock as an array of the above. */
int app_nodes_list(store *s, json_t **out, dbcron_err *err);
int app_locks_list(store *s, json_t **out, dbcron_err *err);

#endif
