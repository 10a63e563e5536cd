#!/usr/bin/env bash
# Runs the step-down suite (issue 17): starts tests/faults/stepdown_proxy.py between
# the library and the test server, hands its two ports to tests/faults/test_stepdown,
# stops the proxy on exit.
#   tests/faults/stepdown.sh TEST_STEPDOWN_BINARY
# MONGOMQ_TEST_URI must name the test server (the proxy's upstream; the checks reach
# it directly). Bounded: the proxy has 10 s to say its ports, the test 120 s.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
TEST="$1"
: "${MONGOMQ_TEST_URI:?MONGOMQ_TEST_URI must be set}"
# host:port of the URI's first host (the proxy takes no URI)
UPSTREAM="$(python3 -c 'import sys; sys.path.insert(0, sys.argv[1]); import wire; print("%s:%d" % wire.parse_uri(sys.argv[2]))' \
    "$HERE/../../scripts" "$MONGOMQ_TEST_URI")"
OUT="$(mktemp)"; LOG="$(mktemp)"
python3 "$HERE/stepdown_proxy.py" --upstream "$UPSTREAM" >"$OUT" 2>"$LOG" &
PROXY_PID=$!
cleanup() { kill "$PROXY_PID" 2>/dev/null || true; wait "$PROXY_PID" 2>/dev/null || true; rm -f "$OUT" "$LOG"; }
trap cleanup EXIT
for _ in $(seq 1 100); do [ -s "$OUT" ] && break; sleep 0.1; done
# "listen 127.0.0.1:P control 127.0.0.1:C"
read -r word1 proxy word2 ctl <"$OUT" || true
if [ "${word1:-}" != listen ] || [ "${word2:-}" != control ]; then
    echo "stepdown.sh: the proxy did not start" >&2; cat "$LOG" >&2; exit 1
fi
export MONGOMQ_STEPDOWN_PROXY="$proxy" MONGOMQ_STEPDOWN_CONTROL="$ctl"
rc=0
timeout 120 "$TEST" || rc=$?
echo "--- the proxy's log ---"; cat "$LOG"
exit "$rc"
