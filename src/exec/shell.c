/*
 * The shell executor: one child process per run, argv as given (never
 * through /bin/sh), started and stopped by the process module (proc.c:
 * a process group of its own, SIGTERM then SIGKILL to the group), its
 * stdout and stderr in one pipe whose bytes we keep head and tail of.
 *
 * Owns, for the length of one exec_shell() call: the proc (always reaped
 * before returning, by proc_reap), what the run is launched with (its
 * user's ids, its environment, the env-file's text) and the capture
 * buffers.  Nothing outlives the call and nothing is shared between calls,
 * so any number of workers may run shell jobs at once.
 *
 * What this file adds to proc.c: what the job runs as, resolved at each
 * run on this host (runas.h: user, groups, env-file, the environment with
 * the run facts DBCRON_JOB & co), the bounded capture, and the
 * translation of an exit status, a timeout or a cancel into an
 * exec_result.  The switch itself (setgroups, setgid, setuid, chdir,
 * umask) happens in the child, between its clone and its exec (guard.c
 * says why there).
 *
 * Invariants:
 *  - captured output is bounded: capture_bytes of head plus capture_bytes
 *    of tail (a ring), whatever the child prints;
 *  - the group is only signalled while its leader is unreaped (proc.h);
 *  - the command gets a clean environment (runas_env_build), fds 0-2 and
 *    none of ours, none of the node's capabilities, and nothing of the
 *    node's secrets;
 *  - a user, group, env-file or directory that this host cannot give is
 *    the run's error, never the node's: the run is FAILED and the node
 *    goes on.
 *
 * Costs admitted: between the child's exit and our reap we drain the pipe
 * for at most one second; a background grandchild that keeps the pipe
 * open is not waited for (its later output is lost and it may get SIGPIPE).
 * A normal exit does not kill the rest of the group: like cron we leave
 * daemons a job started alone.  The node's environment (for a job that
 * inherits it) is read from `environ` without a lock; a program that
 * calls setenv() on another thread while nodes run is racing with every
 * exec-family call, not only ours.  The user and groups are looked up at
 * every run (NSS, maybe a network directory): a slow directory slows the
 * run's start, not the claim loop.
 */
#define _GNU_SOURCE /* sigabbrev_np, GNU strerror_r */
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>

#include "core/text.h"
#include "core/alloc.h"
#include "core/timeutil.h"
#include "exec/capture.h"
#include "exec/exec.h"
#include "exec/proc.h"
#include "exec/runas.h"

extern char **environ;

#define DEFAULT_CAPTURE 1024


/* ---- the run facts ---- */

#define N_FACTS 6

static char *fmt_alloc(const char *fmt, ...) DBCRON_PRINTF(1, 2);
static char *fmt_alloc(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	int n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		return NULL;
	char *s = dbcron__malloc((size_t)n + 1);
	if (!s)
		return NULL;
	va_start(ap, fmt);
	vsnprintf(s, (size_t)n + 1, fmt, ap);
	va_end(ap);
	return s;
}

/* The facts and one DBCRON_PARAM_KEY per parameter (at most 32, the
 * model's bound, checked at the trigger). */
#define N_PARAMS_MAX 32
/* and an every-node run's DBCRON_NODE_INDEX and DBCRON_NODE_TOTAL */
#define N_NODE_FACTS 2
#define N_ENV_FACTS (N_FACTS + N_NODE_FACTS + N_PARAMS_MAX)

static void facts_free(char **f)
{
	for (size_t i = 0; i < N_ENV_FACTS; i++)
		dbcron__free(f[i]);
}

