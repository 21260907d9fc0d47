/*
 * The HTTP executor in-process: the field checks job add relies on
 * (method, URL, header, expect, placeholders), the executor in the table
 * with a start hook, and runs on its engine thread against a socket that
 * listens and never answers: a cancel ends the transfer within the poll,
 * the job's timeout ends it TIMED_OUT, a refused connection is FAILED,
 * many runs at once end each once (for ThreadSanitizer).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/timeutil.h"
#include "exec/exec.h"
#include "exec/http.h"

static void test_checks(void **state)
{
	(void)state;
	dbcron_err err = {0};
	assert_int_equal(exec_http_check_target("GET http://127.0.0.1:8080/x?y=1", &err), DBCRON_OK);
	assert_int_equal(exec_http_check_target("POST https://h/${param.p}", &err), DBCRON_OK);
	assert_int_equal(exec_http_check_target("FETCH http://h/", &err), DBCRON_EINVAL);
	assert_non_null(strstr(err.msg, "unknown method 'FETCH'"));
	assert_int_equal(exec_http_check_target("get http://h/", &err), DBCRON_EINVAL);
	assert_int_equal(exec_http_check_target("GET ftp://h/", &err), DBCRON_EINVAL);
	assert_int_equal(exec_http_check_target("GET http:///x", &err), DBCRON_EINVAL);
	assert_int_equal(exec_http_check_target("GET http://h/a b", &err), DBCRON_EINVAL);
	assert_int_equal(exec_http_check_target("http://h/", &err), DBCRON_EINVAL);
	assert_int_equal(exec_http_check_header("X-A: b", &err), DBCRON_OK);
	assert_int_equal(exec_http_check_header("X-A b", &err), DBCRON_EINVAL);
	assert_int_equal(exec_http_check_header(": b", &err), DBCRON_EINVAL);
	assert_int_equal(exec_http_check_header("X: a\r\nY: b", &err), DBCRON_EINVAL);
	assert_int_equal(exec_http_check_expect("2xx", &err), DBCRON_OK);
	assert_int_equal(exec_http_check_expect("200,204,3xx", &err), DBCRON_OK);
	assert_int_equal(exec_http_check_expect("2xx,", &err), DBCRON_EINVAL);
	assert_int_equal(exec_http_check_expect("600", &err), DBCRON_EINVAL);
	assert_int_equal(exec_http_check_expect("", &err), DBCRON_EINVAL);
	assert_int_equal(exec_http_placeholders("a ${param.k} ${TOKEN} b", NULL, NULL, &err),
			 DBCRON_OK);
	assert_int_equal(exec_http_placeholders("a ${param.} b", NULL, NULL, &err), DBCRON_EINVAL);
	assert_int_equal(exec_http_placeholders("a ${1X} b", NULL, NULL, &err), DBCRON_EINVAL);
	assert_int_equal(exec_http_placeholders("a ${X b", NULL, NULL, &err), DBCRON_EINVAL);
}

static void test_table(void **state)
{
	(void)state;
	const exec_ops *o = exec_lookup(DBCRON_EXEC_HTTP);
	assert_ptr_equal(o, &exec_http_ops);
	assert_ptr_equal(exec_lookup_name("http"), o);
	assert_non_null(o->start);
	assert_true(o->caps & EXEC_CAP_ENV_FILE);
	assert_int_equal(o->caps & EXEC_CAP_PROCESS, 0);
	dbcron_job job;
	dbcron_err err = {0};
	dbcron_job_init(&job);
	job.name = "h";
	job.executor = DBCRON_EXEC_HTTP;
	job.http = "GET http://h/${TOKEN}";
	assert_int_equal(exec_validate(&job, &err), DBCRON_EINVAL);
	assert_non_null(strstr(err.msg, "give --env-file"));
	job.env_file = "/etc/x.env";
	assert_int_equal(exec_validate(&job, &err), DBCRON_OK);
	job.cwd = "/tmp"; /* a process option: refused */
	assert_int_equal(exec_validate(&job, &err), DBCRON_EINVAL);
}

/* A port that takes connections (the kernel's backlog) and never
 * answers. */
static int silent_port(int *fd)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(a);
	*fd = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(*fd >= 0);
	assert_int_equal(bind(*fd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(*fd, 256), 0);
	assert_int_equal(getsockname(*fd, (struct sockaddr *)&a, &len), 0);
	return ntohs(a.sin_port);
}

typedef struct ended {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int n;
} ended;

static ended ends = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0};

static void on_done(void *ctx)
{
	(void)ctx;
	pthread_mutex_lock(&ends.mu);
	ends.n++;
	pthread_cond_broadcast(&ends.cv);
	pthread_mutex_unlock(&ends.mu);
}

/* Waits for n ends in all; false after 10 s without them. */
static bool wait_ends(int n)
{
	struct timespec dl;
	int rc = 0;
	clock_gettime(CLOCK_REALTIME, &dl);
	dl.tv_sec += 10;
	pthread_mutex_lock(&ends.mu);
	while (ends.n < n && rc == 0)
		rc = pthread_cond_timedwait(&ends.cv, &ends.mu, &dl);
	bool ok = ends.n >= n;
	pthread_mutex_unlock(&ends.mu);
	return ok;
}

#define MANY 200

static void test_runs(void **state)
{
	(void)state;
	int fd, port = silent_port(&fd);
	char url[64];
	snprintf(url, sizeof(url), "GET http://127.0.0.1:%d/x", port);
	dbcron_job job;
	dbcron_job_init(&job);
	job.name = "h";
	job.executor = DBCRON_EXEC_HTTP;
	job.http = url;

	/* MANY at once, cancelled together: each ends once, within the poll */
	static exec_result res[MANY];
	static exec_cancel cancel[MANY];
	exec_req req = {.job = &job, .node_id = "t"};
	for (int i = 0; i < MANY; i++) {
		req.cancel = &cancel[i];
		exec_start(&req, &res[i], on_done, NULL);
	}
	struct timespec ts = {0, 200 * 1000000};
	nanosleep(&ts, NULL);
	int64_t t0 = dbcron__mono_ms();
	for (int i = 0; i < MANY; i++)
		atomic_store(&cancel[i].requested, 1);
	if (!wait_ends(MANY))
		fail_msg("%d of %d runs ended within 10 s of their cancel", ends.n, MANY);
	assert_true(dbcron__mono_ms() - t0 < 1000);
	for (int i = 0; i < MANY; i++) {
		assert_int_equal(res[i].state, DBCRON_RUN_FAILED);
		assert_string_equal(res[i].error, "cancelled");
		exec_result_clear(&res[i]);
	}

	/* the timeout bounds the request; exec_run waits for it */
	exec_result r;
	job.timeout_ms = 300;
	req.cancel = NULL;
	exec_run(&req, &r);
	assert_int_equal(r.state, DBCRON_RUN_TIMED_OUT);
	assert_true(r.mono_end_ms - r.mono_start_ms >= 250);
	assert_true(r.mono_end_ms - r.mono_start_ms < 3000);
	exec_result_clear(&r);
	close(fd);

	/* nobody listens any more: FAILED with libcurl's reason */
	exec_run(&req, &r);
	assert_int_equal(r.state, DBCRON_RUN_FAILED);
	assert_non_null(r.error);
	assert_non_null(strstr(r.error, url + 4));
	exec_result_clear(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_checks),
		cmocka_unit_test(test_table),
		cmocka_unit_test(test_runs),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
