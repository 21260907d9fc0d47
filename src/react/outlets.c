/*
 * The three ways an event goes out (react_int.h), and the event JSON the
 * webhook and exec targets receive (docs/reactions.md documents each
 * key).  job:NAME and the JSON are the db thread's (they read and write
 * the store); webhooks and programs are the delivery thread's, and none
 * of them blocks it: transfers run on one libcurl multi handle, programs
 * are started and then polled.  libcurl (core/curl.h, shared with the
 * HTTP executor) is loaded on the first webhook, so a node without one
 * never loads it.  Each outlet says whether a failure may pass (REACT_RETRY) or not
 * (REACT_FAILED); none prints.
 */
#define _GNU_SOURCE /* pipe2 */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/alloc.h"
#include "core/curl.h"
#include "core/timeutil.h"
#include "exec/runas.h"
#include "model/jobdef.h"
#include "model/params.h"
#include "model/target.h"
#include "react/react_int.h"

extern char **environ;

#define REACT_HTTP_TIMEOUT_MS 10000L
#define REACT_EXEC_TIMEOUT_MS 30000L
#define REACT_OUTPUT_TAIL 2048

/* ---- job:NAME ---- */

/* The triggered run's parameters: its upstream (model/params.h), the
 * run whose end raised the event (for overdue, the last success, none
 * before any; the state is then "overdue").  NULL when out of memory. */
static char *upstream_params(store *s, const store_event *ev)
{
	dbcron_run r;
	dbcron_err e = {0};
	char id[24] = "";
	memset(&r, 0, sizeof(r));
	bool have_run = ev->run_id > 0 && store_run_get(s, ev->run_id, &r, &e) == DBCRON_OK;
	if (ev->run_id > 0)
		snprintf(id, sizeof(id), "%lld", (long long)ev->run_id);
	const char *state = ev->kind == MODEL_REACT_OVERDUE ? "overdue"
			    : have_run			     ? dbcron_run_state_name(r.state)
							     : model_react_kind_name(ev->kind);
	json_t *o = json_pack("{ssssss}", MODEL_PARAM_UPSTREAM "JOB", ev->job_name,
			      MODEL_PARAM_UPSTREAM "RUN_ID", id, MODEL_PARAM_UPSTREAM "STATE", state);
	dbcron_run_clear(&r);
	char *text = o ? json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
	json_decref(o);
	char *out = text ? dbcron__strdup(text) : NULL;
	free(text);
	return out;
}

react_outcome react_trigger(store *s, const store_event *ev, char *buf, size_t len)
{
	int64_t run_id = 0, fire_at = 0;
	dbcron_err e = {0};
	char *params = upstream_params(s, ev);
	if (!params) {
		snprintf(buf, len, "out of memory");
		return REACT_RETRY;
	}
	int rc = store_job_trigger_params(s, ev->target + 4, params, &run_id, &fire_at, &e);
	dbcron__free(params);
	if (rc == DBCRON_OK) {
		snprintf(buf, len, "run %lld", (long long)run_id);
		return REACT_DELIVERED;
	}
	snprintf(buf, len, "%s", e.msg);
	return rc == DBCRON_ENOTFOUND ? REACT_FAILED : REACT_RETRY;
}

/* ---- the event JSON ---- */

/* The last REACT_OUTPUT_TAIL bytes of out, from a line start when one is
 * in reach. */
static const char *output_tail(const char *out)
{
	size_t n = strlen(out);
	if (n <= REACT_OUTPUT_TAIL)
		return out;
	const char *t = out + n - REACT_OUTPUT_TAIL, *nl = strchr(t, '\n');
	return nl && nl[1] ? nl + 1 : t;
}

static void put(json_t *o, const char *k, json_t *v, bool *bad)
{
	if (!v || json_object_set_new(o, k, v))
		*bad = true;
}

/* An overdue event says since when the job has been silent and for how
 * long at event_time: since its last success (the event's run, whose
 * fields follow) or, before any, since the job was made. */
static void put_silence(json_t *o, store *s, const store_event *ev, const dbcron_run *r,
			bool have_run, bool *bad)
{
	char t[64];
	int64_t since = have_run ? r->finished_ms : -1;
	if (!have_run) {
		dbcron_job j;
		dbcron_err e = {0};
		dbcron_job_init(&j);
		if (store_job_get(s, ev->job_name, &j, &e) == DBCRON_OK)
			since = j.created_ms;
		dbcron_job_clear(&j);
	}
	if (since < 0) {
		put(o, "silent_since", json_null(), bad);
		put(o, "silent_seconds", json_null(), bad);
		return;
	}
	put(o, "silent_since", json_string(model_time_text(since, t, sizeof(t))), bad);
	put(o, "silent_seconds", json_integer((ev->created_ms - since) / 1000), bad);
}

