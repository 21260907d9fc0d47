/*
 * The shell executor: one child process per run, started with
 * posix_spawnp() (argv as given, never through /bin/sh), in a process
 * group of its own, its stdout and stderr in one pipe we read.
 *
 * Owns, for the length of one exec_shell() call: the child (always reaped
 * before returning), the pipe's read end, a pidfd, the environment array
 * and the capture buffers.  Nothing outlives the call and nothing is
 * shared between calls, so any number of workers may run shell jobs at
 * once.
 *
 * Life of a run:
 *
 *   spawn --> RUNNING --exit--------------------------------> reap
 *                |                                      ^
 *                `--timeout/cancel--> SIGTERM to group  |
 *                                     (grace) --exit----+--> SIGKILL group
 *                                     (grace over) ---> SIGKILL group
 *
 * Invariants:
 *  - every fd we open is O_CLOEXEC from birth (pipe2, pidfd), so a child
 *    that another worker spawns at the same moment never inherits one;
 *  - the group leader is not reaped until we are done signalling the group
 *    (waitid with WNOWAIT only peeks), so its pid -- the group id -- cannot
 *    be reused by an unrelated process while we may still kill(-pgid);
 *  - captured output is bounded: capture_bytes of head plus capture_bytes
 *    of tail (a ring), whatever the child prints.
 *
 * Costs admitted: between the child's exit and our reap we drain the pipe
 * for at most one second; a background grandchild that keeps the pipe
 * open is not waited for (its later output is lost and it may get SIGPIPE).
 * A normal exit does not kill the rest of the group: like cron we leave
 * daemons a job started alone.  The environment is read from `environ`
 * without a lock; a program that calls setenv() on another thread while
 * nodes run is racing with every exec-family call, not only ours.
 */
#define _GNU_SOURCE /* pipe2, sigabbrev_np, GNU strerror_r */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/alloc.h"
#include "core/timeutil.h"
#include "exec/exec.h"

extern char **environ;

#define DEFAULT_GRACE_MS 2000
#define DEFAULT_CAPTURE 1024
#define TICK_MS 50
/* Without a pidfd we cannot sleep until the exit; poll the status often. */
#define TICK_NO_PIDFD_MS 10
#define DRAIN_MAX_MS 1000
/* Reads per loop turn before we look at the clock again, so a child that
 * writes without pause cannot starve the timeout check. */
#define READS_PER_TURN 16
#define READ_CHUNK 65536

/* ---- output capture: head, then a ring for the tail ---- */

struct capture {
	size_t cap;        /* bytes kept at each end */
	char *head;
	size_t head_len;
	char *tail;        /* ring of cap bytes */
	size_t tail_next;  /* where the next tail byte goes */
	size_t tail_len;   /* valid bytes in the ring, <= cap */
	uint64_t total;    /* bytes the child wrote */
};

static int capture_init(struct capture *c, size_t cap)
{
	memset(c, 0, sizeof(*c));
	c->cap = cap;
	c->head = dbcron__malloc(cap);
	c->tail = dbcron__malloc(cap);
	if (!c->head || !c->tail) {
		dbcron__free(c->head);
		dbcron__free(c->tail);
		c->head = c->tail = NULL;
		return -1;
	}
	return 0;
}

static void capture_free(struct capture *c)
{
	dbcron__free(c->head);
	dbcron__free(c->tail);
	c->head = c->tail = NULL;
}

static void capture_feed(struct capture *c, const char *buf, size_t n)
{
	c->total += n;
	if (c->head_len < c->cap) {
		size_t k = c->cap - c->head_len;
		if (k > n)
			k = n;
		memcpy(c->head + c->head_len, buf, k);
		c->head_len += k;
		buf += k;
		n -= k;
	}
	if (n >= c->cap) {
		memcpy(c->tail, buf + n - c->cap, c->cap);
		c->tail_next = 0;
		c->tail_len = c->cap;
		return;
	}
	while (n > 0) {
		size_t k = c->cap - c->tail_next;
		if (k > n)
			k = n;
		memcpy(c->tail + c->tail_next, buf, k);
		c->tail_next = (c->tail_next + k) % c->cap;
		c->tail_len = c->tail_len + k > c->cap ? c->cap : c->tail_len + k;
		buf += k;
		n -= k;
	}
}

