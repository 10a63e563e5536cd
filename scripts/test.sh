#!/usr/bin/env bash
# Runs every test: installs what is missing, builds, starts the local test server
# (unless MONGOMQ_TEST_URI names one), then
#   1. the C and C++ style check (.clang-format), the whole CTest suite on a
#      RelWithDebInfo build (the C library, the mongomq command, the examples, the
#      harel interop), and the ABI check;
#   2. each language binding's own suite (scripts/test-<language>.sh: its package
#      built the way its users build it, against the library installed in
#      build/stage, and its contract scenarios in its own test runner), then the
#      matrix (scripts/test-matrix.sh: every language and harel on one queue;
#      MONGOMQ_MATRIX=0 skips it), and the faults from outside
#      (scripts/test-faults.sh: toxiproxy between the library and the server, a
#      server killed and restarted on its H2 file, TLS, 20 s of each fuzz harness),
#      and the dashboard (scripts/test-web.sh: mongomq web in a headless Chromium,
#      /metrics through prometheus_client's parser);
#   3. the whole CTest suite again on an ASan+UBSan build (-fno-sanitize-recover);
#   4. every CTest suite but the harel interop (python cannot load a TSan library) on
#      a TSan build.
# The bindings run once, on the plain build: the sanitizer builds check the C library
# itself, which every binding calls. MONGOMQ_BINDINGS (a space-separated list) picks
# which bindings run; default: all of them.
# The local server runs with its oplog, so waiting claims use change streams;
# tests/test_wait.c also forces the polling fallback.
# Exits non-zero on the first failure. Build trees: build/, build-asan/, build-tsan/.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
JOBS="${MONGOMQ_JOBS:-$(nproc)}"
BINDINGS="java go rust ruby python"

bash scripts/install-deps.sh

started_server=0
if [[ -z "${MONGOMQ_TEST_URI:-}" ]]; then
    MONGOMQ_TEST_URI="$(bash scripts/test-server.sh start --oplog)"
    started_server=1
fi
export MONGOMQ_TEST_URI
cleanup() { if [[ $started_server == 1 ]]; then bash scripts/test-server.sh stop || true; fi; }
trap cleanup EXIT
echo "test: server $MONGOMQ_TEST_URI"

build() { # build DIR [cmake args...]
    local dir=$1
    shift
    cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
    cmake --build "$dir" -j "$JOBS"
}

echo "== build (RelWithDebInfo) =="
build build
echo "== C and C++ style (scripts/format.sh --check) =="
bash scripts/format.sh --check
echo "== tests =="
(cd build && ctest --output-on-failure)
echo "== ABI against abi/libmongomq.so.0.abi =="
bash scripts/abi-check.sh build

for lang in ${MONGOMQ_BINDINGS-$BINDINGS}; do
    echo "== bindings: $lang =="
    bash "scripts/test-$lang.sh"
done

echo "== the dashboard: mongomq web in Chromium, /metrics (scripts/test-web.sh) =="
bash scripts/test-web.sh

echo "== faults from outside: fault proxy, server crash and restart, TLS, short fuzz runs =="
bash scripts/test-faults.sh

if [[ "${MONGOMQ_MATRIX:-1}" == 1 ]]; then
    echo "== matrix: C, Go, Java, Ruby, Rust, Python and harel on one queue =="
    bash scripts/test-matrix.sh
fi

echo "== build (ASan+UBSan) =="
build build-asan -DMONGOMQ_SANITIZE=address,undefined
echo "== tests under ASan+UBSan =="
(cd build-asan && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
    ctest --output-on-failure)

echo "== build (TSan) =="
build build-tsan -DMONGOMQ_SANITIZE=thread -DMONGOMQ_BUILD_EXAMPLES=OFF
echo "== tests under TSan =="
(cd build-tsan && TSAN_OPTIONS="halt_on_error=1 suppressions=$ROOT/tests/tsan.supp" \
    ctest --output-on-failure -E 'harel_interop')