char *react_event_body(store *s, const store_event *ev, const char *node_id)
{
	dbcron_run r;
	dbcron_err e = {0};
	char t[64];
	bool bad = false, have_run;
	memset(&r, 0, sizeof(r));
	have_run = store_run_get(s, ev->run_id, &r, &e) == DBCRON_OK;
	json_t *o = json_object();
	if (!o)
		goto out_clear;
	put(o, "event_id", json_integer(ev->id), &bad);
	put(o, "kind", json_string(model_react_kind_name(ev->kind)), &bad);
	put(o, "job", json_string(ev->job_name), &bad);
	put(o, "run_id", ev->run_id > 0 ? json_integer(ev->run_id) : json_null(), &bad);
	put(o, "target", json_string(ev->target), &bad);
	put(o, "delivery_attempt", json_integer(ev->attempts), &bad);
	put(o, "event_time", json_string(model_time_text(ev->created_ms, t, sizeof(t))), &bad);
	put(o, "delivered_by", json_string(node_id), &bad);
	if (ev->kind == MODEL_REACT_OVERDUE)
		put_silence(o, s, ev, &r, have_run, &bad);
	if (have_run) {
		put(o, "fire_time", json_string(model_time_text(r.fire_at, t, sizeof(t))), &bad);
		put(o, "attempt", json_integer(r.attempt), &bad);
		put(o, "state", json_string(dbcron_run_state_name(r.state)), &bad);
		put(o, "exit_code", r.has_exit_code ? json_integer(r.exit_code) : json_null(), &bad);
		put(o, "error", r.error ? json_string(r.error) : json_null(), &bad);
		put(o, "output_tail", json_string(r.output ? output_tail(r.output) : ""), &bad);
		put(o, "node", r.node ? json_string(r.node) : json_null(), &bad);
	}
	char *text = bad ? NULL : json_dumps(o, JSON_COMPACT);
	json_decref(o);
	dbcron_run_clear(&r);
	/* json_dumps allocates with malloc: hand back one of ours */
	char *body = text ? dbcron__strdup(text) : NULL;
	free(text);
	return body;
out_clear:
	dbcron_run_clear(&r);
	return NULL;
}

/* ---- http(s)://: one multi handle, many transfers ---- */

/* the shared table (core/curl.h), under the short name this file always
 * used */
#define curl dbcron__curl

struct react_multi {
	CURLM *multi;
	react_list running; /* the transfers on it */
};

/* The receiver's reply is not kept. */
static size_t discard(char *p, size_t size, size_t n, void *ctx)
{
	(void)p;
	(void)ctx;
	return size * n;
}

static react_multi *multi_new(react_job *j)
{
	dbcron_err e = {0};
	if (dbcron__curl_load(&e)) {
		snprintf(j->why, sizeof(j->why), "%s", e.msg);
		return NULL;
	}
	react_multi *m = dbcron__calloc(1, sizeof(*m));
	if (m && !(m->multi = curl.curl_multi_init())) {
		dbcron__free(m);
		m = NULL;
	}
	if (!m)
		snprintf(j->why, sizeof(j->why), "libcurl: cannot start a transfer");
	return m;
}

/* The request's headers: the type, the event id, the signature. */
static struct curl_slist *headers(const react_job *j, const char *secret, size_t secret_len)
{
	char hdr[128], sig[64 + 32], hex[65];
	struct curl_slist *hs = curl.curl_slist_append(NULL, "Content-Type: application/json"), *h2;
	snprintf(hdr, sizeof(hdr), "X-Dbcron-Event-Id: %lld", (long long)j->ev.id);
	/* no "Expect: 100-continue" for a larger body: a receiver that does
	 * not answer it would hold every such delivery a second */
	if (!hs || !(h2 = curl.curl_slist_append(hs, hdr)) || !curl.curl_slist_append(hs, "Expect:"))
		goto out_free;
	if (secret) {
		react_sign(secret, secret_len, j->body, strlen(j->body), hex);
		snprintf(sig, sizeof(sig), "X-Dbcron-Signature: sha256=%s", hex);
		if (!curl.curl_slist_append(hs, sig))
			goto out_free;
	}
	return hs;
out_free:
	if (hs)
		curl.curl_slist_free_all(hs);
	return NULL;
}

