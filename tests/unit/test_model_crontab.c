/* Crontab lines -> job apply objects (model/crontab.c): what each kind of
 * line becomes, cron(8)'s % rule, stable names, and that every line that
 * cannot be expressed is reported with its number while the rest go on. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "model/crontab.h"
#include "model/json.h"

typedef struct reports {
	size_t n;
	size_t line[16];
	char msg[16][700];
} reports;

static void collect(void *ctx, size_t line, const char *msg)
{
	reports *r = ctx;
	if (r->n < 16) {
		r->line[r->n] = line;
		snprintf(r->msg[r->n], sizeof(r->msg[0]), "%s", msg);
	}
	r->n++;
}

static json_t *parse(const char *text, size_t len, const model_crontab_opts *o, reports *r)
{
	json_t *jobs = NULL;
	size_t refused = 99;
	dbcron_err err = {0};
	memset(r, 0, sizeof(*r));
	assert_int_equal(model_crontab_parse(text, len, o, &jobs, &refused, collect, r, &err),
			 DBCRON_OK);
	assert_non_null(jobs);
	assert_int_equal(refused, r->n);
	/* every object applies: the model accepts it as it is */
	for (size_t i = 0; i < json_array_size(jobs); i++) {
		model_jobdef d;
		const char *name;
		model_jobdef_init(&d, false);
		assert_int_equal(model_jobdef_from_json(&d, json_array_get(jobs, i), &name, &err), 0);
		model_jobdef_clear(&d);
	}
	return jobs;
}

static const char *str(json_t *job, const char *key)
{
	return json_string_value(json_object_get(job, key));
}

static const char *arr(json_t *job, const char *key, size_t i)
{
	return json_string_value(json_array_get(json_object_get(job, key), i));
}

static void test_entries(void **state)
{
	(void)state;
	static const char text[] = "# m h dom mon dow command\n"
				   "\n"
				   "   # indented comment\n"
				   "*/5 * * * * echo hi; date\n"
				   "@hourly /usr/local/bin/tick --fast\n"
				   "0 2 * * mon-fri\t/opt/x.sh";
	reports r;
	json_t *jobs = parse(text, strlen(text), NULL, &r);
	assert_int_equal(r.n, 0);
	assert_int_equal(json_array_size(jobs), 3);
	json_t *a = json_array_get(jobs, 0), *b = json_array_get(jobs, 1),
	       *c = json_array_get(jobs, 2);
	assert_string_equal(str(a, "cron"), "*/5 * * * *");
	assert_string_equal(arr(a, "command", 0), "/bin/sh");
	assert_string_equal(arr(a, "command", 1), "-c");
	assert_string_equal(arr(a, "command", 2), "echo hi; date");
	assert_string_equal(arr(a, "env", 0), "PATH=/usr/bin:/bin");
	/* cron's behaviour, not dbcron's defaults */
	assert_string_equal(str(a, "overlap"), "allow");
	assert_string_equal(str(a, "misfire"), "skip");
	assert_int_equal(json_integer_value(json_object_get(a, "retries")), 0);
	assert_null(json_object_get(a, "user"));
	assert_string_equal(str(b, "cron"), "@hourly");
	assert_string_equal(arr(b, "command", 2), "/usr/local/bin/tick --fast");
	assert_string_equal(str(c, "cron"), "0 2 * * mon-fri");
	assert_string_equal(arr(c, "command", 2), "/opt/x.sh");
	assert_string_equal(str(a, "name"), "crontab-echo-3cc58a26");
	assert_string_equal(str(b, "name"), "crontab-tick-46835bb1");
	assert_string_equal(str(c, "name"), "crontab-x.sh-5b5d6366");
	json_decref(jobs);
}

/* The name is FNV-1a of the line (pinned above, so that a release that
 * changed it would fail here, not rename every imported job); elsewhere in another file, the same; a repeat
 * in one file is told apart; another line, another name. */
