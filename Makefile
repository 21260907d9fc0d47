# Thin front door over CMake.  `make run` and `make test` are the README's
# two commands; each installs the Debian packages it is missing first.
JOBS    ?= 2
BUILD   ?= build
CMAKE   ?= cmake
FUZZ_SECONDS ?= 60

.PHONY: screenshots all deps build install deb run test failover-test galera-test asan asan-test tsan tsan-test fuzz fuzz-smoke bench bench-compare mutate mutate-ci clean

all: build

deps:
	@bash scripts/deps.sh

build: deps
	@$(CMAKE) -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DDBCRON_WERROR=ON -DDBCRON_FAULT_SEAM=ON >/dev/null
	@$(CMAKE) --build $(BUILD) -j$(JOBS) -- --no-print-directory
	@echo "dbcron binary: $(BUILD)/bin/dbcron"

# PREFIX (default /usr/local) and DESTDIR (a staging root) as usual:
#   make install PREFIX=/usr DESTDIR=/tmp/stage
PREFIX ?= /usr/local
install: build
	@DESTDIR=$(DESTDIR) $(CMAKE) --install $(BUILD) --prefix $(PREFIX)

# The Debian packages (debian/) in $(BUILD)/deb: dbcron, libdbcron0,
# libdbcron-dev.  docs/testing.md says how to check them.
deb: deps
	@bash scripts/deps.sh --with-deb
	@nice bash scripts/deb.sh $(BUILD)/deb

run: build
	@bash scripts/run-demo.sh $(BUILD)/bin/dbcron

# Every test: the suite side by side, then the database failover tests
# (label failover: clusters of their own, timed faults) by themselves, two
# at a time, so that the suite's load does not decide their timing (beside
# it, even at a higher priority, the Galera test's nodes lost their leases).
test: build
	@bash scripts/deps.sh --with-lint
	@bash scripts/test.sh $(BUILD) -LE failover
	@DBCRON_TEST_JOBS=2 bash scripts/test.sh $(BUILD) -L failover

