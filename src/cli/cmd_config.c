/*
 * `dbcron config show`: every setting's effective value and where it came
 * from (flag, environment, FILE:LINE or default), checked as `dbcron node`
 * and `dbcron serve` would check it, so a bad file is found before a node
 * is started with it.  The database URL is shown masked (app_mask_url);
 * a URL file is named, never quoted.  Owns nothing past the call.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "app/app.h"
#include "cli/cli.h"
#include "cli/conf.h"
#include "core/timeutil.h"
#include "dbcron/node.h"
#include "http/http.h"

static void help(FILE *f)
{
	fprintf(f,
		"usage: dbcron config show [--config FILE] [--format table|json]\n"
		"                          [--db URL | --db-file PATH]\n\n"
		"Print every setting of the database, `dbcron node` and the HTTP server with its\n"
		"effective value and where it came from: flag, env VAR, FILE:LINE or default.\n"
		"A password in the database URL is masked.  Precedence: a flag, else the\n"
		"environment (DBCRON_DB, DBCRON_DB_FILE), else the configuration file, else the\n"
		"built-in default.\n\n"
		"The configuration file is --config FILE (here or before the command), else\n"
		"$DBCRON_CONFIG, else /etc/dbcron/dbcron.conf when it exists (a named file that is\n"
		"missing is an error).  Lines 'key = value'; blank lines and lines starting with #\n"
		"are skipped (a # after a value is part of it); keys:\n"
		"  db, db-file                    the database URL, or the file that holds it\n"
		"  node-id, workers, slow-workers, claim-batch, max-inflight, preread,\n"
		"  claim-strategy, lease, heartbeat, grace, retention   as dbcron node's flags\n"
		"  log-runs, quiet                true or false\n"
		"  http, api-token-file, http-host, http-cert, http-key, metrics-max-jobs\n"
		"                                 the HTTP server (node and serve)\n"
		"Then the drop-ins FILE.d/*.conf (/etc/dbcron/dbcron.conf.d/*.conf for the default\n"
		"file, also when it is missing), in the order of their names: a key in a later\n"
		"file replaces an earlier one (db and db-file replace each other).\n"
		"An unknown key, a key given twice in one file or a bad value is an error naming\n"
		"FILE:LINE.\n"
		"  --config FILE    the configuration file to read\n"
		"  --format json    one line: {\"config_file\" (null: none), \"drop_ins\",\n"
		"                   \"settings\": [{\"key\", \"value\", \"from\"}...]}\n"
		CLI_DB_HELP);
}

static void origin(char *buf, size_t len, const conf_value *v, const char *path)
{
	switch (v->from) {
	case CONF_FROM_FLAG: snprintf(buf, len, "flag %s", v->label); break;
	case CONF_FROM_ENV: snprintf(buf, len, "env %s", v->label); break;
	case CONF_FROM_FILE: snprintf(buf, len, "%s:%d", v->file ? v->file : path, v->line); break;
	default: snprintf(buf, len, "default"); break;
	}
}

static void duration(char *buf, size_t len, int64_t ms)
{
	if (ms <= 0)
		snprintf(buf, len, "0s");
	else
		dbcron__format_duration(ms, buf, len);
}

/* The effective value of k as text, from what the settings made of it. */
static int value_text(conf_key k, const dbcron_node_config *cfg, const http_config *hc,
		      char *buf, size_t len)
{
	conf_value v;
	bool on = false;
	switch (k) {
	case CONF_NODE_ID: snprintf(buf, len, "%s", cfg->node_id ? cfg->node_id : "(HOST-PID)"); break;
	case CONF_WORKERS: snprintf(buf, len, "%d", cfg->workers); break;
	case CONF_SLOW_WORKERS: snprintf(buf, len, "%d", cfg->slow_workers); break;
	case CONF_CLAIM_BATCH: snprintf(buf, len, "%d", cfg->claim_batch); break;
	case CONF_MAX_INFLIGHT: snprintf(buf, len, "%d", cfg->max_inflight); break;
	case CONF_PREREAD:
		if (cfg->preread_ms == 0 && cfg->claim_strategy == DBCRON_CLAIM_LOCK_ROW)
			snprintf(buf, len, "5s (the lock-row default)");
		else
			duration(buf, len, cfg->preread_ms);
		break;
	case CONF_CLAIM_STRATEGY:
		snprintf(buf, len, "%s",
			 cfg->claim_strategy == DBCRON_CLAIM_LOCK_ROW ? "lock-row" : "per-row");
		break;
	case CONF_LEASE: duration(buf, len, cfg->lease_ms); break;
	case CONF_HEARTBEAT: duration(buf, len, cfg->heartbeat_ms); break;
	case CONF_GRACE: duration(buf, len, cfg->grace_ms); break;
	case CONF_RETENTION:
		if (cfg->retention_ms < 0)
			snprintf(buf, len, "forever");
		else
			duration(buf, len, cfg->retention_ms);
		break;
	case CONF_LOG_RUNS: snprintf(buf, len, "%s", cfg->log_runs ? "true" : "false"); break;
	case CONF_QUIET: {
		int rc = conf_get("config show", k, &v);
		if (!rc && v.text)
			rc = conf_bool("config show", &v, &on);
		if (rc)
			return rc;
		snprintf(buf, len, "%s", on ? "true" : "false");
		break;
	}
	case CONF_HTTP: snprintf(buf, len, "%s", hc->listen ? hc->listen : "(none)"); break;
	case CONF_API_TOKEN_FILE:
		snprintf(buf, len, "%s", hc->token_file ? hc->token_file : "(none)");
		break;
	case CONF_HTTP_HOST: snprintf(buf, len, "%s", hc->hosts ? hc->hosts : "(none)"); break;
	case CONF_HTTP_CERT: snprintf(buf, len, "%s", hc->cert_file ? hc->cert_file : "(none)"); break;
	case CONF_HTTP_KEY: snprintf(buf, len, "%s", hc->key_file ? hc->key_file : "(none)"); break;
	case CONF_METRICS_MAX_JOBS: snprintf(buf, len, "%zu", hc->metrics_max_jobs); break;
	default: buf[0] = '\0'; break;
	}
	return 0;
}

