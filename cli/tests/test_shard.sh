#!/usr/bin/env bash
# mongomq shard-plan: the printed plan (exact lines for 4 partitions on 2 shards, the
# placeholders, the warnings), --apply against cli/tests/fake_mongos.py (the test
# server has no sharding commands): exactly the plan's commands in order, on the right
# databases, MinKey as BSON MinKey; listShards for the names; a refused command stops
# it, naming the command; steps done before are no failure; bad arguments exit 2 and
# send nothing; an unreachable server is exit 3.
source "$(dirname "$0")/lib.sh"
FAKE=$(dirname "$0")/fake_mongos.py

# start_fake ARGS...: a fake mongos recording into $REC; its URI in $FAKE_URI.
start_fake() {
    FAKES=$((${FAKES:-0} + 1))
    REC=$TMP/rec.$FAKES
    local out=$TMP/fake.$FAKES.out
    : >"$REC"
    python3 "$FAKE" --record "$REC" "$@" >"$out" 2>"$TMP/fake.$FAKES.err" &
    FAKE_PID=$!
    wait_for "the fake mongos listens" 30 grep -q '^listen ' "$out"
    FAKE_URI="mongodb://$(sed -n 's/^listen //p' "$out")/?serverSelectionTimeoutMS=2000"
}
stop_fake() {
    kill "$FAKE_PID" 2>/dev/null
    wait "$FAKE_PID" 2>/dev/null
}

# plan_commands FILE: the commands of a printed plan as JSON lines {"db", "command"},
# MinKey as {"$minKey": 1}; recorded FILE: what the fake got, without the driver's
# endSessions.
plan_commands() {
    python3 -c '
import json, re, sys
for line in open(sys.argv[1]):
    line = line.rstrip("\n")
    if not line or line.startswith("//"):
        continue
    m = re.fullmatch(r"db\.adminCommand\((.*)\)", line)
    if m:
        db, body = "admin", m.group(1)
    else:
        m = re.fullmatch(r"db\.getSiblingDB\((\"(?:[^\"\\\\]|\\\\.)*\")\)\.runCommand\((.*)\)", line)
        db, body = json.loads(m.group(1)), m.group(2)
    body = body.replace(": MinKey", ": {\"$minKey\": 1}")
    print(json.dumps({"db": db, "command": json.loads(body)}))
' "$1"
}
recorded() {
    python3 -c '
import json, sys
for line in open(sys.argv[1]):
    d = json.loads(line)
    if next(iter(d["command"])) != "endSessions":
        print(json.dumps(d))
' "$1"
}

# ---- the printed plan ----------------------------------------------------------------
expect_rc 0 "shard-plan --partitions 4 --shards 2" \
    mq shard-plan --db shop --prefix orders --partitions 4 --shards 2 --shard-names a,b
