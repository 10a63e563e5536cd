#!/usr/bin/env bash
# Start/stop the local MongoDB-wire test server (tests/server, a wrapper
# around mongo-java-server's in-memory backend) used by the tests and the demo.
#
#   scripts/test-server.sh start [--oplog]  build if needed, start (or reuse),
#                                           print the URI
#        [--h2 FILE] [--port P]             keep the data in an H2 file (reopened
#                                           by the next start), listen on port P
#   scripts/test-server.sh stop             stop the server (exit 0 if none)
#   scripts/test-server.sh uri              print the URI of the running server,
#                                           exit 1 if none is running
#   scripts/test-server.sh ping URI         wire-level ping, exit 0 if ok: 1
#
# Environment:
#   MONGOMQ_STATE_DIR           state dir (pid, uri, logs);
#                               default <repo>/build/test-server
#   MONGOMQ_TEST_SERVER_TIMEOUT seconds to wait for the server to answer (60)
#   JAVA                        java executable (default: java)
#   MONGOMQ_TEST_SERVER_HEAP    the server's -Xmx (default 1g): the in-memory backend
#                               otherwise takes a quarter of the machine's memory
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
SERVER_DIR="$ROOT/tests/server"
JAR="$SERVER_DIR/target/mongomq-test-server.jar"
STATE_DIR="${MONGOMQ_STATE_DIR:-$ROOT/build/test-server}"
PID_FILE="$STATE_DIR/pid"
URI_FILE="$STATE_DIR/uri"
MODE_FILE="$STATE_DIR/mode"
LOG_FILE="$STATE_DIR/server.log"
BUILD_LOG="$STATE_DIR/build.log"
LOCK_FILE="$STATE_DIR/lock"
TIMEOUT="${MONGOMQ_TEST_SERVER_TIMEOUT:-60}"
JAVA="${JAVA:-java}"
HEAP="${MONGOMQ_TEST_SERVER_HEAP:-1g}"

die() { echo "test-server: $*" >&2; exit 1; }
log() { echo "test-server: $*" >&2; }

usage() {
    sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//' >&2
    exit 2
}

# ping URI: send OP_MSG {ping: 1, $db: "admin"} and require ok == 1 in the reply
# (scripts/wire.py: plain python3 sockets with hand-written BSON, no driver needed).
ping_uri() {
    python3 "$ROOT/scripts/wire.py" "$1" admin '{"ping": 1}' >/dev/null
}

pid_alive() {
    local pid="$1"
    [[ "$pid" =~ ^[0-9]+$ ]] || return 1
    kill -0 "$pid" 2>/dev/null || return 1
    # Guard against a recycled pid: must be our jar.
    if [[ -r "/proc/$pid/cmdline" ]]; then
        tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q 'mongomq-test-server\.jar' || return 1
    fi
    return 0
}

# Our own just-started child: alive and not a zombie (its command line may
# still be the forking shell's until it has exec'd java).
child_alive() {
    local pid="$1" stat
    kill -0 "$pid" 2>/dev/null || return 1
    stat="$(cat "/proc/$pid/stat" 2>/dev/null || true)"
    [[ "${stat##*) }" != Z* ]]
}

read_pid() { [[ -f "$PID_FILE" ]] && cat "$PID_FILE" 2>/dev/null || true; }

running_uri() {
    # Print the URI of a running, answering server from this state dir.
    local pid uri
    pid="$(read_pid)"
    [[ -n "$pid" ]] && pid_alive "$pid" || return 1
    [[ -f "$URI_FILE" ]] || return 1
    uri="$(cat "$URI_FILE")"
    [[ -n "$uri" ]] || return 1
    ping_uri "$uri" 2>/dev/null || return 1
    printf '%s\n' "$uri"
}

jar_stale() {
    [[ -f "$JAR" ]] || return 0
    [[ -n "$(find "$SERVER_DIR/pom.xml" "$SERVER_DIR/src" -newer "$JAR" -print -quit)" ]]
}

build_jar() {
    jar_stale || return 0
    command -v mvn >/dev/null || die "mvn not found (run scripts/install-deps.sh)"
    log "building $JAR ..."
    if ! (cd "$SERVER_DIR" && mvn -q -B package) >"$BUILD_LOG" 2>&1; then
        cat "$BUILD_LOG" >&2
        die "maven build failed (log: $BUILD_LOG)"
    fi
    [[ -f "$JAR" ]] || die "build finished but $JAR is missing"
    touch "$JAR"
}

kill_pid() {
    local pid="$1" i
    pid_alive "$pid" || return 0
    kill -TERM "$pid" 2>/dev/null || true
    for ((i = 0; i < 100; i++)); do      # up to 10 s
        pid_alive "$pid" || return 0
        sleep 0.1
    done
    kill -KILL "$pid" 2>/dev/null || true
    for ((i = 0; i < 50; i++)); do
        pid_alive "$pid" || return 0
        sleep 0.1
    done
    die "could not stop pid $pid"
}

