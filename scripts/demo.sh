#!/usr/bin/env bash
# Runs the demo (examples/demo.c): installs what is missing, builds, starts the local
# test server unless MONGOMQ_URI names a MongoDB, and drains a few hundred events in
# many groups with several worker threads, printing each group's order and a summary.
#   bash scripts/demo.sh          the demo
#   bash scripts/demo.sh --web    the demo, then `mongomq web` on its database
#                                 (http://127.0.0.1:8080/, MONGOMQ_WEB_LISTEN to move it)
#                                 on the same server until Ctrl-C
set -euo pipefail
web=0
case "${1:-}" in
    "") ;;
    --web) web=1 ;;
    *) echo "usage: bash scripts/demo.sh [--web]" >&2; exit 2 ;;
esac

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"

bash scripts/install-deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
targets=(demo)
if [[ $web == 1 ]]; then targets+=(mongomq_cli); fi
cmake --build build -j "$(nproc)" --target "${targets[@]}"

started_server=0
if [[ -z "${MONGOMQ_URI:-}" ]]; then
    MONGOMQ_URI="$(bash scripts/test-server.sh start)"
    started_server=1
fi
export MONGOMQ_URI
cleanup() { if [[ $started_server == 1 ]]; then bash scripts/test-server.sh stop || true; fi; }
trap cleanup EXIT

./build/examples/demo
if [[ $web == 1 ]]; then
    echo "demo: the dashboard of the demo's queue (Ctrl-C ends it and the demo)"
    ./build/cli/mongomq web --uri "$MONGOMQ_URI" --db mongomq_demo --listen "${MONGOMQ_WEB_LISTEN:-127.0.0.1:8080}" || true
fi
