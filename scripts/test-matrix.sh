#!/usr/bin/env bash
# The matrix (tests/matrix): C, Go, Java, Ruby, Rust, Python and harel share one queue
# on one server. Builds each language's agent (tests/matrix/agents) against what the
# bindings' own scripts leave in build/ (the staged libmongomq, the Java jar, the Ruby
# gem install, the Python wheel venv, build/rust-target), building what is missing
# the way those scripts do, then runs tests/matrix/driver.py in the harel venv
# (scripts/interop-venv.sh). Meant to run after the bindings' suites
# (scripts/test.sh), but works alone. Uses MONGOMQ_TEST_URI when set; otherwise
# starts a test server of its own and stops it on exit. The last line is
# "matrix: N passed, M failed"; exits non-zero on any failure.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
OUT="$ROOT/build/matrix"
AGENTS="$ROOT/tests/matrix/agents"
mkdir -p "$OUT"
say() { echo "test-matrix: $*"; }

PREFIX="$(bash scripts/stage.sh)"
export PKG_CONFIG_PATH="$PREFIX/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
export LD_LIBRARY_PATH="$PREFIX/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

started_server=0
cleanup() { if [[ $started_server == 1 ]]; then bash scripts/test-server.sh stop || true; fi; }
trap cleanup EXIT
if [[ -z "${MONGOMQ_TEST_URI:-}" ]]; then
    export MONGOMQ_STATE_DIR="${MONGOMQ_STATE_DIR:-$ROOT/build/test-server-matrix}"
    MONGOMQ_TEST_URI="$(bash scripts/test-server.sh start --oplog)"
    started_server=1
fi
export MONGOMQ_TEST_URI
say "server $MONGOMQ_TEST_URI"

# ---- C: against the staged library, with pkg-config ----
say "C agent (cc + pkg-config)"
cc -std=c11 -O2 -Wall -Wextra -Werror -o "$OUT/agent-c" "$AGENTS/agent.c" $(pkg-config --cflags --libs mongomq)

# ---- Go: a module of its own with a replace line to bindings/go ----
export GOTOOLCHAIN=local
if ! command -v go >/dev/null && [[ -x /usr/local/go/bin/go ]]; then export PATH="/usr/local/go/bin:$PATH"; fi
say "Go agent (go build)"
(cd "$AGENTS/go" && go build -o "$OUT/agent-go" .)

# ---- Java: the jar (built by scripts/test-java.sh; else, or when the binding's sources
# are newer than it, mvn package -DskipTests) ----
JAR="$ROOT/bindings/java/target/mongomq-$(sed -n 's|^  <version>\(.*\)</version>$|\1|p' "$ROOT/bindings/java/pom.xml" | head -1).jar"
# The OpenTelemetry API and SDK jars (the agent's tpublish/twork), which the package
# phase copies to target/otel (bindings/java/pom.xml, maven-dependency-plugin).
OTEL="$ROOT/bindings/java/target/otel"
if [[ ! -f "$JAR" || ! -d "$OTEL" || -n "$(find bindings/java/src bindings/java/pom.xml bindings/swig -newer "$JAR" -print -quit)" ]]; then
    say "building the Java jar (mvn package -DskipTests)"
    mvn -q -B -ntp -f bindings/java/pom.xml package -DskipTests
fi
say "Java agent (javac, the jar and the OpenTelemetry jars on the classpath)"
rm -rf "$OUT/java"
javac -cp "$JAR:$OTEL/*" -d "$OUT/java" "$AGENTS/Agent.java"

# ---- Ruby: the gem installed into build/ruby/gems (as scripts/test-ruby.sh does) ----
export GEM_HOME="$ROOT/build/ruby/gems"
unset GEM_PATH RUBYLIB RUBYOPT
# Reinstalled when the gem's sources are newer than its installed copy: a stale gem
# would run the current agent against old code (e.g. without mongomq/otel).
RUBY_STALE=""
RUBY_INSTALLED="$(ruby -e 'spec = Gem::Specification.find_by_name("mongomq") rescue nil; print spec ? spec.full_gem_path : ""' 2>/dev/null || true)"
if [[ -n "$RUBY_INSTALLED" && -d "$RUBY_INSTALLED" ]]; then
    RUBY_STALE="$(find bindings/ruby/lib bindings/ruby/ext bindings/ruby/mongomq.gemspec -newer "$RUBY_INSTALLED" -type f -print -quit)"