/* Replace NUL bytes and bytes that are not valid UTF-8 by '?': output is
 * stored as text (PostgreSQL refuses invalid UTF-8), and the head/tail
 * cut may split a character anyway. */
static void make_text(char *s, size_t n)
{
	size_t i = 0;

	while (i < n) {
		unsigned char b = (unsigned char)s[i];
		size_t len;
		if (b == 0) {
			s[i++] = '?';
			continue;
		}
		if (b < 0x80) {
			i++;
			continue;
		}
		if (b >= 0xc2 && b <= 0xdf)
			len = 2;
		else if (b >= 0xe0 && b <= 0xef)
			len = 3;
		else if (b >= 0xf0 && b <= 0xf4)
			len = 4;
		else
			len = 0;
		bool ok = len > 0 && i + len <= n;
		for (size_t k = 1; ok && k < len; k++)
			ok = ((unsigned char)s[i + k] & 0xc0) == 0x80;
		/* Overlong 3/4-byte forms, surrogates and > U+10FFFF. */
		if (ok && len == 3) {
			unsigned char b1 = (unsigned char)s[i + 1];
			ok = !(b == 0xe0 && b1 < 0xa0) && !(b == 0xed && b1 >= 0xa0);
		} else if (ok && len == 4) {
			unsigned char b1 = (unsigned char)s[i + 1];
			ok = !(b == 0xf0 && b1 < 0x90) && !(b == 0xf4 && b1 >= 0x90);
		}
		if (!ok) {
			s[i++] = '?';
			continue;
		}
		i += len;
	}
}

/* The kept output as one string, or NULL when the child printed nothing
 * (or on OOM: the output is a courtesy, the run's state is not). */
static char *capture_finish(const struct capture *c)
{
	char marker[64];
	size_t mlen = 0;

	if (c->total == 0)
		return NULL;
	uint64_t omitted = c->total - c->head_len - c->tail_len;
	if (omitted > 0)
		mlen = (size_t)snprintf(marker, sizeof(marker),
					"\n[... %llu bytes omitted ...]\n",
					(unsigned long long)omitted);
	char *out = dbcron__malloc(c->head_len + mlen + c->tail_len + 1);
	if (!out)
		return NULL;
	char *p = out;
	memcpy(p, c->head, c->head_len);
	make_text(p, c->head_len);
	p += c->head_len;
	memcpy(p, marker, mlen);
	p += mlen;
	size_t start = (c->tail_next + c->cap - c->tail_len) % c->cap;
	size_t first = c->cap - start < c->tail_len ? c->cap - start : c->tail_len;
	memcpy(p, c->tail + start, first);
	memcpy(p + first, c->tail, c->tail_len - first);
	make_text(p, c->tail_len);
	p[c->tail_len] = '\0';
	return out;
}

/* ---- environment ---- */

static const char *const ctx_vars[] = {
	"DBCRON_JOB", "DBCRON_FIRE_AT_MS", "DBCRON_ATTEMPT", "DBCRON_RUN_ID", "DBCRON_NODE",
};
#define N_CTX_VARS (sizeof(ctx_vars) / sizeof(ctx_vars[0]))

static bool is_ctx_var(const char *kv)
{
	for (size_t i = 0; i < N_CTX_VARS; i++) {
		size_t n = strlen(ctx_vars[i]);
		if (strncmp(kv, ctx_vars[i], n) == 0 && kv[n] == '=')
			return true;
	}
	return false;
}

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

/* envp borrows the parent's strings and owns ctx[] (freed by env_free). */
struct child_env {
	char **envp;
	char *ctx[N_CTX_VARS];
};

static void env_free(struct child_env *ce)
{
	for (size_t i = 0; i < N_CTX_VARS; i++)
		dbcron__free(ce->ctx[i]);
	dbcron__free(ce->envp);
	memset(ce, 0, sizeof(*ce));
}

