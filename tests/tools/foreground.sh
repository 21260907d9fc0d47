#!/usr/bin/env bash
# Runs a test at the normal priority (nice 0) when the suite runs niced
# (`make test` runs it at nice 10): the database failover tests time their
# recovery to the second, so they run beside the rest of the suite and
# take the CPU first when they need it, instead of waiting for the suite to
# end (docs/testing.md "Time budget").  Raising the priority needs root,
# which these tests need anyway; otherwise the test runs as it is.
#   tests/tools/foreground.sh CMD [ARGS...]
renice -n 0 -p $$ >/dev/null 2>&1 || true
exec "$@"