bool react_http_start(react_multi **m, react_job *j, const char *secret, size_t secret_len)
{
	j->out = REACT_RETRY;
	if (!*m && !(*m = multi_new(j)))
		return false;
	CURL *h = curl.curl_easy_init();
	struct curl_slist *hs = h ? headers(j, secret, secret_len) : NULL;
	if (!hs) {
		snprintf(j->why, sizeof(j->why), "libcurl: cannot start a transfer");
		goto out_cleanup;
	}
	curl.curl_easy_setopt(h, CURLOPT_URL, j->ev.target);
	curl.curl_easy_setopt(h, CURLOPT_HTTPHEADER, hs);
	/* the body is j's until the db thread frees j, after the transfer */
	curl.curl_easy_setopt(h, CURLOPT_POSTFIELDS, j->body);
	curl.curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, (long)strlen(j->body));
	curl.curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, REACT_HTTP_TIMEOUT_MS);
	dbcron__curl_defaults(h);
	curl.curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, discard);
	curl.curl_easy_setopt(h, CURLOPT_PRIVATE, (char *)j);
	if (curl.curl_multi_add_handle((*m)->multi, h) != CURLM_OK) {
		snprintf(j->why, sizeof(j->why), "libcurl: cannot add a transfer");
		goto out_cleanup;
	}
	j->easy = h;
	j->hdrs = hs;
	react_list_push(&(*m)->running, j);
	return true;
out_cleanup:
	if (hs)
		curl.curl_slist_free_all(hs);
	if (h)
		curl.curl_easy_cleanup(h);
	return false;
}

/* Takes j off the running list (it is on it). */
static void running_remove(react_multi *m, react_job *j)
{
	react_list keep = {0};
	for (react_job *x; (x = react_list_pop(&m->running));)
		if (x != j)
			react_list_push(&keep, x);
	m->running = keep;
}

react_job *react_http_first(react_multi *m)
{
	return m ? m->running.head : NULL;
}

void react_http_cut(react_multi *m, react_job *j)
{
	curl.curl_multi_remove_handle(m->multi, j->easy);
	curl.curl_easy_cleanup(j->easy);
	curl.curl_slist_free_all(j->hdrs);
	j->easy = j->hdrs = NULL;
	running_remove(m, j);
}

/* A transfer is over: its outcome as outlets always classified it. */
static void http_done(react_multi *m, CURL *h, CURLcode cc, react_list *out)
{
	char *p = NULL;
	curl.curl_easy_getinfo(h, CURLINFO_PRIVATE, &p);
	react_job *j = (react_job *)p;
	long status = 0;
	if (cc != CURLE_OK) {
		snprintf(j->why, sizeof(j->why), "%s", curl.curl_easy_strerror(cc));
		j->out = REACT_RETRY;
	} else {
		curl.curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
		snprintf(j->why, sizeof(j->why), "HTTP %ld", status);
		j->out = status >= 200 && status < 300	   ? REACT_DELIVERED
			 : status >= 500 || status == 429 ? REACT_RETRY
							  : REACT_FAILED;
	}
	react_http_cut(m, j);
	react_list_push(out, j);
}

void react_http_run(react_multi *m, int wake_fd, react_list *execs, int wait_ms,
		    react_list *out)
{
	struct curl_waitfd fds[1 + REACT_MAX_OUT];
	unsigned nfds = 0;
	fds[nfds++] = (struct curl_waitfd){.fd = wake_fd, .events = CURL_WAIT_POLLIN};
	for (react_job *j = execs->head; j && nfds < 1 + REACT_MAX_OUT; j = j->next)
		if (j->in_fd >= 0)
			fds[nfds++] = (struct curl_waitfd){.fd = j->in_fd, .events = CURL_WAIT_POLLOUT};
	if (!m) {
		/* no webhook yet: libcurl is not even loaded */
		struct pollfd pf[1 + REACT_MAX_OUT];
		for (unsigned i = 0; i < nfds; i++)
			pf[i] = (struct pollfd){.fd = fds[i].fd,
						.events = fds[i].events == CURL_WAIT_POLLIN ? POLLIN
											  : POLLOUT};
		poll(pf, nfds, wait_ms);
		return;
	}
	int running = 0, left = 0;
	curl.curl_multi_perform(m->multi, &running);
	CURLMsg *msg;
	bool any = false;
	while ((msg = curl.curl_multi_info_read(m->multi, &left))) {
		if (msg->msg == CURLMSG_DONE) {
			http_done(m, msg->easy_handle, msg->data.result, out);
			any = true;
		}
	}
	/* a result to hand over first: the caller comes back at once */
	curl.curl_multi_poll(m->multi, fds, nfds, any ? 0 : wait_ms, NULL);
	curl.curl_multi_perform(m->multi, &running);
	while ((msg = curl.curl_multi_info_read(m->multi, &left)))
		if (msg->msg == CURLMSG_DONE)
			http_done(m, msg->easy_handle, msg->data.result, out);
}

