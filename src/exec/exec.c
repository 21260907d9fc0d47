/*
 * Executor dispatch and the result record shared by every executor.
 * Owns nothing beyond the strings of an exec_result, which
 * exec_result_clear() frees.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "core/alloc.h"
#include "core/timeutil.h"
#include "exec/exec.h"

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
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	dbcron__free(res->error);
	res->error = dbcron__strdup(buf);
}

void exec_run(const exec_req *req, exec_result *res)
{
	switch (req->job->executor) {
	case DBCRON_EXEC_SHELL:
		exec_shell(req, res);
		return;
	case DBCRON_EXEC_HANDLER:
		exec_handler(req, res);
		return;
	}
	memset(res, 0, sizeof(*res));
	res->mono_start_ms = res->mono_end_ms = dbcron__mono_ms();
	res->state = DBCRON_RUN_FAILED;
	exec__set_error(res, "job '%s': unknown executor %d",
			req->job->name ? req->job->name : "", (int)req->job->executor);
}