expect_eq "nothing on stderr" "" "$(cat "$ERR")"
EXPECTED=$(cat <<'PLAN'
// mongomq shard-plan: the queue shop.orders, 4 partitions on 2 shards (mongosh on a mongos)
// Sharding enabled on the database: needed before shardCollection until MongoDB 6.0, harmless since
db.adminCommand({"enableSharding": "shop"})
// Zone mongomq-orders-z0 on shard a: partitions 0, 2
db.adminCommand({"addShardToZone": "a", "zone": "mongomq-orders-z0"})
// Zone mongomq-orders-z1 on shard b: partitions 1, 3
db.adminCommand({"addShardToZone": "b", "zone": "mongomq-orders-z1"})
// Partition 0's locks in zone mongomq-orders-z0 (the ranges come before shardCollection: an empty collection is then sharded with one chunk per range, on its shard)
db.adminCommand({"updateZoneKeyRange": "shop.orders_locks", "min": {"partition": 0, "_id": MinKey}, "max": {"partition": 1, "_id": MinKey}, "zone": "mongomq-orders-z0"})
// Partition 0's counter in zone mongomq-orders-z0
db.adminCommand({"updateZoneKeyRange": "shop.orders_counters", "min": {"partition": 0, "_id": MinKey}, "max": {"partition": 1, "_id": MinKey}, "zone": "mongomq-orders-z0"})
// Partition 1's locks in zone mongomq-orders-z1
db.adminCommand({"updateZoneKeyRange": "shop.orders_locks", "min": {"partition": 1, "_id": MinKey}, "max": {"partition": 2, "_id": MinKey}, "zone": "mongomq-orders-z1"})
// Partition 1's counter in zone mongomq-orders-z1
db.adminCommand({"updateZoneKeyRange": "shop.orders_counters", "min": {"partition": 1, "_id": MinKey}, "max": {"partition": 2, "_id": MinKey}, "zone": "mongomq-orders-z1"})
// Partition 2's locks in zone mongomq-orders-z0
db.adminCommand({"updateZoneKeyRange": "shop.orders_locks", "min": {"partition": 2, "_id": MinKey}, "max": {"partition": 3, "_id": MinKey}, "zone": "mongomq-orders-z0"})
// Partition 2's counter in zone mongomq-orders-z0
db.adminCommand({"updateZoneKeyRange": "shop.orders_counters", "min": {"partition": 2, "_id": MinKey}, "max": {"partition": 3, "_id": MinKey}, "zone": "mongomq-orders-z0"})
// Partition 3's locks in zone mongomq-orders-z1
db.adminCommand({"updateZoneKeyRange": "shop.orders_locks", "min": {"partition": 3, "_id": MinKey}, "max": {"partition": 4, "_id": MinKey}, "zone": "mongomq-orders-z1"})
// Partition 3's counter in zone mongomq-orders-z1
db.adminCommand({"updateZoneKeyRange": "shop.orders_counters", "min": {"partition": 3, "_id": MinKey}, "max": {"partition": 4, "_id": MinKey}, "zone": "mongomq-orders-z1"})
// The shard key's index on the locks (the library makes the claim's index itself)
db.getSiblingDB("shop").runCommand({"createIndexes": "orders_locks", "indexes": [{"key": {"partition": 1, "_id": 1}, "name": "partition_1__id_1"}]})
// The shard key's index on the counters
db.getSiblingDB("shop").runCommand({"createIndexes": "orders_counters", "indexes": [{"key": {"partition": 1, "_id": 1}, "name": "partition_1__id_1"}]})
// The locks sharded by partition: each command a publish, claim or ack sends them goes to one shard
db.adminCommand({"shardCollection": "shop.orders_locks", "key": {"partition": 1, "_id": 1}})
// The counters sharded by partition: partition k's seq counter is on partition k's shard
db.adminCommand({"shardCollection": "shop.orders_counters", "key": {"partition": 1, "_id": 1}})
// The messages sharded by group, not by partition: every command on them has an equality on group_id. A unique dedup_key index cannot live under this key: shard before the queue's first open (it then takes no dedup keys), or leave the messages unsharded
db.adminCommand({"shardCollection": "shop.orders_messages", "key": {"group_id": 1, "_id": 1}})
PLAN
)
expect_eq "the plan, line by line" "$EXPECTED" "$(cat "$OUT")"
cp "$OUT" "$TMP/plan42"
expect_eq "every command line follows a // line" "ok" "$(python3 -c '
import sys
lines = open(sys.argv[1]).read().splitlines()[1:]
print("ok" if all((i % 2 == 0) == l.startswith("//") for i, l in enumerate(lines)) else lines)' "$TMP/plan42")"

expect_rc 0 "without --shard-names" env -u MONGOMQ_DB "$MQ_BIN" shard-plan --partitions 2 --shards 2
expect_match "the plan says the names are placeholders" '^// <shard0>\.\.<shard1> stand for the shards' "$(sed -n 2p "$OUT")"
expect_match "a placeholder in addShardToZone" '"addShardToZone": "<shard1>", "zone": "mongomq-mq-z1"' "$(cat "$OUT")"
expect_match "the default queue mongomq.mq" '"shardCollection": "mongomq.mq_locks"' "$(cat "$OUT")"
expect_rc 0 "MONGOMQ_DB and MONGOMQ_PREFIX name the queue" \
    env MONGOMQ_DB=envdb MONGOMQ_PREFIX=envq "$MQ_BIN" shard-plan --partitions 2 --shards 2
expect_match "the environment's queue" '"shardCollection": "envdb.envq_counters"' "$(cat "$OUT")"

expect_rc 0 "--partitions 1" mq shard-plan --partitions 1 --shards 2
expect_match "a warning: one shard" 'warning: --partitions 1: .*live on one shard' "$(cat "$ERR")"
expect_eq "one partition: enableSharding and the messages only" \
    '["enableSharding", "shardCollection"]' "$(plan_commands "$OUT" | jl '[next(iter(c["command"])) for c in d]')"
