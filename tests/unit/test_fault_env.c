/*
 * DBCRON_TEST_FAULTS reaches the store's fault seam only in a build
 * configured with DBCRON_FAULT_SEAM=ON.  This file is built twice:
 *   test_fault_env      against the library as configured; FAULT_SEAM_BUILT
 *                       (1 or 0, from CMake) says which way, and a store
 *                       opened with the variable set either fails its
 *                       statements as the spec says or ignores it;
 *   test_fault_env_off  with src/store/fault_env.c compiled here without
 *                       the option (FAULT_ENV_ALONE, no library): the gate
 *                       returns NULL whatever the environment holds, as it
 *                       does in a release or package build.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <cmocka.h>

#include "store/store.h"

static void test_gate(void **state)
{
	(void)state;
	setenv("DBCRON_TEST_FAULTS", "stmt=any,kind=conn,times=0", 1);
#if defined(FAULT_ENV_ALONE) || !FAULT_SEAM_BUILT
	assert_null(store_fault_env());
#else
	assert_non_null(store_fault_env());
	assert_string_equal(store_fault_env(), "stmt=any,kind=conn,times=0");
#endif
	setenv("DBCRON_TEST_FAULTS", "", 1);
	assert_null(store_fault_env());
	unsetenv("DBCRON_TEST_FAULTS");
	assert_null(store_fault_env());
}

#ifndef FAULT_ENV_ALONE
/* Through store_open: the spec arms the handle (or a bad one refuses the
 * open) in a seam build, and changes nothing in another. */
static void test_store_open(void **state)
{
	(void)state;
	char dir[] = "/tmp/dbcron-faultenv-XXXXXX", url[128];
	assert_non_null(mkdtemp(dir));
	snprintf(url, sizeof(url), "sqlite:%s/f.db", dir);
	store *s = NULL;
	dbcron_err err = {0};

	setenv("DBCRON_TEST_FAULTS", "stmt=any,kind=conn,times=0", 1);
	assert_int_equal(store_open(url, &s, &err), DBCRON_OK);
	int rc = store_migrate(s, NULL, NULL, &err);
	store_close(s);
	s = NULL;
#if FAULT_SEAM_BUILT
	assert_int_equal(rc, DBCRON_ECONN);
#else
	assert_int_equal(rc, DBCRON_OK);
#endif

	setenv("DBCRON_TEST_FAULTS", "stmt=nosuch,kind=busy", 1);
	rc = store_open(url, &s, &err);
	store_close(s);
#if FAULT_SEAM_BUILT
	assert_int_equal(rc, DBCRON_EINVAL);
#else
	assert_int_equal(rc, DBCRON_OK);
#endif
	unsetenv("DBCRON_TEST_FAULTS");
	char path[160];
	static const char *const sfx[] = {"", "-wal", "-shm"};
	for (int i = 0; i < 3; i++) {
		snprintf(path, sizeof(path), "%s/f.db%s", dir, sfx[i]);
		unlink(path);
	}
	rmdir(dir);
}
#endif

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_gate),
#ifndef FAULT_ENV_ALONE
		cmocka_unit_test(test_store_open),
#endif
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
