/*
 * The MySQL / MariaDB URL with several hosts (src/store/mysql/hosts.c):
 * each host and port read in order, the user-info and database around
 * them, bad lists refused; the masker hides the password of such a URL;
 * and a handle whose hosts all refuse says which host it tried last, by the
 * masked URL.  No server: the hosts are 127.0.0.1 ports 1 and 2, which
 * refuse at once.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "store/mysql/mysql_int.h"
#include "store/store.h"

static int parse(store_conn *q, const char *url, dbcron_err *err)
{
	memset(q, 0, sizeof(*q));
	store_mask_url(url, q->masked, sizeof(q->masked));
	return my__parse_url(q, url, err);
}

static void assert_host(const store_conn *q, int i, const char *name, unsigned port)
{
	if (name)
		assert_string_equal(q->hosts[i].name, name);
	else
		assert_null(q->hosts[i].name);
	assert_int_equal(q->hosts[i].port, port);
}

static void test_hosts_in_order(void **state)
{
	(void)state;
	store_conn *q = calloc(1, sizeof(*q));
	dbcron_err err = {0};
	assert_int_equal(parse(q, "mysql://u:pw@h1:3306,h2:3307,h3/db?socket=/s", &err), DBCRON_OK);
	assert_int_equal(q->nhosts, 3);
	assert_host(q, 0, "h1", 3306);
	assert_host(q, 1, "h2", 3307);
	assert_host(q, 2, "h3", 0);
	assert_string_equal(q->user, "u");
	assert_string_equal(q->pass, "pw");
	assert_string_equal(q->dbname, "db");
	assert_string_equal(q->socket, "/s");
	my__free_url(q);
	/* an '@' in the password needs no encoding with several hosts either */
	assert_int_equal(parse(q, "mariadb://u:p@ss@h1:1,h2:2/d", &err), DBCRON_OK);
	assert_string_equal(q->pass, "p@ss");
	assert_int_equal(q->nhosts, 2);
	assert_host(q, 0, "h1", 1);
	assert_host(q, 1, "h2", 2);
	my__free_url(q);
	/* one host, and none (the driver's default), as before */
	assert_int_equal(parse(q, "mysql://root@127.0.0.1:1234/x", &err), DBCRON_OK);
	assert_int_equal(q->nhosts, 1);
	assert_host(q, 0, "127.0.0.1", 1234);
	my__free_url(q);
	assert_int_equal(parse(q, "mysql://root@/x", &err), DBCRON_OK);
	assert_int_equal(q->nhosts, 1);
	assert_host(q, 0, NULL, 0);
	my__free_url(q);
	free(q);
}

static void test_bad_lists(void **state)
{
	(void)state;
	static const struct {
		const char *url, *msg;
	} bad[] = {
		{"mysql://u@h1,,h2/db", "empty host"},
		{"mysql://u@h1,/db", "empty host"},
		{"mysql://u@,h1/db", "empty host"},
		{"mysql://u@h1:99999,h2/db", "bad port"},
		{"mysql://u@h1,h2:x/db", "bad port"},
		{"mysql://u@h1:3306,h2:3306", "no database"},
		{"mysql://u@a,b,c,d,e,f,g,h,i,j,k,l,m,n,o,p,q/db", "more than 16 hosts"},
	};
	store_conn *q = calloc(1, sizeof(*q));
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		dbcron_err err = {0};
		int rc = parse(q, bad[i].url, &err);
		if (rc != DBCRON_EINVAL || !strstr(err.msg, bad[i].msg))
			fail_msg("%s: rc %d, '%s' (want '%s')", bad[i].url, rc, err.msg, bad[i].msg);
		my__free_url(q);
	}
	free(q);
}

static void test_masked(void **state)
{
	(void)state;
	char buf[256];
	store_mask_url("mysql://u:zqjx@h1:3306,h2:3307,h3/db", buf, sizeof(buf));
	assert_string_equal(buf, "mysql://u:***@h1:3306,h2:3307,h3/db");
	store_mask_url("mariadb://u:zq@jx@h1,h2/db", buf, sizeof(buf));
	assert_null(strstr(buf, "zq"));
	assert_null(strstr(buf, "jx"));
	assert_non_null(strstr(buf, "@h1,h2/db"));
}

static void test_all_refuse(void **state)
{
	(void)state;
	store *s = NULL;
	dbcron_err err = {0};
	int rc = store_open("mysql://u:zqvk@127.0.0.1:1,127.0.0.1:2/db", &s, &err);
	assert_int_equal(rc, DBCRON_ECONN);
	assert_null(s);
	assert_non_null(strstr(err.msg, "mysql://u:***@127.0.0.1:1,127.0.0.1:2/db"));
	assert_non_null(strstr(err.msg, "host 127.0.0.1:2"));
	assert_null(strstr(err.msg, "zqvk"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hosts_in_order),
		cmocka_unit_test(test_bad_lists),
		cmocka_unit_test(test_masked),
		cmocka_unit_test(test_all_refuse),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