/* DBCRON_JOB & co into f[0..N_FACTS), NULL after them; -1 on OOM. */
static int facts_build(const exec_req *req, char **f)
{
	f[0] = fmt_alloc("DBCRON_JOB=%s", req->job->name ? req->job->name : "");
	f[1] = fmt_alloc("DBCRON_FIRE_AT_MS=%lld", (long long)req->fire_at_ms);
	f[2] = fmt_alloc("DBCRON_ATTEMPT=%d", req->attempt);
	f[3] = fmt_alloc("DBCRON_RUN_ID=%lld", (long long)req->run_id);
	f[4] = fmt_alloc("DBCRON_NODE=%s", req->node_id ? req->node_id : "");
	/* the instant as RFC 3339 UTC, for commands that take a date (a
	 * backfill's run is its instant, not when it runs) */
	char at[64];
	dbcron__format_rfc3339(req->fire_at_ms, 0, req->fire_at_ms % 1000 != 0, at, sizeof(at));
	f[5] = fmt_alloc("DBCRON_FIRE_AT=%s", at);
	size_t k = N_FACTS;
	if (req->node_total > 0) { /* docs/scheduler.md "Every node" */
		f[k++] = fmt_alloc("DBCRON_NODE_INDEX=%d", req->node_index);
		f[k++] = fmt_alloc("DBCRON_NODE_TOTAL=%d", req->node_total);
	}
	size_t np = req->nparams < N_PARAMS_MAX ? req->nparams : N_PARAMS_MAX;
	/* a reaction's UPSTREAM_* keys (MODEL_PARAM_UPSTREAM, reserved: no
	 * trigger gives one) are DBCRON_UPSTREAM_*, docs/reactions.md */
	for (size_t i = 0; i < np; i++)
		f[k + i] = strncmp(req->params[i], "UPSTREAM_", 9) == 0
				   ? fmt_alloc("DBCRON_%s", req->params[i])
				   : fmt_alloc("DBCRON_PARAM_%s", req->params[i]);
	f[k + np] = NULL;
	for (size_t i = 0; i < k + np; i++)
		if (!f[i])
			return -1;
	return 0;
}

/* ---- who, where and with what the command runs ---- */

/* Everything exec_shell works out before the spawn; owned. */
struct launch {
	runas_ident id;
	runas_env env;
	char *facts[N_ENV_FACTS + 1];
	char *file_text;
	char who[160];
};

static void launch_free(struct launch *l)
{
	runas_ident_clear(&l->id);
	runas_env_free(&l->env);
	facts_free(l->facts);
	dbcron__free(l->file_text);
}

/* The job's user, its env-file and its environment, resolved on this host
 * at this run (a node on another host than `job add` may know other
 * users).  0, or an error for the run's record. */
static int launch_prepare(const exec_req *req, struct launch *l, dbcron_err *err)
{
	const dbcron_job *job = req->job;
	char where[160];
	int rc;

	memset(l, 0, sizeof(*l));
	snprintf(where, sizeof(where), "%s%s", req->node_id ? "node " : "this host",
		 req->node_id ? req->node_id : "");
	if ((rc = runas_ident_resolve(job, where, &l->id, err)))
		return rc;
	if (job->env_file && (rc = runas_env_file_read(job->env_file, &l->id, &l->file_text, err)))
		return rc;
	if (facts_build(req, l->facts))
		return dbcron_err_set(err, DBCRON_ENOMEM, "out of memory");
	runas_env_src src = {
		.job = job,
		.id = &l->id,
		.node_env = environ,
		.file_text = l->file_text,
		.facts = l->facts,
	};
	if ((rc = runas_env_build(&src, &l->env, err)))
		return rc;
	if (job->user)
		dbcron__textf(l->who, sizeof(l->who), "user '%s'", job->user);
	else if (job->group)
		dbcron__textf(l->who, sizeof(l->who), "group '%s'", job->group);
	return DBCRON_OK;
}

static void describe_status(exec_result *res, int status)
{
	if (WIFEXITED(status)) {
		int code = WEXITSTATUS(status);
		res->has_exit_code = true;
		res->exit_code = code;
		if (code == 0) {
			res->state = DBCRON_RUN_SUCCEEDED;
			return;
		}
		res->state = DBCRON_RUN_FAILED;
		exec__set_error(res, "exited with status %d%s", code,
				code == 127 ? " (command not found?)" :
				code == 126 ? " (command not executable?)" : "");
		return;
	}
	int sig = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
	const char *abbrev = sigabbrev_np(sig);
	res->has_exit_code = true;
	res->exit_code = 128 + sig;
	res->state = DBCRON_RUN_FAILED;
	exec__set_error(res, "killed by signal %d (SIG%s)%s", sig, abbrev ? abbrev : "?",
			WCOREDUMP(status) ? ", core dumped" : "");
}

static void capture_sink(void *ctx, const char *buf, size_t n)
{
	exec_capture_feed(ctx, buf, n);
}

