#!/usr/bin/env bash
# Runs a command with stress-ng loading the CPU beside it (4 workers: twice this machine's 2
# cores), and stops the load when the command ends, whatever its outcome.
#   Scripts/with-load.sh make test
set -uo pipefail
command -v stress-ng >/dev/null || { echo "with-load: stress-ng is missing (Scripts/install-deps.sh --loaded)" >&2; exit 1; }
stress-ng --cpu "${STRESS_CPU:-4}" --timeout 2h --quiet &
load=$!
trap 'kill $load 2>/dev/null; wait $load 2>/dev/null' EXIT
echo "with-load: stress-ng --cpu ${STRESS_CPU:-4} running (pid $load)"
"$@"
