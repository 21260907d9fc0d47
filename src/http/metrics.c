/*
 * GET /metrics in the Prometheus text format (version 0.0.4).  Two kinds
 * of series, said apart in docs/http.md: this node's own counters
 * (sched/stats.h, labelled node="ID"; summing them across nodes counts
 * every run once, since each run's outcome is written by one node), and
 * gauges read from the database at scrape time (the jobs: one narrow
 * query of name, next fire and paused, nothing decoded or copied), which
 * every server reports alike.  Per-job series are capped by --metrics-max-jobs
 * (the first N by name), so label cardinality stays bounded; how many
 * were left out is itself a series.  Third, the process's own series
 * (dbcron_build_info and the process_* names every Prometheus client
 * library exports), read from /proc at scrape time.
 */
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <dirent.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "dbcron/version.h"
#include "http/http_int.h"
#include "sched/stats.h"

/* A label value: backslash, double quote and line feed escaped. */
static void label(FILE *f, const char *s)
{
	for (; s && *s; s++) {
		if (*s == '\\' || *s == '"')
			fputc('\\', f), fputc(*s, f);
		else if (*s == '\n')
			fputs("\\n", f);
		else
			fputc(*s, f);
	}
}

static void head(FILE *f, const char *name, const char *type, const char *help)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static unsigned long long ld(const atomic_ullong *v)
{
	return atomic_load_explicit(v, memory_order_relaxed);
}

static void hist(FILE *f, const char *name, const char *help, const char *node,
		 const node_hist *h)
{
	unsigned long long cum = 0;
	head(f, name, "histogram", help);
	for (int i = 0; i <= NODE_HIST_BUCKETS; i++) {
		cum += ld(&h->bucket[i]);
		fprintf(f, "%s_bucket{node=\"", name);
		label(f, node);
		if (i < NODE_HIST_BUCKETS)
			fprintf(f, "\",le=\"%g\"} %llu\n", (double)node_hist_le_ms[i] / 1000.0, cum);
		else
			fprintf(f, "\",le=\"+Inf\"} %llu\n", cum);
	}
	fprintf(f, "%s_sum{node=\"", name);
	label(f, node);
	fprintf(f, "\"} %.3f\n%s_count{node=\"", (double)atomic_load(&h->sum_ms) / 1000.0, name);
	label(f, node);
	fprintf(f, "\"} %llu\n", ld(&h->count));
}

typedef struct job_runs_pass {
	FILE *f;
	const char *node;
} job_runs_pass;

/* Under the counters' lock: prints only (memstream), takes nothing. */
static void job_runs_row(void *ctx, const node_job_runs *j)
{
	job_runs_pass *jr = ctx;
	for (int s = 0; s < NODE_STATE_MAX; s++) {
		if (!j->runs[s])
			continue;
		fputs("dbcron_job_runs_total{node=\"", jr->f);
		label(jr->f, jr->node);
		fputs("\",job=\"", jr->f);
		label(jr->f, j->name);
		fprintf(jr->f, "\",state=\"%s\"} %llu\n", dbcron_run_state_name((dbcron_run_state)s),
			j->runs[s]);
	}
}

