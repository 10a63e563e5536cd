#!/usr/bin/env bash
# Builds and tests the Go binding (bindings/go) against the staged libmongomq:
#   1. the committed SWIG layer (internal/raw) equals what the pinned SWIG makes now
#      (scripts/swig-generate.sh go --check);
#   2. gofmt (hand-written files) and go vet ./... with every default check, the
#      generated internal/raw included (no exceptions);
#   3. go test -race, of the module and of its nested module otelmongomq (the
#      OpenTelemetry side, a module of its own so the core has no dependency):
#      every contract scenario (TestContract/<name>, the Tracing ones in
#      otelmongomq; both outputs together checked by scripts/contract-scenarios.py
#      check go) and the examples; then TestContract of both again with
#      MONGOMQ_TEST_PARTITIONS=4 (every scenario's queue of 4 partitions), checked
#      the same way;
#   4. the README's producer and worker are examples/{producer,worker}/main.go, and a
#      module outside the repository (a temp dir, `replace` line) builds and runs
#      them: they must print what the README says;
#   5. a short run of the Go bench (cmd/mongomq-bench, and otelmongomq's with
#      tracing on and off) as a smoke test.
# Uses MONGOMQ_TEST_URI when set (scripts/test.sh sets it); otherwise starts a test
# server of its own and stops it on exit. Exits non-zero on any failure.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
GODIR="$ROOT/bindings/go"
MODULE=github.com/mongomq/mongomq/bindings/go

# Go: the machine's, else Debian's. The module needs Go 1.21 (log/slog): bookworm's
# golang-go is 1.19, too old, so without a newer Go on the machine this fails below,
# saying so.
export GOTOOLCHAIN=local
if ! command -v go >/dev/null && [[ -x /usr/local/go/bin/go ]]; then
    export PATH="/usr/local/go/bin:$PATH"