static int env_build(const exec_req *req, struct child_env *ce)
{
	size_t n = 0, j = 0;

	memset(ce, 0, sizeof(*ce));
	for (char **e = environ; e && *e; e++)
		n++;
	ce->envp = dbcron__calloc(n + N_CTX_VARS + 1, sizeof(char *));
	if (!ce->envp)
		return -1;
	for (size_t i = 0; i < n; i++)
		if (!is_ctx_var(environ[i]))
			ce->envp[j++] = environ[i];
	ce->ctx[0] = fmt_alloc("DBCRON_JOB=%s", req->job->name ? req->job->name : "");
	ce->ctx[1] = fmt_alloc("DBCRON_FIRE_AT_MS=%lld", (long long)req->fire_at_ms);
	ce->ctx[2] = fmt_alloc("DBCRON_ATTEMPT=%d", req->attempt);
	ce->ctx[3] = fmt_alloc("DBCRON_RUN_ID=%lld", (long long)req->run_id);
	ce->ctx[4] = fmt_alloc("DBCRON_NODE=%s", req->node_id ? req->node_id : "");
	for (size_t i = 0; i < N_CTX_VARS; i++) {
		if (!ce->ctx[i]) {
			env_free(ce);
			return -1;
		}
		ce->envp[j++] = ce->ctx[i];
	}
	ce->envp[j] = NULL;
	return 0;
}

/* ---- spawning ---- */

/* Keep our pipe ends off 0-2: if the host closed its stdio, pipe2() may
 * hand us fd 1, and dup2(1, 1) in the child would not clear CLOEXEC. */
static int fd_above_stdio(int fd)
{
	if (fd > 2)
		return fd;
	int nfd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	int e = errno;
	close(fd);
	errno = e;
	return nfd;
}

static int spawn_child(const exec_req *req, char **envp, int out_fd, pid_t *pid)
{
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t attr;
	sigset_t none, dfl;
	int e;

	if ((e = posix_spawn_file_actions_init(&fa)) != 0)
		return e;
	if ((e = posix_spawnattr_init(&attr)) != 0)
		goto out_destroy_fa;
	if ((e = posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0)) != 0 ||
	    (e = posix_spawn_file_actions_adddup2(&fa, out_fd, 1)) != 0 ||
	    (e = posix_spawn_file_actions_adddup2(&fa, out_fd, 2)) != 0)
		goto out_destroy_attr;
	/* A worker thread may block signals (the node takes SIGTERM through
	 * sigwait) and the host may ignore SIGPIPE: none of that is for the
	 * child, which must die of the SIGTERM we send. */
	sigemptyset(&none);
	sigfillset(&dfl);
	sigdelset(&dfl, SIGKILL);
	sigdelset(&dfl, SIGSTOP);
	if ((e = posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK |
							 POSIX_SPAWN_SETSIGDEF)) != 0 ||
	    (e = posix_spawnattr_setpgroup(&attr, 0)) != 0 ||
	    (e = posix_spawnattr_setsigmask(&attr, &none)) != 0 ||
	    (e = posix_spawnattr_setsigdefault(&attr, &dfl)) != 0)
		goto out_destroy_attr;
	/* glibc reports a failed exec (ENOENT, EACCES, ENOEXEC) as the return
	 * value here, so there is no "127 from the child" case to decode. */
	e = posix_spawnp(pid, req->job->argv[0], &fa, &attr, req->job->argv, envp);
out_destroy_attr:
	posix_spawnattr_destroy(&attr);
out_destroy_fa:
	posix_spawn_file_actions_destroy(&fa);
	return e;
}

/* ---- waiting ---- */

struct wait_state {
	pid_t pid;
	int rfd;     /* pipe read end, -1 once at EOF */
	int pidfd;   /* -1 when the kernel refused one */
	struct capture *cap;
};

/* Read what is there (non-blocking fd).  Returns false at EOF or error,
 * when the caller closes the pipe. */
