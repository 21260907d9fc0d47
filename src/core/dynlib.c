/*
 * Libraries loaded on first use (dynlib.h).  Owns nothing that is ever
 * freed: a loaded library stays for the life of the process, so function
 * pointers handed out never dangle.  One lock for every library: loading
 * happens a handful of times a process.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "core/dynlib.h"

static pthread_mutex_t dynlib_lock = PTHREAD_MUTEX_INITIALIZER;

static int load_locked(dbcron_dynlib *lib)
{
	/* RTLD_LOCAL: the library's symbols stay out of the global scope, so
	 * they can never stand in for another's. */
	void *h = dlopen(lib->soname, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		const char *e = dlerror();
		snprintf(lib->why, sizeof(lib->why), "%s", e ? e : "not found");
		return -1;
	}
	for (size_t i = 0; i < lib->nsyms; i++) {
		dlerror();
		void *p = dlsym(h, lib->syms[i].name);
		if (!p) {
			snprintf(lib->why, sizeof(lib->why), "%s has no function %s", lib->soname,
				 lib->syms[i].name);
			/* no pointer into a library about to be closed stays */
			for (size_t j = 0; j < i; j++)
				memset((char *)lib->api + lib->syms[j].offset, 0, sizeof(p));
			dlclose(h);
			return -1;
		}
		/* POSIX guarantees a function pointer survives the round trip
		 * through void *; memcpy says so without a cast the compiler
		 * would question. */
		memcpy((char *)lib->api + lib->syms[i].offset, &p, sizeof(p));
	}
	return 1;
}

int dbcron__dynlib_load(dbcron_dynlib *lib, dbcron_err *err)
{
	pthread_mutex_lock(&dynlib_lock);
	if (lib->state == 0)
		lib->state = load_locked(lib);
	int state = lib->state;
	pthread_mutex_unlock(&dynlib_lock);
	if (state > 0)
		return DBCRON_OK;
	return dbcron_err_set(err, DBCRON_EUNSUPPORTED,
			      "%s support needs %s (Debian package %s), which cannot be loaded: %s",
			      lib->what, lib->soname, lib->package, lib->why);
}
