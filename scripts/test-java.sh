#!/usr/bin/env bash
# Builds the Java package (bindings/java: SWIG + the JNI library + the jar), runs its
# JUnit suite, then the loading test as a user would: the README's example
# (bindings/java/examples/Example.java) in a directory outside the repository, with
# only the built jar on the classpath, no -Djava.library.path and no LD_LIBRARY_PATH.
#
# Needs a JDK 17 and Maven (Debian: openjdk-17-jdk-headless maven; installed here if
# missing) and what scripts/stage.sh needs to build libmongomq. Uses the server named
# by MONGOMQ_TEST_URI, or starts the local test server and stops it on exit.
# Exits non-zero on any failure.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT/bindings/java"

need=()
command -v javac >/dev/null 2>&1 || need+=(openjdk-17-jdk-headless)
command -v mvn >/dev/null 2>&1 || need+=(maven)
command -v objcopy >/dev/null 2>&1 || need+=(binutils)
if ((${#need[@]})); then
    echo "test-java: installing ${need[*]}"
    if [[ $(id -u) == 0 ]]; then
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
    else
        sudo apt-get update -qq && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
    fi
fi

started_server=0
if [[ -z "${MONGOMQ_TEST_URI:-}" ]]; then
    MONGOMQ_TEST_URI="$(bash "$ROOT/scripts/test-server.sh" start --oplog)"
    started_server=1
fi
export MONGOMQ_TEST_URI
WORK="$(mktemp -d)"
cleanup() {
    rm -rf "$WORK"
    if [[ $started_server == 1 ]]; then bash "$ROOT/scripts/test-server.sh" stop || true; fi
}
trap cleanup EXIT
echo "test-java: server $MONGOMQ_TEST_URI"

echo "== java: build and JUnit suite (mvn package) =="
mvn -B -ntp package

echo "== java: the README example with only the jar (no java.library.path, no LD_LIBRARY_PATH) =="
# The jar is named for the project's version in pom.xml (its first <version>: the artifact's).
VERSION="$(sed -n 's|^  <version>\(.*\)</version>$|\1|p' pom.xml | head -1)"
JAR="mongomq-$VERSION.jar"
cp "target/$JAR" examples/Example.java "$WORK/"
(
    cd "$WORK"
    env -u LD_LIBRARY_PATH javac -cp "$JAR" -d classes Example.java
    env -u LD_LIBRARY_PATH java -cp "$JAR:classes" Example "$MONGOMQ_TEST_URI" | tee out.txt
    grep -q '^claimed customer-17 seq ' out.txt
    grep -q '^messages left: 0' out.txt
)
echo "test-java: standalone jar example OK"
