/* What a shell job runs as (exec/runas.c): the checks of a definition and
 * their messages, the scheduler's secrets, the user look-up, the env-file
 * checks and the environment a job gets.  Real files and the host's real
 * users; the parts that need root to set up (chown) say so and skip. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/alloc.h"
#include "exec/runas.h"

static void test_checks(void **state)
{
	(void)state;
	dbcron_err err = {0};

	assert_int_equal(runas_check_name("user", "nobody", &err), DBCRON_OK);
	assert_int_equal(runas_check_name("user", "svc_backup-2.x", &err), DBCRON_OK);
	assert_int_equal(runas_check_name("user", "host$", &err), DBCRON_OK);
	assert_int_equal(runas_check_name("user", "a b", &err), DBCRON_EINVAL);
	assert_string_equal(err.msg, "'a b': expected a user name (letters, digits, '.', '_' and '-')");
	assert_int_equal(runas_check_name("group", "-x", &err), DBCRON_EINVAL);
	assert_int_equal(runas_check_name("group", "", &err), DBCRON_EINVAL);
	assert_int_equal(runas_check_name("group", "$", &err), DBCRON_EINVAL);
	assert_int_equal(runas_check_name("user", "a:b", &err), DBCRON_EINVAL);
	assert_int_equal(runas_check_name("user", "a\nb", &err), DBCRON_EINVAL);

	assert_int_equal(runas_check_path("working directory", "/srv/x", &err), DBCRON_OK);
	assert_int_equal(runas_check_path("working directory", "srv", &err), DBCRON_EINVAL);
	assert_string_equal(err.msg, "'srv': expected an absolute path for the working directory");

	assert_int_equal(runas_check_env("A=1", &err), DBCRON_OK);
	assert_int_equal(runas_check_env("_a9=", &err), DBCRON_OK);
	assert_int_equal(runas_check_env("URL=x=y", &err), DBCRON_OK);
	/* messages never quote a value, nor a "name" that is not one */
	assert_int_equal(runas_check_env("s3cr3t", &err), DBCRON_EINVAL);
	assert_string_equal(err.msg, "expected KEY=VALUE");
	assert_int_equal(runas_check_env("postgresql://u:s3cr3t@h/d?a=b", &err), DBCRON_EINVAL);
	assert_null(strstr(err.msg, "s3cr3t"));
	assert_int_equal(runas_check_env("9A=1", &err), DBCRON_EINVAL);
	assert_int_equal(runas_check_env("=1", &err), DBCRON_EINVAL);
	assert_int_equal(runas_check_env("DBCRON_DB=sqlite:x", &err), DBCRON_EINVAL);
	assert_string_equal(err.msg, "'DBCRON_DB': names starting with DBCRON_ are set by the node");
	assert_int_equal(runas_check_env("K=\xff\xfe", &err), DBCRON_EINVAL);
	assert_string_equal(err.msg, "'K': the value is not valid UTF-8");

	assert_int_equal(runas_check_umask(0, &err), DBCRON_OK);
	assert_int_equal(runas_check_umask(0777, &err), DBCRON_OK);
	assert_int_equal(runas_check_umask(01000, &err), DBCRON_EINVAL);
}

static void job_with(dbcron_job *j)
{
	static char *argv[] = {"true", NULL};
	dbcron_job_init(j);
	j->name = "j";
	j->argv = argv;
	j->argc = 1;
}

static void test_validate(void **state)
{
	(void)state;
	dbcron_job j;
	dbcron_err err = {0};
	char *dup[] = {"A=1", "B=2", "A=3", NULL};
	char *bad[] = {"A=1", "nope", NULL};

	job_with(&j);
	assert_false(runas_any(&j));
	assert_int_equal(runas_validate(&j, &err), DBCRON_OK);
	j.user = "nobody";
	j.group = "nogroup";
	j.cwd = "/tmp";
	j.env_file = "/etc/dbcron/j.env";
	j.umask = 027;
	assert_true(runas_any(&j));
	assert_int_equal(runas_validate(&j, &err), DBCRON_OK);

	j.user = "no body";
	assert_int_equal(runas_validate(&j, &err), DBCRON_EINVAL);
	assert_string_equal(err.msg, "job 'j': user 'no body': expected a user name (letters, "
				     "digits, '.', '_' and '-')");
	j.user = NULL;
	j.cwd = "tmp";
	assert_int_equal(runas_validate(&j, &err), DBCRON_EINVAL);
	assert_string_equal(err.msg, "job 'j': cwd 'tmp': expected an absolute path for the "
				     "working directory");
	j.cwd = NULL;
	j.umask = 01000;
	assert_int_equal(runas_validate(&j, &err), DBCRON_EINVAL);
	j.umask = -1;
	j.env = dup;
	j.envc = 3;
	assert_int_equal(runas_validate(&j, &err), DBCRON_EINVAL);
	assert_string_equal(err.msg, "job 'j': env 'A' is given twice");
	j.env = bad;
	j.envc = 2;
	assert_int_equal(runas_validate(&j, &err), DBCRON_EINVAL);
	assert_string_equal(err.msg, "job 'j': env: expected KEY=VALUE");

	job_with(&j);
	j.inherit_env = true;
	assert_true(runas_any(&j));
}

