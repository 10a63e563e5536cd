#!/usr/bin/env bash
# Builds and tests the Go binding (bindings/go) against the staged libmongomq:
#   1. the committed SWIG layer (internal/raw) equals what the pinned SWIG makes now
#      (scripts/swig-generate.sh go --check);
#   2. gofmt (hand-written files) and go vet ./... with every default check, the
#      generated internal/raw included (no exceptions);
#   3. go test -race: every contract scenario (TestContract/<name>, checked by
#      scripts/contract-scenarios.py check go) and the examples;
#   4. a module outside the repository (a temp dir, `replace` line) builds and runs
#      the example of bindings/go/README.md and must print what the README says;
#   5. a short run of the Go bench (cmd/mongomq-bench) as a smoke test.
# Uses MONGOMQ_TEST_URI when set (scripts/test.sh sets it); otherwise starts a test
# server of its own and stops it on exit. Exits non-zero on any failure.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
GODIR="$ROOT/bindings/go"
MODULE=github.com/mongomq/mongomq/bindings/go

# Go: the machine's, else Debian's (bookworm: 1.19, which the module supports).
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
echo "go vet: clean"

echo "== go: go test -race =="
set +e
go test -race -count=1 -v ./... 2>&1 | tee "$TMP/test.log" | grep -v '^=== \(RUN\|PAUSE\|CONT\)'
status=${PIPESTATUS[0]}
set -e
[[ $status == 0 ]] || { echo "test-go: go test failed" >&2; exit "$status"; }
passed=$(grep -c -- '--- PASS: TestContract/' "$TMP/test.log" || true)
echo "test-go: $passed contract scenarios passed"
python3 "$ROOT/scripts/contract-scenarios.py" check go "$TMP/test.log"

echo "== go: the README example, from a module outside the repository =="
APP="$TMP/readme-app"
mkdir -p "$APP"
# The first ```go block of the README is the program; the ``` block after "It prints:"
# is its output.
awk '/^```go$/ && !done {on=1; next} on && /^```$/ {on=0; done=1} on' "$GODIR/README.md" >"$APP/main.go"
awk '/^It prints:$/ {want=1; next} want && /^```$/ {if (on) exit; on=1; next} on' "$GODIR/README.md" >"$TMP/want.txt"
[[ -s "$APP/main.go" && -s "$TMP/want.txt" ]] || { echo "test-go: no example found in README.md" >&2; exit 1; }
cat >"$APP/go.mod" <<EOF
module example.com/readme

go 1.19

require $MODULE v0.4.0

replace $MODULE => $GODIR
EOF
(cd "$APP" && go build -o readme-app . && \
    MONGOMQ_URI="$MONGOMQ_TEST_URI" MONGOMQ_DB="mqt_go_readme_$$_$RANDOM" ./readme-app) | tee "$TMP/got.txt"
diff -u "$TMP/want.txt" "$TMP/got.txt" || { echo "test-go: the README example printed something else" >&2; exit 1; }
echo "the README example ran as documented"

echo "== go: bench smoke run (200 events) =="
go run ./cmd/mongomq-bench -uri "$MONGOMQ_TEST_URI" -events 200 -groups 10 | tail -n 1

echo "test-go: all passed"
