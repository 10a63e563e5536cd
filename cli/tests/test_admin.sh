#!/usr/bin/env bash
# mongomq stats (table, --json, --watch), peek, repair, purge-group, drop, --prefix, and
# confirmations on a terminal (a pseudo-terminal made by util-linux `script`).
source "$(dirname "$0")/lib.sh"

mq publish a '{"a": 1}' >/dev/null
mq publish a '{"a": 2}' >/dev/null
mq publish b "$(printf 'tab\there')" --priority 2 >/dev/null
mq publish c later --at 2030-01-01T00:00:00Z >/dev/null

# ---- stats ---------------------------------------------------------------------------
expect_rc 0 "stats" mq stats
expect_match "the queue's name and time" "^queue +$MONGOMQ_DB\\.mq at [0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]+Z\$" "$(sed -n 1p "$OUT")"
expect_match "messages, with the oldest's age" '^messages +4 \(oldest waited [0-9.]+(ms|s|m[0-9]+s)\)$' "$(sed -n 2p "$OUT")"
expect_eq "groups" "groups    3: 2 ready, 0 leased, 1 parked, 0 paused" "$(sed -n 3p "$OUT")"
expect_eq "published" "published 4 (events ever)" "$(sed -n 4p "$OUT")"
expect_eq "dead letters" "dead      0" "$(sed -n 5p "$OUT")"
expect_match "the priority table's header" '^PRIORITY +GROUPS +MESSAGES$' "$(sed -n 7p "$OUT")"
expect_match "priority 0: 2 groups, 3 events" '^0 +2 +3$' "$(sed -n 8p "$OUT")"
expect_match "priority 2: 1 group, 1 event" '^2 +1 +1$' "$(sed -n 10p "$OUT")"
expect_rc 0 "stats --json" mq stats --json
expect_eq "one line" "1" "$(wc -l <"$OUT" | tr -d ' ')"
expect_eq "the library's object" "[\"$MONGOMQ_DB.mq\", 4, 2, 1]" \
    "$(json '[d["queue"], d["messages"], d["groups"]["ready"], d["groups"]["parked"]]' <"$OUT")"

# --watch: a line each time until SIGINT, which ends it with exit 0.
"$MQ_BIN" stats --json --watch 0.2 >"$TMP/watch" 2>"$TMP/watch.err" &
w=$!
lines() { [[ $(wc -l <"$TMP/watch") -ge 3 ]]; }
wait_for "stats --watch prints again" 60 lines
wait_for "stats --watch handles SIGINT" 30 catches $w 2
kill -INT $w
wait_exit $w 30
expect_eq "stats --watch ends with exit 0 on SIGINT" "0" "$RC"
expect_eq "every line is the stats object" "ok" \
    "$(python3 -c 'import json,sys; [json.loads(l)["messages"] for l in open(sys.argv[1])]; print("ok")' "$TMP/watch")"
"$MQ_BIN" stats --watch 0.2 >"$TMP/watch2" 2>/dev/null &
w=$!
tables() { [[ $(grep -c '^queue ' "$TMP/watch2") -ge 2 ]]; }
wait_for "stats --watch prints tables again" 60 tables
wait_for "stats --watch handles SIGTERM" 30 catches $w 15
kill -TERM $w
wait_exit $w 30
expect_eq "stats --watch (table) ends with exit 0 on SIGTERM" "0" "$RC"
expect_eq "not on a terminal: no screen control codes" "0" "$(grep -c $'\033' "$TMP/watch2")"

# ---- peek ----------------------------------------------------------------------------
expect_rc 0 "peek" mq peek
expect_match "a header" '^SEQ +GROUP +PRI +ATTEMPTS +PUBLISHED +DUE +EVENT$' "$(sed -n 1p "$OUT")"
expect_eq "4 events" "4" "$(($(wc -l <"$OUT") - 1))"
expect_match "the tab is shown escaped" '^3 +b +2 +- .*tab\\there$' "$(sed -n 4p "$OUT")"
expect_match "the scheduled one has its due time" '^4 +c +0 +- +[0-9TZ:.-]+ +2030-01-01T00:00:00Z +later$' "$(sed -n 5p "$OUT")"
expect_rc 0 "peek a --json" mq peek a --json
expect_eq "a's events, oldest first" '[[1, "{\"a\": 1}"], [2, "{\"a\": 2}"]]' "$(jl '[[e["seq"], e["event"]] for e in d]' <"$OUT")"
expect_rc 0 "peek --limit 1" mq peek --limit 1 --json
expect_eq "just the oldest" "[1]" "$(jl '[e["seq"] for e in d]' <"$OUT")"
expect_rc 0 "peek of a group with no events" mq peek nosuch --json
expect_eq "prints nothing" "" "$(cat "$OUT")"
run mq stats --json
expect_eq "peek claimed nothing" "2" "$(json 'd["groups"]["ready"]' <"$OUT")"

# ---- repair ----------------------------------------------------------------------------
expect_rc 0 "repair" mq repair
expect_eq "a healthy queue needs no lock" "0" "$(cat "$OUT")"
# a lock deleted behind the library's back (as a publisher that died between its insert
# and its lock leaves it): the event is there, no claim can get it, repair makes its lock
groups_before=$(mq stats --json | json 'd["groups"]["total"]')
mq publish stranded s1 >/dev/null
expect_rc 0 "the lock of group stranded deleted over the wire" \
    python3 "$(dirname "$0")/../../scripts/wire.py" "$MONGOMQ_URI" "$MONGOMQ_DB" \
    '{"delete": "mq_locks", "deletes": [{"q": {"_id": "stranded"}, "limit": 1}]}'