static void test_secret_vars(void **state)
{
	(void)state;
	assert_true(runas_secret_var("DBCRON_DB=postgresql://u:p@h/d"));
	assert_true(runas_secret_var("DBCRON_DB_FILE=/etc/dbcron/url"));
	assert_true(runas_secret_var("DBCRON_JOB=stale"));
	assert_true(runas_secret_var("PGPASSWORD=p"));
	assert_true(runas_secret_var("PGPASSFILE=/root/.pgpass"));
	assert_true(runas_secret_var("PGSERVICEFILE=/etc/pg_service.conf"));
	assert_true(runas_secret_var("MYSQL_PWD=s3cret"));
	assert_false(runas_secret_var("MYSQL_PWDX=1"));
	assert_false(runas_secret_var("PGHOST=db"));
	assert_false(runas_secret_var("PGPASSWORDX=1"));
	assert_false(runas_secret_var("PATH=/bin"));
	assert_false(runas_secret_var("XDBCRON_DB=1"));
}

/* ---- the environment ---- */

static char *build(const dbcron_job *job, const runas_ident *id, char **node_env,
		   const char *file, int *rc, dbcron_err *err)
{
	static char *facts[] = {"DBCRON_JOB=j", "DBCRON_RUN_ID=5", NULL};
	runas_env e;
	runas_env_src src = {job, id, node_env, file, facts};
	*rc = runas_env_build(&src, &e, err);
	/* one line per variable, in the order built */
	char *out = dbcron__calloc(1, 8192);
	size_t n = 0;
	for (size_t i = 0; *rc == 0 && i < e.n; i++)
		n += (size_t)snprintf(out + n, 8192 - n, "%s\n", e.v[i]);
	if (*rc == 0)
		assert_null(e.v[e.n]);
	runas_env_free(&e);
	return out;
}