fi
if [[ -n "$RUBY_STALE" ]] || ! ruby -e 'require "mongomq"; exit(MongoMQ::Queue.method_defined?(:telemetry=) ? 0 : 1)' 2>/dev/null; then
    say "installing the Ruby gem into build/ruby/gems"
    VERSION="$(ruby -e 'load ARGV[0]; print MongoMQ::VERSION' bindings/ruby/lib/mongomq/version.rb)"
    GEM="$ROOT/build/ruby/mongomq-$VERSION.gem"
    (cd bindings/ruby && gem build --quiet mongomq.gemspec --output "$GEM" >/dev/null)
    gem install --local --no-document "$GEM"
fi

# ---- Rust: a crate with a path dependency, the binding's pinned Cargo.lock ----
if ! command -v cargo >/dev/null && [[ -x "$HOME/.cargo/bin/cargo" ]]; then export PATH="$HOME/.cargo/bin:$PATH"; fi
export CARGO_TARGET_DIR="$ROOT/build/rust-target" CARGO_TERM_COLOR=never CARGO_BUILD_JOBS="${MONGOMQ_JOBS:-2}"
[[ -f bindings/rust/Cargo.lock ]] && cp bindings/rust/Cargo.lock "$AGENTS/rust/Cargo.lock"
say "Rust agent (cargo build --release)"
(cd "$AGENTS/rust" && cargo build --release --quiet)
RUST_AGENT="$CARGO_TARGET_DIR/release/mongomq-matrix-agent"

# ---- Python: the wheel's venv (scripts/test-python.sh), else a venv of its own; with
# the otel extra and opentelemetry-sdk (the agent's tpublish/twork), as pinned by the
# binding's tests/constraints.txt ----
PY="$ROOT/build/python/venv/bin/python"
if ! { [[ -x "$PY" ]] && "$PY" -c 'import mongomq, opentelemetry.sdk' 2>/dev/null; }; then
    PY="$OUT/py-venv/bin/python"
    # Reinstalled when the package's sources are newer than the venv: an old venv would
    # run a stale package against the current agent.
    stale=""
    [[ -d "$OUT/py-venv" ]] && stale="$(find bindings/python/src bindings/python/generated -newer "$OUT/py-venv" -type f | head -n 1)"
    if [[ -n "$stale" ]] || ! { [[ -x "$PY" ]] && "$PY" -c 'import mongomq, opentelemetry.sdk' 2>/dev/null; }; then
        say "installing the Python package into build/matrix/py-venv"
        rm -rf "$OUT/py-venv"
        python3 -m venv "$OUT/py-venv"
        WHEEL="$(ls "$ROOT"/build/python/wheels/mongomq-*.whl 2>/dev/null | head -n 1 || true)"
        if [[ -n "$WHEEL" ]]; then
            PIP_DISABLE_PIP_VERSION_CHECK=1 "$PY" -m pip install -q -c bindings/python/tests/constraints.txt "$WHEEL[otel]" opentelemetry-sdk
        else
            PIP_DISABLE_PIP_VERSION_CHECK=1 "$PY" -m pip install -q -c bindings/python/tests/constraints.txt "bindings/python[otel]" opentelemetry-sdk
            rm -rf bindings/python/build bindings/python/src/mongomq.egg-info
        fi
    fi
fi

# ---- harel (and the driver): the pinned interop venv ----
HAREL_PY="$(bash scripts/interop-venv.sh)"

say "running the matrix"
"$HAREL_PY" tests/matrix/driver.py --uri "$MONGOMQ_TEST_URI" \
    --agent "c=$OUT/agent-c" \
    --agent "go=$OUT/agent-go" \
    --agent "java=java -cp $JAR:$OTEL/*:$OUT/java Agent" \
    --agent "ruby=ruby $AGENTS/agent.rb" \
    --agent "rust=$RUST_AGENT" \
    --agent "python=$PY $AGENTS/agent.py" \
    --agent "harel=$HAREL_PY $AGENTS/agent.py --harel"