expect_eq "one lock deleted" "ok=1.0 n=1" "$(cat "$OUT")"
run mq peek stranded --json
expect_eq "the event is still there" '["s1"]' "$(jl '[e["event"] for e in d]' <"$OUT")"
expect_eq "but its group has no lock (no claim can get it)" "$groups_before" "$(mq stats --json | json 'd["groups"]["total"]')"
expect_rc 0 "repair a stranded event" mq repair
expect_eq "one lock made" "1" "$(cat "$OUT")"
expect_eq "the group is back" "$((groups_before + 1))" "$(mq stats --json | json 'd["groups"]["total"]')"
expect_rc 0 "repair again" mq repair
expect_eq "nothing more to make" "0" "$(cat "$OUT")"
mq purge-group stranded --yes >/dev/null

# ---- --prefix: another queue in the same database ------------------------------------
expect_rc 0 "publish with --prefix other" mq --prefix other publish x y
expect_eq "its own seqs" "1" "$(cat "$OUT")"
expect_eq "the other queue has it" "1" "$(mq stats --prefix other --json | json 'd["messages"]')"
expect_eq "this one does not" "4" "$(mq stats --json | json 'd["messages"]')"
expect_rc 0 "drop --prefix other --yes" mq drop --prefix other --yes

# ---- purge-group -----------------------------------------------------------------------
expect_rc 0 "purge-group a --yes" mq purge-group a --yes
expect_eq "prints nothing" "" "$(cat "$OUT")"
expect_eq "a's events are gone, the others stay" '["b", "c"]' "$(mq peek --json | jl '[e["group"] for e in d]')"

# ---- confirmations on a terminal -------------------------------------------------------
# tty ANSWER CMD: runs CMD on a pseudo-terminal, typing ANSWER; its status in $RC.
tty() {
    local answer=$1
    shift
    (sleep 1; printf '%s\n' "$answer") | script -qec "$*" /dev/null >"$OUT" 2>"$ERR"
    RC=$?
}
tty n "$MQ_BIN" drop
expect_eq "drop, answered n: exit 1" "1" "$RC"
expect_match "it asked, naming the queue and what is in it" "Drop the queue $MONGOMQ_DB\\.mq \\(2 events, 0 dead letters\\)" "$(cat "$OUT")"
expect_eq "nothing was dropped" "2" "$(mq stats --json | json 'd["messages"]')"
tty n "$MQ_BIN" purge-group b
expect_eq "purge-group, answered n: exit 1" "1" "$RC"
expect_eq "b is still there" '["b", "c"]' "$(mq peek --json | jl '[e["group"] for e in d]')"
tty y "$MQ_BIN" purge-group b
expect_eq "purge-group, answered y: exit 0" "0" "$RC"
expect_eq "b is gone" '["c"]' "$(mq peek --json | jl '[e["group"] for e in d]')"
tty y "$MQ_BIN" drop
expect_eq "drop, answered y: exit 0" "0" "$RC"
run mq stats --json
expect_eq "the queue is empty" "[0, 0]" "$(json '[d["messages"], d["groups"]["total"]]' <"$OUT")"

# ---- groups, pause, resume, dead list --offset ------------------------------------------
mq publish g1 one >/dev/null
mq publish g1 two >/dev/null
mq publish g2 three >/dev/null
expect_rc 0 "pause g2" mq pause g2
expect_rc 0 "groups" mq groups
expect_match "a table with its header" '^GROUP +STATE +PRI +ATTEMPTS +BACKLOG +HEAD AGE +HOLDER +HELD +DUE IN$' "$(sed -n 1p "$OUT")"
expect_match "g1: ready, 2 events" '^g1 +ready +0 +0 +2 ' "$(sed -n 2p "$OUT")"
expect_match "g2: paused" '^g2 +paused +0 +0 +1 ' "$(sed -n 3p "$OUT")"
expect_rc 0 "groups --state paused --json" mq groups --state paused --json
expect_eq "only g2, paused" '["g2", true, 1]' "$(json '[d["group"], d["paused"], d["backlog"]]' <"$OUT")"
expect_rc 0 "groups --id-prefix g1 --json" mq groups --id-prefix g1 --json
expect_eq "only g1" 'g1' "$(json 'd["group"]' <"$OUT")"
expect_rc 0 "groups -n 1" mq groups -n 1 --json
expect_match "stderr names the next page" "more: --after 'id:[^']+'" "$(cat "$ERR")"
after=$(sed -n "s/.*--after '\\(.*\\)'.*/\\1/p" "$ERR")
expect_rc 0 "groups --after" mq groups -n 1 --json --after "$after"
expect_eq "the page after it" 'g2' "$(json 'd["group"]' <"$OUT")"
expect_rc 2 "groups --state nope" mq groups --state nope
expect_match "names the option" "--state" "$(cat "$ERR")"
expect_rc 2 "groups --sort sideways" mq groups --sort sideways
expect_rc 2 "pause without a group" mq pause
run mq stats --json
expect_eq "stats: 1 paused, 3 published (the drop above reset the counter)" "[1, 3]" "$(json '[d["groups"]["paused"], d["published"]]' <"$OUT")"
expect_rc 0 "resume g2" mq resume g2
expect_rc 0 "groups --state ready --sort due" mq groups --state ready --sort due
expect_eq "both ready, in line" "2" "$(grep -c ' ready ' "$OUT")"
expect_rc 0 "dead list --offset 1" mq dead list --offset 1 --limit 5
expect_rc 2 "--offset is for dead list" mq dead count --offset 1
mq drop --yes >/dev/null

finish
