#!/usr/bin/env bash
# The examples_run test (examples/CMakeLists.txt), so producer.c and worker.c cannot rot:
# the producer publishes to a fresh database on MONGOMQ_TEST_URI, the worker drains it
# and must end by itself; every event handled once, each customer's in publish order.
#
#   bash examples/test_examples.sh PRODUCER WORKER [MONGOMQ_CLI]
#
# With the mongomq command, the queue is dropped at the end.
set -u
if [[ $# -lt 2 ]]; then
    echo "usage: bash $0 PRODUCER WORKER [MONGOMQ_CLI]" >&2
    exit 2
fi
producer=$1 worker=$2 cli=${3:-}
if [[ -z ${MONGOMQ_TEST_URI:-} ]]; then
    echo "not ok - MONGOMQ_TEST_URI is not set (scripts/test-server.sh start prints one)" >&2
    exit 1
fi
db="mqt_examples_$$_$RANDOM"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
check() {  # check NAME CONDITION...
    local name=$1
    shift
    if "$@"; then echo "ok - $name"; else echo "not ok - $name"; failures=$((failures + 1)); fi
}

"$producer" "$MONGOMQ_TEST_URI" "$db" >"$tmp/producer" 2>&1
check "producer exits 0" test $? -eq 0
sed 's/^/    producer: /' "$tmp/producer"
timeout 120 "$worker" "$MONGOMQ_TEST_URI" "$db" >"$tmp/worker" 2>&1
rc=$?
sed 's/^/    worker: /' "$tmp/worker"
check "worker ends by itself, exit 0 (got $rc)" test "$rc" -eq 0

# "customer-1: {"order": 1004} (attempt 1)" -> "customer-1 1004"
sed -n 's/^\(customer-[0-9]*\): {"order": \([0-9]*\)} (attempt 1)$/\1 \2/p' "$tmp/worker" >"$tmp/handled"
check "worker handled the 6 published events, each once" \
    test "$(cut -d' ' -f2 "$tmp/handled" | sort -n | tr '\n' ' ')" = "1000 1001 1002 1003 1004 1005 "
check "each customer's events in publish order" \
    awk '$2 <= last[$1] { bad = 1 } { last[$1] = $2 } END { exit bad }' "$tmp/handled"
check "worker's summary line" grep -q '^6 events handled' "$tmp/worker"

if [[ -n $cli ]]; then
    "$cli" drop --uri "$MONGOMQ_TEST_URI" --db "$db" --prefix orders --yes >/dev/null 2>&1 ||
        echo "# could not drop $db.orders_*"
fi
echo "$failures failed"
[[ $failures -eq 0 ]]