static void test_env_build(void **state)
{
	(void)state;
	dbcron_job j;
	dbcron_err err = {0};
	int rc;
	runas_ident id = {.name = "alice", .home = "/home/alice"};
	char *node[] = {"HOME=/root",   "USER=root",          "PATH=/node/bin", "LANG=C.UTF-8",
			"DBCRON_DB=x", "PGPASSWORD=s3cr3t", "DBCRON_JOB=old", "NOEQUALS",
			NULL};

	/* clean: only the documented set */
	job_with(&j);
	char *out = build(&j, &id, node, NULL, &rc, &err);
	assert_int_equal(rc, 0);
	assert_string_equal(out, "HOME=/home/alice\nLOGNAME=alice\nUSER=alice\nSHELL=/bin/sh\n"
				 "PATH=" RUNAS_DEFAULT_PATH "\nDBCRON_JOB=j\nDBCRON_RUN_ID=5\n");
	dbcron__free(out);

	/* inherited: the node's variables but its secrets, the user's
	 * identity over the node's, the node's PATH kept */
	j.inherit_env = true;
	out = build(&j, &id, node, NULL, &rc, &err);
	assert_int_equal(rc, 0);
	assert_string_equal(out, "HOME=/home/alice\nUSER=alice\nPATH=/node/bin\nLANG=C.UTF-8\n"
				 "LOGNAME=alice\nSHELL=/bin/sh\nDBCRON_JOB=j\nDBCRON_RUN_ID=5\n");
	dbcron__free(out);

	/* the env-file, then the job's env, then the facts: later wins */
	char *env[] = {"B=env", "PATH=/job/bin", NULL};
	j.inherit_env = false;
	j.env = env;
	j.envc = 2;
	j.env_file = "/etc/j.env";
	out = build(&j, &id, node, "# c\n\n  A=file a\r\nB=file\n\tC=  spaced  \nPGPASSWORD=own\n",
		    &rc, &err);
	assert_int_equal(rc, 0);
	assert_string_equal(out, "HOME=/home/alice\nLOGNAME=alice\nUSER=alice\nSHELL=/bin/sh\n"
				 "PATH=/job/bin\nA=file a\nB=env\nC=  spaced  \nPGPASSWORD=own\n"
				 "DBCRON_JOB=j\nDBCRON_RUN_ID=5\n");
	dbcron__free(out);

	/* a bad line: its number, never its text */
	out = build(&j, &id, node, "A=1\n\nthe password is s3cr3t\n", &rc, &err);
	assert_int_equal(rc, DBCRON_EINVAL);
	assert_string_equal(err.msg, "env-file '/etc/j.env' line 3: expected KEY=VALUE");
	dbcron__free(out);
	out = build(&j, &id, node, "DBCRON_DB=postgresql://u:s3cr3t@h/d\n", &rc, &err);
	assert_int_equal(rc, DBCRON_EINVAL);
	assert_null(strstr(err.msg, "s3cr3t"));
	assert_non_null(strstr(err.msg, "line 1: 'DBCRON_DB': names starting with DBCRON_"));
	dbcron__free(out);

	/* a user without a name or home: no HOME, USER, LOGNAME */
	runas_ident anon = {0};
	job_with(&j);
	out = build(&j, &anon, node, NULL, &rc, &err);
	assert_int_equal(rc, 0);
	assert_string_equal(out, "SHELL=/bin/sh\nPATH=" RUNAS_DEFAULT_PATH
				 "\nDBCRON_JOB=j\nDBCRON_RUN_ID=5\n");
	dbcron__free(out);

	/* out of memory at each allocation: an error, never a crash or leak */
	j.env = env;
	j.envc = 2;
	j.inherit_env = true;
	for (long k = 1; k < 40; k++) {
		runas_env e;
		runas_env_src src = {&j, &id, node, "A=1\n", NULL};
		dbcron__alloc_fail_at(k);
		rc = runas_env_build(&src, &e, &err);
		dbcron__alloc_fail_at(0);
		assert_true(rc == DBCRON_OK || rc == DBCRON_ENOMEM);
		runas_env_free(&e);
	}
}

/* ---- users and the env-file ---- */

static void test_ident(void **state)
{
	(void)state;
	dbcron_job j;
	runas_ident id;
	dbcron_err err = {0};

	job_with(&j);
	assert_int_equal(runas_ident_resolve(&j, "node n1", &id, &err), DBCRON_OK);
	assert_false(id.switch_ids);
	assert_int_equal(id.uid, geteuid());
	runas_ident_clear(&id);

	j.user = "no-such-user-dbcron";
	assert_int_equal(runas_ident_resolve(&j, "node n1", &id, &err), DBCRON_ENOTFOUND);
	assert_string_equal(err.msg, "user 'no-such-user-dbcron' not found on node n1");
	assert_int_equal(runas_lookup("user", "no-such-user-dbcron", &err), DBCRON_ENOTFOUND);
	assert_int_equal(runas_lookup("group", "no-such-group-dbcron", &err), DBCRON_ENOTFOUND);
	assert_string_equal(err.msg, "group 'no-such-group-dbcron' not found");

	struct passwd *me = getpwuid(geteuid());
	assert_non_null(me);
	/* the node's own user: nothing to switch, also when not root */
	j.user = me->pw_name;
	assert_int_equal(runas_ident_resolve(&j, "node n1", &id, &err), DBCRON_OK);
	assert_false(id.switch_ids);
	assert_string_equal(id.name, me->pw_name);
	runas_ident_clear(&id);

	struct passwd *nb = getpwnam("nobody");
	if (!nb || geteuid() == nb->pw_uid)
		return;
	j.user = "nobody";
	assert_int_equal(runas_ident_resolve(&j, "node n1", &id, &err), DBCRON_OK);
	assert_true(id.switch_ids);
	assert_int_equal(id.uid, nb->pw_uid);
	assert_int_equal(id.gid, nb->pw_gid);
	assert_string_equal(id.name, "nobody");
	bool primary = false;
	for (int i = 0; i < id.ngroups; i++)
		primary = primary || id.groups[i] == nb->pw_gid;
	assert_true(primary);
	runas_ident_clear(&id);
	j.group = "no-such-group-dbcron";
	assert_int_equal(runas_ident_resolve(&j, "node n1", &id, &err), DBCRON_ENOTFOUND);
	assert_string_equal(err.msg, "group 'no-such-group-dbcron' not found on node n1");
}

