#!/usr/bin/env bash
# The dashboard's tests (issue 19): `mongomq web` driven by a headless Chromium
# (tests/web/test_web.py: every page and action, filters, paging over 10^4 groups,
# hostile events, read-only, the token, CSRF, a non-loopback listen) and /metrics
# parsed by prometheus_client (tests/web/test_metrics.py).
#   scripts/test-web.sh
# Builds build/ (RelWithDebInfo, as scripts/test.sh does: the command and the filler;
# MONGOMQ_WEB_BUILD names another tree),
# uses MONGOMQ_TEST_URI when set, else starts a test server of its own and stops it on
# exit. Screenshots of each page go to $MONGOMQ_WEB_SHOTS (default
# build/web-screenshots; MONGOMQ_WEB_SHOTS=docs/screenshots refreshes the committed
# ones). Needs Debian's chromium, chromium-driver, python3-selenium and
# python3-prometheus-client (scripts/install-deps.sh), run with /usr/bin/python3.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
NAME=web
cd "$ROOT"

bash scripts/install-deps.sh
BUILD="${MONGOMQ_WEB_BUILD:-build}" # another build tree, for a session sharing build/
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$BUILD" -j "${MONGOMQ_JOBS:-$(nproc)}" --target mongomq_cli web_fill

# shellcheck source=scripts/with-server.sh
source "$ROOT/scripts/with-server.sh"

[[ "$BUILD" = /* ]] || BUILD="$ROOT/$BUILD"
export MONGOMQ_BIN="$BUILD/cli/mongomq"
export MONGOMQ_WEB_FILL="$BUILD/cli/web_fill"
shots="${MONGOMQ_WEB_SHOTS:-build/web-screenshots}"
[[ "$shots" = /* ]] || shots="$ROOT/$shots"
export MONGOMQ_WEB_SHOTS="$shots"
PY=/usr/bin/python3 # Debian's, with Debian's selenium and prometheus_client

fail=0
echo "== /metrics (tests/web/test_metrics.py)"
(cd tests/web && timeout 600 "$PY" test_metrics.py) || fail=1
echo "== the dashboard in Chromium (tests/web/test_web.py)"
(cd tests/web && timeout 1200 "$PY" test_web.py) || fail=1
if [[ $fail != 0 ]]; then echo "test-web: FAILED" >&2; exit 1; fi
echo "test-web: all passed; screenshots in $MONGOMQ_WEB_SHOTS"
