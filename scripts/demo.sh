#!/usr/bin/env bash
# Runs the demo (examples/demo.c): installs what is missing, builds, starts the local
# test server unless MONGOMQ_URI names a MongoDB, and drains a few hundred events in
# many groups with several worker threads, printing each group's order and a summary.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"

bash scripts/install-deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j "$(nproc)" --target demo

started_server=0
if [[ -z "${MONGOMQ_URI:-}" ]]; then
    MONGOMQ_URI="$(bash scripts/test-server.sh start)"
    started_server=1
fi
export MONGOMQ_URI
cleanup() { if [[ $started_server == 1 ]]; then bash scripts/test-server.sh stop || true; fi; }
trap cleanup EXIT

./build/examples/demo