static void node_series(FILE *f, node_stats *st, size_t max_jobs)
{
	static const dbcron_run_state finals[] = {
		DBCRON_RUN_SUCCEEDED, DBCRON_RUN_FAILED, DBCRON_RUN_TIMED_OUT,
		DBCRON_RUN_SKIPPED,   DBCRON_RUN_MISFIRED, DBCRON_RUN_ABANDONED, DBCRON_RUN_CANCELLED,
	};
	const char *node = st->node_id;
	head(f, "dbcron_runs_total", "counter",
	     "Runs whose final state this node wrote, by state.");
	for (size_t i = 0; i < sizeof(finals) / sizeof(finals[0]); i++) {
		fputs("dbcron_runs_total{node=\"", f);
		label(f, node);
		fprintf(f, "\",state=\"%s\"} %llu\n", dbcron_run_state_name(finals[i]),
			(int)finals[i] < NODE_STATE_MAX ? ld(&st->runs[finals[i]]) : 0ULL);
	}
	hist(f, "dbcron_run_duration_seconds", "Run time, start to end, of the runs this node ended.",
	     node, &st->run_ms);
	hist(f, "dbcron_start_lateness_seconds",
	     "How long after it was due each run this node started began (database time).", node,
	     &st->late_ms);
	hist(f, "dbcron_claim_duration_seconds", "Time of one claim statement.", node, &st->claim_ms);
	head(f, "dbcron_claims_total", "counter", "Claims this node made.");
	fputs("dbcron_claims_total{node=\"", f);
	label(f, node);
	fprintf(f, "\"} %llu\n", ld(&st->claims));
	head(f, "dbcron_claimed_runs_total", "counter", "Runs this node's claims took.");
	fputs("dbcron_claimed_runs_total{node=\"", f);
	label(f, node);
	fprintf(f, "\"} %llu\n", ld(&st->claimed));
	head(f, "dbcron_fenced_writes_total", "counter",
	     "Writes refused because the run was no longer this node's.");
	fputs("dbcron_fenced_writes_total{node=\"", f);
	label(f, node);
	fprintf(f, "\"} %llu\n", ld(&st->fenced));
	head(f, "dbcron_inflight_runs", "gauge", "Fires claimed by this node and not yet finished.");
	fputs("dbcron_inflight_runs{node=\"", f);
	label(f, node);
	fprintf(f, "\"} %lld\n", (long long)atomic_load(&st->inflight));
	head(f, "dbcron_busy_workers", "gauge", "Pool workers running a job now, by pool.");
	for (int i = 0; i < 2; i++) {
		fputs("dbcron_busy_workers{node=\"", f);
		label(f, node);
		fprintf(f, "\",pool=\"%s\"} %lld\n", i ? "slow" : "fast",
			(long long)atomic_load_explicit(&st->busy[i], memory_order_relaxed));
	}
	head(f, "dbcron_db_errors_total", "counter",
	     "Failed statements of this node's scheduling connection, by class.");
	for (int k = 0; k < STORE_ERR__COUNT; k++) {
		fputs("dbcron_db_errors_total{node=\"", f);
		label(f, node);
		fprintf(f, "\",class=\"%s\"} %llu\n", store_err_class_name[k], ld(&st->db_errors[k]));
	}
	head(f, "dbcron_job_runs_total", "counter",
	     "Runs of a job whose final state this node wrote, by state (the first --metrics-max-jobs jobs this node ran; states it never wrote left out).");
	job_runs_pass jr = {.f = f, .node = node};
	node_stats_jobs_each(st, max_jobs, job_runs_row, &jr);
	long long until = atomic_load(&st->lease_until_ms);
	if (until >= 0) {
		head(f, "dbcron_node_lease_until_timestamp_seconds", "gauge",
		     "When this node's lease ends unless renewed (database clock).");
		fputs("dbcron_node_lease_until_timestamp_seconds{node=\"", f);
		label(f, node);
		fprintf(f, "\"} %.3f\n", (double)until / 1000.0);
	}
}

/* The jobs, from the database: one pass over the listing (already in name
 * order), the paused series kept aside so each family stays together. */
typedef struct job_pass {
	FILE *next, *paused;
	size_t n, max;
} job_pass;

static int job_row(void *ctx, const store_job_brief *j)
{
	job_pass *jp = ctx;
	if (jp->n++ >= jp->max)
		return 0; /* counted, not shown */
	if (j->next_fire_at >= 0) {
		fputs("dbcron_job_next_fire_timestamp_seconds{job=\"", jp->next);
		label(jp->next, j->name);
		fprintf(jp->next, "\"} %.3f\n", (double)j->next_fire_at / 1000.0);
	}
	fputs("dbcron_job_paused{job=\"", jp->paused);
	label(jp->paused, j->name);
	fprintf(jp->paused, "\"} %d\n", j->paused ? 1 : 0);
	return 0;
}

/* The last success, its age and overdue (docs/reactions.md): three
 * families from one pass, the latter two kept aside like the paused. */
typedef struct ok_pass {
	FILE *last, *age, *overdue;
	int64_t now;
} ok_pass;

