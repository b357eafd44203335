#!/usr/bin/env bash
# Three playerkit-room processes in one room on Debian's real syncplay-server (started here on a
# free loopback port), playing for SECONDS (default 60) with every frame logged; then the drift
# between each pair of them, from those logs. Exits 1 when the p99 over all pairs is above
# LIMIT_MS (default 33: one frame interval at 30 fps).
#   Scripts/room-demo.sh            (make room-demo builds first)
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_TO_PLAY=${SECONDS:-60}
LIMIT_MS=${LIMIT_MS:-33}
BIN=${EXAMPLES_BIN:-.build/debug}
ROOM_EXAMPLE="$BIN/playerkit-room"
[ -x "$ROOM_EXAMPLE" ] || { echo "room-demo: $ROOM_EXAMPLE is not built (make room-demo builds it)" >&2; exit 1; }
command -v syncplay-server >/dev/null || { echo "room-demo: syncplay-server is missing (Scripts/install-deps.sh installs it)" >&2; exit 1; }

work=$(mktemp -d)
server=""
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill -INT "$pid" 2>/dev/null || true; done
  [ -n "$server" ] && kill -KILL "$server" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
syncplay-server --port "$port" --disable-ready --salt PLAYERKITDEMO >"$work/server.log" 2>&1 &
server=$!
disown "$server"
for _ in $(seq 100); do
  python3 -c "import socket,sys; s=socket.socket(); sys.exit(s.connect_ex(('127.0.0.1', $port)))" && break
  sleep 0.1
done
echo "room-demo: syncplay-server on 127.0.0.1:$port; three members play for $SECONDS_TO_PLAY s" >&2

names=(left middle right)
for name in "${names[@]}"; do
  extra=()
  # The last to join starts the room once all three are in.
  [ "$name" = right ] && extra=(--start-with 3)
  # The server started here offers no TLS (loopback): --security plain, as an app must ask for.
  "$ROOM_EXAMPLE" --server "127.0.0.1:$port" --security plain --room demo --name "$name" --frames --json \
    --seconds "$((SECONDS_TO_PLAY + 5))" "${extra[@]}" >"$work/$name.jsonl" 2>"$work/$name.err" &
  pids+=($!)
done
status=0
for pid in "${pids[@]}"; do wait "$pid" || status=$?; done
pids=()
if [ "$status" != 0 ]; then
  echo "room-demo: a member failed (exit status $status):" >&2
  tail -n 20 "$work"/*.err >&2
  exit 1
fi
grep -h '"event":"room"' "$work/right.jsonl" | head -n 5 >&2 || true
report=$("$ROOM_EXAMPLE" --seconds "$SECONDS_TO_PLAY" --compare "$work/left.jsonl" "$work/middle.jsonl" "$work/right.jsonl")
echo "$report"
p99=$(echo "$report" | sed -n 's/^all pairs:.*p99 \([0-9.]*\) ms.*/\1/p')
python3 -c "import sys; sys.exit(0 if float('$p99') <= float('$LIMIT_MS') else 1)" || {
  echo "room-demo: p99 drift $p99 ms is above $LIMIT_MS ms" >&2
  exit 1
}