static void test_names(void **state)
{
	(void)state;
	static const char one[] = "*/5 * * * * echo hi; date\n";
	static const char two[] = "FOO=1\n# x\n1 1 1 1 1 other\n*/5 * * * * echo hi; date   \n"
				  "*/5 * * * * echo hi; date\n*/5 * * * * echo hi;  date\n";
	reports r;
	json_t *a = parse(one, strlen(one), NULL, &r), *b = parse(two, strlen(two), NULL, &r);
	assert_int_equal(json_array_size(b), 4);
	const char *n = str(json_array_get(a, 0), "name");
	assert_string_equal(str(json_array_get(b, 1), "name"), n);
	char want[64];
	snprintf(want, sizeof(want), "%s-2", n);
	assert_string_equal(str(json_array_get(b, 2), "name"), want);
	assert_string_not_equal(str(json_array_get(b, 3), "name"), n);
	assert_string_not_equal(str(json_array_get(b, 3), "name"), want);
	json_decref(a);
	json_decref(b);
}

static void test_env(void **state)
{
	(void)state;
	static const char text[] = "0 0 * * * before\n"
				   "SHELL=/bin/bash\n"
				   "PATH = /opt/bin:/usr/bin\n"
				   "GREETING=\"hello world\"\n"
				   "'QUOTED'='x y'\n"
				   "HOME=/srv/app\n"
				   "CRON_TZ=Europe/Berlin\n"
				   "MAILTO=\"\"\n"
				   "0 0 * * * after\n"
				   "GREETING=again\n"
				   "0 1 * * * last\n";
	reports r;
	json_t *jobs = parse(text, strlen(text), NULL, &r);
	assert_int_equal(r.n, 0);
	assert_int_equal(json_array_size(jobs), 3);
	json_t *a = json_array_get(jobs, 0), *b = json_array_get(jobs, 1),
	       *c = json_array_get(jobs, 2);
	/* a variable applies to the entries below it only */
	assert_int_equal(json_array_size(json_object_get(a, "env")), 1);
	assert_null(json_object_get(a, "tz"));
	assert_null(json_object_get(a, "cwd"));
	assert_string_equal(arr(b, "command", 0), "/bin/bash");
	assert_string_equal(arr(b, "env", 0), "SHELL=/bin/bash");
	assert_string_equal(arr(b, "env", 1), "PATH=/opt/bin:/usr/bin");
	assert_string_equal(arr(b, "env", 2), "GREETING=hello world");
	assert_string_equal(arr(b, "env", 3), "QUOTED=x y");
	assert_string_equal(arr(b, "env", 4), "HOME=/srv/app");
	assert_null(arr(b, "env", 5)); /* PATH was set: no default added */
	assert_string_equal(str(b, "tz"), "Europe/Berlin");
	assert_string_equal(str(b, "cwd"), "/srv/app");
	assert_string_equal(arr(c, "env", 2), "GREETING=again");
	json_decref(jobs);
}

static void test_percent(void **state)
{
	(void)state;
	static const char text[] = "* * * * * mail -s 'a\\%b' root%line one%line\\%two%\n"
				   "* * * * * date +\\%F\n"
				   "* * * * * cat%\n"
				   "* * * * * back\\slash\\n%x\\y\n";
	reports r;
	json_t *jobs = parse(text, strlen(text), NULL, &r);
	assert_int_equal(r.n, 0);
	json_t *a = json_array_get(jobs, 0), *b = json_array_get(jobs, 1),
	       *c = json_array_get(jobs, 2), *d = json_array_get(jobs, 3);
	assert_string_equal(arr(a, "command", 0), "/bin/sh");
	assert_string_equal(arr(a, "command", 4), "line one\nline%two\n");
	assert_string_equal(arr(a, "command", 5), "/bin/sh");
	assert_string_equal(arr(a, "command", 6), "mail -s 'a%b' root");
	assert_int_equal(json_array_size(json_object_get(b, "command")), 3);
	assert_string_equal(arr(b, "command", 2), "date +%F");
	/* an empty stdin, no newline added */
	assert_string_equal(arr(c, "command", 4), "");
	assert_string_equal(arr(c, "command", 6), "cat");
	assert_string_equal(arr(d, "command", 6), "back\\slash\\n");
	assert_string_equal(arr(d, "command", 4), "x\\y\n");
	json_decref(jobs);
}

