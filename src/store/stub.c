/* Placeholder until the store lands: delete when src/store/store.c is real. */
#include "store/store.h"
int store_open(const char *url, store **out, dbcron_err *err) { (void)url; *out = 0; return dbcron_err_set(err, DBCRON_EUNSUPPORTED, "store not built"); }
void store_close(store *s) { (void)s; }
