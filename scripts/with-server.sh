# Sourced by the scripts/test-<language>.sh scripts: a temp dir ($TMP) removed on exit,
# and the test server: MONGOMQ_TEST_URI when it is set (scripts/test.sh sets it),
# otherwise a server of the script's own (state in build/test-server-$NAME), started
# here and stopped on exit. Needs ROOT and NAME set.
TMP="$(mktemp -d)"
started_server=0
cleanup() {
    rm -rf "$TMP"
    if [[ $started_server == 1 ]]; then bash "$ROOT/scripts/test-server.sh" stop || true; fi
}
trap cleanup EXIT
if [[ -z "${MONGOMQ_TEST_URI:-}" ]]; then
    export MONGOMQ_STATE_DIR="${MONGOMQ_STATE_DIR:-$ROOT/build/test-server-$NAME}"
    MONGOMQ_TEST_URI="$(bash "$ROOT/scripts/test-server.sh" start --oplog)"
    started_server=1
fi
export MONGOMQ_TEST_URI
echo "test-$NAME: server $MONGOMQ_TEST_URI"
