#!/usr/bin/env bash
# The one place SWIG code is generated, for every SWIG language, from
# bindings/swig/mongomq.i with the pinned SWIG (scripts/swig.sh):
#
#   swig-generate.sh go|ruby|python        write the committed wrapper of that language
#   swig-generate.sh go|ruby|python --check  generate into a temp dir and fail, showing
#                                            the diff, if the committed one differs
#   swig-generate.sh java OUT_JAVA_DIR OUT_C  the Java classes and the JNI C wrapper, into
#                                            the build tree (Java's are not committed)
#
# What each language's output is and where it goes is written here and nowhere else:
#   go:     bindings/go/internal/raw/{mongomq_raw.go,mongomq_raw_wrap.c} (-cgo)
#   ruby:   bindings/ruby/ext/mongomq_raw/mongomq_raw_wrap.c (module MongoMQ::Raw)
#   python: bindings/python/generated/_raw_wrap.c (-noproxy -threads: the package calls
#           the C functions directly, the GIL released but where lang/python.i says)
#   java:   package org.mongomq.internal, from bindings/java/src/main/swig/mongomq_java.i
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
SWIG_DIR="$ROOT/bindings/swig"
lang="${1:?usage: swig-generate.sh go|ruby|python [--check] | java OUT_JAVA_DIR OUT_C}"
shift

swig() { bash "$ROOT/scripts/swig.sh" "$@"; }

# gen LANG DIR: writes LANG's committed files into DIR (their names are the committed ones).
gen() {
    local dir=$2
    mkdir -p "$dir"
    case "$1" in
        go) (cd "$ROOT/bindings/go/internal/raw" &&
                 swig -go -cgo -intgosize 64 -package raw -I"$ROOT/include" -outdir "$dir" -o "$dir/mongomq_raw_wrap.c" ../../../swig/mongomq.i) ;;
        ruby) (cd "$SWIG_DIR" &&
                   swig -ruby -module MongoMQ::Raw -initname mongomq_raw -Wextra -Werror -I"$ROOT/include" \
                       -o "$dir/mongomq_raw_wrap.c" mongomq.i) ;;
        python) swig -python -threads -noproxy -module _raw -I"$ROOT/include" -outdir "$dir" -o "$dir/_raw_wrap.c" "$SWIG_DIR/mongomq.i" ;;  # (no source path in its output)
        *) echo "swig-generate.sh: unknown language '$1'" >&2; exit 2 ;;
    esac
}

# The committed directory and files of each language.
committed_dir() {
    case "$1" in
        go) echo "$ROOT/bindings/go/internal/raw" ;;
        ruby) echo "$ROOT/bindings/ruby/ext/mongomq_raw" ;;
        python) echo "$ROOT/bindings/python/generated" ;;
    esac
}
committed_files() {
    case "$1" in
        go) echo "mongomq_raw.go mongomq_raw_wrap.c" ;;
        ruby) echo "mongomq_raw_wrap.c" ;;
        python) echo "_raw_wrap.c" ;;
    esac
}

if [[ "$lang" == java ]]; then
    out_java="${1:?java needs OUT_JAVA_DIR}"
    out_c="${2:?java needs OUT_C}"
    mkdir -p "$out_java" "$(dirname "$out_c")"
    swig -java -package org.mongomq.internal -outdir "$out_java" -I"$ROOT/include" -I"$SWIG_DIR" \
        -o "$out_c" "$ROOT/bindings/java/src/main/swig/mongomq_java.i"
    exit 0
fi

dir="$(committed_dir "$lang")"
[[ -n "$dir" ]] || { echo "swig-generate.sh: unknown language '$lang'" >&2; exit 2; }
if [[ "${1:-}" == --check ]]; then
    tmp="$(mktemp -d)"
    trap 'rm -rf "$tmp"' EXIT
    gen "$lang" "$tmp"
    for f in $(committed_files "$lang"); do
        if ! diff -u "$dir/$f" "$tmp/$f" >"$tmp/diff"; then
            head -n 40 "$tmp/diff" >&2
            echo "swig-generate.sh: ${dir#"$ROOT"/}/$f is not what SWIG makes now: run scripts/swig-generate.sh $lang and commit it" >&2
            exit 1
        fi
    done
    echo "swig-generate.sh: the committed $lang wrapper is what SWIG makes"
else
    gen "$lang" "$dir"
    echo "swig-generate.sh: wrote $(committed_files "$lang") in ${dir#"$ROOT"/}"
fi
