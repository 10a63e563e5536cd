#!/usr/bin/env bash
# Builds and tests the Rust crates (bindings/rust) against the staged libmongomq:
#   1. rustfmt --check, and clippy on every target with -D warnings;
#   2. cargo test -p mongomq-sys: the header drift check (tests/header.rs compiles the
#      crate's declarations against the installed mongomq.h and fails on any
#      difference: a function, constant or type missing on either side, a changed
#      signature, a struct's fields, size or layout, an _INIT value);
#   3. cargo test -p mongomq --all-features: every contract scenario
#      (tests/contract.rs, test_<scenario>; scripts/contract-scenarios.py checks that
#      each passed under its name), the worker's lifecycle and signals
#      (tests/worker.rs), logging (tests/logging.rs), the async API (feature tokio:
#      the contract's async scenarios in tests/async_contract.rs, the rest in
#      tests/async_tokio.rs), tracing (feature opentelemetry: the contract's tracing
#      scenarios in tests/trace.rs, with the OpenTelemetry SDK's in-memory exporters),
#      the partitions scenarios (tests/partitions.rs) and the doc examples
#      (compile_fail ones included); then every contract scenario again with
#      MONGOMQ_TEST_PARTITIONS=4 (every scenario's queue of 4 partitions), checked the
#      same way;
#   4. the two examples of bindings/rust/README.md (a producer and a worker) must be
#      mongomq/examples/producer.rs and worker.rs; a crate outside the repository (a
#      temp dir, path dependency on bindings/rust/mongomq) builds them and runs them
#      against the test server, and they must print what the README says;
#   5. a short run of the Rust bench (examples/bench.rs) as a smoke test, with the
#      tokio feature so that its async-vs-sync part (awaited publishes, the async
#      worker's drain) runs too; and of the telemetry bench (examples/bench_telemetry.rs,
#      feature opentelemetry: tracing off/on, attributes none/three).
# Crate versions come from bindings/rust/crate-versions.txt: the Cargo.lock is made
# from it (a Cargo.lock names its registry's host, which the project's files do not),
# and every build is --locked. Build output goes to
# build/rust-target. Uses MONGOMQ_TEST_URI when set (scripts/test.sh sets it);
# otherwise starts a test server of its own and stops it on exit. Exits non-zero on
# any failure.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
RUSTDIR="$ROOT/bindings/rust"

# Rust: rustup's toolchain (the machine's). Debian 12's rustc (1.63) is too old for
# the crates (1.77: offset_of! in the drift check).
if ! command -v cargo >/dev/null && [[ -x "$HOME/.cargo/bin/cargo" ]]; then
    export PATH="$HOME/.cargo/bin:$PATH"
fi
command -v cargo >/dev/null || { echo "test-rust: cargo not found: install Rust 1.77+ with rustup" >&2; exit 1; }
for component in clippy rustfmt; do
    if ! cargo "${component/rustfmt/fmt}" --version >/dev/null 2>&1; then
        echo "test-rust: adding the $component component"
        rustup component add "$component"
    fi
done
echo "test-rust: $(cargo --version), $(rustc --version)"

