/*
 * The executor table and the result record shared by every executor.
 *
 * Owns the table (process-global): a fixed array of pointers to exec_ops,
 * the built-ins (shell, handler, http, sql) in it from the start, others added by
 * exec_register().  Adding an executor is one exec_ops and one entry here
 * or one exec_register() call; nothing else dispatches on the kind.
 *
 * Invariants: a kind and a name appear at most once; entries are never
 * removed or changed, so a looked-up exec_ops stays valid for ever.
 * Lookups (every run) read the slots with acquire loads and take no lock;
 * registrations (rare) are serialised by a mutex and publish a slot with
 * a release store after the checks, so a reader sees a whole entry or
 * none.  Also owns nothing beyond the strings of an exec_result, which
 * exec_result_clear() frees.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "core/text.h"
#include "core/alloc.h"
#include "core/timeutil.h"
#include "exec/exec.h"
#include "exec/runas.h"

/* Room for the built-ins and the executors still to come (http, sql...)
 * with no allocation: the table is tiny and read on every run. */
#define EXEC_SLOTS 16

static _Atomic(const exec_ops *) slots[EXEC_SLOTS] = {
	&exec_shell_ops,
	&exec_handler_ops,
	&exec_http_ops,
	&exec_sql_ops,
};
static pthread_mutex_t register_lock = PTHREAD_MUTEX_INITIALIZER;

void exec_result_clear(exec_result *r)
{
	if (!r)
		return;
	dbcron__free(r->error);
	dbcron__free(r->output);
	memset(r, 0, sizeof(*r));
}

void exec__set_error(exec_result *res, const char *fmt, ...)
{
	char buf[640];
	va_list ap;

	va_start(ap, fmt);
	dbcron__vtextf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	dbcron__free(res->error);
	res->error = dbcron__strdup(buf);
}

const exec_ops *exec_lookup(dbcron_executor kind)
{
	for (size_t i = 0; i < EXEC_SLOTS; i++) {
		const exec_ops *o = atomic_load_explicit(&slots[i], memory_order_acquire);
		if (!o)
			break; /* slots fill in order and never empty again */
		if (o->kind == kind)
			return o;
	}
	return NULL;
}

const exec_ops *exec_lookup_name(const char *name)
{
	if (!name)
		return NULL;
	for (size_t i = 0; i < EXEC_SLOTS; i++) {
		const exec_ops *o = atomic_load_explicit(&slots[i], memory_order_acquire);
		if (!o)
			break;
		if (strcmp(o->name, name) == 0)
			return o;
	}
	return NULL;
}

int exec_register(const exec_ops *ops, dbcron_err *err)
{
	int rc;

	if (!ops || ops->version != EXEC_OPS_VERSION)
		return dbcron_err_set(err, DBCRON_EINVAL, "executor: ops version %d, want %d",
				      ops ? ops->version : -1, EXEC_OPS_VERSION);
	if (!ops->name || !ops->name[0] || !ops->run || !ops->validate)
		return dbcron_err_set(err, DBCRON_EINVAL,
				      "executor '%s': needs a name, a run and a validate hook",
				      ops->name ? ops->name : "");
	pthread_mutex_lock(&register_lock);
	if (exec_lookup(ops->kind) || exec_lookup_name(ops->name)) {
		rc = dbcron_err_set(err, DBCRON_EEXISTS,
				    "executor '%s' (kind %d): kind or name already registered",
				    ops->name, (int)ops->kind);
		goto out_unlock;
	}
	rc = dbcron_err_set(err, DBCRON_EBUSY, "executor '%s': table full (%d executors)",
			    ops->name, EXEC_SLOTS);
	for (size_t i = 0; i < EXEC_SLOTS; i++) {
		if (!atomic_load_explicit(&slots[i], memory_order_relaxed)) {
			atomic_store_explicit(&slots[i], ops, memory_order_release);
			dbcron_err_clear(err);
			rc = DBCRON_OK;
			break;
		}
	}
out_unlock:
	pthread_mutex_unlock(&register_lock);
	return rc;
}

int exec_validate(const dbcron_job *job, dbcron_err *err)
{
	const exec_ops *o = exec_lookup(job->executor);

	if (!o)
		return dbcron_err_set(err, DBCRON_EINVAL, "job '%s': unknown executor %d",
				      job->name ? job->name : "", (int)job->executor);
	/* an executor that reads the env-file for placeholders takes it,
	 * and none of the other process options */
	bool file_ok = (o->caps & EXEC_CAP_ENV_FILE) != 0;
	if (!(o->caps & EXEC_CAP_PROCESS) &&
	    (runas_any_process(job) || (job->env_file && !file_ok)))
		return dbcron_err_set(err, DBCRON_EINVAL,
				      "job '%s': user, group, cwd, env, %sumask and "
				      "inherit-env are only for a command, not for the %s executor",
				      job->name ? job->name : "", file_ok ? "" : "env-file, ",
				      o->name);
	return o->validate(job, err);
}

void exec_run(const exec_req *req, exec_result *res)
{
	const exec_ops *o = exec_lookup(req->job->executor);

	if (o) {
		o->run(req, res);
		return;
	}
	memset(res, 0, sizeof(*res));
	res->mono_start_ms = res->mono_end_ms = dbcron__mono_ms();
	res->state = DBCRON_RUN_FAILED;
	exec__set_error(res, "job '%s': unknown executor %d",
			req->job->name ? req->job->name : "", (int)req->job->executor);
}

void exec_start(const exec_req *req, exec_result *res, exec_done_fn done, void *ctx)
{
	const exec_ops *o = exec_lookup(req->job->executor);

	if (o && o->start) {
		o->start(req, res, done, ctx);
		return;
	}
	exec_run(req, res);
	done(ctx);
}

bool exec_holds_worker(const dbcron_job *job)
{
	const exec_ops *o = exec_lookup(job->executor);
	return !o || !o->start;
}
