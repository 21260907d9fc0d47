/*
 * Executors and worker pools.  The scheduler hands a started fire to a pool;
 * a worker runs it to the end (shell child, handler callback) and reports an
 * exec_result.  Nothing here touches the database (invariant 6: the claim
 * loop never waits on a job).
 */
#ifndef DBCRON_EXEC_H
#define DBCRON_EXEC_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dbcron/error.h"
#include "dbcron/job.h"

/* ---- pools: bounded queue, fixed threads, items opaque to the pool ---- */
typedef struct pool pool;
typedef void (*pool_fn)(void *item);

/* threads >= 1, queue_cap >= 1.  name is for logs and thread names. */
int pool_create(const char *name, int threads, size_t queue_cap, pool **out,
		dbcron_err *err);
/* Queue fn(item).  DBCRON_EBUSY when the queue is full (item untouched, the
 * caller keeps it).  Never blocks. */
int pool_submit(pool *p, pool_fn fn, void *item);
/* The first of items[0..k) that fit, queued under one lock; how many. */
size_t pool_submit_many(pool *p, pool_fn fn, void *const *items, size_t k);
/* Items queued plus items running. */
size_t pool_load(pool *p);
size_t pool_capacity(pool *p); /* threads + queue_cap */
int pool_threads(pool *p);
/* Stop taking work; queued items not yet started are handed to
 * drop(item) (may be NULL) from the calling thread; running items finish;
 * then threads are joined and p freed. */
void pool_destroy(pool *p, pool_fn drop);

/* ---- one execution ---- */
typedef struct exec_cancel {
	atomic_int requested; /* set to 1 to stop the run (overlap replace,
			       * shutdown); executors check it at least every
			       * 50 ms */
	/* Monotonic ms; when non-zero, a stopped process group gets its
	 * SIGKILL by then, however much of kill_grace_ms is left: a node
	 * whose lease is running out stops its jobs before another node may
	 * retry them.  May be set before or after `requested`. */
	atomic_llong kill_by_ms;
} exec_cancel;

typedef struct exec_req {
	const dbcron_job *job; /* argv / handler / arg / timeout_ms */
	int64_t run_id;
	int64_t fire_at_ms;
	int attempt;
	const char *node_id;
	/* An every-node run's index among the fire's nodes and their number
	 * (docs/scheduler.md "Every node"); node_total 0: an ordinary run. */
	int node_index, node_total;
	exec_cancel *cancel; /* may be NULL */
	int64_t kill_grace_ms; /* SIGTERM -> SIGKILL; 0 = default 2000 */
	/* The run's parameters, "KEY=VALUE" each (keys checked by
	 * model/params.h), nparams of them; NULL when none.  Borrowed. */
	const char *const *params;
	size_t nparams;
	size_t capture_bytes;  /* head and tail kept each; 0 = default 1024 */
	/* The scheduler's database URL, where a SQL job without a database
	 * file of its own runs (a connection of the run's own, never the
	 * node's); NULL when the caller has none.  Borrowed. */
	const char *db_url;
} exec_req;

typedef struct exec_result {
	dbcron_run_state state; /* SUCCEEDED, FAILED, TIMED_OUT */
	bool has_exit_code;
	int exit_code;     /* exit status, or 128 + signal */
	char *error;       /* owned; NULL when none */
	char *output;      /* owned; stdout+stderr interleaved, head/tail kept,
			    * NUL and invalid UTF-8 bytes as '?'; NULL when
			    * the child printed nothing */
	int64_t mono_start_ms, mono_end_ms;
} exec_result;

/* Frees what r owns and zeroes it. */
void exec_result_clear(exec_result *r);
/* Internal to the executors: replace res->error with the formatted text.
 * On OOM the error stays NULL; the state the caller sets is what counts. */
void exec__set_error(exec_result *res, const char *fmt, ...)
	DBCRON_PRINTF(2, 3);

