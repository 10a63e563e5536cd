#!/usr/bin/env bash
# TLS suite: makes a CA and a server certificate for 127.0.0.1 with openssl (and a
# second CA that signed nothing), starts the test server serving TLS only on a free
# loopback port, runs tests/faults/test_tls, stops the server on exit.
#   tests/faults/tls.sh TEST_TLS_BINARY
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
TEST="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
JAR="$ROOT/tests/server/target/mongomq-test-server.jar"
[ -f "$JAR" ] || { echo "tls.sh: $JAR missing (scripts/test-server.sh builds it)" >&2; exit 1; }
DIR="$(mktemp -d "${TMPDIR:-/tmp}/mq-tls.XXXXXX")"
SPID=""
cleanup() { [ -n "$SPID" ] && kill "$SPID" 2>/dev/null; wait 2>/dev/null || true; rm -rf "$DIR"; }
trap cleanup EXIT
cd "$DIR"
q() { "$@" >/dev/null 2>&1; }
q openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days 2 -subj "/CN=mongomq test CA"
q openssl req -x509 -newkey rsa:2048 -nodes -keyout other.key -out other.pem -days 2 -subj "/CN=another CA"
q openssl req -newkey rsa:2048 -nodes -keyout server.key -out server.csr -subj "/CN=127.0.0.1"
printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\n' >ext.cnf
q openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out server.pem -days 2 -extfile ext.cnf
# PKCS#8 for Java's KeyFactory
q openssl pkcs8 -topk8 -nocrypt -in server.key -out server.pk8
"${JAVA:-java}" -Xmx256m -XX:+UseSerialGC -jar "$JAR" --host 127.0.0.1 --port 0 \
    --tls-key server.pk8 --tls-cert server.pem >server.out 2>server.err &
SPID=$!
URI=""
for _ in $(seq 1 300); do
    URI="$(grep -m1 '^mongodb://' server.out 2>/dev/null || true)"
    [ -n "$URI" ] && break
    kill -0 "$SPID" 2>/dev/null || { cat server.err >&2; exit 1; }
    sleep 0.1
done
[ -n "$URI" ] || { echo "tls.sh: the server did not start" >&2; cat server.err >&2; exit 1; }
MONGOMQ_TLS_URI="$URI" MONGOMQ_TLS_CA="$DIR/ca.pem" MONGOMQ_TLS_OTHER_CA="$DIR/other.pem" timeout 120 "$TEST"
