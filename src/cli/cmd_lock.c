/* Placeholder until the module lands. */
#include <stdio.h>
#include "cli/cli.h"
int cli_lock(int argc, char **argv) { (void)argc; fprintf(stderr, "dbcron %s: not built yet\n", argv[0]); return CLI_EXIT_FAIL; }
int cli_locks(int argc, char **argv) { (void)argc; fprintf(stderr, "dbcron %s: not built yet\n", argv[0]); return CLI_EXIT_FAIL; }
