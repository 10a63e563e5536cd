#!/usr/bin/env bash
# Runs the project's pinned SWIG: swig.sh [swig args...]
#
# SWIG is pinned here and nowhere else: PyPI's `swig` package at SWIG_VERSION, in a
# venv under build/tools/ (made on first use). Why PyPI's and not Debian 12's 4.1.0:
# 4.1's Ruby output uses the untyped Data_* API, which newer Rubies deprecate and then
# remove (bindings/ruby/README.md, "Rubies"), and the same version is then had on any
# distribution with a Python, not only Debian 12. The generated sources that packages
# ship are made by this version, through scripts/swig-generate.sh (the one generator):
# Go's, Ruby's and Python's are committed, and each language's test script runs
# `swig-generate.sh <lang> --check`, which fails on any difference; Java's is
# generated at build time.
#
#   swig.sh --path    print the swig executable's path (installing it if needed)
set -euo pipefail

SWIG_VERSION=4.5.1

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
VENV="${MONGOMQ_TOOLS_DIR:-$ROOT/build/tools}/swig-$SWIG_VERSION"
SWIG="$VENV/bin/swig"

installed() { [[ -x "$SWIG" ]] && [[ "$("$SWIG" -version 2>/dev/null | awk '/SWIG Version/ {print $3}')" == "$SWIG_VERSION" ]]; }
if ! installed; then
    mkdir -p "$(dirname "$VENV")"
    # Several builds may get here at once: one installs, the others wait for it.
    exec 9>"$VENV.lock"
    flock 9
    if ! installed; then
        rm -rf "$VENV"
        python3 -m venv "$VENV" >&2
        "$VENV/bin/pip" install -q --disable-pip-version-check "swig==$SWIG_VERSION" >&2
    fi
    exec 9>&-
fi

if [[ "${1:-}" == "--path" ]]; then
    echo "$SWIG"
    exit 0
fi
exec "$SWIG" "$@"
