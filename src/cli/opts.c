/*
 * The options of the command line, declared once: the table of the
 * options every database command shares (--db, --db-file, --format,
 * --help), the one option loop the commands run (cli_parse), and the
 * handling of the shared options for the few commands that keep a getopt
 * loop of their own (lock, locks, node: their option words end at the
 * first positional or at "--", and their messages are their own).
 *
 * Invariants kept:
 *  - a command's option table is exactly the shared options it names
 *    plus its own, so getopt's abbreviations ("--form") and the option
 *    lists of --help are exactly what each command takes;
 *  - every refusal is "dbcron CMD: ... (see dbcron CMD --help)" with exit
 *    status 2, printed here before any database is opened;
 *  - a --db value is copied and blanked in argv (cli_db_set_url) the
 *    moment it is read, whichever loop reads it.
 */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"

static const struct {
	unsigned mask;
	struct option opt;
} common_longopts[] = {
	{CLI_COMMON_DB, {"db", required_argument, NULL, CLI_OPT_DB}},
	{CLI_COMMON_DB, {"db-file", required_argument, NULL, CLI_OPT_DB_FILE}},
	{CLI_COMMON_FORMAT, {"format", required_argument, NULL, CLI_OPT_FORMAT}},
	{CLI_COMMON_HELP, {"help", no_argument, NULL, CLI_OPT_HELP}},
};

int cli_longopts(struct option *out, size_t cap, unsigned mask, const struct option *own)
{
	size_t n = 0;
	for (size_t i = 0; i < sizeof(common_longopts) / sizeof(common_longopts[0]); i++) {
		if (!(common_longopts[i].mask & mask))
			continue;
		if (n + 1 >= cap)
			return -1;
		out[n++] = common_longopts[i].opt;
	}
	for (; own && own->name; own++) {
		if (n + 1 >= cap)
			return -1;
		out[n++] = *own;
	}
	out[n] = (struct option){NULL, 0, NULL, 0};
	return (int)n;
}

bool cli_common_opt(cli_common *cm, int c, char *arg)
{
	switch (c) {
	case CLI_OPT_DB:
		cli_db_set_url(&cm->db, arg);
		return true;
	case CLI_OPT_DB_FILE:
		cm->db.file = arg;
		return true;
	case CLI_OPT_FORMAT:
		cm->format = arg;
		return true;
	default:
		return false;
	}
}

const char *const cli_formats_table_json[] = {"table", "json", NULL};

int cli_format_of(const char *word)
{
	if (!word || !strcmp(word, "table"))
		return CLI_FMT_TABLE;
	if (!strcmp(word, "csv"))
		return CLI_FMT_CSV;
	if (!strcmp(word, "json"))
		return CLI_FMT_JSON;
	return -1;
}

/* "--format 'x': expected table, csv or json", the words as the command
 * lists them. */
static int bad_format(const char *cmd, const char *v, const char *const *words)
{
	char list[128] = "";
	size_t n = 0, len = 0;
	while (words[n])
		n++;
	for (size_t i = 0; i < n && len < sizeof(list); i++) {
		int w = snprintf(list + len, sizeof(list) - len, "%s%s",
				 i == 0 ? "" : i + 1 == n ? " or " : ", ", words[i]);
		len += w > 0 ? (size_t)w : 0;
	}
	return cli_usage_error(cmd, "--format '%s': expected %s", v, list);
}

static bool is_word_of(const char *v, const char *const *words)
{
	for (; *words; words++)
		if (!strcmp(v, *words))
			return true;
	return false;
}

static void cliopt_reset(void)
{
	/* 0 makes GNU getopt reinitialise, also its "+" ordering */
	optind = 0;
	opterr = 0;
}

/* Next option: its value, -1 at the end, or '?' after printing a usage
 * error for an unknown option or a missing value.  GNU getopt_long in "+"
 * order, so options and positionals may interleave and "--" ends the
 * options; positionals are collected in o. */
