#!/usr/bin/env bash
# Regenerates the SWIG wrapper the gem ships (ext/mongomq_raw/mongomq_raw_wrap.c) from
# bindings/swig/mongomq.i and bindings/swig/lang/ruby.i with the project's pinned SWIG
# (scripts/swig.sh). The gem builds without SWIG: users never run this.
#
#   generate.sh           rewrite the committed wrapper
#   generate.sh --check   regenerate into a temporary file; fail if it differs
set -euo pipefail

HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
OUT="$HERE/ext/mongomq_raw/mongomq_raw_wrap.c"

generate() { # generate FILE
    (cd "$ROOT/bindings/swig" &&
        bash "$ROOT/scripts/swig.sh" -ruby -module MongoMQ::Raw -initname mongomq_raw -Wextra -Werror \
            -o "$1" mongomq.i)
}

if [[ "${1:-}" == "--check" ]]; then
    tmp="$(mktemp -d)"
    trap 'rm -rf "$tmp"' EXIT
    generate "$tmp/mongomq_raw_wrap.c"
    if ! diff -u "$OUT" "$tmp/mongomq_raw_wrap.c" >"$tmp/diff"; then
        head -n 40 "$tmp/diff" >&2
        echo "generate.sh --check: $OUT differs from what SWIG generates; run bindings/ruby/generate.sh and commit it" >&2
        exit 1
    fi
    echo "generate.sh --check: the committed wrapper is what SWIG generates"
else
    generate "$OUT"
    echo "$OUT"
fi
