#!/usr/bin/env bash
# Faults from outside (issue 14): the toxiproxy suite, the step-down proxy suite
# (issue 17), the server crash-and-restart suite, the TLS test and a short fuzzing run.
# Everything on loopback, bounded in time.
#   scripts/test-faults.sh            (MONGOMQ_FUZZ_SECONDS: per harness, default 20)
# Uses MONGOMQ_TEST_URI when set; else starts a test server and stops it on exit.
# Needs: go (toxiproxy is built from the Go module proxy the first time), clang and
# libclang-rt-14-dev (the fuzzers), openssl, cmake, ninja, cmocka, libmongoc, a JDK
# + Maven.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BUILD="$ROOT/build-faults"
FAIL=0

# What install-deps.sh may not have installed: Go (toxiproxy), clang with its
# libFuzzer runtime, openssl (the TLS test's certificates).
export GOTOOLCHAIN=local
if ! command -v go >/dev/null && [ -x /usr/local/go/bin/go ]; then export PATH="/usr/local/go/bin:$PATH"; fi
need=()
command -v go >/dev/null || need+=(golang-go)
command -v clang >/dev/null || need+=(clang)
ls /usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a >/dev/null 2>&1 || need+=(libclang-rt-14-dev)
command -v openssl >/dev/null || need+=(openssl)
if [ "${#need[@]}" -gt 0 ]; then
    echo "test-faults: installing ${need[*]}"
    SUDO=(); [ "$(id -u)" = 0 ] || SUDO=(sudo)
    "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${need[@]}" </dev/null ||
        { "${SUDO[@]}" apt-get update -q && "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${need[@]}" </dev/null; }
fi

echo "== building toxiproxy and the fault tests"
TOXI="$(bash "$ROOT/tests/faults/build-toxiproxy.sh" "$ROOT/build")"
cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Debug >/dev/null
ninja -C "$BUILD" -j2 test_proxy test_stepdown test_restart test_tls >/dev/null

STARTED=""
if [ -z "${MONGOMQ_TEST_URI:-}" ]; then
    export MONGOMQ_STATE_DIR="$ROOT/build/test-server-faults"
    MONGOMQ_TEST_URI="$(bash "$ROOT/scripts/test-server.sh" start --oplog)"
    export MONGOMQ_TEST_URI
    STARTED=1
fi
cleanup() {
    if [ -n "$STARTED" ]; then MONGOMQ_STATE_DIR="$ROOT/build/test-server-faults" bash "$ROOT/scripts/test-server.sh" stop || true; fi
}
trap cleanup EXIT

echo "== fault proxy suite (tests/faults/test_proxy.c)"
bash "$ROOT/tests/faults/run.sh" "$TOXI" "$BUILD/tests/faults/test_proxy" || FAIL=1

echo "== step-down errors after applied writes (tests/faults/stepdown.sh)"
bash "$ROOT/tests/faults/stepdown.sh" "$BUILD/tests/faults/test_stepdown" || FAIL=1

echo "== server crash and restart (tests/faults/restart.sh)"
bash "$ROOT/tests/faults/restart.sh" "$BUILD/tests/faults/test_restart" || FAIL=1

echo "== TLS (tests/faults/tls.sh)"
bash "$ROOT/tests/faults/tls.sh" "$BUILD/tests/faults/test_tls" || FAIL=1

echo "== fuzzing, ${MONGOMQ_FUZZ_SECONDS:-20} s per harness (scripts/fuzz.sh)"
bash "$ROOT/scripts/fuzz.sh" "${MONGOMQ_FUZZ_SECONDS:-20}" || FAIL=1

if [ "$FAIL" != 0 ]; then echo "test-faults: FAILED" >&2; exit 1; fi
echo "test-faults: all passed"
