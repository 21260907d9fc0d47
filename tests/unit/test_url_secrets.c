/*
 * The URL masker (store_mask_url, store_url_secrets in src/store/url.c)
 * and what store_open prints for a PostgreSQL URL it cannot use: for every
 * way of writing a password (user:password@ with '@', '/', '?', '#', ':'
 * or '%' in it, ?password=, key=value password=, a nested URI), neither
 * the masked URL nor any error contains a piece of the password.  The
 * PostgreSQL URLs point at 127.0.0.1 port 1, so no server is needed: the
 * connection is refused at once.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/dialect.h"
#include "store/store.h"

/* The passwords below are made of these pieces, which appear nowhere else
 * in the URLs or in any message dbcron or libpq prints. */
static const char *const pieces[] = {"zq", "jx", "vk", "wy"};

static void assert_no_piece(const char *text, const char *what)
{
	for (size_t i = 0; i < sizeof(pieces) / sizeof(pieces[0]); i++)
		if (strstr(text, pieces[i]))
			fail_msg("%s: '%s' shows '%s' of the password", what, text, pieces[i]);
}

static void test_mask_table(void **state)
{
	(void)state;
	static const struct {
		const char *in, *out;
	} cases[] = {
		{"postgresql://u:s3cret@h:5432/db", "postgresql://u:***@h:5432/db"},
		{"postgresql://u:p@ss@127.0.0.1:1/db", "postgresql://u:***@127.0.0.1:1/db"},
		{"postgresql://u:pa/ss@h/db", "postgresql://u:***@h/db"},
		{"postgresql://u:pa?ss@h/db", "postgresql://u:***@h/db"},
		{"postgresql://u:pa#ss@h/db", "postgresql://u:***@h/db"},
		{"postgresql://u:pa:ss@h/db", "postgresql://u:***@h/db"},
		{"postgresql://u:p%40ss@h/db", "postgresql://u:***@h/db"},
		{"postgres://u:s@h/db?sslmode=disable&password=s3", "postgres://u:***@h/db?sslmode=disable&password=***"},
		{"postgresql://h/db?password=p@ss&user=u", "postgresql://h/db?password=***&user=u"},
		{"postgresql://h/db?password=p&ss", "postgresql://h/db?password=***"},
		{"postgresql://h/db?PASSWORD=x", "postgresql://h/db?PASSWORD=***"},
		{"postgresql://h/db&password=x", "postgresql://h/db&password=***"},
		{"postgresql://u:pw@h/db?application_name=me@host", "postgresql://u:***@h/db?application_name=***"},
		{"postgresql://h/?dbname=postgresql://u:pw@h2/db", "postgresql://h/?dbname=***"},
		/* cannot tell a port and a database from a password: hides more */
		{"postgresql://h:5432/my@db", "postgresql://h:***@db"},
		{"postgresql://u:pw@[::1]:5432/db", "postgresql://u:***@[::1]:5432/db"},
		{"postgresql://[::1]:5432/db", "postgresql://[::1]:5432/db"},
		{"postgresql://u@h/db", "postgresql://u@h/db"},
		/* multi-host URLs (issue 25): the hosts and ports stay, only the
		 * password goes */
		{"postgresql://u:s3cret@h1:5432,h2:5433/db?target_session_attrs=read-write",
		 "postgresql://u:***@h1:5432,h2:5433/db?target_session_attrs=read-write"},
		{"postgresql://u:pw@[::1]:5432,[::2]:5433/db", "postgresql://u:***@[::1]:5432,[::2]:5433/db"},
		{"postgresql://h1,h2,h3/db?password=pw&target_session_attrs=primary",
		 "postgresql://h1,h2,h3/db?password=***&target_session_attrs=primary"},
		{"host=h1,h2 port=5432,5433 password=s3 dbname=x target_session_attrs=read-write",
		 "host=h1,h2 port=5432,5433 password=*** dbname=x target_session_attrs=read-write"},
		{"mysql://u:Sup3rSecret@h:3306/db", "mysql://u:***@h:3306/db"},
		{"host=h password=p@ss dbname=x", "host=h password=*** dbname=x"},
		{"host=h password = 's3 c\\'ret' dbname=x", "host=h password = *** dbname=x"},
		{"host=h PASSWORD=zz", "host=h PASSWORD=***"},
		{"dbname='postgresql://u:pw@h/db' host=x", "dbname='postgresql://u:***@h/db' host=x"},
		{"host=/tmp/x port=5 user=postgres", "host=/tmp/x port=5 user=postgres"},
		{"sqlite:./x.db", "sqlite:./x.db"},
		{"", ""},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char buf[256];
		size_t n = store_mask_url(cases[i].in, buf, sizeof(buf));
		if (strcmp(buf, cases[i].out) != 0)
			fail_msg("mask '%s': got '%s', want '%s'", cases[i].in, buf, cases[i].out);
		assert_int_equal(n, strlen(cases[i].out));
	}
	char small[8];
	assert_int_equal(store_mask_url("password=s3cret", small, sizeof(small)), 12);
	assert_string_equal(small, "passwor");
	assert_int_equal(store_mask_url(NULL, small, sizeof(small)), 0);
}

