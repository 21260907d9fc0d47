// Embedding dbcron in a C++ program: the same API through extern "C"
// headers.  A handler object with its own lock, jobs applied from the JSON
// that `dbcron job apply` reads, a node on its own thread, stopped from
// the main thread when SIGINT or SIGTERM arrives.  docs/library.md walks
// through it.
//
//   c++ -std=c++11 embed.cpp $(pkg-config --cflags --libs dbcron) -pthread -o embedxx
//   ./embedxx sqlite:/tmp/embed.db /tmp/embed.out
#include <csignal>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>

#include <pthread.h>
#include <signal.h>

#include <dbcron/dbcron.h>

namespace {

// One line per run into a file.  Worker threads call run() concurrently,
// hence the mutex; dbcron holds none of its own locks during the call.
class Recorder {
public:
	explicit Recorder(const std::string &path) : out_(path, std::ios::app) {}

	static int call(const dbcron_handler_ctx *ctx, void *self, char *errbuf, size_t errlen)
	{
		return static_cast<Recorder *>(self)->run(*ctx, errbuf, errlen);
	}

private:
	int run(const dbcron_handler_ctx &ctx, char *errbuf, size_t errlen)
	{
		std::lock_guard<std::mutex> hold(mu_);
		out_ << ctx.job << ' ' << ctx.fire_at_ms << ' ' << ctx.attempt << ' '
		     << (ctx.arg ? ctx.arg : "-") << '\n';
		out_.flush();
		if (!out_) {
			std::snprintf(errbuf, errlen, "write failed");
			return 1;
		}
		return 0;
	}

	std::mutex mu_;
	std::ofstream out_;
};

// Closes the handle on every way out of main.
struct DbHandle {
	dbcron_db *db = nullptr;
	~DbHandle() { dbcron_db_close(db); }
};

const char *const kJobs = R"([
  {"name": "tick", "every": "1s", "handler": "record", "arg": "from C++"},
  {"name": "cron-tick", "cron": "*/2 * * * * ?", "handler": "record"}
])";

void on_apply_error(void *, size_t index, const char *name, const char *msg)
{
	std::fprintf(stderr, "job #%zu (%s): %s\n", index + 1, name ? name : "?", msg);
}

} // namespace

int main(int argc, char **argv)
{
	if (argc != 3) {
		std::fprintf(stderr, "usage: %s DB_URL OUTPUT_FILE\n", argv[0]);
		return 2;
	}
	std::printf("libdbcron %s (built with %s)\n", dbcron_version(), DBCRON_VERSION);

	// The signals are waited for on the main thread: block them before
	// the node starts its threads, which inherit the mask.
	sigset_t stop_signals;
	sigemptyset(&stop_signals);
	sigaddset(&stop_signals, SIGINT);
	sigaddset(&stop_signals, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

	static Recorder recorder(argv[2]); // outlives the node
	if (dbcron_handler_register("record", &Recorder::call, &recorder) != DBCRON_OK) {
		std::fprintf(stderr, "handler 'record' is registered twice\n");
		return 1;
	}

	dbcron_err err = {};
	DbHandle h;
	if (dbcron_db_open_ex(argv[1], DBCRON_DB_INIT, &h.db, &err) != DBCRON_OK) {
		std::fprintf(stderr, "open: %s\n", err.msg);
		return 1;
	}
	dbcron_apply_opts opts;
	dbcron_apply_opts_init(&opts);
	opts.prune = true;
	opts.on_error = on_apply_error;
	dbcron_apply_result res;
	int rc = dbcron_apply_json(h.db, kJobs, 0, &opts, &res, &err);
	dbcron_apply_result_clear(&res);
	if (rc != DBCRON_OK) {
		std::fprintf(stderr, "apply: %s\n", err.msg);
		return 1;
	}

	dbcron_node_config cfg;
	dbcron_node_config_init(&cfg);
	cfg.db_url = argv[1];
	cfg.workers = 2;
	dbcron_node *node = nullptr;
	if (dbcron_node_create(&cfg, &node, &err) != DBCRON_OK) {
		std::fprintf(stderr, "node: %s\n", err.msg);
		return 1;
	}
	dbcron_err node_err = {};
	int node_rc = DBCRON_OK;
	std::thread runner([&] { node_rc = dbcron_node_run(node, &node_err); });
	std::printf("node running; Ctrl-C stops it\n");
	std::fflush(stdout);

	int sig = 0;
	sigwait(&stop_signals, &sig);
	dbcron_node_stop(node); // from any thread
	runner.join();
	dbcron_node_free(node);
	if (node_rc != DBCRON_OK) {
		std::fprintf(stderr, "node: %s\n", node_err.msg);
		return 1;
	}

	dbcron_job *jobs = nullptr;
	size_t n = 0;
	if (dbcron_job_list(h.db, &jobs, &n, &err) != DBCRON_OK) {
		std::fprintf(stderr, "list: %s\n", err.msg);
		return 1;
	}
	for (size_t i = 0; i < n; i++)
		std::printf("job %s: next fire at %lld ms\n", jobs[i].name,
			    static_cast<long long>(jobs[i].next_fire_at));
	dbcron_job_list_free(jobs, n);
	return 0;
}