static bool pipe_read(struct wait_state *w, int max_reads)
{
	char buf[READ_CHUNK];

	for (int i = 0; i < max_reads; i++) {
		ssize_t n = read(w->rfd, buf, sizeof(buf));
		if (n > 0) {
			capture_feed(w->cap, buf, (size_t)n);
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return true;
		return false;
	}
	return true;
}

static void pipe_close(struct wait_state *w)
{
	if (w->rfd >= 0)
		close(w->rfd);
	w->rfd = -1;
}

/* Has the child exited?  Peeks without reaping (see the header). */
static bool child_exited(pid_t pid)
{
	siginfo_t si;

	memset(&si, 0, sizeof(si));
	if (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) != 0)
		return errno != EINTR; /* ECHILD: someone reaped it for us */
	return si.si_pid == pid;
}

static void signal_group(pid_t pgid, int sig)
{
	/* ESRCH cannot happen while the leader is unreaped; anything else
	 * would be EPERM from a setuid grandchild we cannot touch anyway. */
	(void)kill(-pgid, sig);
}

static int64_t min64(int64_t a, int64_t b)
{
	return a < b ? a : b;
}

enum stop_reason { STOP_NONE, STOP_TIMEOUT, STOP_CANCEL };

/* Runs until the child has exited, enforcing timeout and cancel.  Returns
 * why we stopped it, if we did. */
static enum stop_reason wait_child(const exec_req *req, struct wait_state *w,
				   int64_t start_ms)
{
	const int64_t never = INT64_MAX;
	int64_t t = req->job->timeout_ms;
	int64_t deadline = t > 0 && t < never - start_ms ? start_ms + t : never;
	int64_t grace = req->kill_grace_ms > 0 ? req->kill_grace_ms : DEFAULT_GRACE_MS;
	int64_t kill_at = never;
	enum stop_reason why = STOP_NONE;
	bool killed = false;

	for (;;) {
		if (child_exited(w->pid))
			break;
		int64_t now = dbcron__mono_ms();
		if (why == STOP_NONE) {
			if (req->cancel && atomic_load(&req->cancel->requested))
				why = STOP_CANCEL;
			else if (now >= deadline)
				why = STOP_TIMEOUT;
			if (why != STOP_NONE) {
				signal_group(w->pid, SIGTERM);
				/* A stopped member would keep SIGTERM pending
				 * for ever; let it run and handle it. */
				signal_group(w->pid, SIGCONT);
				kill_at = now + grace;
			}
		}
		if (!killed && now >= kill_at) {
			signal_group(w->pid, SIGKILL);
			killed = true;
		}

		int64_t wait_ms = w->pidfd >= 0 ? TICK_MS : TICK_NO_PIDFD_MS;
		if (why == STOP_NONE)
			wait_ms = min64(wait_ms, deadline - now);
		else if (!killed)
			wait_ms = min64(wait_ms, kill_at - now);
		if (wait_ms < 0)
			wait_ms = 0;
		struct pollfd pf[2];
		nfds_t nf = 0;
		int rslot = -1;
		if (w->rfd >= 0) {
			pf[nf].fd = w->rfd;
			pf[nf].events = POLLIN;
			pf[nf].revents = 0;
			rslot = (int)nf++;
		}
		if (w->pidfd >= 0) {
			pf[nf].fd = w->pidfd;
			pf[nf].events = POLLIN;
			pf[nf].revents = 0;
			nf++;
		}
		int r = poll(pf, nf, (int)wait_ms);
		if (r > 0 && rslot >= 0 && pf[rslot].revents) {
			if (!pipe_read(w, READS_PER_TURN))
				pipe_close(w);
		}
	}
	/* The leader is gone.  Members that outlived a SIGTERM we sent are
	 * stragglers: kill them now rather than after the rest of the grace
	 * (the timeout test's grandchild that ignores SIGTERM is one). */
	if (why != STOP_NONE && !killed)
		signal_group(w->pid, SIGKILL);
	return why;
}

/* After the exit: what is left in the pipe, bounded in time in case a
 * grandchild holds the write end and keeps writing. */
