/*
 * `dbcron serve`: the HTTP API without scheduling, an operator's console
 * beside the cluster.  The main thread only waits for SIGINT or SIGTERM
 * (blocked before the server's thread starts, so that thread never takes
 * them); the server owns its threads and its store handles.
 */
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/conf.h"
#include "http/http.h"

static void help(FILE *f)
{
	fprintf(f,
		"usage: dbcron serve --http ADDR:PORT [--api-token-file PATH] [--http-host NAME]...\n"
		"                    [--http-cert PATH --http-key PATH] [--metrics-max-jobs N]\n"
		"                    [--db URL | --db-file PATH]\n\n"
		"Serve the HTTP API (docs/http.md) until SIGINT or SIGTERM, without scheduling.\n"
		"SIGHUP reads the --api-token-file again.\n\n"
		"  --http ADDR:PORT       where to listen: 127.0.0.1:8080, [::1]:8080; an address\n"
		"                         that is not loopback needs --api-token-file\n"
		"  --api-token-file PATH  lines 'TOKEN ROLE' (ROLE read or admin; TOKEN may be\n"
		"                         sha256:HEX, its SHA-256); requests then need\n"
		"                         'Authorization: Bearer TOKEN'.  Without it every read is\n"
		"                         open and every write is refused (403)\n"
		"  --http-host NAME       a name the server answers to besides its addresses and\n"
		"                         localhost (a request whose Host is another name is 403:\n"
		"                         DNS rebinding); repeat it or give NAME,NAME\n"
		"  --http-cert PATH       serve HTTPS with this PEM certificate (chain) ...\n"
		"  --http-key PATH        ... and its private key\n"
		"  --metrics-max-jobs N   per-job series in /metrics for at most N jobs (default 1000)\n"
		CLI_DB_HELP);
}

/* The settings serve shares with node: flags of the configuration. */
static int serve_opt(void *ctx, int c, char *arg)
{
	(void)ctx;
	conf_set_flag((conf_key)CONF_OPT_KEY(c), arg);
	return 0;
}

int cli_serve(int argc, char **argv)
{
	static const struct option own[] = {
		{"http", required_argument, NULL, CONF_OPT(CONF_HTTP)},
		{"api-token-file", required_argument, NULL, CONF_OPT(CONF_API_TOKEN_FILE)},
		{"http-host", required_argument, NULL, CONF_OPT(CONF_HTTP_HOST)},
		{"http-cert", required_argument, NULL, CONF_OPT(CONF_HTTP_CERT)},
		{"http-key", required_argument, NULL, CONF_OPT(CONF_HTTP_KEY)},
		{"metrics-max-jobs", required_argument, NULL, CONF_OPT(CONF_METRICS_MAX_JOBS)},
		{NULL, 0, NULL, 0},
	};
	const cli_spec sp = {.cmd = "serve", .common = CLI_COMMON_DB | CLI_COMMON_HELP,
			     .own = own, .usage = help, .own_opt = serve_opt};
	cliopt o;
	cli_common cm;
	cli_db *db = &cm.db;
	http_config hc;

	http_config_init(&hc);
	int status = cli_parse(&sp, &o, &cm, argc, argv);
	if (status >= 0 || (status = cliopt_no_pos(&o)))
		return status;
	if ((status = cli_http_settings("serve", &hc)))
		return status;
	if (!hc.listen)
		return cli_usage_error("serve", "missing --http ADDR:PORT");
	hc.db_url = cli_db_url("serve", db, &status);
	if (!hc.db_url)
		return status;
	/* read-only: a database that is not there (or has no schema) is
	 * refused here rather than made empty by the server's own open */
	store *probe = NULL;
	if ((status = cli_open_store("serve", db, &probe)))
		return status;
	store_close(probe);

	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);
	dbcron_err err = {0};
	http_server *hs = NULL;
	if (http_server_start(&hc, &hs, &err))
		return cli_fail(&err);
	int sig;
	for (;;) {
		while (sigwait(&set, &sig) != 0)
			;
		if (sig != SIGHUP)
			break;
		/* the API token file again; the old tokens stay when it does
		 * not read */
		if (http_server_reload(hs, &err))
			fprintf(stderr, "dbcron serve: %s (the tokens in use are kept)\n", err.msg);
	}
	http_server_stop(hs);
	return CLI_EXIT_OK;
}