void react_multi_free(react_multi *m)
{
	if (!m)
		return;
	curl.curl_multi_cleanup(m->multi);
	dbcron__free(m);
}

/* ---- exec:PATH [ARGS]: started, then polled ---- */

/* The words of "exec:PATH ARG..." (split at spaces) into argv (at most
 * n - 1 and a NULL), pointing into copy. */
static void split_words(char *copy, char **argv, size_t n)
{
	size_t k = 0;
	for (char *save = NULL, *w = strtok_r(copy, " ", &save); w && k + 1 < n;
	     w = strtok_r(NULL, " ", &save))
		argv[k++] = w;
	argv[k] = NULL;
}

/* The clean environment of a command job of the job's user (HOME, USER,
 * LOGNAME, SHELL, PATH: runas.h; not the job's --env, which is its
 * command's), with the event's facts; *id who that is. */
static int exec_env(const react_job *j, runas_env *env, runas_ident *id, char *buf,
		    size_t len)
{
	dbcron_job acct;
	dbcron_err e = {0};
	char f0[64], f1[64], *facts[4];
	dbcron_job_init(&acct);
	acct.user = j->run_user; /* borrowed: never cleared */
	acct.group = j->run_group;
	int rc = runas_ident_resolve(&acct, "this node", id, &e);
	snprintf(f0, sizeof(f0), "DBCRON_EVENT_ID=%lld", (long long)j->ev.id);
	snprintf(f1, sizeof(f1), "DBCRON_EVENT_KIND=%s", model_react_kind_name(j->ev.kind));
	facts[0] = f0;
	facts[1] = f1;
	facts[2] = NULL;
	runas_env_src src = {.job = &acct, .id = id, .facts = facts};
	if (!rc)
		rc = runas_env_build(&src, env, &e);
	if (rc)
		snprintf(buf, len, "%s", e.msg);
	return rc;
}

/* Who the program runs as, for messages: "user 'nobody'". */
static void exec_who(const react_job *j, char *buf, size_t len)
{
	buf[0] = '\0';
	if (j->run_user)
		snprintf(buf, len, "user '%s'", j->run_user);
	else if (j->run_group)
		snprintf(buf, len, "group '%s'", j->run_group);
}

/* The program through exec/proc.c, as a command job is started: its own
 * process group and guard, the ids switched (needs root: otherwise the
 * error says so, and the event fails with it, as such a job's run does),
 * its user's home as the directory, only fds 0-2, none of our
 * capabilities; the event on stdin through a pipe we feed. */