/* One setting: a line of the table, or with rows (--format json) an
 * object of its array.  false when out of memory. */
static bool row(json_t *rows, const char *key, const char *value, const char *where)
{
	if (!rows) {
		printf("%-17s %-40s %s\n", key, value, where);
		return true;
	}
	return !json_array_append_new(rows, json_pack("{s:s,s:s,s:s}", "key", key, "value", value,
						       "from", where));
}

/* The file and its drop-ins: printed, or into doc (--format json). */
static bool show_files(json_t *doc, const char *path, const char *why)
{
	if (!doc) {
		if (*path)
			printf("config file: %s (%s)\n", path, why);
		else
			printf("config file: none (/etc/dbcron/dbcron.conf does not exist)\n");
		for (size_t i = 0; conf_dropin(i); i++)
			printf("drop-in: %s\n", conf_dropin(i));
		return true;
	}
	json_t *d = json_array();
	for (size_t i = 0; d && conf_dropin(i); i++)
		if (json_array_append_new(d, json_string(conf_dropin(i))))
			break;
	return !json_object_set_new(doc, "config_file", *path ? json_string(path) : json_null()) &&
	       !json_object_set_new(doc, "drop_ins", d);
}

static int show(const cli_db *db, bool json)
{
	const char *cmd = "config show", *path, *why;
	int status = conf_file(cmd, &path, &why);
	if (status)
		return status;
	json_t *doc = json ? json_object() : NULL, *rows = json ? json_array() : NULL;
	if (json && (!doc || !rows || json_object_set_new(doc, "settings", rows))) {
		json_decref(doc);
		return cli_oom(cmd);
	}
	if (!show_files(doc, path, why))
		goto out_oom;

	conf_value from;
	const char *url = cli_db_url_from(cmd, db, &from, &status);
	if (!url)
		goto out;
	dbcron_node_config cfg;
	dbcron_node_config_init(&cfg);
	http_config hc;
	http_config_init(&hc);
	if ((status = cli_node_settings(cmd, &cfg, &hc)))
		goto out;

	char masked[512], where[600], dbwhere[620], text[512];
	app_mask_url(url, masked, sizeof(masked));
	if (!json)
		printf("%-17s %-40s %s\n", "KEY", "VALUE", "FROM");
	/* db is the URL in use, whichever of db and db-file gave it */
	origin(where, sizeof(where), &from, path);
	bool via_file = from.text && url != from.text;
	snprintf(dbwhere, sizeof(dbwhere), "%s%s", via_file ? "db-file, " : "", where);
	if (!row(rows, "db", masked, dbwhere) ||
	    !row(rows, "db-file", via_file ? from.text : "(none)", via_file ? where : "default"))
		goto out_oom;
	for (conf_key k = CONF_NODE_ID; k < CONF__COUNT; k++) {
		conf_value v;
		if ((status = conf_get(cmd, k, &v)) || (status = value_text(k, &cfg, &hc, text, sizeof(text))))
			goto out;
		origin(where, sizeof(where), &v, path);
		if (!row(rows, conf_key_name(k), text, where))
			goto out_oom;
	}
	status = CLI_EXIT_OK;
	if (doc && !cli_print_json_line(json_incref(doc)))
		goto out_oom;
out:
	json_decref(doc);
	return status;
out_oom:
	json_decref(doc);
	return cli_oom(cmd);
}

/* --config FILE, config's one option of its own. */
static int config_opt(void *ctx, int c, char *arg)
{
	(void)ctx;
	(void)c;
	conf_set_path(arg);
	return 0;
}

int cli_config(int argc, char **argv)
{
	static const struct option own[] = {
		{"config", required_argument, NULL, 'C'},
		{NULL, 0, NULL, 0},
	};
	const cli_spec sp = {.cmd = "config",
			     .common = CLI_COMMON_DB | CLI_COMMON_FORMAT | CLI_COMMON_HELP,
			     .own = own, .usage = help, .formats = cli_formats_table_json,
			     .own_opt = config_opt};
	cliopt o;
	cli_common cm;
	int status = cli_parse(&sp, &o, &cm, argc, argv);
	if (status >= 0)
		return status;
	if (o.npos == 0)
		return cli_usage_error("config", "missing subcommand (show)");
	if (o.npos > 1 || o.dashdash || strcmp(o.pos[0], "show") != 0)
		return cli_usage_error("config", "unexpected argument '%s'",
				       strcmp(o.pos[0], "show") ? o.pos[0] : o.npos > 1 ? o.pos[1] : "--");
	return show(&cm.db, cli_format_of(cm.format) == CLI_FMT_JSON);
}
