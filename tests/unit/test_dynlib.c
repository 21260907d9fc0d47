/*
 * Libraries loaded on first use (src/core/dynlib.c): a library that loads
 * fills every function of the table with the library's own; one that is
 * missing, or lacks a function, is an error that names the library, its
 * Debian package and what needs it, on the first call and on every later
 * one, and leaves nothing half-filled that a caller could reach.  Tested on
 * libm, which every C program here has, and on names that cannot exist.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "core/dynlib.h"

#define M_FUNCS(X) X(cos) X(sqrt)
typedef struct m_api {
	M_FUNCS(DBCRON_DYNLIB_MEMBER)
} m_api;
#define M_SYM(f) DBCRON_DYNLIB_SYM(m_api, f)
static const dbcron_dynsym m_syms[] = {M_FUNCS(M_SYM)};

static void test_loads_every_function(void **state)
{
	(void)state;
	m_api m = {0};
	dbcron_dynlib lib = {.soname = "libm.so.6", .package = "libc6", .what = "Arithmetic",
			     .syms = m_syms, .nsyms = 2, .api = &m};
	dbcron_err err = {0};
	assert_int_equal(dbcron__dynlib_load(&lib, &err), DBCRON_OK);
	assert_non_null(m.cos);
	assert_non_null(m.sqrt);
	assert_true(m.sqrt(16.0) == 4.0);
	assert_true(m.cos(0.0) == 1.0);
	/* once: the second call changes nothing */
	m_api before = m;
	assert_int_equal(dbcron__dynlib_load(&lib, &err), DBCRON_OK);
	assert_memory_equal(&before, &m, sizeof(m));
}

static void test_missing_library_is_named(void **state)
{
	(void)state;
	m_api m = {0};
	dbcron_dynlib lib = {.soname = "libdbcron-no-such-library.so.9", .package = "libnosuch9",
			     .what = "Nothing", .syms = m_syms, .nsyms = 2, .api = &m};
	for (int i = 0; i < 2; i++) {
		dbcron_err err = {0};
		assert_int_equal(dbcron__dynlib_load(&lib, &err), DBCRON_EUNSUPPORTED);
		assert_int_equal(err.code, DBCRON_EUNSUPPORTED);
		assert_non_null(strstr(err.msg, "Nothing support needs libdbcron-no-such-library.so.9"));
		assert_non_null(strstr(err.msg, "(Debian package libnosuch9)"));
	}
	assert_null(m.cos);
	assert_null(m.sqrt);
}

#define BAD_FUNCS(X) X(cos) X(dbcron_no_such_function)
int dbcron_no_such_function(void);
typedef struct bad_api {
	BAD_FUNCS(DBCRON_DYNLIB_MEMBER)
} bad_api;
#define BAD_SYM(f) DBCRON_DYNLIB_SYM(bad_api, f)
static const dbcron_dynsym bad_syms[] = {BAD_FUNCS(BAD_SYM)};

static void test_missing_function_is_named(void **state)
{
	(void)state;
	bad_api b = {0};
	dbcron_dynlib lib = {.soname = "libm.so.6", .package = "libc6", .what = "Arithmetic",
			     .syms = bad_syms, .nsyms = 2, .api = &b};
	dbcron_err err = {0};
	assert_int_equal(dbcron__dynlib_load(&lib, &err), DBCRON_EUNSUPPORTED);
	assert_non_null(strstr(err.msg, "libm.so.6 has no function dbcron_no_such_function"));
	assert_null(b.cos);
	dbcron_err again = {0};
	assert_int_equal(dbcron__dynlib_load(&lib, &again), DBCRON_EUNSUPPORTED);
	assert_string_equal(err.msg, again.msg);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_loads_every_function),
		cmocka_unit_test(test_missing_library_is_named),
		cmocka_unit_test(test_missing_function_is_named),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
