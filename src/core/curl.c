/*
 * The libcurl table (core/curl.h).  Owns the process-global function
 * table and its loader state; libcurl's own global init runs inside
 * curl_easy_init/curl_multi_init on first use (thread-safe since 7.84).
 */
#include "core/curl.h"

#define CURL_SYM(f) DBCRON_DYNLIB_SYM(dbcron__curl_api, f)
static const dbcron_dynsym curl_syms[] = {DBCRON_CURL_FUNCS(CURL_SYM)};

dbcron__curl_api dbcron__curl;

static dbcron_dynlib curl_lib = {
	.soname = "libcurl.so.4",
	.package = "libcurl4",
	.what = "HTTP jobs and webhook reactions",
	.syms = curl_syms,
	.nsyms = sizeof(curl_syms) / sizeof(curl_syms[0]),
	.api = &dbcron__curl,
};

int dbcron__curl_load(dbcron_err *err)
{
	return dbcron__dynlib_load(&curl_lib, err);
}

void dbcron__curl_defaults(CURL *h)
{
	dbcron__curl.curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	dbcron__curl.curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
	dbcron__curl.curl_easy_setopt(h, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
}
