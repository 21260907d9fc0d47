/* Run parameters (model/params.h): the key rule, a job's declaration, the
 * object a run records, and what a run sees (its own, then defaults). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "core/alloc.h"
#include "model/params.h"

static void test_key(void **state)
{
	(void)state;
	assert_true(model_param_key_ok("X", 1));
	assert_true(model_param_key_ok("_a9", 3));
	assert_false(model_param_key_ok("9a", 2));
	assert_false(model_param_key_ok("a-b", 3));
	assert_false(model_param_key_ok("", 0));
	char k[80];
	memset(k, 'k', sizeof(k));
	assert_true(model_param_key_ok(k, MODEL_PARAM_KEY_MAX));
	assert_false(model_param_key_ok(k, MODEL_PARAM_KEY_MAX + 1));
}

static void test_decl(void **state)
{
	(void)state;
	dbcron_err err = {0};
	assert_int_equal(model_params_decl_check("X,region=eu,empty=,eq=a=b", &err), DBCRON_OK);
	assert_int_equal(model_params_decl_check("X,X=1", &err), DBCRON_EINVAL);
	assert_non_null(strstr(err.msg, "declared twice"));
	assert_int_equal(model_params_decl_check("a,,b", &err), DBCRON_EINVAL);
	assert_int_equal(model_params_decl_check("a,", &err), DBCRON_EINVAL);
	assert_int_equal(model_params_decl_check("", &err), DBCRON_EINVAL);
	assert_int_equal(model_params_decl_check("a-b", &err), DBCRON_EINVAL);
	/* UPSTREAM_* is the job: reactions' (issue 26 item 2) */
	assert_int_equal(model_params_decl_check("a,UPSTREAM_JOB", &err), DBCRON_EINVAL);
	assert_non_null(strstr(err.msg, "reserved"));
	assert_int_equal(model_params_decl_check("UPSTREAMX,UPSTREAM", &err), DBCRON_OK);
	char many[400] = "";
	for (int i = 0; i < MODEL_PARAM_MAX + 1; i++)
		snprintf(many + strlen(many), sizeof(many) - strlen(many), "%sk%d", i ? "," : "", i);
	assert_int_equal(model_params_decl_check(many, &err), DBCRON_EINVAL);
	assert_non_null(strstr(err.msg, "more than 32"));
}

static void test_for_run(void **state)
{
	(void)state;
	dbcron_err err = {0};
	char *json = NULL;
	const char *kv[] = {"b=2", "a=x=y"};
	assert_int_equal(model_params_for_run("j", NULL, kv, 2, &json, &err), DBCRON_OK);
	assert_string_equal(json, "{\"a\":\"x=y\",\"b\":\"2\"}");
	dbcron__free(json);
	/* declared: defaults of keys not given, given values win */
	const char *one[] = {"region=us"};
	assert_int_equal(model_params_for_run("j", "X,region=eu,n=1", one, 1, &json, &err), DBCRON_OK);
	assert_string_equal(json, "{\"n\":\"1\",\"region\":\"us\"}");
	dbcron__free(json);
	const char *up[] = {"UPSTREAM_STATE=failed"};
	assert_int_equal(model_params_for_run("j", NULL, up, 1, &json, &err), DBCRON_EINVAL);
	assert_non_null(strstr(err.msg, "job: reactions only"));
	assert_int_equal(model_params_for_run("j", NULL, NULL, 0, &json, &err), DBCRON_OK);
	assert_null(json);
	const char *bad[] = {"other=1"};
	assert_int_equal(model_params_for_run("j", "X,region=eu", bad, 1, &json, &err), DBCRON_EINVAL);
	assert_string_equal(err.msg, "job 'j' takes no parameter 'other' (it takes: X, region)");
	assert_null(json);
	const char *twice[] = {"a=1", "a=2"};
	assert_int_equal(model_params_for_run("j", NULL, twice, 2, &json, &err), DBCRON_EINVAL);
	const char *noeq[] = {"a"};
	assert_int_equal(model_params_for_run("j", NULL, noeq, 1, &json, &err), DBCRON_EINVAL);
	char *big = test_malloc(MODEL_PARAM_VALUE_MAX + 4);
	memset(big, 'v', MODEL_PARAM_VALUE_MAX + 3);
	big[0] = 'a', big[1] = '=', big[MODEL_PARAM_VALUE_MAX + 3] = '\0';
	const char *bigkv[] = {big};
	assert_int_equal(model_params_for_run("j", NULL, bigkv, 1, &json, &err), DBCRON_EINVAL);
	big[MODEL_PARAM_VALUE_MAX + 2] = '\0'; /* exactly the bound */
	assert_int_equal(model_params_for_run("j", NULL, bigkv, 1, &json, &err), DBCRON_OK);
	dbcron__free(json);
	test_free(big);
	const char *nonutf8[] = {"a=\xff"};
	assert_int_equal(model_params_for_run("j", NULL, nonutf8, 1, &json, &err), DBCRON_EINVAL);
	assert_int_equal(model_params_for_run("j", NULL, kv, MODEL_PARAM_MAX + 1, &json, &err),
			 DBCRON_EINVAL);
}

typedef struct seen {
	char buf[256];
} seen;

static int collect(void *ctx, const char *k, const char *v)
{
	seen *s = ctx;
	snprintf(s->buf + strlen(s->buf), sizeof(s->buf) - strlen(s->buf), "%s=%s;", k, v);
	return 0;
}

static void test_each(void **state)
{
	(void)state;
	seen s = {""};
	assert_int_equal(model_params_each("{\"X\":\"1\",\"bad-key\":\"2\",\"n\":3}", "X=9,region=eu,Y",
					   collect, &s), 0);
	assert_string_equal(s.buf, "X=1;region=eu;");
	s.buf[0] = '\0';
	assert_int_equal(model_params_each(NULL, "region=eu", collect, &s), 0);
	assert_string_equal(s.buf, "region=eu;");
	s.buf[0] = '\0';
	assert_int_equal(model_params_each("not json", NULL, collect, &s), 0);
	assert_string_equal(s.buf, "");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_key),
		cmocka_unit_test(test_decl),
		cmocka_unit_test(test_for_run),
		cmocka_unit_test(test_each),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
