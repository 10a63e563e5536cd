#!/usr/bin/env bash
# Runs the crash-and-restart suite: starts a test server with the H2 backend on a
# fresh file, an oplog (so waiting claims have their change-stream watcher) and a free
# loopback port, gives the test a command that SIGKILLs it and
# starts it again on the same file and port, stops it and removes the file on exit.
#   tests/faults/restart.sh TEST_RESTART_BINARY
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
TEST="$1"
STATE="$(mktemp -d "${TMPDIR:-/tmp}/mq-restart.XXXXXX")"
FILE="$STATE/queue.mv"
PORT="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()')"
cleanup() { MONGOMQ_STATE_DIR="$STATE" bash "$ROOT/scripts/test-server.sh" stop || true; rm -rf "$STATE"; }
trap cleanup EXIT
URI="$(MONGOMQ_STATE_DIR="$STATE" bash "$ROOT/scripts/test-server.sh" start --h2 "$FILE" --oplog --port "$PORT")"
export MONGOMQ_TEST_URI="$URI/?serverSelectionTimeoutMS=3000&socketTimeoutMS=3000&connectTimeoutMS=1000"
export MONGOMQ_RESTART_CMD="kill -9 \$(cat '$STATE/pid') && MONGOMQ_STATE_DIR='$STATE' bash '$ROOT/scripts/test-server.sh' start --h2 '$FILE' --oplog --port $PORT >/dev/null"
timeout 300 "$TEST"