expect_rc 0 "more shards than partitions" mq shard-plan --partitions 2 --shards 4
expect_match "a warning names the shards left out" 'warning: --shards 4 > --partitions 2: shards 2\.\.3 get no partition' "$(cat "$ERR")"
expect_eq "two zones only" "2" "$(grep -c '^db.adminCommand({"addShardToZone"' "$OUT")"
expect_rc 0 "1024 partitions on 3 shards" mq shard-plan --partitions 1024 --shards 3
expect_eq "a zone range of locks and counters per partition" "2048" "$(grep -c '"updateZoneKeyRange"' "$OUT")"
expect_match "the last range ends at partition 1024" '"min": \{"partition": 1023, "_id": MinKey\}, "max": \{"partition": 1024, "_id": MinKey\}, "zone": "mongomq-mq-z0"' "$(cat "$OUT")"

# ---- --apply ---------------------------------------------------------------------------
start_fake --shards a,b
expect_rc 0 "--apply with --shard-names" \
    mq shard-plan --db shop --prefix orders --partitions 4 --shards 2 --shard-names a,b --apply --uri "$FAKE_URI"
expect_eq "it sent exactly the plan's commands, in order, on their databases (MinKey as BSON MinKey)" \
    "$(plan_commands "$TMP/plan42")" "$(recorded "$REC")"
expect_eq "16 commands" "16" "$(recorded "$REC" | wc -l | tr -d ' ')"
expect_eq "MinKey went as BSON MinKey (type 0xFF)" '[{"$minKey": 1}, {"$minKey": 1}]' \
    "$(recorded "$REC" | jl '[d[3]["command"]["min"]["_id"], d[3]["command"]["max"]["_id"]]')"
expect_eq "partitions went as int32" '[0, 1]' \
    "$(recorded "$REC" | jl '[d[3]["command"]["min"]["partition"], d[3]["command"]["max"]["partition"]]')"
expect_eq "each command is printed, then its outcome" "16" "$(grep -A1 '^db\.' "$OUT" | grep -c '^// ok$')"
expect_eq "stdout is the plan with outcomes" "$(cat "$TMP/plan42")" "$(grep -v '^// ok$' "$OUT")"
expect_match "a summary on stderr" '16 steps applied \(0 done before\)' "$(cat "$ERR")"
stop_fake

start_fake --shards x,y
expect_rc 0 "--apply reads the names with listShards" mq shard-plan --partitions 2 --shards 2 --apply --uri "$FAKE_URI"
expect_eq "listShards first, on admin" '{"db": "admin", "command": {"listShards": 1}}' "$(recorded "$REC" | sed -n 1p)"
expect_eq "then the zones on listShards's shards" '["x", "y"]' \
    "$(recorded "$REC" | jl '[c["command"]["addShardToZone"] for c in d if "addShardToZone" in c["command"]]')"
expect_eq "no placeholder in the applied plan" "0" "$(grep -c '<shard' "$OUT")"
: >"$REC"
expect_rc 2 "listShards names another count of shards" mq shard-plan --partitions 3 --shards 3 --apply --uri "$FAKE_URI"
expect_match "it says so, naming them" '--shards 3, but listShards names 2: x, y' "$(cat "$ERR")"
expect_eq "nothing but listShards was sent" '["listShards"]' "$(recorded "$REC" | jl '[next(iter(c["command"])) for c in d]')"
stop_fake

# A refused command stops the apply: exit 1, naming the command and the server's message.
start_fake --fail 'updateZoneKeyRange:20:shop.orders_counters'
expect_rc 1 "a refused command" \
    mq shard-plan --db shop --prefix orders --partitions 4 --shards 2 --shard-names a,b --apply --uri "$FAKE_URI"
expect_match "stderr names the step, the command and the server's message" \
    'step 5 of 16, updateZoneKeyRange shop.orders_counters, partition 0: the server refused: fake_mongos: updateZoneKeyRange refused \(code 20 IllegalOperation\); steps 1-4 were applied, the rest not sent' \
    "$(cat "$ERR")"
expect_eq "nothing was sent after it" "$(plan_commands "$TMP/plan42" | sed -n 1,5p)" "$(recorded "$REC")"
expect_match "stdout ends with the failed command and its outcome" '^// failed: fake_mongos: updateZoneKeyRange refused \(code 20 IllegalOperation\)$' "$(tail -1 "$OUT")"
stop_fake

# Steps done before: enableSharding's AlreadyInitialized, createIndexes' conflict of names
# for the same keys, shardCollection's "already sharded" when config.collections has
# the same key; the same error with another key (or none) is a failure.
start_fake --fail enableSharding:23 --fail createIndexes:85:orders_locks --fail shardCollection:23 \
    --sharded 'shop.orders_locks={"partition": 1, "_id": 1}' \
    --sharded 'shop.orders_counters={"partition": 1.0, "_id": 1}' \
    --sharded 'shop.orders_messages={"group_id": 1, "_id": 1}'
