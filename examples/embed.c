/*
 * Embedding dbcron in a C program: register a handler, apply this
 * program's jobs, run a node until SIGINT or SIGTERM, then print the last
 * runs from the run log.  docs/library.md walks through it.
 *
 *   cc embed.c $(pkg-config --cflags --libs dbcron) -o embed
 *   ./embed sqlite:/tmp/embed.db /tmp/embed.out
 *
 * Any number of copies may run on one database: each fire runs once, on
 * whichever node claims it.
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L /* sigaction */
#endif
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <dbcron/dbcron.h>

static dbcron_node *node;

static void on_signal(int sig)
{
	(void)sig;
	dbcron_node_stop(node); /* async-signal-safe */
}

/*
 * The handler: one line per run, appended to the file named by user.
 * Called on a worker thread, several at once: one write() of a whole line
 * to an O_APPEND descriptor keeps lines whole without a lock.
 */
static int append_line(const dbcron_handler_ctx *ctx, void *user, char *errbuf,
		       size_t errlen)
{
	char line[256];
	int n = snprintf(line, sizeof(line), "%s %" PRId64 " %d %s\n", ctx->job,
			 ctx->fire_at_ms, ctx->attempt, ctx->arg ? ctx->arg : "-");
	int fd = open((const char *)user, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0) {
		snprintf(errbuf, errlen, "cannot open %s", (const char *)user);
		return 1;
	}
	ssize_t w = write(fd, line, (size_t)n);
	close(fd);
	return w == n ? 0 : 1;
}

int main(int argc, char **argv)
{
	dbcron_err err = {0};
	dbcron_db *db = NULL;
	int rc = 1;

	if (argc != 3) {
		fprintf(stderr, "usage: %s DB_URL OUTPUT_FILE\n", argv[0]);
		return 2;
	}
	printf("libdbcron %s (built with %s)\n", dbcron_version(), DBCRON_VERSION);

	/* 1. Handlers first: applying a job checks that its handler exists. */
	if (dbcron_handler_register("append-line", append_line, argv[2]) != DBCRON_OK) {
		fprintf(stderr, "register: %s\n", dbcron_strerror(DBCRON_EEXISTS));
		return 1;
	}

	/* 2. This program's jobs, all or nothing (without prune: jobs that
	 * others applied stay).  The schema is created on first use. */
	if (dbcron_db_open_ex(argv[1], DBCRON_DB_INIT, &db, &err)) {
		fprintf(stderr, "open: %s\n", err.msg);
		return 1;
	}
	dbcron_job jobs[2];
	dbcron_job_init(&jobs[0]);
	jobs[0].name = "tick";
	jobs[0].kind = DBCRON_SCHED_EVERY;
	jobs[0].spec = "1s";
	jobs[0].executor = DBCRON_EXEC_HANDLER;
	jobs[0].handler = "append-line";
	jobs[0].arg = "every second";
	dbcron_job_init(&jobs[1]);
	jobs[1].name = "cron-tick";
	jobs[1].kind = DBCRON_SCHED_CRON;
	jobs[1].spec = "*/2 * * * * ?"; /* Quartz: every 2nd second */
	jobs[1].executor = DBCRON_EXEC_HANDLER;
	jobs[1].handler = "append-line";
	dbcron_apply_opts opts;
	dbcron_apply_opts_init(&opts);
	dbcron_apply_result res;
	if (dbcron_apply(db, jobs, 2, &opts, &res, &err)) {
		fprintf(stderr, "apply: %s\n", err.msg);
		goto out_close;
	}
	printf("jobs: %zu created, %zu updated, %zu deleted\n", res.created, res.updated,
	       res.deleted);
	dbcron_apply_result_clear(&res);

	/* 3. A node on the same database, until a signal stops it. */
	dbcron_node_config cfg;
	dbcron_node_config_init(&cfg);
	cfg.db_url = argv[1];
	cfg.workers = 2;
	if (dbcron_node_create(&cfg, &node, &err)) {
		fprintf(stderr, "node: %s\n", err.msg);
		goto out_close;
	}
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	printf("node running; Ctrl-C stops it\n");
	fflush(stdout);
	if (dbcron_node_run(node, &err)) {
		fprintf(stderr, "node: %s\n", err.msg);
		goto out_free;
	}

	/* 4. What ran: the newest runs of "tick", from the run log. */
	dbcron_run_filter f;
	dbcron_run_filter_init(&f);
	f.job = "tick";
	dbcron_run_iter *it;
	if (dbcron_runs_open(db, &f, NULL, &it, &err)) {
		fprintf(stderr, "runs: %s\n", err.msg);
		goto out_free;
	}
	const dbcron_run *r;
	int shown = 0;
	while (shown < 5 && dbcron_runs_next(it, &r, &err) == DBCRON_OK && r) {
		printf("run %" PRId64 ": %s at %" PRId64 " %s\n", r->id, r->job_name, r->fire_at,
		       dbcron_run_state_name(r->state));
		shown++;
	}
	dbcron_runs_free(it);
	rc = 0;
out_free:
	dbcron_node_free(node);
out_close:
	dbcron_db_close(db);
	return rc;
}