/* Every password form: the masked URL shows no piece of it. */
static const char *const forms[] = {
	"postgresql://u:zq@jx@127.0.0.1:1/db",
	"postgresql://u:zq@jx@vk@127.0.0.1:1/db",
	"postgresql://u:zq/jx@127.0.0.1:1/db",
	"postgresql://u:zq/jx@wy@127.0.0.1:1/db?connect_timeout=2",
	"postgresql://u:zq?jx@127.0.0.1:1/db",
	"postgresql://u:zq?x=jx@127.0.0.1:1/db",
	"postgresql://u:zq#jx@127.0.0.1:1/db",
	"postgresql://u:zq:jx@127.0.0.1:1/db",
	"postgresql://u:zq%40jx@127.0.0.1:1/db",
	"postgresql://u:zq%zzjx@127.0.0.1:1/db",
	"postgresql://u:zq&jx=vk@127.0.0.1:1/db",
	"postgresql://u@127.0.0.1:1/db?password=zq@jx",
	"postgresql://u@127.0.0.1:1/db?password=zq&jx",
	"postgresql://u@127.0.0.1:1/db?password=zq=jx",
	"postgresql://u@127.0.0.1:1/db?sslmode=disable&password=zq%jx",
	"postgresql://u@127.0.0.1:1/db&password=zqjx",
	"postgresql://u:zq@127.0.0.1:1/db?password=jx@vk",
	"host=127.0.0.1 port=1 password=zq@jx",
	"host=127.0.0.1 port=1 password='zq jx' dbname=db",
	"host=127.0.0.1 port=1 password='zq\\'jx'",
	"host=127.0.0.1 port=1 password='zqjx",
	"host=127.0.0.1 port=1 password=zqjx bogus",
	"host=127.0.0.1 port=1 dbname=postgresql://u:zq@jx@127.0.0.1:1/db",
	"postgresql://u:zq@127.0.0.1:1,127.0.0.1:2/db?target_session_attrs=read-write",
	"postgresql://u:zq@jx@127.0.0.1:1,127.0.0.1:2/db",
	"postgresql://u@127.0.0.1:1,127.0.0.1:2/db?password=zq&target_session_attrs=read-write",
	"host=127.0.0.1,127.0.0.1 port=1,2 password=zq@jx target_session_attrs=read-write",
};

static void test_mask_never_shows_password(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(forms) / sizeof(forms[0]); i++) {
		char buf[256];
		store_mask_url(forms[i], buf, sizeof(buf));
		assert_no_piece(buf, forms[i]);
	}
}

