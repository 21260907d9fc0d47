/*
 * The error reply every part of the HTTP server answers with: one JSON
 * shape, {"error": {"code": ..., "message": ...}}, whoever refuses.  Its
 * own file so that the arrows between the server's files go one way:
 * server.c calls the router (routes.c), which calls metrics.c, and all
 * three build their refusals here; nothing here calls back.
 */
#include <stdarg.h>
#include <stdio.h>

#include "http/http_int.h"

/* A message longer than the buffer is cut: it is a description for a
 * person, and the code says what happened. */
void http__error(http_reply *rep, unsigned status, const char *code, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	json_decref(rep->json);
	rep->status = status;
	rep->json = json_pack("{s:{s:s,s:s}}", "error", "code", code, "message", msg);
}
