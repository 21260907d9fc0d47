/*
 * The database URL kept in a file (--db-file, DBCRON_DB_FILE,
 * dbcron_db_open_file, a node's db_file): one rule for every reader, so
 * that a URL with a password can stay out of argv and the environment.
 * Owns nothing past the call; a refused file's bytes are wiped, and no
 * message ever quotes the file's content.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "core/alloc.h"
#include "store/store.h"

/* A URL file larger than this is not a URL. */
#define URL_FILE_MAX (64 * 1024)

int store_url_file_read(const char *path, char **url, dbcron_err *err)
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
