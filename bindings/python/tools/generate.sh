#!/usr/bin/env bash
# Makes generated/_raw_wrap.c (the C extension mongomq._raw) from the shared SWIG
# interface bindings/swig/mongomq.i and its Python typemaps lang/python.i, with the
# project's pinned SWIG (scripts/swig.sh). The output is committed: building the
# package (pip install, pip wheel) never runs SWIG.
#
#   tools/generate.sh           regenerate generated/_raw_wrap.c
#   tools/generate.sh --check   regenerate into a temp dir; fail if it differs from the
#                               committed file (run by scripts/test-python.sh)
set -euo pipefail

HERE="$(cd "$(dirname "$0")/.." && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
OUT="$HERE/generated/_raw_wrap.c"

gen() { # gen OUTFILE
    local dir
    dir="$(dirname "$1")"
    # -noproxy: no Python proxy module, the package calls the C functions directly;
    # -module _raw: the extension is mongomq._raw; -threads: the GIL is released
    # around every call but those lang/python.i marks %nothread.
    bash "$ROOT/scripts/swig.sh" -python -threads -noproxy -module _raw \
        -outdir "$dir" -o "$1" "$ROOT/bindings/swig/mongomq.i"
}

if [[ "${1:-}" == "--check" ]]; then
    tmp="$(mktemp -d)"
    trap 'rm -rf "$tmp"' EXIT
    gen "$tmp/_raw_wrap.c"
    if ! diff -q "$OUT" "$tmp/_raw_wrap.c" >/dev/null; then
        echo "generate.sh: $OUT is not what SWIG makes from bindings/swig (run bindings/python/tools/generate.sh)" >&2
        diff -u "$OUT" "$tmp/_raw_wrap.c" | head -40 >&2
        exit 1
    fi
    echo "generate.sh: generated/_raw_wrap.c is up to date"
else
    mkdir -p "$(dirname "$OUT")"
    gen "$OUT"
fi
