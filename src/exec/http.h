/*
 * The HTTP executor's rules for a job's own fields, for the model layer
 * (job add/set/apply check each value as it is given, naming its flag)
 * and for the executor's validate hook.  The executor itself is
 * exec_http_ops (exec.h).  No I/O here.
 */
#ifndef DBCRON_EXEC_HTTP_H
#define DBCRON_EXEC_HTTP_H

#include <stddef.h>

#include "core/job_fields.h"
#include "dbcron/error.h"
#include "dbcron/job.h"

/* The methods an HTTP job may use, for messages. */
#define EXEC_HTTP_METHODS EXEC_HTTP_METHODS_TEXT

/* "METHOD URL": a method of EXEC_HTTP_METHODS (upper case) and an
 * http:// or https:// URL with a host, no spaces or control bytes. */
int exec_http_check_target(const char *v, dbcron_err *err);
/* One request header, "Name: value" (a token name, no line break). */
int exec_http_check_header(const char *v, dbcron_err *err);
/* The statuses that mean success: "2xx", "200,204", "2xx,404". */
int exec_http_check_expect(const char *v, dbcron_err *err);

/*
 * Each ${...} placeholder of text: cb(ctx, name, len) with name "NAME"
 * (from the env-file) or "param.KEY" (a run parameter), not
 * NUL-terminated.  A non-zero return of cb stops and is returned.
 * DBCRON_EINVAL (with err) for a "${" without its "}" or a name that is
 * neither form.
 */
typedef int (*exec_http_ph_fn)(void *ctx, const char *name, size_t len);
int exec_http_placeholders(const char *text, exec_http_ph_fn cb, void *ctx, dbcron_err *err);

#endif