# Cargo.lock from the pinned list: resolve, then set each crate to its pinned version.
# The semver-compatible part of a version (1.2.3 -> 1, 0.9.5 -> 0.9): a crate may be in
# the lock at two incompatible versions (syn 2 and syn 3), each pinned on its own line.
compatible() { if [[ "$1" == 0.* ]]; then echo "${1%.*}"; else echo "${1%%.*}"; fi; }
(
    cd "$RUSTDIR"
    rm -f Cargo.lock
    cargo generate-lockfile --quiet
    while read -r name version; do
        [[ -z "$name" || "$name" == \#* ]] && continue
        if ! cargo update --quiet -p "$name" --precise "$version" 2>/dev/null; then
            # Absent from this resolution or ambiguous: pin the entry of that name whose
            # version is compatible with the pinned one, if there is one.
            for current in $(awk -v n="$name" '$0=="name = \""n"\"" {getline; gsub(/version = |"/,""); print}' Cargo.lock); do
                if [[ "$(compatible "$current")" == "$(compatible "$version")" ]]; then
                    cargo update --quiet -p "$name@$current" --precise "$version"
                    break
                fi
            done
        fi
    done <crate-versions.txt
    while read -r name version; do
        [[ -z "$name" || "$name" == \#* ]] && continue
        grep -A1 "^name = \"$name\"$" Cargo.lock | grep -q "^version = \"$version\"$" ||
            { echo "test-rust: could not pin $name to $version" >&2; exit 1; }
    done <crate-versions.txt
)

PREFIX="$(bash "$ROOT/scripts/stage.sh")"
export PKG_CONFIG_PATH="$PREFIX/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
export LD_LIBRARY_PATH="$PREFIX/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export CARGO_TARGET_DIR="$ROOT/build/rust-target"
export CARGO_TERM_COLOR=never
# At most 2 jobs: the machine is shared.
export CARGO_BUILD_JOBS="${MONGOMQ_JOBS:-2}"

NAME=rust
# shellcheck source=scripts/with-server.sh
source "$ROOT/scripts/with-server.sh"

cd "$RUSTDIR"
echo "== rust: rustfmt, clippy =="
cargo fmt --all -- --check
cargo clippy --locked --all-targets --all-features -- -D warnings
echo "clippy: clean"

echo "== rust: header drift check (mongomq-sys) =="
cargo test --locked -p mongomq-sys

echo "== rust: contract scenarios, async API and doc examples (mongomq) =="
cargo test --locked -p mongomq --all-features 2>&1 | tee "$TMP/cargo-test.log"
[[ ${PIPESTATUS[0]} == 0 ]] || { echo "test-rust: cargo test failed" >&2; exit 1; }
python3 "$ROOT/scripts/contract-scenarios.py" check rust "$TMP/cargo-test.log"

echo "== rust: the contract scenarios again, on queues of 4 partitions (MONGOMQ_TEST_PARTITIONS=4) =="
# bindings/CONTRACT.md, "Twice: one partition and four": the test support
# (tests/common) opens every scenario's queue with MONGOMQ_TEST_PARTITIONS partitions
# (the Partitions scenarios open their own). The test files that hold scenarios, and
# of them the scenarios only (test_<name>; the extras beside them are named otherwise).
MONGOMQ_TEST_PARTITIONS=4 cargo test --locked -p mongomq --all-features \
    --test contract --test async_contract --test trace --test partitions -- test_ 2>&1 | tee "$TMP/cargo-test-p4.log"
[[ ${PIPESTATUS[0]} == 0 ]] || { echo "test-rust: cargo test with 4 partitions failed" >&2; exit 1; }
python3 "$ROOT/scripts/contract-scenarios.py" check rust "$TMP/cargo-test-p4.log"

echo "== rust: the README's examples as a crate outside the repository =="
APP="$TMP/readme-examples"
mkdir -p "$APP/src/bin"
cat >"$APP/Cargo.toml" <<TOML
[package]
name = "readme-examples"
version = "0.1.0"
edition = "2021"
publish = false

[dependencies]
mongomq = { path = "$RUSTDIR/mongomq" }
serde_json = "1"

[workspace]
TOML
# The crate versions the bindings were tested with.
cp "$RUSTDIR/Cargo.lock" "$APP/Cargo.lock"
# The fenced block after the line holding MARKER.
extract() { # extract MARKER
    awk -v marker="$1" '
        index($0, marker) { found = 1; next }
        found && /^```/ { if (inside) exit; inside = 1; next }
        inside { print }
    ' "$RUSTDIR/README.md"
}
DB="mqt_rust_readme_$$_$RANDOM"
for example in producer worker; do
    extract "<!-- example: examples/$example.rs -->" >"$APP/src/bin/$example.rs"
    extract "<!-- output: $example" >"$TMP/$example.expected"
    [[ -s "$APP/src/bin/$example.rs" && -s "$TMP/$example.expected" ]] ||
        { echo "test-rust: no $example example (or no output after it) in README.md" >&2; exit 1; }
    diff -u "$RUSTDIR/mongomq/examples/$example.rs" "$APP/src/bin/$example.rs" ||
        { echo "test-rust: README.md's $example differs from mongomq/examples/$example.rs" >&2; exit 1; }
done
(cd "$APP" && cargo build --quiet --bins)
for example in producer worker; do
    (cd "$APP" && MONGOMQ_URI="$MONGOMQ_TEST_URI" MONGOMQ_DB="$DB" cargo run --quiet --bin "$example") \
        >"$TMP/$example.actual"
done
"$PREFIX/bin/mongomq" drop --yes --uri "$MONGOMQ_TEST_URI" --db "$DB" --prefix orders >/dev/null
diff -u "$TMP/producer.expected" "$TMP/producer.actual" ||
    { echo "test-rust: the producer example printed something else than the README says" >&2; exit 1; }
# The worker's 4 threads print the groups' lines in any order.
diff -u <(sort "$TMP/worker.expected") <(sort "$TMP/worker.actual") ||
    { echo "test-rust: the worker example printed something else than the README says" >&2; exit 1; }
echo "README examples: ran, output as documented"

echo "== rust: bench smoke run =="
cargo run --locked --quiet --features tokio --example bench -- --uri "$MONGOMQ_TEST_URI" --events 200 --groups 10 --workers 2
cargo run --locked --quiet --features opentelemetry --example bench_telemetry -- --uri "$MONGOMQ_TEST_URI" --events 100 --groups 10 --workers 2

echo "test-rust: all passed"
