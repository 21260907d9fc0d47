/* Placeholder until the cron engine lands: delete when src/cron/ is real. */
#include "dbcron/cron.h"
int dbcron_cron_parse(const char *e, dbcron_cron **o, dbcron_err *err) { (void)e; *o = 0; return dbcron_err_set(err, DBCRON_EUNSUPPORTED, "cron engine not built"); }
void dbcron_cron_free(dbcron_cron *c) { (void)c; }
dbcron_cron_dialect dbcron_cron_get_dialect(const dbcron_cron *c) { (void)c; return DBCRON_CRON_QUARTZ; }
int dbcron_cron_next(const dbcron_cron *c, const dbcron_tz *tz, int64_t a, int64_t *n) { (void)c; (void)tz; (void)a; (void)n; return 0; }
size_t dbcron_cron_describe(const dbcron_cron *c, char *b, size_t l) { (void)c; if (l) b[0] = 0; return 0; }
int dbcron_tz_open(const char *name, dbcron_tz **out, dbcron_err *err) { (void)name; (void)err; *out = 0; return 0; }
void dbcron_tz_free(dbcron_tz *tz) { (void)tz; }
const char *dbcron_tz_name(const dbcron_tz *tz) { (void)tz; return "UTC"; }
int32_t dbcron_tz_offset(const dbcron_tz *tz, int64_t t) { (void)tz; (void)t; return 0; }
