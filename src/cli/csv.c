/*
 * The csv of the listings (runs, nodes): RFC 4180 fields, so that a value
 * holding a comma, a quote or a line break stays one field of one record,
 * and times as UTC epoch milliseconds, empty when unset.  Nothing here
 * knows a column; each listing keeps its own header, a contract.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"

/* RFC 4180: quote a field that holds a comma, a quote or a line break. */
void cli_csv_field(FILE *f, const char *s)
{
	if (!s)
		return;
	if (!strpbrk(s, ",\"\r\n")) {
		fputs(s, f);
		return;
	}
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '"')
			fputc('"', f);
		fputc(*s, f);
	}
	fputc('"', f);
}

void cli_csv_ms(FILE *f, int64_t ms)
{
	if (ms >= 0)
		fprintf(f, "%" PRId64, ms);
}

bool cli_print_json_line(json_t *v)
{
	if (!v)
		return false;
	int rc = json_dumpf(v, stdout, JSON_COMPACT | JSON_ENSURE_ASCII);
	json_decref(v);
	return rc == 0 && fputc('\n', stdout) != EOF;
}
