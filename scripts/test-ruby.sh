#!/usr/bin/env bash
# Builds and tests the Ruby gem (bindings/ruby) against the staged libmongomq, the way
# a user installs it:
#   1. the committed SWIG wrapper (ext/mongomq_raw/mongomq_raw_wrap.c) equals what the
#      pinned SWIG generates now (bindings/ruby/generate.sh --check);
#   2. `gem build` of the gemspec, then `gem install --local` of the built .gem into
#      GEM_HOME=build/ruby/gems (never the system's gems), which compiles the
#      extension against libmongomq found with pkg-config;
#   3. the minitest suite (bindings/ruby/test) against the installed gem: every
#      scenario of bindings/CONTRACT.md under its name, and the Ruby-specific ones;
#   4. the example of bindings/ruby/README.md, copied to a directory outside the
#      repository and run there with the installed gem; it must print what it should;
#   5. a short run of the Ruby bench as a smoke test.
# Uses MONGOMQ_TEST_URI when set (scripts/test.sh sets it); otherwise starts a test
# server of its own and stops it on exit. Exits non-zero on any failure.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
RBDIR="$ROOT/bindings/ruby"
OUT="$ROOT/build/ruby"

# Ruby with its headers (mkmf) and minitest: Debian's ruby, ruby-dev (Ruby 3.1 on
# bookworm; minitest comes with it as a bundled gem).
missing=()
command -v ruby >/dev/null || missing+=(ruby)
{ command -v ruby >/dev/null && ruby -e 'require "mkmf"; exit(File.exist?(File.join(RbConfig::CONFIG["rubyhdrdir"], "ruby.h")) ? 0 : 1)' >/dev/null 2>&1; } ||
    missing+=(ruby-dev)
{ command -v ruby >/dev/null && ruby -e 'require "minitest"' >/dev/null 2>&1; } || missing+=(ruby-minitest)
command -v pkg-config >/dev/null || missing+=(pkg-config)
if ((${#missing[@]})); then
    echo "test-ruby: installing ${missing[*]}"
    SUDO=()
    [[ "$(id -u)" -ne 0 ]] && SUDO=(sudo -n)
    "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" </dev/null ||
        { "${SUDO[@]}" apt-get update -q </dev/null &&
          "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" </dev/null; }
fi
echo "test-ruby: $(ruby -v)"

PREFIX="$(bash "$ROOT/scripts/stage.sh")"
export PKG_CONFIG_PATH="$PREFIX/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"

NAME=ruby
# shellcheck source=scripts/with-server.sh
source "$ROOT/scripts/with-server.sh"

echo "== ruby: regenerate the SWIG wrapper with the pinned SWIG and compare =="
bash "$RBDIR/generate.sh" --check

echo "== ruby: every scenario of bindings/CONTRACT.md has its test, by name =="
missing=0
for name in $(sed -n 's/^| `\([a-z0-9_]*\)` |.*/\1/p' "$ROOT/bindings/CONTRACT.md"); do
    grep -q "def test_$name\$" "$RBDIR"/test/test_*.rb || { echo "test-ruby: no test_$name" >&2; missing=1; }
done
[[ $missing == 0 ]] || exit 1
echo "all $(grep -c '^| `[a-z0-9_]*` |' "$ROOT/bindings/CONTRACT.md") scenarios are there"

echo "== ruby: gem build =="
VERSION="$(ruby -e 'load ARGV[0]; print MongoMQ::VERSION' "$RBDIR/lib/mongomq/version.rb")"
GEM="$OUT/mongomq-$VERSION.gem"
mkdir -p "$OUT"
rm -rf "$GEM" "$OUT/gems"
(cd "$RBDIR" && gem build mongomq.gemspec --output "$GEM")

echo "== ruby: gem install --local into build/ruby/gems =="
# GEM_HOME: the gem goes there, and Ruby finds it (and the system's minitest) there.
export GEM_HOME="$OUT/gems"
unset GEM_PATH RUBYLIB RUBYOPT
gem install --local --no-document "$GEM"
ruby -e 'require "mongomq"; puts "installed: mongomq #{MongoMQ::VERSION} from #{Gem.loaded_specs["mongomq"].full_gem_path}, libmongomq #{MongoMQ.library_version}"'

echo "== ruby: minitest =="
# (libmongoc's monitor logs its failed connections to the unreachable-server tests'
# 127.0.0.1:1 at DEBUG level, on stdout: those lines are dropped.)
(cd "$RBDIR" && ruby -w -Itest -e 'Dir["test/test_*.rb"].sort.each { |f| require File.expand_path(f) }') |
    { grep -v -E '^[0-9/ :.]+: \[ *[0-9]+\]: +DEBUG: ' || true; }

echo "== ruby: the README example, outside the repository =="
mkdir -p "$TMP/app"
awk '/^<!-- example:/ { grab = 1; next } grab && /^```ruby$/ { inside = 1; next } inside && /^```$/ { exit } inside { print }' \
    "$RBDIR/README.md" >"$TMP/app/example.rb"
[[ -s "$TMP/app/example.rb" ]] || { echo "test-ruby: no example found in bindings/ruby/README.md" >&2; exit 1; }
db="mqt_rb_example_$$_$RANDOM"
(cd "$TMP/app" && MONGOMQ_URI="$MONGOMQ_TEST_URI" MONGOMQ_DB="$db" ruby example.rb) | tee "$TMP/example.out"
expect=("published from seq 1"
        "claimed customer-17 #1 attempt 1: {\"order\":1}"
        "messages left: 0")
for line in "${expect[@]}"; do
    grep -qxF "$line" "$TMP/example.out" || { echo "test-ruby: the example did not print: $line" >&2; exit 1; }
done
[[ "$(grep -c '^worker handled ' "$TMP/example.out")" == 2 ]] || { echo "test-ruby: the example's worker did not handle 2 events" >&2; exit 1; }
echo "the README example ran outside the repository"

echo "== ruby: bench (smoke) =="
ruby "$RBDIR/bench/bench.rb" --uri "$MONGOMQ_TEST_URI" --events 200 --groups 20 --workers 4