/*
 * Run a shell job: argv as given (no shell), as the job's user in its
 * directory with its umask, in a clean environment (runas.h: HOME, USER,
 * LOGNAME, SHELL, PATH, its env-file and env, the node's environment
 * without its secrets only for inherit_env) plus DBCRON_JOB,
 * DBCRON_FIRE_AT_MS, DBCRON_ATTEMPT, DBCRON_RUN_ID, DBCRON_NODE,
 * DBCRON_NODE_INDEX and DBCRON_NODE_TOTAL (an every-node run only) and
 * DBCRON_PARAM_KEY for each of req->params (after the job's own env, so
 * a parameter wins over a variable of the same name); fds 0-2
 * only; a new process group; output captured with the first and last
 * capture_bytes kept and a "[... N bytes omitted ...]" marker between;
 * timeout and cancel stop the whole group (SIGTERM, grace, SIGKILL).  A
 * command that cannot be started is FAILED with a clear error and no exit
 * code ("cannot execute 'x': No such file or directory", "user 'x' not
 * found on node n1", "cannot run 'x' in '/d': No such file or
 * directory").  Always fills res and always reaps the child.  Timed out:
 * TIMED_OUT "timed out after 2s; process
 * group terminated"; cancelled: FAILED "cancelled"; both keep the exit
 * code observed (usually 128 + signal).  Needs SIGCHLD not ignored and
 * no waitpid(-1) elsewhere in the process (the exit status would be lost;
 * the run is then FAILED with an error saying so).
 */
void exec_shell(const exec_req *req, exec_result *res);

/* Run a registered handler (see dbcron/handler.h).  Unknown handler name
 * is FAILED with an error.  Timeout is enforced cooperatively through the
 * handler context: a handler that returns at or past its deadline is
 * TIMED_OUT whatever it returned; non-zero after a cancel is FAILED
 * "cancelled"; other non-zero is FAILED with that exit code and the
 * handler's errbuf text. */
void exec_handler(const exec_req *req, exec_result *res);

/*
 * Run a SQL job (sql.c): job->sql on a connection opened for the run, to
 * the database job->sql_db_file names (a file holding a URL, read at each
 * run) or else req->db_url; ${param.KEY} placeholders bound as parameters
 * from req->params.  The output is "N rows affected" or a tab-separated
 * header and the first 20 rows with "(N rows)".  Timed out: TIMED_OUT,
 * the statement cancelled on the server; cancelled: FAILED "cancelled"
 * (the scheduler records CANCELLED); a failing statement or connection:
 * FAILED with the server's message.  No exit code.
 */
void exec_sql(const exec_req *req, exec_result *res);

/* A SQL job's database file as the front ends check it when the job is
 * written: readable here, one line, a URL of a supported kind, and its
 * database answers a "SELECT 1" within 5 s.  DBCRON_EINVAL (bad input,
 * also an unreadable file or a database that does not answer) with a
 * message naming path, never the file's content. */
int exec_sql_check_db_file(const char *path, dbcron_err *err);

/* Every handler name this process can run, built-ins first: a new array
 * of n copies, freed with exec_handler_names_free, and *gen (may be NULL)
 * the registry's generation they are.  DBCRON_ENOMEM. */
int exec_handler_names(char ***names, size_t *n, uint64_t *gen);
/* The registry's generation: grows with every registration, so a node
 * compares it with the one its recorded names are of (lock-free). */
uint64_t exec_handler_gen(void);
void exec_handler_names_free(char **names, size_t n);

/* ---- the executor table ---- */

/* What an executor can do; the scheduler and validation may ask. */
enum {
	EXEC_CAP_OUTPUT = 1u << 0,  /* fills exec_result.output */
	EXEC_CAP_CANCEL = 1u << 1,  /* honours req->cancel (within 50 ms) */
	EXEC_CAP_TIMEOUT = 1u << 2, /* honours job->timeout_ms: TIMED_OUT */
	/* Stops a run that does not cooperate (the shell kills the process
	 * group).  Without it cancel and timeout need the run's help: a
	 * handler that never looks is only judged when it returns. */
	EXEC_CAP_PREEMPT = 1u << 3,
	/* Runs a process of its own, so the job's user, group, directory,
	 * umask and environment (runas.h) apply.  Without it a job that sets
	 * any of them is refused. */
	EXEC_CAP_PROCESS = 1u << 4,
	/* Reads the job's env-file without running a process (the HTTP
	 * executor's ${NAME} placeholders): env-file is the one process
	 * option such an executor takes. */
	EXEC_CAP_ENV_FILE = 1u << 5,
};