static int cliopt_next(cliopt *o, int argc, char **argv, const char *optstring,
		       const struct option *longs)
{
	for (;;) {
		int prev = optind ? optind : 1;
		if (o->dashdash || prev >= argc)
			return -1;
		int c = getopt_long(argc, argv, optstring, longs, NULL);
		if (c == -1) {
			/* getopt swallows "--"; the caller wants what follows */
			if (optind == prev + 1 && strcmp(argv[prev], "--") == 0) {
				o->dashdash = true;
				o->rest = argv + optind;
				o->nrest = argc - optind;
				optind = argc;
				return -1;
			}
			if (optind >= argc)
				return -1;
			if (o->npos < CLIOPT_MAXPOS)
				o->pos[o->npos] = argv[optind];
			o->npos++;
			optind++;
			continue;
		}
		if (c == '?') {
			/* getopt_long sets optopt to a known long option's value
			 * when it was given "=VALUE" but takes none: name it, not
			 * the value (which need not be a printable character) */
			const char *arg = argv[optind - 1];
			const char *eq = strchr(arg, '=');
			if (optopt && strncmp(arg, "--", 2) == 0 && eq)
				cli_usage_error(o->cmd, "option '%.*s' takes no value", (int)(eq - arg),
						arg);
			else if (optopt > 0 && optopt < 128 && isprint(optopt))
				cli_usage_error(o->cmd, "unknown option '-%c'", optopt);
			else
				cli_usage_error(o->cmd, "unknown option '%s'", arg);
			return '?';
		}
		if (c == ':') {
			cli_usage_error(o->cmd, "option '%s' needs a value", argv[optind - 1]);
			return '?';
		}
		return c;
	}
}

/* What cli_parse is parsing, for cli_take_arg (one parse at a time: the
 * CLI's main thread). */
static char **parse_argv;
static int parse_argc;

char *cli_take_arg(void)
{
	if (!parse_argv || optind >= parse_argc)
		return NULL;
	return parse_argv[optind++];
}

int cli_parse(const cli_spec *sp, cliopt *o, cli_common *cm, int argc, char **argv)
{
	struct option longs[CLI_MAX_LONGOPTS];
	int c;

	parse_argv = argv;
	parse_argc = argc;

	*o = (cliopt){.cmd = sp->cmd};
	memset(cm, 0, sizeof(*cm));
	if (cli_longopts(longs, CLI_MAX_LONGOPTS, sp->common, sp->own) < 0) {
		fprintf(stderr, "dbcron %s: more options than CLI_MAX_LONGOPTS\n", sp->cmd);
		return CLI_EXIT_FAIL;
	}
	cliopt_reset();
	while ((c = cliopt_next(o, argc, argv, "+:h", longs)) != -1) {
		if (c == '?')
			return CLI_EXIT_USAGE;
		if (c == CLI_OPT_HELP) {
			sp->usage(stdout);
			return CLI_EXIT_OK;
		}
		/* a command with a rule of its own for --format checks it itself */
		if (c == CLI_OPT_FORMAT && sp->formats && !is_word_of(optarg, sp->formats))
			return bad_format(sp->cmd, optarg, sp->formats);
		if ((c != CLI_OPT_FORMAT || sp->formats) && cli_common_opt(cm, c, optarg))
			continue;
		int status = sp->own_opt ? sp->own_opt(sp->ctx, c, optarg) : CLI_EXIT_USAGE;
		if (status)
			return status;
	}
	return -1;
}

void cliopt_rest_as_pos(cliopt *o)
{
	for (int i = 0; o->dashdash && i < o->nrest; i++, o->npos++)
		if (o->npos < CLIOPT_MAXPOS)
			o->pos[o->npos] = o->rest[i];
}

int cliopt_no_pos(const cliopt *o)
{
	if (o->npos || o->dashdash)
		return cli_usage_error(o->cmd, "unexpected argument '%s'", o->npos ? o->pos[0] : "--");
	return CLI_EXIT_OK;
}
