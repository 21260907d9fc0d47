/*
 * Libraries loaded on first use.  A dbcron process that never touches
 * PostgreSQL, MariaDB, the HTTP server or systemd does not load libpq,
 * libmariadb, libmicrohttpd or libsystemd, nor the thirty libraries they
 * pull in (Kerberos, LDAP, GnuTLS, ...): loading and relocating those was
 * most of the cost of starting the command.
 *
 * A user declares its functions once in an X-macro list, e.g.
 *
 *   #define MY_FUNCS(X) X(PQexec) X(PQclear)
 *   typedef struct { MY_FUNCS(DBCRON_DYNLIB_MEMBER) } my_api;
 *   static const dbcron_dynsym my_syms[] = { MY_FUNCS(...) };
 *
 * and calls through the struct once dbcron__dynlib_load() has filled it.
 * The compiler keeps each member's type that of the library's own
 * prototype (__typeof__), so a call through the table is checked exactly
 * as a direct call would be.
 */
#ifndef DBCRON_CORE_DYNLIB_H
#define DBCRON_CORE_DYNLIB_H

#include <stddef.h>

#include "dbcron/error.h"

/* A struct member for function f, of f's own type. */
#define DBCRON_DYNLIB_MEMBER(f) __typeof__(f) *f;
/* A dbcron_dynsym entry for function f of struct type T. */
#define DBCRON_DYNLIB_SYM(T, f) {#f, offsetof(T, f)},

typedef struct dbcron_dynsym {
	const char *name;
	size_t offset; /* of the function pointer in the user's struct */
} dbcron_dynsym;

typedef struct dbcron_dynlib {
	const char *soname;  /* what dlopen is given: "libpq.so.5" */
	const char *package; /* the Debian package that holds it: "libpq5" */
	const char *what;    /* what it is needed for: "PostgreSQL" */
	const dbcron_dynsym *syms;
	size_t nsyms;
	void *api; /* the user's struct of function pointers */
	/* state, under the loader's lock: 0 not tried, 1 loaded, -1 failed */
	int state;
	char why[200]; /* why it failed, repeated to every later caller */
} dbcron_dynlib;

/*
 * Loads lib and fills its struct, once per process; later calls return at
 * once with the first outcome.  Thread-safe.  DBCRON_EUNSUPPORTED with a
 * message naming the library and its Debian package when it cannot be
 * loaded or lacks a function.  The library stays loaded until exit.
 */
int dbcron__dynlib_load(dbcron_dynlib *lib, dbcron_err *err);

#endif