static void write_file(const char *path, const char *text, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	assert_int_equal(fchmod(fd, mode), 0);
	close(fd);
}

static void test_env_file(void **state)
{
	(void)state;
	char dir[] = "/tmp/dbcron-runas-XXXXXX", path[300], big[300], fifo[300], url[300];
	dbcron_err err = {0};
	runas_ident me = {0}, other = {.switch_ids = true, .uid = 65534, .gid = 65534,
				       .name = "nobody"};
	char *text = NULL;

	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/job.env", dir);
	write_file(path, "A=1\n", 0600);
	assert_int_equal(runas_env_file_read(path, &me, &text, &err), DBCRON_OK);
	assert_string_equal(text, "A=1\n");
	dbcron__free(text);

	/* root reads it, but hands it only to a user who could */
	if (geteuid() == 0) {
		assert_int_equal(runas_env_file_read(path, &other, &text, &err), DBCRON_EINVAL);
		assert_string_equal(strstr(err.msg, "user"),
				    "user 'nobody' may not read it (owner uid 0, mode 0600)");
		assert_int_equal(chmod(path, 0604), 0);
		assert_int_equal(runas_env_file_read(path, &other, &text, &err), DBCRON_OK);
		dbcron__free(text);
		/* group class: the user's group reads, others do not */
		assert_int_equal(chmod(path, 0640), 0);
		assert_int_equal(chown(path, 0, 65534), 0);
		assert_int_equal(runas_env_file_read(path, &other, &text, &err), DBCRON_OK);
		dbcron__free(text);
		assert_int_equal(chown(path, 0, 0), 0);
		assert_int_equal(runas_env_file_read(path, &other, &text, &err), DBCRON_EINVAL);
		/* owner class wins over the others: the user's own 0600 file */
		assert_int_equal(chown(path, 65534, 0), 0);
		assert_int_equal(chmod(path, 0600), 0);
		assert_int_equal(runas_env_file_read(path, &other, &text, &err), DBCRON_OK);
		dbcron__free(text);
	} else {
		print_message("not root: the mode checks for another user are not tested\n");
	}

	assert_int_equal(runas_env_file_read("/nonexistent/x.env", &me, &text, &err),
			 DBCRON_ENOTFOUND);
	assert_string_equal(err.msg, "env-file '/nonexistent/x.env': No such file or directory");
	assert_int_equal(runas_env_file_read(dir, &me, &text, &err), DBCRON_EINVAL);
	assert_non_null(strstr(err.msg, "not a regular file"));
	snprintf(fifo, sizeof(fifo), "%s/fifo", dir);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	assert_int_equal(runas_env_file_read(fifo, &me, &text, &err), DBCRON_EINVAL);
	assert_non_null(strstr(err.msg, "not a regular file"));
	snprintf(big, sizeof(big), "%s/big.env", dir);
	int fd = open(big, O_WRONLY | O_CREAT, 0600);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, RUNAS_ENV_FILE_MAX + 1), 0);
	close(fd);
	assert_int_equal(runas_env_file_read(big, &me, &text, &err), DBCRON_EINVAL);
	assert_non_null(strstr(err.msg, "larger than 256 KiB"));

	/* the node's own secrets: its URL file and libpq's password file */
	snprintf(url, sizeof(url), "%s/db.url", dir);
	write_file(url, "DB=postgresql://u:s3cr3t@h/d\n", 0600);
	assert_int_equal(runas_env_file_read(url, &me, &text, &err), DBCRON_OK);
	dbcron__free(text);
	runas_secret_file_add(url);
	assert_int_equal(runas_env_file_read(url, &me, &text, &err), DBCRON_EINVAL);
	assert_non_null(strstr(err.msg, "the node keeps its own database secret there"));
	assert_null(strstr(err.msg, "s3cr3t"));
	setenv("PGPASSFILE", path, 1);
	assert_int_equal(runas_env_file_read(path, &me, &text, &err), DBCRON_EINVAL);
	unsetenv("PGPASSFILE");

	unlink(path);
	unlink(big);
	unlink(fifo);
	unlink(url);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_checks),      cmocka_unit_test(test_validate),
		cmocka_unit_test(test_secret_vars), cmocka_unit_test(test_env_build),
		cmocka_unit_test(test_ident),       cmocka_unit_test(test_env_file),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
