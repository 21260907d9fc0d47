/* Placeholder until the executors land: delete when src/exec/ is real. */
#include <string.h>
#include "dbcron/handler.h"
bool dbcron_handler_exists(const char *name) { return name && (!strcmp(name, "noop") || !strcmp(name, "sleep")); }
