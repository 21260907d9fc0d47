/*
 * The dbcron_db handle (dbcron/db.h): owns one store connection, opened
 * with its schema checked (or migrated on request), and nothing else, so a
 * handle is exactly a store a library user may hold.
 */
#define _GNU_SOURCE /* program_invocation_short_name */
#include <errno.h>
#include <string.h>

#include "api/api.h"
#include "core/alloc.h"
#include "core/text.h"
#include "dbcron/dbcron.h"
#include "exec/runas.h"

struct dbcron_db {
	store *st;
};

store *api__store(dbcron_db *db)
{
	return db->st;
}

const char *dbcron_version(void)
{
	return DBCRON_VERSION;
}

int dbcron_version_number(void)
{
	return DBCRON_VERSION_NUMBER;
}

int dbcron_db_open_ex(const char *url, unsigned flags, dbcron_db **out, dbcron_err *err)
{
	int from = 0, to = 0, rc;
	if (!url || !out)
		return dbcron_err_set(err, DBCRON_EINVAL, "dbcron_db_open: url and out are required");
	if (flags & ~(unsigned)DBCRON_DB_INIT)
		return dbcron_err_set(err, DBCRON_EINVAL, "dbcron_db_open: unknown flags 0x%x", flags);
	dbcron_db *db = dbcron__calloc(1, sizeof(*db));
	if (!db)
		return dbcron_err_set(err, DBCRON_ENOMEM, "out of memory");
	rc = store_open(url, &db->st, err);
	if (rc == DBCRON_OK)
		rc = (flags & DBCRON_DB_INIT) ? store_migrate(db->st, &from, &to, err)
					      : store_check_schema(db->st, err);
	if (rc) {
		dbcron_db_close(db);
		return rc;
	}
	dbcron_db_set_actor(db, NULL);
	*out = db;
	return DBCRON_OK;
}

int dbcron_db_open(const char *url, dbcron_db **out, dbcron_err *err)
{
	return dbcron_db_open_ex(url, 0, out, err);
}

int dbcron_db_open_file(const char *path, unsigned flags, dbcron_db **out, dbcron_err *err)
{
	char *url;
	dbcron_err e = {0};
	if (!path)
		return dbcron_err_set(err, DBCRON_EINVAL, "dbcron_db_open_file: path is required");
	int rc = store_url_file_read(path, &url, &e);
	if (rc)
		return dbcron_err_set(err, rc, "%s: %s", path, e.msg);
	/* a node of this process hands no job this file */
	runas_secret_file_add(path);
	rc = dbcron_db_open_ex(url, flags, out, err);
	explicit_bzero(url, strlen(url));
	dbcron__free(url);
	return rc;
}

void dbcron_db_close(dbcron_db *db)
{
	if (!db)
		return;
	if (db->st)
		store_close(db->st);
	dbcron__free(db);
}

void dbcron_db_set_actor(dbcron_db *db, const char *actor)
{
	char def[STORE_ACTOR_MAX];
	if (!db)
		return;
	if (!actor || !*actor) {
		dbcron__textf(def, sizeof(def), "lib:%s",
			      *program_invocation_short_name ? program_invocation_short_name : "?");
		actor = def;
	}
	store_set_actor(db->st, actor);
}

int dbcron_db_now_ms(dbcron_db *db, int64_t *now_ms, dbcron_err *err)
{
	return store_now_ms(db->st, now_ms, err);
}
