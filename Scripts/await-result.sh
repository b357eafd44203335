#!/usr/bin/env bash
# Waits, at most SECONDS, for a check started in the background to write DIR/status (its exit
# status; DIR/log holds its output), prints its output and exits with its status: 1 when it did
# not finish in time.
#   Scripts/await-result.sh DIR NAME SECONDS
set -u
dir=$1 name=$2 limit=$3
started=$SECONDS
while [ ! -s "$dir/status" ]; do
  if [ $((SECONDS - started)) -ge "$limit" ]; then
    cat "$dir/log" 2>/dev/null
    echo "$name: not finished after $limit s" >&2
    exit 1
  fi
  sleep 1
done
cat "$dir/log"
status=$(cat "$dir/status")
[ "$status" -eq 0 ] || echo "$name: failed (exit $status)" >&2
exit "$status"