static void test_system(void **state)
{
	(void)state;
	static const char text[] = "17 * * * * root cd / && run-parts --report /etc/cron.hourly\n"
				   "@weekly backup /usr/bin/dump\n"
				   "* * * * * onlyuser\n";
	model_crontab_opts o = {.system = true};
	reports r;
	json_t *jobs = parse(text, strlen(text), &o, &r);
	assert_int_equal(json_array_size(jobs), 2);
	assert_string_equal(str(json_array_get(jobs, 0), "user"), "root");
	assert_string_equal(arr(json_array_get(jobs, 0), "command", 2),
			    "cd / && run-parts --report /etc/cron.hourly");
	assert_string_equal(str(json_array_get(jobs, 1), "user"), "backup");
	assert_int_equal(r.n, 1);
	assert_int_equal(r.line[0], 3);
	assert_non_null(strstr(r.msg[0], "no command after the user column"));
	json_decref(jobs);

	model_crontab_opts u = {.user = "alice"};
	jobs = parse("* * * * * x\n", 12, &u, &r);
	assert_string_equal(str(json_array_get(jobs, 0), "user"), "alice");
	json_decref(jobs);
}

/* Each refusal names its line and says why; the lines around it go on. */
static void test_refused(void **state)
{
	(void)state;
	static const char text[] = "@reboot /usr/bin/startup\n"         /* 1 */
				   "0 0 * * * ok1\n"                    /* 2 */
				   "MAILTO=ops@example.org\n"           /* 3 */
				   "61 * * * * bad minute\n"            /* 4 */
				   "* * * *\n"                          /* 5 */
				   "* * * * * %only stdin\n"            /* 6 */
				   "* * * * * crlf\r\n"                 /* 7 */
				   "* * * * * nul\0byte\n"              /* 8 */
				   "@fortnightly x\n"                   /* 9 */
				   "RANDOM_DELAY=30\n"                  /* 10 */
				   "CRON_TZ=Mars/Olympus\n"             /* 11 */
				   "* * * * * \xff\xfe\n"               /* 12 */
				   "BAD-NAME=1\n"                       /* 13 */
				   "0 0 * * * ok2";                     /* 14 */
	reports r;
	json_t *jobs = parse(text, sizeof(text) - 1, NULL, &r);
	static const struct {
		size_t line;
		const char *says;
	} want[] = {
		{1, "@reboot: not expressible"},
		{3, "MAILTO=ops@example.org: dbcron mails nothing"},
		{4, "61 is out of range"},
		{5, "expected five time fields"},
		{6, "the command is empty"},
		{7, "(a file with CRLF line ends?)"},
		{8, "control character 0x00"},
		{9, "@fortnightly"},
		{10, "RANDOM_DELAY=30"},
		{12, "not UTF-8"},
		{13, "BAD-NAME"},
		/* the zone is refused by each entry below it */
		{14, "Mars/Olympus"},
	};
	size_t nwant = sizeof(want) / sizeof(want[0]);
	for (size_t i = 0; i < nwant && i < r.n; i++) {
		assert_int_equal(r.line[i], want[i].line);
		if (!strstr(r.msg[i], want[i].says))
			fail_msg("line %zu: '%s' does not say '%s'", r.line[i], r.msg[i], want[i].says);
	}
	assert_int_equal(r.n, nwant);
	assert_int_equal(json_array_size(jobs), 1);
	assert_string_equal(arr(json_array_get(jobs, 0), "command", 2), "ok1");
	json_decref(jobs);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_entries),  cmocka_unit_test(test_names),
		cmocka_unit_test(test_env),      cmocka_unit_test(test_percent),
		cmocka_unit_test(test_system),   cmocka_unit_test(test_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
