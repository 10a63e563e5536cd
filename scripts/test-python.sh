#!/usr/bin/env bash
# The Python package (bindings/python), tested as a user gets it:
#   1. checks that the committed SWIG wrapper is what the pinned SWIG makes
#      (scripts/swig-generate.sh python --check);
#   2. builds libmongomq into the staging prefix (scripts/stage.sh) and, against it
#      (pkg-config), the package's wheel with `pip wheel`;
#   3. `pip install`s the wheel (and its "otel" and "test" extras: the OpenTelemetry
#      API and SDK for the tracing scenarios) in a fresh venv in a temp dir
#      outside the repository (scripts/with-server.sh's $TMP, removed on exit), as a
#      user would, and checks that mongomq is imported from that venv;
#   4. runs pytest with that venv, against MONGOMQ_TEST_URI (or a server of its own,
#      started here and stopped on exit), and checks from its JUnit XML that every
#      bindings/CONTRACT.md scenario passed under its name
#      (scripts/contract-scenarios.py check python); then runs the contract scenarios
#      again, each on a queue of 4 partitions (MONGOMQ_TEST_PARTITIONS=4: CONTRACT.md,
#      "Twice: one partition and four"), and checks them the same way;
#   5. checks that the README shows examples/producer.py and examples/worker.py as
#      they are, and runs them with that venv's python, from a directory outside the
#      repository, on a fresh database (the worker stops by its idle_timeout).
# Exits non-zero on any failure.
#
# Environment: PYTHON (default python3), MONGOMQ_TEST_URI, MONGOMQ_PY_DIR (default
# build/python: the wheel and the venv that builds it).
# Needs (Debian): python3, python3-venv, python3-dev, pkg-config, a C compiler.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
PYTHON="${PYTHON:-python3}"
WORK="${MONGOMQ_PY_DIR:-$ROOT/build/python}"
PKG="$ROOT/bindings/python"

say() { echo "test-python: $*"; }
die() { echo "test-python: $*" >&2; exit 1; }

# ---- what install-deps.sh does not install (yet): the Python headers ----
has_headers() {
    "$PYTHON" -c 'import os, sysconfig, sys; sys.exit(0 if os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")) else 1)'
}
has_venv() { "$PYTHON" -c 'import ensurepip, venv' 2>/dev/null; }
if ! has_headers || ! has_venv; then
    if [[ "$(id -u)" -eq 0 ]] && command -v apt-get >/dev/null; then
        say "installing python3-dev python3-venv"
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends python3-dev python3-venv </dev/null \
            || { apt-get update -q </dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends python3-dev python3-venv </dev/null; }
    fi
    has_headers || die "$PYTHON has no Python.h (Debian: apt-get install python3-dev)"
    has_venv || die "$PYTHON cannot make venvs (Debian: apt-get install python3-venv)"
fi

# ---- 1. the committed wrapper ----
bash scripts/swig-generate.sh python --check

# ---- 2. the library and the wheel ----
PREFIX="$(bash scripts/stage.sh)"
export PKG_CONFIG_PATH="$PREFIX/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
export LD_LIBRARY_PATH="$PREFIX/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PIP_DISABLE_PIP_VERSION_CHECK=1

rm -rf "$WORK/venv" "$WORK/wheels" "$PKG/build" "$PKG/src/mongomq.egg-info"
mkdir -p "$WORK"
"$PYTHON" -m venv "$WORK/venv"
say "building the wheel (pip wheel bindings/python)"
# pip builds in an isolated environment with the build deps pyproject.toml pins.
"$WORK/venv/bin/python" -m pip wheel -q --no-deps -w "$WORK/wheels" "$PKG"
rm -rf "$PKG/build" "$PKG/src/mongomq.egg-info"
WHEEL="$(ls "$WORK"/wheels/mongomq-*.whl)"
say "built $(basename "$WHEEL")"

