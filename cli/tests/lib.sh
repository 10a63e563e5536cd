# Helpers for the mongomq command's tests (sourced; bash). Each test script is run by
# CTest as `bash cli/tests/<name>.sh PATH/TO/mongomq` with MONGOMQ_TEST_URI set (it
# fails, never skips, without it), on a database of its own that it drops at the end.
# Output is TAP-like: "ok - ..." / "not ok - ...", then a count; exit 1 on any failure.
set -u

if [[ $# -lt 1 || ! -x $1 ]]; then
    echo "usage: bash $0 PATH/TO/mongomq" >&2
    exit 2
fi
MQ_BIN=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
# libmongoc keeps its performance counters in shared memory and, when it cannot map
# them (seen once on a loaded machine), warns on stderr, which the tests that expect
# an empty stderr would count against the command: no shared-memory counters here.
export MONGOC_DISABLE_SHM=1
MQ_BIN_DIR=$(dirname "$MQ_BIN")
if [[ -z ${MONGOMQ_TEST_URI:-} ]]; then
    echo "not ok - MONGOMQ_TEST_URI is not set (scripts/test.sh sets it)" >&2
    exit 1
fi
TEST_NAME=$(basename "$0" .sh)
export MONGOMQ_URI=$MONGOMQ_TEST_URI
export MONGOMQ_DB="mqt_cli_${TEST_NAME#test_}_$$_$RANDOM"
unset MONGOMQ_PREFIX
TMP=$(mktemp -d)
OUT=$TMP/out
ERR=$TMP/err
checks=0
failures=0

mq() { "$MQ_BIN" "$@"; }

ok() { checks=$((checks + 1)); echo "ok - $1"; }
not_ok() {
    checks=$((checks + 1))
    failures=$((failures + 1))
    echo "not ok - $1"
    if [[ $# -gt 1 ]]; then printf '    %s\n' "${@:2}"; fi
}

# run CMD...: runs it with stdout in $OUT, stderr in $ERR, its status in $RC.
run() {
    "$@" >"$OUT" 2>"$ERR"
    RC=$?
}

# expect_rc CODE NAME CMD...: runs CMD (as run) and checks its exit status.
expect_rc() {
    local code=$1 name=$2
    shift 2
    run "$@"
    if [[ $RC == "$code" ]]; then
        ok "$name (exit $code)"
    else
        not_ok "$name: exit $RC, expected $code" "stdout: $(head -c 600 "$OUT")" \
            "stderr: $(head -c 600 "$ERR")"
    fi
}

# expect_eq NAME EXPECTED ACTUAL
expect_eq() {
    if [[ $2 == "$3" ]]; then
        ok "$1"
    else
        not_ok "$1" "expected: $2" "actual:   $3"
    fi
}

# expect_match NAME REGEX TEXT (grep -E on the whole text)
expect_match() {
    if grep -Eq -- "$2" <<<"$3"; then
        ok "$1"
    else
        not_ok "$1" "expected to match: $2" "actual: $(head -c 600 <<<"$3")"
    fi
}

# json EXPR: evaluates a Python expression over the JSON document on stdin (bound to
# `d`) and prints the result. jl EXPR: the same over JSON lines (`d` is the list).
json() {
    python3 -c '
import json, sys
d = json.loads(sys.stdin.read())
r = eval(sys.argv[1])
print(json.dumps(r) if isinstance(r, (dict, list)) else r)
' "$1"
}
jl() {
    python3 -c '
import json, sys
d = [json.loads(line) for line in sys.stdin.read().splitlines() if line.strip()]
r = eval(sys.argv[1])
print(json.dumps(r) if isinstance(r, (dict, list)) else r)
' "$1"
}

# wait_for NAME SECONDS CMD...: waits (0.1 s steps) until CMD succeeds; 0 if it did.
wait_for() {
    local name=$1 secs=$2
    shift 2
    local end=$((SECONDS + secs))
    while ((SECONDS < end)); do
        if "$@"; then return 0; fi
        sleep 0.1
    done
    not_ok "$name: not within ${secs}s"
    return 1
}

# catches PID SIGNUM: true once PID has a handler for SIGNUM (/proc/PID/status SigCgt),
# so a signal sent then is not the default action's.
catches() {
    local mask
    mask=$(awk '/^SigCgt:/ {print $2}' "/proc/$1/status" 2>/dev/null) || return 1
    [[ -n $mask ]] && (((0x$mask >> ($2 - 1)) & 1))
}

# summary FILE: the worker's summary line in FILE (its stderr).
summary() { grep -E '^mongomq work: [0-9]+ claimed' "$1" | tail -1; }

# wait_exit PID SECONDS: waits for a background process; its exit status in $RC. One
# still running after SECONDS (a loose bound) is killed, reported, and RC is 124.
wait_exit() {
    local pid=$1 end=$((SECONDS + $2))
    while kill -0 "$pid" 2>/dev/null && ((SECONDS < end)); do sleep 0.1; done
    if kill -0 "$pid" 2>/dev/null; then
        not_ok "process $pid still runs after $2 s: killed"
        kill -KILL "$pid" 2>/dev/null
        wait "$pid" 2>/dev/null
        RC=124
        return
    fi
    wait "$pid"
    RC=$?
}

finish() {
    mq drop --yes >/dev/null 2>&1
    rm -rf "$TMP"
    echo "# $TEST_NAME: $((checks - failures))/$checks passed (db $MONGOMQ_DB)"
    if ((failures > 0 || checks == 0)); then exit 1; fi
    exit 0
}