# The database failover tests alone (label failover, a few minutes; as
# root: network namespaces); they fail instead of skipping when they cannot
# run.
# The dashboard's pictures in docs/dashboard/: the Chromium test takes them
# into $(BUILD)/dashboard/ (docs/http.md "The dashboard"); this copies them.
screenshots: build
	cd $(BUILD) && ctest -R '^it_http_dashboard$$' --output-on-failure
	mkdir -p docs/dashboard
	cp $(BUILD)/dashboard/*.png docs/dashboard/

failover-test: build
	@DBCRON_REQUIRE_FAILOVER=1 DBCRON_TEST_JOBS=2 bash scripts/test.sh $(BUILD) -L failover

# The MariaDB Galera failover test alone (three mariadbd of its own, about
# two and a half minutes); it fails, not skips, without galera-4.
galera-test: build
	@DBCRON_REQUIRE_FAILOVER=1 bash scripts/test.sh $(BUILD) -R '^it_galera_mysql$$'

asan: deps
	@$(CMAKE) -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DDBCRON_WERROR=ON -DDBCRON_SANITIZE=address -DDBCRON_FAULT_SEAM=ON >/dev/null
	@$(CMAKE) --build build-asan -j$(JOBS)

# Three at a time: every process is several times slower under ASan.  The
# failover tests are left out: their C paths (deadline, reconnect, reap
# after a reconnect) run under ASan in it_pg_frozen, it_pg_readonly,
# it_pg_syncrep and it_outage_nodes_pg, and their formations would take a
# slot each for minutes.  So are the front ends' PostgreSQL and MariaDB
# runs (label variant: the CLI's and the API's checks again on another
# store): the C code above the store is the same on every backend and runs
# under ASan with SQLite, and the stores' own C code runs under ASan on all
# three in the conformance tests (test_store_*) and the multi-node tests.
asan-test: asan
	@ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  DBCRON_TEST_JOBS=$${DBCRON_TEST_JOBS:-3} bash scripts/test.sh build-asan -LE 'failover|variant'

# Only what the threaded tests run (the threads_tests target).
tsan: deps
	@$(CMAKE) -S . -B build-tsan -DCMAKE_BUILD_TYPE=Debug -DDBCRON_WERROR=ON -DDBCRON_SANITIZE=thread -DDBCRON_FAULT_SEAM=ON >/dev/null
	@$(CMAKE) --build build-tsan -j$(JOBS) --target threads_tests

# The threaded parts: pools, timer, scheduler and node tests.
tsan-test: tsan
	@TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
	  DBCRON_TEST_JOBS=$${DBCRON_TEST_JOBS:-3} bash scripts/test.sh build-tsan -L threads

fuzz: deps
	@CC=clang $(CMAKE) -S . -B build-fuzz -DCMAKE_BUILD_TYPE=Debug -DDBCRON_FUZZ=ON \
	  -DDBCRON_SANITIZE=address -DCMAKE_C_FLAGS=-fsanitize=fuzzer-no-link >/dev/null
	@$(CMAKE) --build build-fuzz -j$(JOBS) --target fuzz_cron fuzz_crontab

# About a minute of fuzzing each of the cron parser and the crontab reader
# from their kept corpora, the two side by side (one core each).
fuzz-smoke: fuzz
	@mkdir -p build-fuzz/corpus && cp -n fuzz/corpus/cron/* build-fuzz/corpus/ 2>/dev/null || true
	@mkdir -p build-fuzz/corpus-crontab && cp -n fuzz/corpus/crontab/* build-fuzz/corpus-crontab/ 2>/dev/null || true
	@build-fuzz/fuzz/fuzz_cron -max_total_time=$(FUZZ_SECONDS) -timeout=5 -rss_limit_mb=2048 \
	  -print_final_stats=1 build-fuzz/corpus fuzz/corpus/cron > build-fuzz/fuzz_cron.log 2>&1 & cron=$$!; \
	build-fuzz/fuzz/fuzz_crontab -max_total_time=$(FUZZ_SECONDS) -timeout=5 -rss_limit_mb=2048 \
	  -print_final_stats=1 build-fuzz/corpus-crontab fuzz/corpus/crontab > build-fuzz/fuzz_crontab.log 2>&1; tab=$$?; \
	wait $$cron; rc=$$?; \
	for f in cron:$$rc crontab:$$tab; do \
	  echo "== fuzz_$${f%:*}: status $${f#*:}"; \
	  if [ "$${f#*:}" = 0 ]; then tail -n 12 build-fuzz/fuzz_$${f%:*}.log; else cat build-fuzz/fuzz_$${f%:*}.log; fi; \
	done; \
	[ $$rc -eq 0 ] && [ $$tab -eq 0 ]

bench: build
	@bash bench/run.sh $(BUILD)

# The ratio table of issue 30: limit scripts against W2 on every backend,
# W1 on PostgreSQL, durable servers, one session (~15 minutes).
bench-compare: build
	@bash bench/compare.sh $(BUILD)

# The mutation check (docs/testing.md): every mutant of
# tests/mutants/mutants.tsv planted in turn in a scratch copy, its tests run.
# Long: about half an hour on two cores.  mutate-ci is the small fixed subset
# .ci/run runs (a few minutes), after checking that every mutant's text is
# still in its file.
mutate: deps
	@nice -n 10 bash scripts/mutate.sh

# MUTATE_FLAGS=--no-baseline skips the run of the tests without a mutant
# (.ci/run passes it: its `make test` has just run them on the same tree).
mutate-ci: deps
	@bash scripts/mutate.sh --check
	@nice -n 10 bash scripts/mutate.sh --subset ci $(MUTATE_FLAGS)

clean:
	rm -rf build build-asan build-tsan build-fuzz
