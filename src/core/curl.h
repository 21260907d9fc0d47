/*
 * libcurl, loaded on first use (core/dynlib.h), and the rules every
 * transfer of dbcron keeps, in one place: the HTTP executor
 * (exec/http.c) and the webhook reactions (react/outlets.c) each drive
 * their own multi handle on their own thread, so neither starves the
 * other, and both call libcurl through this one table.
 */
#ifndef DBCRON_CORE_CURL_H
#define DBCRON_CORE_CURL_H

/* calls go through a table of pointers: curl's type-checking macros
 * would expand the members' names */
#define CURL_DISABLE_TYPECHECK 1
#include <curl/curl.h>

#include "core/dynlib.h"
#include "dbcron/error.h"

#define DBCRON_CURL_FUNCS(X)                                                             \
	X(curl_easy_init) X(curl_easy_setopt) X(curl_easy_getinfo) X(curl_easy_cleanup)  \
	X(curl_easy_strerror) X(curl_slist_append) X(curl_slist_free_all)                \
	X(curl_multi_init) X(curl_multi_add_handle) X(curl_multi_remove_handle)          \
	X(curl_multi_perform) X(curl_multi_poll) X(curl_multi_info_read)                 \
	X(curl_multi_cleanup) X(curl_multi_wakeup) X(curl_multi_setopt)

typedef struct dbcron__curl_api {
	DBCRON_CURL_FUNCS(DBCRON_DYNLIB_MEMBER)
} dbcron__curl_api;

/* Filled by dbcron__curl_load(); read-only afterwards. */
extern dbcron__curl_api dbcron__curl;

/* Loads libcurl once per process (thread-safe).  DBCRON_EUNSUPPORTED
 * naming the library and its package when it cannot be loaded. */
int dbcron__curl_load(dbcron_err *err);

/* What every easy handle of dbcron gets: no signals (transfers run on
 * threads of a node), http and https only, also after a redirect. */
void dbcron__curl_defaults(CURL *h);

#endif