# Run "$@" while holding the state-dir lock (serializes concurrent start/stop).
with_lock() {
    mkdir -p "$STATE_DIR"
    if command -v flock >/dev/null; then
        exec 9>"$LOCK_FILE"
        flock -w "$((TIMEOUT + 30))" 9 || die "timed out waiting for $LOCK_FILE"
    fi
    "$@"
}

do_start() {
    local oplog=0 mode uri pid deadline line h2="" port=0
    while (($#)); do
        case "$1" in
            --oplog) oplog=1 ;;
            --h2) [[ $# -ge 2 ]] || die "start: --h2 needs a file"; h2="$2"; shift ;;
            --port) [[ $# -ge 2 ]] || die "start: --port needs a number"; port="$2"; shift ;;
            *) die "start: unknown argument: $1" ;;
        esac
        shift
    done
    mode="plain"; ((oplog)) && mode="oplog"
    [[ -n "$h2" ]] && mode="$mode+h2"

    if uri="$(running_uri)"; then
        if [[ -f "$MODE_FILE" && "$(cat "$MODE_FILE")" != "$mode" ]]; then
            die "a server ($(cat "$MODE_FILE")) is already running at $uri; run '$0 stop' first to start one with mode '$mode'"
        fi
        printf '%s\n' "$uri"
        return 0
    fi

    # Stale or unresponsive leftovers.
    pid="$(read_pid)"
    if [[ -n "$pid" ]] && pid_alive "$pid"; then
        log "server pid $pid is not answering; restarting it"
        kill_pid "$pid"
    fi
    rm -f "$PID_FILE" "$URI_FILE" "$MODE_FILE"

    command -v "$JAVA" >/dev/null || die "java not found (run scripts/install-deps.sh)"
    command -v python3 >/dev/null || die "python3 not found (run scripts/install-deps.sh)"
    build_jar

    local args=(--host 127.0.0.1 --port "$port")
    ((oplog)) && args+=(--oplog)
    [[ -n "$h2" ]] && args+=(--h2 "$h2")
    # Detached: no stdin, output to the log, SIGHUP ignored, and no inherited
    # descriptors (lock fd, make jobserver, callers' pipes) kept open by the
    # long-lived server. The subshell execs java, so $! is the server's pid.
    (
        for fd in /proc/self/fd/*; do
            fd="${fd##*/}"
            if [[ "$fd" =~ ^[0-9]+$ ]] && ((fd > 2)); then
                eval "exec $fd>&-" 2>/dev/null || true
            fi
        done
        exec nohup "$JAVA" "-Xmx$HEAP" -XX:+UseSerialGC -jar "$JAR" "${args[@]}" </dev/null >"$LOG_FILE" 2>&1
    ) 9>&- &
    pid=$!
    echo "$pid" >"$PID_FILE"
    echo "$mode" >"$MODE_FILE"

    deadline=$((SECONDS + TIMEOUT))
    uri=""
    while ((SECONDS < deadline)); do
        if ! child_alive "$pid"; then
            cat "$LOG_FILE" >&2 || true
            rm -f "$PID_FILE" "$MODE_FILE"
            die "server exited during startup (log: $LOG_FILE)"
        fi
        if [[ -z "$uri" ]]; then
            line="$(grep -m1 '^mongodb://' "$LOG_FILE" 2>/dev/null || true)"
            uri="${line%%[[:space:]]*}"
        fi
        if [[ -n "$uri" ]] && ping_uri "$uri" 2>/dev/null; then
            printf '%s\n' "$uri" >"$URI_FILE"
            printf '%s\n' "$uri"
            return 0
        fi
        sleep 0.1
    done
    cat "$LOG_FILE" >&2 || true
    kill -TERM "$pid" 2>/dev/null || true
    kill_pid "$pid"
    rm -f "$PID_FILE" "$MODE_FILE"
    die "server did not answer ping within ${TIMEOUT}s (log: $LOG_FILE)"
}

do_stop() {
    local pid
    [[ -d "$STATE_DIR" ]] || return 0
    pid="$(read_pid)"
    if [[ -n "$pid" ]]; then
        kill_pid "$pid"
    fi
    rm -f "$PID_FILE" "$URI_FILE" "$MODE_FILE"
}

cmd="${1:-}"
[[ $# -gt 0 ]] && shift
case "$cmd" in
    start) with_lock do_start "$@" ;;
    stop)
        [[ $# -eq 0 ]] || die "stop takes no arguments"
        [[ -d "$STATE_DIR" ]] || exit 0
        with_lock do_stop
        ;;
    uri)
        [[ $# -eq 0 ]] || die "uri takes no arguments"
        running_uri || exit 1
        ;;
    ping)
        [[ $# -eq 1 ]] || die "usage: $0 ping URI"
        command -v python3 >/dev/null || die "python3 not found"
        ping_uri "$1"
        ;;
    -h | --help | help) usage ;;
    *) usage ;;
esac
