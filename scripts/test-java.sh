#!/usr/bin/env bash
# Builds the Java package (bindings/java: SWIG through scripts/swig-generate.sh java, the
# JNI library, the jar), runs its JUnit suite, checks with scripts/contract-scenarios.py
# that every CONTRACT scenario passed under its name, runs the test classes that hold the
# scenarios a second time on queues of 4 partitions (MONGOMQ_TEST_PARTITIONS=4:
# bindings/CONTRACT.md, "Twice: one partition and four") and checks them the same way,
# then runs the README's examples
# as a user would (bindings/java/examples: Producer.java, then OrderWorker.java, which
# ends once the queue is idle) in a directory outside the repository, with only the
# built jar on the classpath, no -Djava.library.path and no LD_LIBRARY_PATH.
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
# The scenario check below reads every report in the directory, and mvn package does
# not clean it: a report left by an earlier run must not stand in for this one's.
rm -rf target/surefire-reports
mvn -B -ntp package

echo "== java: every CONTRACT scenario passed under its name =="
python3 "$ROOT/scripts/contract-scenarios.py" check java target/surefire-reports

echo "== java: the CONTRACT scenarios again, on queues of 4 partitions =="
# The classes that define a scenario's test method, found by its name (the check below
# fails if one is missing); the first run's reports are kept beside the second's.
CONTRACT_CLASSES="$(python3 "$ROOT/scripts/contract-scenarios.py" names --style camel --lang java |
    while read -r name; do grep -rlE "void $name\(" src/test/java || true; done |
    sort -u | xargs -n1 basename | sed 's/\.java$//' | paste -sd, -)"
rm -rf target/surefire-reports-p1
mv target/surefire-reports target/surefire-reports-p1
MONGOMQ_TEST_PARTITIONS=4 mvn -B -ntp surefire:test -Dtest="$CONTRACT_CLASSES"
python3 "$ROOT/scripts/contract-scenarios.py" check java target/surefire-reports

echo "== java: the README examples with only the jar (no java.library.path, no LD_LIBRARY_PATH) =="
# The jar is named for the project's version in pom.xml (its first <version>: the artifact's).
VERSION="$(sed -n 's|^  <version>\(.*\)</version>$|\1|p' pom.xml | head -1)"
JAR="mongomq-$VERSION.jar"
DB="mqt_java_examples_$$"
cp "target/$JAR" examples/Producer.java examples/OrderWorker.java "$WORK/"
# The examples' queue is left for the worker to drain; this drops it afterwards.
cat >"$WORK/DropQueue.java" <<'JAVA'
import org.mongomq.Client;
import org.mongomq.MongoMqQueue;

public class DropQueue {
    public static void main(String[] args) {
        try (Client c = Client.connect(args[0]); MongoMqQueue q = c.queue(args[1], args[2])) {
            q.drop();
        }
    }
}
JAVA
(
    cd "$WORK"
    trap 'env -u LD_LIBRARY_PATH java -cp "$JAR:classes" DropQueue "$MONGOMQ_TEST_URI" "$DB" orders' EXIT
    env -u LD_LIBRARY_PATH javac -cp "$JAR" -d classes Producer.java OrderWorker.java DropQueue.java
    env -u LD_LIBRARY_PATH java -cp "$JAR:classes" Producer "$MONGOMQ_TEST_URI" "$DB" | tee produced.txt
    grep -q '^published a batch of 3 from seq 6$' produced.txt
    env -u LD_LIBRARY_PATH timeout 120 java -cp "$JAR:classes" OrderWorker "$MONGOMQ_TEST_URI" "$DB" | tee worked.txt
    grep -q '^handled customer-99 seq 5 (attempt 1): {remind=true}$' worked.txt
    [[ $(grep -c '^handled ' worked.txt) == 8 ]]
    grep -q '^stopped: messages left: 0, dead letters: 0$' worked.txt
)
echo "test-java: standalone jar examples OK"
