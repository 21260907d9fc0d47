/* Placeholder until the module lands. */
#include <stdio.h>
#include "cli/cli.h"
int cli_init(int argc, char **argv) { (void)argc; fprintf(stderr, "dbcron %s: not built yet\n", argv[0]); return CLI_EXIT_FAIL; }
int cli_job(int argc, char **argv) { (void)argc; fprintf(stderr, "dbcron %s: not built yet\n", argv[0]); return CLI_EXIT_FAIL; }