expect_rc 0 "steps done before are no failure" \
    mq shard-plan --db shop --prefix orders --partitions 4 --shards 2 --shard-names a,b --apply --uri "$FAKE_URI"
expect_eq "five done before" "5" "$(grep -c '^// done before: ' "$OUT")"
expect_match "enableSharding done before" '^// done before: sharding was enabled before \(the server: fake_mongos: enableSharding refused \(code 23 AlreadyInitialized\)\)$' "$(cat "$OUT")"
expect_match "the index done before" '^// done before: an index on these keys exists under another name' "$(cat "$OUT")"
expect_match "sharded before on this key" '^// done before: sharded before on this key \(config.collections\)' "$(cat "$OUT")"
expect_match "the summary counts them" '16 steps applied \(5 done before\)' "$(cat "$ERR")"
stop_fake
start_fake --fail shardCollection:23 --sharded 'shop.orders_locks={"_id": 1}'
expect_rc 1 "already sharded on another key" \
    mq shard-plan --db shop --prefix orders --partitions 4 --shards 2 --shard-names a,b --apply --uri "$FAKE_URI"
expect_match "it names the key found" 'shardCollection shop.orders_locks: the server refused: .*config.collections has shop.orders_locks sharded on \{ "_id" : 1 \}' "$(cat "$ERR")"
stop_fake
start_fake --fail addShardToZone:70
expect_rc 1 "a shard that does not exist" \
    mq shard-plan --partitions 2 --shards 2 --shard-names a,b --apply --uri "$FAKE_URI"
expect_match "ShardNotFound, at step 2" 'step 2 of 12, addShardToZone a: the server refused: .*ShardNotFound\); step 1 was applied' "$(cat "$ERR")"
stop_fake

# ---- bad arguments: exit 2, nothing on stdout, nothing sent ---------------------------
start_fake
bad() {
    local name=$1 re=$2
    shift 2
    expect_rc 2 "$name" mq shard-plan "$@" --apply --uri "$FAKE_URI"
    expect_eq "$name: nothing on stdout" "" "$(cat "$OUT")"
    expect_match "$name: stderr names it" "$re" "$(cat "$ERR")"
}
bad "no --partitions" '--partitions P is required' --shards 2
bad "no --shards" '--shards S is required' --partitions 2
bad "--partitions 0" "--partitions: expected 1\.\.1024, got '0'" --partitions 0 --shards 2
bad "--partitions 1025" "--partitions: expected 1\.\.1024, got '1025'" --partitions 1025 --shards 2
bad "--partitions x" "--partitions: expected 1\.\.1024, got 'x'" --partitions x --shards 2
bad "--shards 0" "--shards: expected 1\.\.1024, got '0'" --partitions 2 --shards 0
bad "--shards -1" "--shards: expected 1\.\.1024, got '-1'" --partitions 2 --shards -1
bad "--shard-names of another count" "--shard-names 'a': 1 names for --shards 2" --partitions 2 --shards 2 --shard-names a
bad "--shard-names with an empty name" "--shard-names 'a,,b': an empty name" --partitions 2 --shards 3 --shard-names a,,b
bad "--shard-names with a name twice" "--shard-names 'a,a': 'a' twice" --partitions 2 --shards 2 --shard-names a,a
bad "a stray argument" "unexpected argument 'now'" --partitions 2 --shards 2 now
bad "a bad --db" "--db 'a\.b': not a database name" --partitions 2 --shards 2 --db a.b
bad "an unknown option" "unrecognized option '--zones'" --partitions 2 --shards 2 --zones 2
expect_eq "nothing was sent" "" "$(recorded "$REC")"
stop_fake

DEAD='mongodb://127.0.0.1:1/?serverSelectionTimeoutMS=300'
expect_rc 3 "--apply on a server that does not answer" \
    env -u MONGOMQ_DB "$MQ_BIN" shard-plan --partitions 2 --shards 2 --shard-names a,b --apply --uri "$DEAD"
expect_match "it says so, naming the step" 'step 1 of 12, enableSharding mongomq: server unreachable' "$(cat "$ERR")"
expect_rc 3 "listShards on a server that does not answer" mq shard-plan --partitions 2 --shards 2 --apply --uri "$DEAD"
expect_match "it names listShards" 'listShards .*server unreachable' "$(cat "$ERR")"

expect_rc 0 "shard-plan --help" mq shard-plan --help
expect_match "its usage" '^Usage: mongomq shard-plan --partitions P --shards S' "$(head -1 "$OUT")"

finish