static void test_ambiguous(void **state)
{
	(void)state;
	static const struct {
		const char *url;
		bool ambiguous;
	} cases[] = {
		{"postgresql://u:p@ss@h/db", true},
		{"postgresql://u:pa/ss@h/db", true},
		{"postgresql://h/my@db", true},
		{"postgresql://u:p%40ss@h/db", false},
		{"postgresql://u:pa?ss@h/db", false},
		{"postgresql://u:pw@h/db?application_name=a@b", false},
		{"postgresql://u@h/db?password=p@ss", false},
		{"host=h password=p@ss", false},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		store_span sp[STORE_URL_SPANS_MAX];
		bool amb = !cases[i].ambiguous;
		store_url_secrets(cases[i].url, sp, STORE_URL_SPANS_MAX, &amb);
		if (amb != cases[i].ambiguous)
			fail_msg("'%s': ambiguous %d, want %d", cases[i].url, amb, cases[i].ambiguous);
	}
	/* more ranges than room: the last one covers the rest */
	char many[600] = "postgresql://h/db?";
	for (int i = 0; i < 40; i++)
		strcat(many, i ? "&password=zq" : "password=zq");
	store_span sp[4];
	size_t n = store_url_secrets(many, sp, 4, NULL);
	assert_int_equal(n, 4);
	assert_int_equal(sp[3].hi, strlen(many));
	char buf[700];
	store_mask_url(many, buf, sizeof(buf));
	assert_no_piece(buf, "40 password parameters");
}

/* store_open's message for each form: no piece of the password, the URL
 * shown masked, and an '@' or '/' that libpq would misread refused. */
static void test_open_errors(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(forms) / sizeof(forms[0]); i++) {
		store *s = NULL;
		dbcron_err err = {0};
		int rc = store_open(forms[i], &s, &err);
		assert_int_not_equal(rc, DBCRON_OK);
		assert_null(s);
		assert_true(err.msg[0] != '\0');
		assert_no_piece(err.msg, forms[i]);
	}
	store *s = NULL;
	dbcron_err err = {0};
	assert_int_equal(store_open("postgresql://u:zq@jx@127.0.0.1:1/db", &s, &err), DBCRON_EINVAL);
	assert_non_null(strstr(err.msg, "postgresql://u:***@127.0.0.1:1/db"));
	assert_non_null(strstr(err.msg, "percent-encoded"));
	assert_int_equal(store_open("postgresql://u:zq%40jx@127.0.0.1:1/db?connect_timeout=2", &s, &err),
			 DBCRON_ECONN);
	assert_non_null(strstr(err.msg, "cannot connect to postgresql://u:***@127.0.0.1:1/db"));
	/* a multi-host URL reaches libpq as written: it tries each host */
	assert_int_equal(store_open("postgresql://u:zq@127.0.0.1:1,127.0.0.1:2/db"
				    "?target_session_attrs=read-write",
				    &s, &err),
			 DBCRON_ECONN);
	assert_non_null(strstr(err.msg, "cannot connect to postgresql://u:***@127.0.0.1:1,127.0.0.1:2/db"
					"?target_session_attrs=read-write"));
	assert_non_null(strstr(err.msg, "port 1 failed"));
	assert_non_null(strstr(err.msg, "port 2 failed"));
	assert_int_equal(store_open("host=127.0.0.1,127.0.0.1 port=1,2 password=zq", &s, &err),
			 DBCRON_ECONN);
	assert_non_null(strstr(err.msg, "port 2 failed"));
	assert_no_piece(err.msg, "key=value multi-host");
	/* the password libpq takes from the environment is scrubbed from what
	 * libpq says, too: here it quotes it back as a bad port (the URL
	 * itself, shown first, holds no password) */
	setenv("PGPASSWORD", "zqjxvkwy", 1);
	assert_int_equal(store_open("host=127.0.0.1 port=zqjxvkwy", &s, &err), DBCRON_ECONN);
	unsetenv("PGPASSWORD");
	const char *said = strstr(err.msg, "port=zqjxvkwy: ");
	assert_non_null(said);
	assert_no_piece(said + 15, "PGPASSWORD quoted by libpq as the port");
	assert_non_null(strstr(said, "\"***\""));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mask_table),
		cmocka_unit_test(test_mask_never_shows_password),
		cmocka_unit_test(test_ambiguous),
		cmocka_unit_test(test_open_errors),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
