/*
 * The job-field table: every member of dbcron_job that a store keeps, one
 * row each, declared once.  From it come (by macro expansion, nothing
 * restated by hand): the defaults, frees and copies of core/job.c; the
 * key table of `job add` flags, `job apply` keys and HTTP JSON, the JSON
 * codec, the help lines and the one "is the definition unchanged" rule
 * (src/model/fields.c); and the store's column lists, row reader, row
 * writer and batch column types (src/store/rows.c, jobput.c, the
 * dialects' sql.h).  A new field is one row here, its member in job.h and
 * one migration per dialect.  Ours is the C-preprocessor cousin of
 * PostgreSQL's catalog .dat files.
 *
 * X(member, column, store, key, codec, args, scope, role, dflt, help)
 *
 * member  the dbcron_job member.
 * column  its SQL column (an identifier: the dialects stringify it).
 * store   how the column holds it: TEXT (char *), INT (int or an enum),
 *         I64, I64N (int64_t, NULL for -1), INTN (int, NULL for -1), BOOL,
 *         and three hooks: ARGV and ENV (argv/argc, env/envc as a JSON
 *         array of strings, rows.c), HANDLER (text written only for a
 *         handler job).
 * key     K(ID, "flag-and-json-key", "snake_variant" or NULL, type) with
 *         type a model_jobdef_type (STR INT BOOL DUR ARGV LIST TIME); K0
 *         for a member no user sets directly; KSCHED for the schedule,
 *         whose five keys (cron, every, after, at, needs) are the hook
 *         DBCRON_JOB_SCHED_KEYS below.
 * codec   how a key's value is checked, set and written to JSON
 *         (jobdef.c, json.c): NONE NAME SCHED TZ ENUM INT DUR BOOL HANDLER
 *         TEXT ACCOUNT PATH ARGV ENV UMASK SEED (an int64 >= 0, -1 unset)
 *         HTTP ("METHOD URL": makes the job an HTTP job), HEADER (a
 *         LIST key kept one a line, each "Name: value"), EXPECT (a status
 *         list), TIME (an instant: RFC 3339,
 *         epoch seconds, now or now+DUR, relative ones resolved against the
 *         database clock), TARGET (a reaction list: a LIST key kept in a
 *         TEXT column, one target a line, model/target.h), PARAMS (a
 *         declaration of run parameters, model/params.h), SQL (the
 *         statement of a SQL job: setting it makes the job one), TAGS (a
 *         LIST key kept in a TEXT column, one tag a line, model/tags.h).
 *         SCHED marks
 *         the rows of the schedule hook (kind, text, interval): one
 *         schedule, compared and reported once.
 * args    the codec's constants, designated initialisers of
 *         model_field_args in parentheses: (.lo = 0, .hi = 1000).
 * scope   ANY, or what the key needs: HANDLER (a handler job), HTTP (an
 *         HTTP job), COMMAND (the command itself), RUNAS (how a command
 *         runs; refused with a handler, dropped with the command by
 *         `job set --handler`), SQL (a SQL job's: refused with a command
 *         or a handler).
 * role    NAME (the identity), DEF (part of the definition: a change is a
 *         change), STATE (paused: given or kept, rules in app/apply.c),
 *         PLACE (the schedule's place in its series: kept by the schedule
 *         rules, written by the store), STORE (written by the store only:
 *         read back, never put).
 * dflt    the value dbcron_job_init gives (strings: NULL).
 * help    H("METAVAR", "text") for `job add --help` (a line longer than
 *         one goes on with "\n"), or H0.
 *
 * Rows are in the order of the key table and of a job's JSON object.
 */
#ifndef DBCRON_CORE_JOB_FIELDS_H
#define DBCRON_CORE_JOB_FIELDS_H

/* The methods of an HTTP job, for the help line here and exec/http.h's
 * messages (core does not reach exec); exec/http.c's methods[] is the
 * same list. */
#define EXEC_HTTP_METHODS_TEXT "GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS"