# ---- the temp dir ($TMP, removed on exit) and the server ----
# A server of our own has its own state dir (build/test-server-python), so the stop on
# exit stops only it.
NAME=python
# shellcheck source=scripts/with-server.sh
source "$ROOT/scripts/with-server.sh"
case "$(cd "$TMP" && pwd -P)/" in
"$(cd "$ROOT" && pwd -P)"/*) die "the temp dir $TMP is inside the repository (set TMPDIR elsewhere)" ;;
esac

# ---- 3. pip install of the wheel in a fresh venv outside the repository ----
VENV="$TMP/venv"
"$PYTHON" -m venv "$VENV"
PY="$VENV/bin/python"
say "installing $(basename "$WHEEL") in a fresh venv in $VENV"
"$PY" -m pip install -q -c "$PKG/tests/constraints.txt" "$WHEEL[otel,test]"
# The package must come from that venv (its site-packages), not from the source tree.
installed="$(cd "$TMP" && "$PY" -c 'import mongomq, os; print(os.path.realpath(mongomq.__file__))')"
case "$installed" in
"$(cd "$VENV" && pwd -P)"/*) say "mongomq imported from $installed" ;;
*) die "mongomq was imported from $installed, not from the venv $VENV" ;;
esac

# ---- 4. the suite, on the installed package (not the source tree) ----
say "pytest against $MONGOMQ_TEST_URI"
RESULTS="$TMP/pytest-results.xml"
(cd "$PKG" && MONGOMQ_TEST_PARTITIONS=1 "$PY" -m pytest -p no:cacheprovider -ra --junitxml="$RESULTS" tests)
python3 scripts/contract-scenarios.py check python "$RESULTS"

# Twice: the contract scenarios (those only: conftest's --scenarios) on queues of 4
# partitions.
say "the contract scenarios again, with MONGOMQ_TEST_PARTITIONS=4"
SCENARIOS="$TMP/scenarios.txt"
python3 scripts/contract-scenarios.py names --lang python >"$SCENARIOS"
RESULTS4="$TMP/pytest-results-partitions-4.xml"
(cd "$PKG" && MONGOMQ_TEST_PARTITIONS=4 "$PY" -m pytest -p no:cacheprovider -ra --junitxml="$RESULTS4" \
    --scenarios "$SCENARIOS" tests)
python3 scripts/contract-scenarios.py check python "$RESULTS4"

# ---- 5. the examples: the README's blocks are the files, and they run ----
EXAMPLE_DIR="$TMP/examples"
mkdir -p "$EXAMPLE_DIR"
for name in producer worker; do
    # the ```python block right after the README's "<!-- examples/NAME.py -->" line
    awk -v mark="<!-- examples/$name.py -->" '$0 == mark {armed = 1; next}
         armed && /^```python$/ {inside = 1; next}
         inside && /^```$/ {exit}
         inside {print}' "$PKG/README.md" >"$EXAMPLE_DIR/readme-$name.py"
    [[ -s "$EXAMPLE_DIR/readme-$name.py" ]] || die "bindings/python/README.md shows no examples/$name.py"
    diff -u "$PKG/examples/$name.py" "$EXAMPLE_DIR/readme-$name.py" >&2 \
        || die "the README's examples/$name.py differs from the file"
    cp "$PKG/examples/$name.py" "$EXAMPLE_DIR/"
done
EXAMPLE_DB="mqt_py_examples_$$"
say "running examples/producer.py and examples/worker.py in $EXAMPLE_DIR with $PY (database $EXAMPLE_DB)"
export MONGOMQ_URI="$MONGOMQ_TEST_URI" MONGOMQ_DB="$EXAMPLE_DB"
(cd "$EXAMPLE_DIR" && timeout 120 "$PY" producer.py) | tee "$TMP/producer.out"
grep -qx "queued: 10 events" "$TMP/producer.out" || die "the producer did not queue its 10 events"
(cd "$EXAMPLE_DIR" && timeout 120 "$PY" worker.py) | tee "$TMP/worker.out"
grep -qx "handled 10 orders; 0 events left" "$TMP/worker.out" || die "the worker did not handle the 10 orders"
"$PY" -c 'import mongomq, os, sys
with mongomq.Client(sys.argv[1]) as c, c.queue(sys.argv[2], "orders") as q:
    q.drop()' "$MONGOMQ_TEST_URI" "$EXAMPLE_DB"
say "examples: ok"
