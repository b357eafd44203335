#!/usr/bin/env bash
# make test runs this next to its parallel test pass: the docs check (Scripts/check-docs.sh) and
# README's consumer check (Scripts/check-consumer.sh) at once, both at the lowest priority, so they
# use the CPU the tests leave. Neither measures time. Exits non-zero when either failed; each
# prints its own output.
set -u
cd "$(dirname "$0")/.."
export SWIFT=${SWIFT:-swift}
nice -n 19 Scripts/check-docs.sh &
docs=$!
nice -n 19 Scripts/check-consumer.sh
consumer=$?
wait "$docs"
docs_status=$?
[ "$docs_status" -eq 0 ] || echo "check-docs-and-consumer: the docs check failed (exit $docs_status)" >&2
[ "$consumer" -eq 0 ] || echo "check-docs-and-consumer: the consumer check failed (exit $consumer)" >&2
[ "$docs_status" -eq 0 ] && [ "$consumer" -eq 0 ]