#define DBCRON_JOB_FIELDS(X)                                                                      \
	X(name, name, TEXT, K(NAME, "name", NULL, STR), NAME, (), ANY, NAME, NULL, H0)           \
	X(kind, kind, INT, KSCHED, SCHED, (), ANY, DEF, 0, H0)                                    \
	X(spec, spec, TEXT, K0, SCHED, (), ANY, DEF, NULL, H0)                                     \
	X(interval_ms, interval_ms, I64, K0, SCHED, (), ANY, DEF, 0, H0)                           \
	X(anchor_ms, anchor_ms, I64, K0, NONE, (), ANY, PLACE, 0, H0)                             \
	X(at_ms, at_ms, I64, K0, NONE, (), ANY, PLACE, -1, H0)                                    \
	X(tz, tz, TEXT, K(TZ, "tz", NULL, STR), TZ, (), ANY, DEF, NULL,                           \
	  H("ZONE", "IANA time zone for cron (default UTC)"))                                     \
	X(misfire, misfire, INT, K(MISFIRE, "misfire", NULL, STR), ENUM,                          \
	  (.parse = dbcron_misfire_parse, .name = misfire_name,                                   \
	   .what = "fire_once, skip or catch_up"),                                                \
	  ANY, DEF, DBCRON_MISFIRE_FIRE_ONCE,                                                     \
	  H("POLICY", "fire_once (default) | skip | catch_up"))                                   \
	X(max_catchup, max_catchup, INT, K(MAX_CATCHUP, "max-catchup", "max_catchup", INT), INT,  \
	  (.lo = 1, .hi = 100000), ANY, DEF, 100,                                                 \
	  H("N", "catch_up: at most N missed fires (default 100)"))                               \
	X(misfire_threshold_ms, misfire_threshold_ms, I64,                                        \
	  K(MISFIRE_THRESHOLD, "misfire-threshold", "misfire_threshold", DUR), DUR, (.zero = 1),    \
	  ANY, DEF, 5000, H("DUR", "a fire later than this is a misfire (default 5s)"))           \
	X(overlap, overlap, INT, K(OVERLAP, "overlap", NULL, STR), ENUM,                          \
	  (.parse = dbcron_overlap_parse, .name = overlap_name,                                   \
	   .what = "skip, allow, queue or replace"),                                              \
	  ANY, DEF, DBCRON_OVERLAP_SKIP, H("POLICY", "skip (default) | allow | queue | replace"))  \
	X(node_loss, node_loss, INT, K(NODE_LOSS, "node-loss", "node_loss", STR), ENUM,           \
	  (.parse = dbcron_node_loss_parse, .name = node_loss_name, .what = "retry or abandon"),  \
	  ANY, DEF, DBCRON_NODE_LOSS_RETRY, H("POLICY", "retry (default) | abandon"))             \
	X(on_every_node, on_every_node, BOOL, K(ON_EVERY_NODE, "on-every-node", "on_every_node",  \
	  BOOL), BOOL, (.omit = 1), ANY, DEF, 0,                                                  \
	  H("", "run each fire once on every live node (DBCRON_NODE_INDEX,\n"                   \
		"DBCRON_NODE_TOTAL; docs/scheduler.md \"Every node\")"))                        \
	X(max_retries, max_retries, INT, K(RETRIES, "retries", NULL, INT), INT,                   \
	  (.lo = 0, .hi = 1000), ANY, DEF, 3, H("N", "retries after a failure (default 3)"))      \
	X(retry_base_ms, retry_base_ms, I64, K(RETRY_BASE, "retry-base", "retry_base", DUR), DUR, \
	  (), ANY, DEF, 60000, H("DUR", "first backoff (default 1m)"))                     \
	X(retry_cap_ms, retry_cap_ms, I64, K(RETRY_CAP, "retry-cap", "retry_cap", DUR), DUR,      \
	  (), ANY, DEF, 3600000, H("DUR", "longest backoff (default 1h)"))                 \
	X(retry_jitter, retry_jitter, BOOL, K(RETRY_JITTER, "retry-jitter", "retry_jitter", BOOL), \
	  BOOL, (), ANY, DEF, 0, H("", "randomise backoffs (old name: --jitter)"))                \
	X(start_jitter_ms, start_jitter_ms, I64, K(START_JITTER, "start-jitter", "start_jitter",   \
	  DUR), DUR, (.zero = 1, .omit = 1), ANY, DEF, 0,                                          \
	  H("DUR", "start each run after a random delay in [0, DUR)"))                            \
	X(spread_ms, spread_ms, I64, K(SPREAD, "spread", NULL, DUR), DUR, (.zero = 1, .omit = 1), \
	  ANY, DEF, 0, H("DUR", "--every: a stable offset within DUR, level over jobs"))           \
	X(spread_seed, spread_seed, I64N, K(SPREAD_SEED, "spread-seed", "spread_seed", INT), SEED, \
	  (), ANY, DEF, -1, H("N", "H's and --spread's seed (default: chosen, then kept)"))        \
	X(timeout_ms, timeout_ms, I64, K(TIMEOUT, "timeout", NULL, DUR), DUR, (.zero = 1), ANY, DEF, \
	  0, H("DUR", "stop a run after DUR (default none)"))                                      \
	X(start_at, start_at, I64N, K(START_AT, "start-at", "start_at", TIME), TIME, (), ANY, DEF,  \
	  -1, H("TIME", "no fire before TIME (RFC 3339, epoch seconds, now+DUR)"))                \
	X(end_at, end_at, I64N, K(END_AT, "end-at", "end_at", TIME), TIME, (), ANY, DEF, -1,      \
	  H("TIME", "no fire after TIME (not before --start-at)"))                                \
	X(max_runs, max_runs, INT, K(MAX_RUNS, "max-runs", "max_runs", INT), INT,                \
	  (.lo = 0, .hi = 1000000000, .omit = 1), ANY, DEF, 0,                                     \
	  H("N", "stop firing after N fires of the schedule (default no limit)"))                 \
	X(exclude_calendar, exclude_calendar, TEXT,                                                \
	  K(EXCLUDE_CALENDAR, "exclude-calendar", "exclude_calendar", STR), TEXT, (), ANY, DEF,    \
	  NULL, H("NAME", "no fire on the days of calendar NAME, in the job's zone\n"             \
			  "(dbcron calendar add NAME --dates FILE)"))                               \
	X(exclude_days, exclude_days, TEXT, K0, NONE, (), ANY, PLACE, NULL, H0)                   \
	X(params, params, TEXT, K(PARAMS, "params", NULL, STR), PARAMS, (), ANY, DEF, NULL,       \
	  H("KEY[=DEFAULT],...", "the parameters job trigger may give, with defaults;\n"         \
		"without it any key is taken (never secrets: shown in the run log)"))             \
	X(paused, paused, BOOL, K(PAUSED, "paused", NULL, BOOL), BOOL, (), ANY, STATE, 0,         \
	  H("", "add the job paused"))                                                             \
	X(executor, executor, INT, K0, NONE, (), ANY, DEF, DBCRON_EXEC_SHELL, H0)                 \
	X(handler, handler, HANDLER, K(HANDLER, "handler", NULL, STR), HANDLER, (), HANDLER, DEF, \
	  NULL, H0)                                                                                \
	X(arg, arg, TEXT, K(ARG, "arg", NULL, STR), TEXT, (), HANDLER, DEF, NULL, H0)             \
	X(sql, sql_text, TEXT, K(SQL, "sql", NULL, STR), SQL, (), SQL, DEF, NULL,                 \
	  H("STATEMENT", "run one SQL statement instead of a command; ${param.KEY}\n"           \
			 "is a parameter of the run, bound (docs/exec.md)"))                   \
	X(sql_db_file, sql_db_file, TEXT, K(SQL_DB_FILE, "sql-db-file", "sql_db_file", STR),    \
	  PATH, (.what = "sql-db-file"), SQL, DEF, NULL,                                          \
	  H("PATH", "the database URL the statement runs on, in PATH on the\n"                  \
		    "node's host (default: the scheduler's database)"))                          \
	X(argv, argv, ARGV, K(COMMAND, "command", NULL, ARGV), ARGV, (), COMMAND, DEF, NULL, H0)  \
	X(http, http, TEXT, K(HTTP, "http", NULL, STR), HTTP, (), HTTP, DEF, NULL,                \
	  H("METHOD URL", "call URL (" EXEC_HTTP_METHODS_TEXT ");\n"                      \
		"${param.KEY} and ${NAME} (from --env-file) are replaced at each run"))         \
	X(http_headers, http_headers, TEXT, K(HEADER, "header", NULL, LIST), HEADER, (), HTTP,    \
	  DEF, NULL, H("'NAME: VALUE'", "a request header (repeatable)"))                        \
	X(http_body, http_body, TEXT, K(BODY, "body", NULL, STR), TEXT, (), HTTP, DEF, NULL,      \
	  H("TEXT", "the request body (--body-file PATH: read from PATH now)"))                  \
	X(http_expect, http_expect, TEXT, K(EXPECT, "expect", NULL, STR), EXPECT, (), HTTP, DEF,  \
	  NULL, H("2xx|CODES", "the statuses that succeed, e.g. 2xx,304 (default 2xx)"))         \
	X(http_ca_file, http_ca_file, TEXT, K(CA_FILE, "ca-file", "ca_file", STR), PATH,          \
	  (.what = "CA file"), HTTP, DEF, NULL,                                                    \
	  H("PATH", "trust the CAs in PATH (PEM) instead of the system's;\n"                     \
		    "TLS is always verified"))                                                    \
	X(user, run_user, TEXT, K(USER, "user", NULL, STR), ACCOUNT, (.what = "user"), RUNAS,     \
	  DEF, NULL,                                                                               \
	  H("NAME", "this user (the node switches: needs root); default the\nnode's user"))       \
	X(group, run_group, TEXT, K(GROUP, "group", NULL, STR), ACCOUNT, (.what = "group"),       \
	  RUNAS, DEF, NULL, H("NAME", "this primary group instead of the user's"))                 \
	X(cwd, cwd, TEXT, K(CWD, "cwd", NULL, STR), PATH, (.what = "working directory"), RUNAS,   \
	  DEF, NULL, H("DIR", "start in DIR (absolute); default the user's home"))                 \
	X(env, env, ENV, K(ENV, "env", NULL, LIST), ENV, (), RUNAS, DEF, NULL,                    \
	  H("KEY=VALUE", "a variable of its own (repeatable); stored in the database"))            \
	X(env_file, env_file, TEXT, K(ENV_FILE, "env-file", "env_file", STR), PATH,               \
	  (.what = "env-file"), RUNAS, DEF, NULL,                                                  \
	  H("PATH", "KEY=VALUE lines from PATH on the node's host, read at each\n"                 \
		    "run (for secrets that should not be in the database)"))                      \
	X(umask, umask, INTN, K(UMASK, "umask", NULL, STR), UMASK, (), RUNAS, DEF, -1,            \
	  H("MODE", "octal, e.g. 027; default the node's"))                                       \
	X(inherit_env, inherit_env, BOOL, K(INHERIT_ENV, "inherit-env", "inherit_env", BOOL),     \
	  BOOL, (), RUNAS, DEF, 0,                                                                 \
	  H("", "start from the node's environment (never its DBCRON_*\n"                         \
		"settings or PostgreSQL passwords); default a clean one:\n"                       \
		"HOME, USER, LOGNAME, SHELL=/bin/sh, PATH, DBCRON_*"))                            \
	X(on_failure, on_failure, TEXT, K(ON_FAILURE, "on-failure", "on_failure", LIST), TARGET, \
	  (), ANY, DEF, NULL,                                                                      \
	  H("TARGET", "when a fire ends failed, timed out or abandoned (after\n"                 \
		      "its retries): job:NAME, http(s)://URL or exec:PATH [ARGS]\n"              \
		      "(repeatable; docs/reactions.md)"))                                         \
	X(on_success, on_success, TEXT, K(ON_SUCCESS, "on-success", "on_success", LIST), TARGET, \
	  (), ANY, DEF, NULL, H("TARGET", "when a fire succeeds (repeatable)"))                  \
	X(on_misfire, on_misfire, TEXT, K(ON_MISFIRE, "on-misfire", "on_misfire", LIST), TARGET, \
	  (), ANY, DEF, NULL, H("TARGET", "when a fire is missed (repeatable)"))                 \
	X(max_silence_ms, max_silence_ms, I64, K(MAX_SILENCE, "max-silence", "max_silence", DUR),  \
	  DUR, (.zero = 1, .omit = 1), ANY, DEF, 0,                                                \
	  H("DUR", "overdue when no run succeeded for DUR (default never)"))                      \
	X(on_overdue, on_overdue, TEXT, K(ON_OVERDUE, "on-overdue", "on_overdue", LIST), TARGET, \
	  (), ANY, DEF, NULL, H("TARGET", "once per --max-silence period (repeatable)"))         \
	X(tags, tags, TEXT, K(TAG, "tag", NULL, LIST), TAGS, (), ANY, DEF, NULL,                 \
	  H("TAG", "count its runs against TAG's cap (repeatable; dbcron tag set)"))             \
	X(priority, priority, INT, K(PRIORITY, "priority", NULL, INT), INT,                       \
	  (.lo = -1000, .hi = 1000, .omit = 1), ANY, DEF, 0,                                      \
	  H("N", "among fires due at once or waiting for a cap, higher first\n(default 0)"))      \
	X(next_fire_at, next_fire_at, I64N, K0, NONE, (), ANY, PLACE, -1, H0)                     \
	X(runs_fired, runs_fired, I64, K0, NONE, (), ANY, STORE, 0, H0)                           \
	X(created_ms, created_ms, I64, K0, NONE, (), ANY, STORE, -1, H0)                          \
	X(updated_ms, updated_ms, I64, K0, NONE, (), ANY, STORE, -1, H0)                          \
	X(set_aside, set_aside, TEXT, K0, NONE, (), ANY, STORE, NULL, H0)

/* The schedule hook (KSCHED): one key per schedule kind, in kind order.
 * S(ID, "key", type, kind) */
#define DBCRON_JOB_SCHED_KEYS(S)                       \
	S(CRON, "cron", STR, DBCRON_SCHED_CRON)        \
	S(EVERY, "every", DUR, DBCRON_SCHED_EVERY)     \
	S(AFTER, "after", DUR, DBCRON_SCHED_AFTER)     \
	S(AT, "at", STR, DBCRON_SCHED_AT)              \
	S(NEEDS, "needs", LIST, DBCRON_SCHED_NEEDS)

/* Helpers for expanding a row: FIELD_##store, and the key's parts. */
#define DBCRON_FK_ID_K(id, flag, snake, type) MODEL_JK_##id
#define DBCRON_FK_ID_K0 MODEL_JK__NONE
#define DBCRON_FK_ID_KSCHED MODEL_JK__NONE

#endif