bool react_exec_start(react_job *j)
{
	char *copy = dbcron__strdup(j->ev.target + 5), *argv[64], who[300];
	runas_env env = {0};
	runas_ident id;
	dbcron_err e = {0};
	memset(&id, 0, sizeof(id));
	int fds[2] = {-1, -1};
	bool started = false;
	j->out = REACT_RETRY;
	if (!copy) {
		snprintf(j->why, sizeof(j->why), "out of memory");
		goto out_free;
	}
	split_words(copy, argv, sizeof(argv) / sizeof(argv[0]));
	if (exec_env(j, &env, &id, j->why, sizeof(j->why)))
		goto out_free;
	/* close-on-exec from the start: a job forked meanwhile by another
	 * thread must not hold the pipe open; the read end above 2, as
	 * proc_opts.stdin_fd asks */
	if (pipe2(fds, O_CLOEXEC) || fcntl(fds[1], F_SETFL, O_NONBLOCK)) {
		snprintf(j->why, sizeof(j->why), "pipe: %s", strerror(errno));
		goto out_free;
	}
	if (fds[0] <= 2) {
		int hi = fcntl(fds[0], F_DUPFD_CLOEXEC, 3);
		close(fds[0]);
		if ((fds[0] = hi) < 0) {
			snprintf(j->why, sizeof(j->why), "pipe: %s", strerror(errno));
			goto out_free;
		}
	}
	exec_who(j, who, sizeof(who));
	proc_opts po = {
		.argv = argv, .envp = env.v, .stdin_fd = fds[0],
		.path = runas_env_get(&env, "PATH"), .set_ids = id.switch_ids,
		.uid = id.uid, .gid = id.gid, .groups = id.groups, .ngroups = id.ngroups,
		.who = who[0] ? who : NULL, .cwd = id.home ? id.home : "/", .cwd_or_root = true,
		.close_fds = true, .no_caps = true,
	};
	memset(&j->prog, 0, sizeof(j->prog));
	if (proc_spawn(&j->prog, &po, &e)) {
		snprintf(j->why, sizeof(j->why), "%s", e.msg);
		/* a missing program, or ids this node cannot switch to: no
		 * retry mends them */
		j->out = e.code == DBCRON_ENOTFOUND || strncmp(e.msg, "cannot run ", 11) == 0
				 ? REACT_FAILED
				 : REACT_RETRY;
		goto out_free;
	}
	j->pid = j->prog.pid;
	j->in_fd = fds[1];
	fds[1] = -1;
	j->in_off = 0;
	j->deadline = dbcron__mono_ms() + REACT_EXEC_TIMEOUT_MS;
	started = true;
out_free:
	if (fds[0] >= 0)
		close(fds[0]);
	if (fds[1] >= 0)
		close(fds[1]);
	runas_env_free(&env);
	runas_ident_clear(&id);
	dbcron__free(copy);
	return started;
}

/* What fits of the body into the pipe; closed once all of it is in, or
 * when the reader is gone (its business: SIGPIPE is blocked on this
 * thread, so the write says EPIPE). */
static void exec_feed(react_job *j)
{
	size_t n = strlen(j->body);
	while (j->in_off < n) {
		ssize_t w = write(j->in_fd, j->body + j->in_off, n - j->in_off);
		if (w > 0) {
			j->in_off += (size_t)w;
			continue;
		}
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		break;
	}
	close(j->in_fd);
	j->in_fd = -1;
}

static const char *prog_name(const react_job *j, char *buf, size_t len)
{
	const char *p = j->ev.target + 5, *sp = strchr(p, ' ');
	snprintf(buf, len, "%.*s", (int)(sp ? (size_t)(sp - p) : strlen(p)), p);
	return buf;
}

bool react_exec_poll(react_job *j, int64_t now_mono)
{
	int status = 0;
	char name[256];
	if (j->in_fd >= 0)
		exec_feed(j);
	/* a look without waiting (0: the deadline is past) */
	bool done = proc_wait_until(&j->prog, 0);
	if (!done && now_mono < j->deadline)
		return false;
	if (!done) {
		react_exec_cut(j);
		snprintf(j->why, sizeof(j->why), "%s: killed after 30s",
			 prog_name(j, name, sizeof(name)));
		j->out = REACT_RETRY;
		return true;
	}
	int rc = proc_reap(&j->prog, &status);
	j->pid = 0;
	if (j->in_fd >= 0) {
		close(j->in_fd);
		j->in_fd = -1;
	}
	j->out = REACT_RETRY;
	prog_name(j, name, sizeof(name));
	if (rc)
		snprintf(j->why, sizeof(j->why), "%s: waitpid: %s", name, strerror(rc));
	else if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		j->out = REACT_DELIVERED;
	else if (WIFEXITED(status))
		snprintf(j->why, sizeof(j->why), "%s: exit status %d", name, WEXITSTATUS(status));
	else
		snprintf(j->why, sizeof(j->why), "%s: killed by signal %d", name, WTERMSIG(status));
	return true;
}

void react_exec_cut(react_job *j)
{
	if (j->in_fd >= 0) {
		close(j->in_fd);
		j->in_fd = -1;
	}
	if (j->pid > 0) {
		int status;
		proc_signal(&j->prog, SIGKILL); /* the program's whole group */
		proc_reap(&j->prog, &status);
		j->pid = 0;
	}
}