static int last_ok_row(void *ctx, const store_last_ok *j)
{
	ok_pass *op = ctx;
	if (j->finished_ms >= 0) {
		fputs("dbcron_job_last_success_timestamp_seconds{job=\"", op->last);
		label(op->last, j->name);
		fprintf(op->last, "\"} %.3f\n", (double)j->finished_ms / 1000.0);
		fputs("dbcron_job_last_success_age_seconds{job=\"", op->age);
		label(op->age, j->name);
		fprintf(op->age, "\"} %.3f\n", (double)(op->now - j->finished_ms) / 1000.0);
	}
	if (j->max_silence_ms > 0) {
		/* silent since its last success, or since it was made: the
		 * rule store_overdue_raise follows (a paused job is never
		 * overdue) */
		int64_t since = j->finished_ms >= 0 ? j->finished_ms : j->created_ms;
		fputs("dbcron_job_overdue{job=\"", op->overdue);
		label(op->overdue, j->name);
		fprintf(op->overdue, "\"} %d\n",
			!j->paused && op->now - since >= j->max_silence_ms ? 1 : 0);
	}
	return 0;
}

static int ok_series(FILE *f, store *s, size_t max_jobs, dbcron_err *err)
{
	char *abuf = NULL, *obuf = NULL;
	size_t alen = 0, olen = 0;
	ok_pass op = {.last = f};
	int rc = store_now_ms(s, &op.now, err);
	if (rc)
		return rc;
	op.age = open_memstream(&abuf, &alen);
	op.overdue = open_memstream(&obuf, &olen);
	if (!op.age || !op.overdue) {
		rc = dbcron_err_set(err, DBCRON_ENOMEM, "out of memory");
		goto out;
	}
	head(f, "dbcron_job_last_success_timestamp_seconds", "gauge",
	     "When a job's newest-fired succeeded run ended (from the database); absent when none.");
	rc = store_job_last_success(s, max_jobs > LONG_MAX ? LONG_MAX : (long)max_jobs,
				    last_ok_row, &op, err);
out:
	if (op.age && fclose(op.age) && !rc)
		rc = dbcron_err_set(err, DBCRON_ENOMEM, "out of memory");
	if (op.overdue && fclose(op.overdue) && !rc)
		rc = dbcron_err_set(err, DBCRON_ENOMEM, "out of memory");
	if (!rc) {
		head(f, "dbcron_job_last_success_age_seconds", "gauge",
		     "Seconds since a job's newest-fired succeeded run ended (database clock); absent when none.");
		fwrite(abuf, 1, alen, f);
		head(f, "dbcron_job_overdue", "gauge",
		     "1 while a job with --max-silence has had no success for that long; absent without it.");
		fwrite(obuf, 1, olen, f);
	}
	free(abuf);
	free(obuf);
	return rc;
}

static int job_series(FILE *f, store *s, size_t max_jobs, dbcron_err *err)
{
	char *pbuf = NULL;
	size_t plen = 0;
	job_pass jp = {.max = max_jobs};
	int rc;

	/* the families' heads first: the counts are known only at the end,
	 * so they follow the per-job lines */
	head(f, "dbcron_job_next_fire_timestamp_seconds", "gauge",
	     "A job's next fire (from the database); absent when it has none.");
	jp.next = f;
	if (!(jp.paused = open_memstream(&pbuf, &plen)))
		return dbcron_err_set(err, DBCRON_ENOMEM, "out of memory");
	rc = store_job_briefs(s, job_row, &jp, err);
	if (fclose(jp.paused) && !rc)
		rc = dbcron_err_set(err, DBCRON_ENOMEM, "out of memory");
	if (!rc) {
		head(f, "dbcron_job_paused", "gauge", "1 when a job is paused (from the database).");
		fwrite(pbuf, 1, plen, f);
		size_t shown = jp.n < max_jobs ? jp.n : max_jobs;
		head(f, "dbcron_jobs", "gauge", "Jobs in the database (from the database).");
		fprintf(f, "dbcron_jobs %zu\n", jp.n);
		head(f, "dbcron_metrics_jobs_omitted", "gauge",
		     "Jobs left out of the per-job series by --metrics-max-jobs.");
		fprintf(f, "dbcron_metrics_jobs_omitted %zu\n", jp.n - shown);
	}
	if (!rc && max_jobs > 0)
		/* the same first jobs by name as above, in the database's order */
		rc = ok_series(f, s, max_jobs, err);
	free(pbuf);
	return rc;
}