void exec_shell(const exec_req *req, exec_result *res)
{
	const dbcron_job *job = req->job;
	exec_capture cap;
	struct launch l;
	proc child;
	dbcron_err err = {0};
	char eb[128];

	memset(res, 0, sizeof(*res));
	res->mono_start_ms = dbcron__mono_ms();
	res->state = DBCRON_RUN_FAILED;
	if (!job->argv || !job->argv[0] || !job->argv[0][0]) {
		exec__set_error(res, "shell job '%s' has no command", job->name ? job->name : "");
		goto out_done;
	}
	if (exec_capture_init(&cap, req->capture_bytes ? req->capture_bytes : DEFAULT_CAPTURE) != 0) {
		exec__set_error(res, "cannot execute '%s': out of memory", job->argv[0]);
		goto out_done;
	}
	if (launch_prepare(req, &l, &err) != DBCRON_OK) {
		exec__set_error(res, "%s", err.msg);
		goto out_free_launch;
	}
	/* cron's default: the user's home, or "/" when it has none (nobody's
	 * is /nonexistent); a --cwd that cannot be entered fails the run */
	const char *cwd = job->cwd ? job->cwd : l.id.home ? l.id.home : "/";
	proc_opts po = {
		.argv = job->argv,
		.envp = l.env.v,
		.stdin_null = true,
		.sink = capture_sink,
		.sink_ctx = &cap,
		.death_grace_ms = req->kill_grace_ms,
		.path = runas_env_get(&l.env, "PATH"),
		.set_ids = l.id.switch_ids,
		.uid = l.id.uid,
		.gid = l.id.gid,
		.groups = l.id.groups,
		.ngroups = l.id.ngroups,
		.who = l.who[0] ? l.who : NULL,
		.cwd = cwd,
		.cwd_or_root = !job->cwd,
		.set_umask = job->umask >= 0,
		.umask = job->umask >= 0 ? (mode_t)job->umask : 0,
		.close_fds = true,
		.no_caps = true,
	};
	if (proc_spawn(&child, &po, &err) != DBCRON_OK) {
		exec__set_error(res, "%s", err.msg);
		goto out_free_launch;
	}

	const int64_t never = INT64_MAX;
	int64_t t = job->timeout_ms;
	int64_t deadline = t > 0 && t < never - res->mono_start_ms ? res->mono_start_ms + t : never;
	proc_end why = proc_wait(&child, deadline, req->cancel ? &req->cancel->requested : NULL,
				 req->kill_grace_ms, req->cancel ? &req->cancel->kill_by_ms : NULL);
	pid_t pid = child.pid;
	int status;
	int e = proc_reap(&child, &status);
	if (e != 0) {
		exec__set_error(res, "'%s' (pid %d): exit status lost: %s "
				"(is SIGCHLD ignored or reaped elsewhere?)",
				job->argv[0], (int)pid, strerror_r(e, eb, sizeof(eb)));
	} else {
		describe_status(res, status);
	}
	if (why == PROC_END_TIMEOUT) {
		char d[32];
		dbcron__format_duration(job->timeout_ms, d, sizeof(d));
		res->state = DBCRON_RUN_TIMED_OUT;
		exec__set_error(res, "timed out after %s; process group terminated", d);
	} else if (why == PROC_END_CANCEL) {
		res->state = DBCRON_RUN_FAILED;
		exec__set_error(res, "cancelled");
	}
	res->output = exec_capture_finish(&cap);

out_free_launch:
	launch_free(&l);
	exec_capture_free(&cap);
out_done:
	res->mono_end_ms = dbcron__mono_ms();
}

/* What a shell job needs before it can ever run; the rest (does argv[0]
 * exist on this host?) can only be known by the node that spawns it. */
static int shell_validate(const dbcron_job *job, dbcron_err *err)
{
	if (!job->argv || job->argc < 1 || !job->argv[0] || !job->argv[0][0])
		return dbcron_err_set(err, DBCRON_EINVAL,
				      "job '%s': no command (give -- COMMAND [ARGS...] or --handler NAME)",
				      job->name ? job->name : "");
	return runas_validate(job, err);
}

const exec_ops exec_shell_ops = {
	.version = EXEC_OPS_VERSION,
	.kind = DBCRON_EXEC_SHELL,
	.name = "shell",
	.caps = EXEC_CAP_OUTPUT | EXEC_CAP_CANCEL | EXEC_CAP_TIMEOUT | EXEC_CAP_PREEMPT |
		EXEC_CAP_PROCESS,
	.validate = shell_validate,
	.run = exec_shell,
};