static void drain_pipe(struct wait_state *w)
{
	int64_t until = dbcron__mono_ms() + DRAIN_MAX_MS;

	while (w->rfd >= 0 && dbcron__mono_ms() < until) {
		char buf[READ_CHUNK];
		ssize_t n = read(w->rfd, buf, sizeof(buf));
		if (n > 0)
			capture_feed(w->cap, buf, (size_t)n);
		else if (n < 0 && errno == EINTR)
			continue;
		else
			break; /* EOF, EAGAIN (a quiet holder) or an error */
	}
	pipe_close(w);
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

void exec_shell(const exec_req *req, exec_result *res)
{
	const dbcron_job *job = req->job;
	struct capture cap;
	struct child_env ce;
	struct wait_state w = {.pid = -1, .rfd = -1, .pidfd = -1, .cap = &cap};
	int pfd[2];
	char eb[128];

	memset(res, 0, sizeof(*res));
	res->mono_start_ms = dbcron__mono_ms();
	res->state = DBCRON_RUN_FAILED;
	if (!job->argv || !job->argv[0] || !job->argv[0][0]) {
		exec__set_error(res, "shell job '%s' has no command", job->name ? job->name : "");
		goto out_done;
	}
	if (capture_init(&cap, req->capture_bytes ? req->capture_bytes : DEFAULT_CAPTURE) != 0) {
		exec__set_error(res, "cannot execute '%s': out of memory", job->argv[0]);
		goto out_done;
	}
	if (env_build(req, &ce) != 0) {
		exec__set_error(res, "cannot execute '%s': out of memory", job->argv[0]);
		goto out_free_capture;
	}
	if (pipe2(pfd, O_CLOEXEC) != 0) {
		exec__set_error(res, "cannot execute '%s': pipe: %s", job->argv[0],
				strerror_r(errno, eb, sizeof(eb)));
		goto out_free_env;
	}
	pfd[0] = fd_above_stdio(pfd[0]);
	pfd[1] = fd_above_stdio(pfd[1]);
	if (pfd[0] < 0 || pfd[1] < 0 || fcntl(pfd[0], F_SETFL, O_NONBLOCK) != 0) {
		exec__set_error(res, "cannot execute '%s': pipe: %s", job->argv[0],
				strerror_r(errno, eb, sizeof(eb)));
		goto out_close_pipe;
	}

	int e = spawn_child(req, ce.envp, pfd[1], &w.pid);
	/* Our copy of the write end must go, or we would never see EOF. */
	close(pfd[1]);
	pfd[1] = -1;
	if (e != 0) {
		exec__set_error(res, "cannot execute '%s': %s", job->argv[0],
				strerror_r(e, eb, sizeof(eb)));
		goto out_close_pipe;
	}
	w.rfd = pfd[0];
	pfd[0] = -1;
	w.pidfd = pidfd_open(w.pid, 0); /* -1: fall back to short ticks */

	enum stop_reason why = wait_child(req, &w, res->mono_start_ms);
	drain_pipe(&w);
	if (w.pidfd >= 0)
		close(w.pidfd);

	int status;
	pid_t r;
	while ((r = waitpid(w.pid, &status, 0)) < 0 && errno == EINTR)
		;
	if (r != w.pid) {
		exec__set_error(res, "'%s' (pid %d): exit status lost: %s "
				"(is SIGCHLD ignored or reaped elsewhere?)",
				job->argv[0], (int)w.pid, strerror_r(errno, eb, sizeof(eb)));
	} else {
		describe_status(res, status);
	}
	if (why == STOP_TIMEOUT) {
		char d[32];
		dbcron__format_duration(job->timeout_ms, d, sizeof(d));
		res->state = DBCRON_RUN_TIMED_OUT;
		exec__set_error(res, "timed out after %s; process group terminated", d);
	} else if (why == STOP_CANCEL) {
		res->state = DBCRON_RUN_FAILED;
		exec__set_error(res, "cancelled");
	}
	res->output = capture_finish(&cap);

out_close_pipe:
	if (pfd[0] >= 0)
		close(pfd[0]);
	if (pfd[1] >= 0)
		close(pfd[1]);
out_free_env:
	env_free(&ce);
out_free_capture:
	capture_free(&cap);
out_done:
	res->mono_end_ms = dbcron__mono_ms();
}
