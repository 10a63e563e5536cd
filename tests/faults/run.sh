#!/usr/bin/env bash
# Runs the fault-proxy suite: starts toxiproxy on loopback (free ports), points
# tests/faults/test_proxy at it, stops it on exit.
#   tests/faults/run.sh TOXIPROXY_BINARY TEST_PROXY_BINARY
# MONGOMQ_TEST_URI must name the test server (reached directly by the checks).
set -euo pipefail
TOXI="$1"; TEST="$2"
: "${MONGOMQ_TEST_URI:?MONGOMQ_TEST_URI must be set}"
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'; }
API_PORT="$(free_port)"
PROXY_PORT="$(free_port)"
LOG="$(mktemp)"
"$TOXI" -host 127.0.0.1 -port "$API_PORT" >"$LOG" 2>&1 &
TPID=$!
cleanup() { kill "$TPID" 2>/dev/null || true; wait "$TPID" 2>/dev/null || true; rm -f "$LOG"; }
trap cleanup EXIT
for _ in $(seq 1 100); do
    if python3 -c "import socket,sys; socket.create_connection(('127.0.0.1',$API_PORT),0.2)" 2>/dev/null; then break; fi
    sleep 0.1
done
export MONGOMQ_TOXIPROXY="127.0.0.1:$API_PORT" MONGOMQ_PROXY_PORT="$PROXY_PORT"
if ! timeout 300 "$TEST"; then
    echo "--- toxiproxy log (tail) ---" >&2; tail -20 "$LOG" >&2
    exit 1
fi
