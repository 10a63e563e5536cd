#!/usr/bin/env bash
# Builds and tests the Ruby gem (bindings/ruby) against the staged libmongomq, the way
# a user installs it:
#   1. the committed SWIG wrapper (ext/mongomq_raw/mongomq_raw_wrap.c) is what the
#      pinned SWIG generates now (scripts/swig-generate.sh ruby --check);
#   2. `gem build` of the gemspec, then `gem install --local` of the built .gem into
#      GEM_HOME=build/ruby/gems (never the system's gems), which compiles the
#      extension against libmongomq found with pkg-config;
#   3. the minitest suite (bindings/ruby/test) against the installed gem, verbose; then
#      scripts/contract-scenarios.py checks that every scenario of
#      bindings/CONTRACT.md ran and passed under its name; then the contract scenarios
#      again (those only: minitest --name), each on a queue of 4 partitions
#      (MONGOMQ_TEST_PARTITIONS=4: CONTRACT.md, "Twice: one partition and four"),
#      checked the same way;
#   4. the examples (bindings/ruby/examples: a producer, then a worker that stops once
#      idle), which the README shows verbatim, copied to a directory outside the
#      repository and run there with the installed gem; they must print what they
#      should;
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
bash "$ROOT/scripts/swig-generate.sh" ruby --check

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
# minitest [ARGS]: the whole suite, verbose (ARGS: minitest's own, e.g. --name).
minitest() {
    (cd "$RBDIR" && ruby -w -Itest -e 'Dir["test/test_*.rb"].sort.each { |f| require File.expand_path(f) }' \
        -- --verbose "$@")
}
MONGOMQ_TEST_PARTITIONS=1 minitest | tee "$OUT/minitest.out"
python3 "$ROOT/scripts/contract-scenarios.py" check ruby "$OUT/minitest.out"

echo "== ruby: the contract scenarios again, with MONGOMQ_TEST_PARTITIONS=4 =="
scenarios="$(python3 "$ROOT/scripts/contract-scenarios.py" names --lang ruby | paste -sd'|')"
MONGOMQ_TEST_PARTITIONS=4 minitest --name "/\\Atest_(${scenarios})\\z/" | tee "$OUT/minitest-partitions-4.out"
python3 "$ROOT/scripts/contract-scenarios.py" check ruby "$OUT/minitest-partitions-4.out"

echo "== ruby: the examples, as the README shows them, outside the repository =="
mkdir -p "$TMP/app"
for f in producer.rb worker.rb; do
    # The README's block after the line "<!-- examples/$f -->" is the file, verbatim.
    awk -v mark="<!-- examples/$f -->" '$0 == mark { grab = 1; next } grab && /^```ruby$/ { inside = 1; next }
        inside && /^```$/ { exit } inside { print }' "$RBDIR/README.md" >"$TMP/app/readme-$f"
    cmp -s "$TMP/app/readme-$f" "$RBDIR/examples/$f" ||
        { echo "test-ruby: bindings/ruby/README.md does not show examples/$f as it is" >&2; exit 1; }
    cp "$RBDIR/examples/$f" "$TMP/app/$f"
done
db="mqt_rb_example_$$_$RANDOM"
(cd "$TMP/app" && MONGOMQ_URI="$MONGOMQ_TEST_URI" MONGOMQ_DB="$db" ruby producer.rb) | tee "$TMP/producer.out"
(cd "$TMP/app" && MONGOMQ_URI="$MONGOMQ_TEST_URI" MONGOMQ_DB="$db" IDLE_TIMEOUT=1 timeout 60 ruby worker.rb) |
    tee "$TMP/worker.out"
expect() { # expect FILE LINE
    grep -qxF "$2" "$1" || { echo "test-ruby: the example did not print: $2" >&2; exit 1; }
}
expect "$TMP/producer.out" "published order 1 as seq 1"
expect "$TMP/producer.out" "published orders 2..5 from seq 3"
expect "$TMP/producer.out" "events in the queue: 6"
expect "$TMP/worker.out" "customer-17: order 1 charge (attempt 1)"
expect "$TMP/worker.out" "customer-50: order 5 charge (attempt 1)"
expect "$TMP/worker.out" "handled 5 events; stopped"
ruby -e 'require "mongomq"
  MongoMQ::Client.open(ARGV[0]) { |c| c.queue(ARGV[1], "orders") { |q| abort "left: #{q.stats["messages"]}" unless q.stats["messages"] == 1; q.drop } }' \
    "$MONGOMQ_TEST_URI" "$db"
echo "the examples ran outside the repository (the scheduled reminder is left, then dropped)"

echo "== ruby: bench (smoke) =="
ruby "$RBDIR/bench/bench.rb" --uri "$MONGOMQ_TEST_URI" --events 200 --groups 20 --workers 4