fi
if ! command -v go >/dev/null; then
    echo "test-go: installing Debian's golang-go"
    SUDO=()
    [[ "$(id -u)" -ne 0 ]] && SUDO=(sudo -n)
    "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends golang-go </dev/null ||
        { "${SUDO[@]}" apt-get update -q </dev/null &&
          "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends golang-go </dev/null; }
fi
echo "test-go: $(go version)"
go_minor="$(go env GOVERSION | sed -n 's/^go1\.\([0-9]*\).*/\1/p')"
if [[ -z "$go_minor" || "$go_minor" -lt 21 ]]; then
    echo "test-go: the Go binding needs Go 1.21 or newer (log/slog); this is $(go env GOVERSION)" >&2
    exit 1
fi

PREFIX="$(bash "$ROOT/scripts/stage.sh")"
export PKG_CONFIG_PATH="$PREFIX/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
export LD_LIBRARY_PATH="$PREFIX/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

NAME=go
# shellcheck source=scripts/with-server.sh
source "$ROOT/scripts/with-server.sh"

echo "== go: internal/raw is what the pinned SWIG makes now =="
# //go:generate must be the one generator's call, so that `go generate` and this
# check make the same files.
grep -qx '//go:generate bash ../../../../scripts/swig-generate.sh go' "$GODIR/internal/raw/generate.go" ||
    { echo "test-go: internal/raw/generate.go's //go:generate line is not 'bash ../../../../scripts/swig-generate.sh go'" >&2; exit 1; }
bash "$ROOT/scripts/swig-generate.sh" go --check

cd "$GODIR"
echo "== go: gofmt, go vet =="
unformatted="$(gofmt -l $(find . -name '*.go' ! -path './internal/raw/mongomq_raw.go'))"
if [[ -n "$unformatted" ]]; then
    echo "test-go: not gofmt'ed: $unformatted" >&2
    exit 1
fi
go vet ./...
(cd otelmongomq && go vet ./...)
echo "go vet: clean (and otelmongomq's)"

echo "== go: go test -race =="
set +e
go test -race -count=1 -v ./... 2>&1 | tee "$TMP/test.log" | grep -v '^=== \(RUN\|PAUSE\|CONT\)'
status=${PIPESTATUS[0]}
set -e
[[ $status == 0 ]] || { echo "test-go: go test failed" >&2; exit "$status"; }
echo "== go: go test -race (otelmongomq) =="
set +e
(cd otelmongomq && go test -race -count=1 -v ./...) 2>&1 | tee "$TMP/test-otel.log" | grep -v '^=== \(RUN\|PAUSE\|CONT\)'
status=${PIPESTATUS[0]}
set -e
[[ $status == 0 ]] || { echo "test-go: go test (otelmongomq) failed" >&2; exit "$status"; }
cat "$TMP/test.log" "$TMP/test-otel.log" >"$TMP/test-all.log"
passed=$(grep -c -- '--- PASS: TestContract/' "$TMP/test-all.log" || true)
echo "test-go: $passed contract scenarios passed"
python3 "$ROOT/scripts/contract-scenarios.py" check go "$TMP/test-all.log"

echo "== go: the contract scenarios again, on queues of 4 partitions (MONGOMQ_TEST_PARTITIONS=4) =="
# bindings/CONTRACT.md, "Twice: one partition and four": the test support opens every
# scenario's queue with MONGOMQ_TEST_PARTITIONS partitions (the Partitions scenarios
# open their own); TestContract only, in both modules.
set +e
MONGOMQ_TEST_PARTITIONS=4 go test -race -count=1 -v -run '^TestContract$' . 2>&1 | tee "$TMP/test-p4.log" |
    grep -v '^=== \(RUN\|PAUSE\|CONT\)'
status=${PIPESTATUS[0]}
set -e
[[ $status == 0 ]] || { echo "test-go: go test with 4 partitions failed" >&2; exit "$status"; }
set +e
(cd otelmongomq && MONGOMQ_TEST_PARTITIONS=4 go test -race -count=1 -v -run '^TestContract$' .) 2>&1 |
    tee "$TMP/test-otel-p4.log" | grep -v '^=== \(RUN\|PAUSE\|CONT\)'
status=${PIPESTATUS[0]}
set -e
[[ $status == 0 ]] || { echo "test-go: go test (otelmongomq) with 4 partitions failed" >&2; exit "$status"; }
cat "$TMP/test-p4.log" "$TMP/test-otel-p4.log" >"$TMP/test-all-p4.log"
passed=$(grep -c -- '--- PASS: TestContract/' "$TMP/test-all-p4.log" || true)
echo "test-go: $passed contract scenarios passed with 4 partitions"
python3 "$ROOT/scripts/contract-scenarios.py" check go "$TMP/test-all-p4.log"

echo "== go: the README's examples, from a module outside the repository =="
# The README's producer and worker are examples/{producer,worker}/main.go: the ```go
# block after the line naming the file must be that file, and the ``` block after it
# what it prints (the worker's lines in any order: its groups run at once).
APP="$TMP/examples-app"
mkdir -p "$APP"
cat >"$APP/go.mod" <<EOF
module example.com/examples

go 1.21

require $MODULE v0.8.0

replace $MODULE => $GODIR
EOF
for ex in producer worker; do
    # block N: the Nth ``` block after the line that names the example's file
    block() {
        awk -v name="(\`examples/$ex/main.go\`):" -v n="$1" '
            index($0, name) && !found {found=1; next}
            found && /^```/ { if (on) { on=0; if (++seen == n) exit; next } on=1; next }
            found && on && seen == n-1' "$GODIR/README.md"
    }
    block 1 >"$TMP/$ex.readme.go"
    block 2 >"$TMP/$ex.want"
    [[ -s "$TMP/$ex.readme.go" && -s "$TMP/$ex.want" ]] || { echo "test-go: no $ex example in README.md" >&2; exit 1; }
    diff -u "$GODIR/examples/$ex/main.go" "$TMP/$ex.readme.go" ||
        { echo "test-go: README.md's $ex differs from examples/$ex/main.go" >&2; exit 1; }
    mkdir -p "$APP/$ex"
    cp "$GODIR/examples/$ex/main.go" "$APP/$ex/"
done
(cd "$APP" && go build -o bin/ ./...)
db="mqt_go_examples_$$_$RANDOM"
for ex in producer worker; do
    echo "-- $ex"
    MONGOMQ_URI="$MONGOMQ_TEST_URI" MONGOMQ_DB="$db" timeout 60 "$APP/bin/$ex" | tee "$TMP/$ex.got"
    if [[ $ex == worker ]]; then
        sort -o "$TMP/$ex.got" "$TMP/$ex.got"
        sort -o "$TMP/$ex.want" "$TMP/$ex.want"
    fi
    diff -u "$TMP/$ex.want" "$TMP/$ex.got" ||
        { echo "test-go: the $ex example printed something else than README.md says" >&2; exit 1; }
done
echo "the README's examples are examples/ and ran as documented"

echo "== go: bench smoke run (200 events) =="
go run ./cmd/mongomq-bench -uri "$MONGOMQ_TEST_URI" -events 200 -groups 10 | tail -n 1
echo "== go: otelmongomq bench smoke run (100 events, tracing off, noop and sdk) =="
(cd otelmongomq && go run ./cmd/otelmongomq-bench -uri "$MONGOMQ_TEST_URI" -events 100 -groups 10 -rounds 1 | tail -n 7)

echo "test-go: all passed"
