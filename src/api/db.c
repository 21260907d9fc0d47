/*
 * The dbcron_db handle (dbcron/db.h): owns one store connection, opened
 * with its schema checked (or migrated on request), and nothing else, so a
 * handle is exactly a store a library user may hold.  Also the URL file
 * rule (one line, bounded, never echoed), for dbcron_db_open_file and the
 * CLI's --db-file alike.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "api/api.h"
#include "core/alloc.h"
#include "dbcron/dbcron.h"
#include "exec/runas.h"

/* A URL file larger than this is not a URL. */
#define URL_FILE_MAX (64 * 1024)

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
	*out = db;
	return DBCRON_OK;
}

int dbcron_db_open(const char *url, dbcron_db **out, dbcron_err *err)
{
	return dbcron_db_open_ex(url, 0, out, err);
}

int api__url_file_read(const char *path, char **url, dbcron_err *err)
{
	char *buf = NULL;
	size_t n = 0;
	ssize_t got = 0;
	int rc = DBCRON_EINVAL, fd;

	*url = NULL;
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return dbcron_err_set(err, DBCRON_EIO, "%s", strerror(errno));
	if (!(buf = dbcron__malloc(URL_FILE_MAX + 1))) {
		rc = dbcron_err_set(err, DBCRON_ENOMEM, "out of memory");
		goto out_close;
	}
	while (n <= URL_FILE_MAX) {
		got = read(fd, buf + n, URL_FILE_MAX + 1 - n);
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			break;
		n += (size_t)got;
	}
	if (got < 0) {
		rc = dbcron_err_set(err, DBCRON_EIO, "%s", strerror(errno));
		goto out_free;
	}
	if (n > URL_FILE_MAX) {
		dbcron_err_set(err, rc, "larger than 64 KiB, not a database URL");
		goto out_free;
	}
	size_t lo = 0, hi = n;
	while (lo < hi && isspace((unsigned char)buf[lo]))
		lo++;
	while (hi > lo && isspace((unsigned char)buf[hi - 1]))
		hi--;
	if (lo == hi) {
		dbcron_err_set(err, rc, "empty (it should hold the database URL)");
		goto out_free;
	}
	if (memchr(buf + lo, '\0', hi - lo) || memchr(buf + lo, '\n', hi - lo)) {
		dbcron_err_set(err, rc, "more than one line (it should hold the database URL only)");
		goto out_free;
	}
	memmove(buf, buf + lo, hi - lo);
	buf[hi - lo] = '\0';
	*url = buf;
	buf = NULL;
	rc = DBCRON_OK;
out_free:
	if (buf)
		explicit_bzero(buf, n < URL_FILE_MAX ? n : URL_FILE_MAX);
	dbcron__free(buf);
out_close:
	close(fd);
	return rc;
}

int dbcron_db_open_file(const char *path, unsigned flags, dbcron_db **out, dbcron_err *err)
{
	char *url;
	dbcron_err e = {0};
	if (!path)
		return dbcron_err_set(err, DBCRON_EINVAL, "dbcron_db_open_file: path is required");
	int rc = api__url_file_read(path, &url, &e);
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

int dbcron_db_now_ms(dbcron_db *db, int64_t *now_ms, dbcron_err *err)
{
	return store_now_ms(db->st, now_ms, err);
}