/* Bumped when exec_ops changes shape; exec_register() refuses others. */
#define EXEC_OPS_VERSION 2

/* The end of a run started through a start hook: res is filled.  Called
 * exactly once per start, on the executor's thread, without any dbcron
 * lock held. */
typedef void (*exec_done_fn)(void *ctx);

typedef struct exec_ops {
	int version;            /* EXEC_OPS_VERSION */
	dbcron_executor kind;   /* the value stored in jobs.executor */
	const char *name;       /* "shell", "handler": lower case, unique */
	unsigned caps;          /* EXEC_CAP_* */
	/* Is the job runnable by this executor?  Only the executor's own
	 * fields (argv, handler, arg...); DBCRON_EINVAL with a message that
	 * names the job.  No I/O, no database: called on every job write. */
	int (*validate)(const dbcron_job *job, dbcron_err *err);
	/* Run it: the contract of exec_run() below. */
	void (*run)(const exec_req *req, exec_result *res);
	/* Optional (version 2): start the run and return at once, so that a
	 * run that only waits (a network transfer) holds no worker; the
	 * executor drives it on a thread of its own and calls done(ctx)
	 * when res is filled (from start itself when the run cannot start).
	 * req is borrowed for the call only: the executor copies what the
	 * run needs; req->cancel and res stay valid until done.  NULL: the
	 * scheduler's worker calls run. */
	void (*start)(const exec_req *req, exec_result *res, exec_done_fn done, void *ctx);
} exec_ops;

/* The built-ins, registered from the start. */
extern const exec_ops exec_shell_ops;
extern const exec_ops exec_handler_ops;
extern const exec_ops exec_http_ops;
extern const exec_ops exec_sql_ops;

/* The executor for a kind or a name, NULL when none is registered.
 * Lock-free and safe from any thread; the result stays valid for ever. */
const exec_ops *exec_lookup(dbcron_executor kind);
const exec_ops *exec_lookup_name(const char *name);

/* Add an executor (ops must live for the rest of the process: entries are
 * never removed).  DBCRON_EINVAL for a wrong version, no name or no run
 * hook; DBCRON_EEXISTS when its kind or name is taken; DBCRON_EBUSY when
 * the table is full.  Meant for start-up, but safe at any time. */
int exec_register(const exec_ops *ops, dbcron_err *err);

/* The job check of job->executor's validate hook; an unregistered kind is
 * DBCRON_EINVAL "job 'x': unknown executor N", and process options on an
 * executor without EXEC_CAP_PROCESS are DBCRON_EINVAL. */
int exec_validate(const dbcron_job *job, dbcron_err *err);

/* The registered executor's run by job->executor.  Every run hook
 * overwrites res without freeing it (clear a previous result first), runs
 * on the calling thread without any dbcron lock held, and is safe to call
 * from several workers at once.  The caller owns res's strings afterwards.
 * An unregistered kind is FAILED "job 'x': unknown executor N". */
void exec_run(const exec_req *req, exec_result *res);

/* The one way the scheduler runs a job: through the executor's start hook
 * when it has one (done(ctx) later, from the executor's thread), else
 * exec_run() on the calling thread and then done(ctx) before returning.
 * Either way done(ctx) is called exactly once and res is filled first.
 * req is borrowed for the call only. */
void exec_start(const exec_req *req, exec_result *res, exec_done_fn done, void *ctx);

/* Does a run of job keep the worker that starts it until it ends?  False
 * for an executor with a start hook (its runs wait on its own thread), so
 * the scheduler sizes its claims by what runs cost its workers. */
bool exec_holds_worker(const dbcron_job *job);

#endif