/* When the process started (seconds since the epoch): its start in clock
 * ticks after boot (/proc/self/stat, field 22) plus the boot time; -1
 * when /proc cannot say. */
static double start_time(void)
{
	char buf[1024];
	double boot = -1, ticks = -1;
	FILE *f = fopen("/proc/stat", "r");
	if (f) {
		while (fgets(buf, sizeof(buf), f))
			if (sscanf(buf, "btime %lf", &boot) == 1)
				break;
		fclose(f);
	}
	f = fopen("/proc/self/stat", "r");
	if (f) {
		size_t n = fread(buf, 1, sizeof(buf) - 1, f);
		buf[n] = '\0';
		fclose(f);
		/* after the command name, which may hold spaces and ')' */
		char *p = strrchr(buf, ')');
		unsigned long long st;
		if (p && sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d "
					"%*d %*d %*d %*d %llu", &st) == 1)
			ticks = (double)st;
	}
	long hz = sysconf(_SC_CLK_TCK);
	return boot < 0 || ticks < 0 || hz <= 0 ? -1 : boot + ticks / (double)hz;
}

static void process_series(FILE *f)
{
	head(f, "dbcron_build_info", "gauge", "1, labelled with the version of the serving binary.");
	fprintf(f, "dbcron_build_info{version=\"%s\"} 1\n", DBCRON_VERSION);
	struct rusage ru;
	if (!getrusage(RUSAGE_SELF, &ru)) {
		head(f, "process_cpu_seconds_total", "counter", "User and system CPU time spent.");
		fprintf(f, "process_cpu_seconds_total %.3f\n",
			(double)ru.ru_utime.tv_sec + (double)ru.ru_stime.tv_sec +
				(double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6);
	}
	unsigned long long vsz, rss;
	FILE *m = fopen("/proc/self/statm", "r");
	if (m) {
		if (fscanf(m, "%llu %llu", &vsz, &rss) == 2) {
			unsigned long long page = (unsigned long long)sysconf(_SC_PAGESIZE);
			head(f, "process_virtual_memory_bytes", "gauge", "Virtual memory size.");
			fprintf(f, "process_virtual_memory_bytes %llu\n", vsz * page);
			head(f, "process_resident_memory_bytes", "gauge", "Resident memory size.");
			fprintf(f, "process_resident_memory_bytes %llu\n", rss * page);
		}
		fclose(m);
	}
	DIR *d = opendir("/proc/self/fd");
	if (d) {
		long n = -1; /* the directory's own descriptor is not counted */
		const struct dirent *e;
		while ((e = readdir(d)))
			if (e->d_name[0] != '.')
				n++;
		closedir(d);
		head(f, "process_open_fds", "gauge", "Open file descriptors.");
		fprintf(f, "process_open_fds %ld\n", n);
	}
	struct rlimit rl;
	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur != RLIM_INFINITY) {
		head(f, "process_max_fds", "gauge", "The most file descriptors the process may open.");
		fprintf(f, "process_max_fds %llu\n", (unsigned long long)rl.rlim_cur);
	}
	double st = start_time();
	if (st >= 0) {
		head(f, "process_start_time_seconds", "gauge",
		     "When the process started, in seconds since the Unix epoch.");
		fprintf(f, "process_start_time_seconds %.2f\n", st);
	}
}

void http__metrics(const http_call *c, http_reply *rep)
{
	char *buf = NULL;
	size_t len = 0;
	dbcron_err err = {0};
	FILE *f = open_memstream(&buf, &len);
	if (!f)
		return http__error(rep, MHD_HTTP_INTERNAL_SERVER_ERROR, "internal", "out of memory");
	process_series(f);
	if (c->stats)
		node_series(f, c->stats, c->metrics_max_jobs);
	int rc = job_series(f, c->st, c->metrics_max_jobs, &err);
	if (fclose(f) || rc) {
		free(buf);
		if (rc)
			return http__error(rep, MHD_HTTP_SERVICE_UNAVAILABLE, "unavailable", "%s", err.msg);
		return http__error(rep, MHD_HTTP_INTERNAL_SERVER_ERROR, "internal", "out of memory");
	}
	rep->status = MHD_HTTP_OK;
	rep->owned_text = buf;
	rep->text_len = len;
	rep->ctype = "text/plain; version=0.0.4; charset=utf-8";
}
