#!/usr/bin/env bash
# Make (once) the Python venv the harel interoperability test runs in, and print its
# python's path. Later calls find it done and return at once.
#
#   scripts/interop-venv.sh        -> prints <venv>/bin/python
#
# The venv holds harel (whose MongoTransport shares our documents) and pymongo, at the
# versions the test was written against. pymongo stays below 4.18: from 4.18 on it
# refuses servers older than MongoDB 4.4 (wire version 9), and the local test server
# (mongo-java-server) reports wire version 8. harel needs Python >= 3.11.
#
# Environment:
#   PYTHON                  the interpreter to make the venv from (default: python3)
#   MONGOMQ_INTEROP_VENV    the venv's directory (default: <repo>/build/interop-venv)
#
# On Debian/Ubuntu, `python3 -m venv` needs the python3-venv package.
set -euo pipefail

HAREL_VERSION=0.9.0
PYMONGO_VERSION=4.17.0

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
VENV="${MONGOMQ_INTEROP_VENV:-$ROOT/build/interop-venv}"
PY="$VENV/bin/python"
STAMP="$VENV/.mongomq-interop"
WANT="harel==$HAREL_VERSION pymongo==$PYMONGO_VERSION"

die() { echo "interop-venv: $*" >&2; exit 1; }

ready() { [[ -x "$PY" && -f "$STAMP" && "$(cat "$STAMP")" == "$WANT" ]]; }

# The fast path: done before, with these versions.
if ready; then
    echo "$PY"
    exit 0
fi

mkdir -p "$(dirname "$VENV")"
# One maker at a time (ctest -j, several build trees); the others wait and reuse.
exec 9>"$VENV.lock"
flock 9
if ready; then
    echo "$PY"
    exit 0
fi

BASE="${PYTHON:-python3}"
command -v "$BASE" >/dev/null || die "no $BASE on PATH (set PYTHON)"
"$BASE" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)' \
    || die "harel $HAREL_VERSION needs Python >= 3.11; $BASE is $("$BASE" -V 2>&1) (set PYTHON)"

echo "interop-venv: creating $VENV with $WANT" >&2
rm -rf "$VENV"
"$BASE" -m venv "$VENV" >&2 \
    || die "'$BASE -m venv' failed (on Debian/Ubuntu: install python3-venv)"
PIP_DISABLE_PIP_VERSION_CHECK=1 "$PY" -m pip install -q $WANT >&2 \
    || die "pip install $WANT failed"
"$PY" -c 'import harel.engine.transport.mongo, pymongo' \
    || die "the venv's harel or pymongo does not import"
echo "$WANT" >"$STAMP"
echo "$PY"
