#!/usr/bin/env bash
# mongomq work --exec: events to the command on stdin with MQ_GROUP/MQ_SEQ/MQ_ATTEMPTS,
# acks, per-group order, a failing command ending in the dead letters (and dead
# list/count/requeue/purge), the lease extended while a command outlives its
# visibility, events bigger than a pipe, --limit, --min-priority.
source "$(dirname "$0")/lib.sh"
export TMP

# ---- ordinary run: 3 groups, concurrency 3 -------------------------------------------
for g in a b c; do
    printf '{"g": "%s", "i": 1}\n{"g": "%s", "i": 2}\n' "$g" "$g" | mq publish "$g" >/dev/null
done
expect_rc 0 "work --exec on 6 events, --concurrency 3, --idle 1" \
    mq work --exec 'printf "%s %s %s %s\n" "$MQ_GROUP" "$MQ_SEQ" "$MQ_ATTEMPTS" "$(cat)" >> "$TMP/log"' \
    --concurrency 3 --idle 0.5
expect_eq "nothing on stdout but the commands' output" "" "$(cat "$OUT")"
expect_match "the summary line" '^mongomq work: 6 claimed, 6 acked, 0 failed, 0 killed, 0 leases lost$' "$(cat "$ERR")"
expect_eq "every event ran once" "1 2 3 4 5 6" "$(cut -d' ' -f2 "$TMP/log" | sort -n | tr '\n' ' ' | sed 's/ $//')"
expect_eq "MQ_GROUP, MQ_SEQ, MQ_ATTEMPTS and the event on stdin" \
    'a 1 1 {"g": "a", "i": 1}' "$(grep '^a 1 ' "$TMP/log")"
for g in a b c; do
    expect_eq "group $g in publish order" "1 2" "$(grep "^$g " "$TMP/log" | sed 's/.*"i": \([0-9]\)}/\1/' | tr '\n' ' ' | sed 's/ $//')"
done
run mq stats --json
expect_eq "the queue is empty" "0" "$(json 'd["messages"]' <"$OUT")"

# ---- a failing command ends in the dead letters ----------------------------------------
mq publish p poison >/dev/null   # seq 7
mq publish p good >/dev/null     # seq 8: waits behind it (FIFO)
expect_rc 0 "work with a command failing on one event, --max-attempts 3" \
    mq work --exec 'ev=$(cat); [ "$ev" = poison ] && exit 7; echo "$MQ_SEQ $ev" >> "$TMP/good"' \
    --max-attempts 3 --backoff 0.05,0.2 --idle 1
expect_match "summary: 3 failed deliveries, 1 ack" '^mongomq work: 4 claimed, 1 acked, 3 failed, 0 killed, 0 leases lost$' "$(summary "$ERR")"
expect_match "each failure is reported with its exit status" 'seq 7 \(group p, attempt 2\): exit status 7' "$(cat "$ERR")"
expect_match "the last one says where it goes" 'attempt 3\): exit status 7 .*to the dead letters' "$(cat "$ERR")"
expect_eq "the event behind it ran after it died" "8 good" "$(cat "$TMP/good")"
expect_rc 0 "dead count" mq dead count
expect_eq "one dead letter" "1" "$(cat "$OUT")"
expect_rc 0 "dead list --json" mq dead list --json
expect_eq "it is seq 7, 'poison', after 3 attempts" '[7, "p", "poison", 3]' \
    "$(jl '[d[0]["seq"], d[0]["group"], d[0]["event"], d[0]["attempts"]]' <"$OUT")"
expect_rc 0 "dead list (table)" mq dead list
expect_match "the table has a header" '^SEQ +GROUP +PRI +ATTEMPTS +DEAD_AT +EVENT$' "$(head -1 "$OUT")"
expect_match "and the letter" '^7 +p +0 +3 +[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]+Z +poison$' "$(sed -n 2p "$OUT")"

expect_rc 0 "dead requeue 7" mq dead requeue 7
expect_eq "prints SEQ NEW_SEQ" "7 9" "$(cat "$OUT")"
expect_rc 1 "dead requeue of a seq that is not dead" mq dead requeue 7
expect_match "stderr says so" 'not a dead letter' "$(cat "$ERR")"
run mq peek p --json
expect_eq "the event is back at the tail of its group" '[9, "poison"]' "$(jl '[d[0]["seq"], d[0]["event"]]' <"$OUT")"

# Dies again (max attempts 1), then requeue --all and purge.
expect_rc 0 "work --max-attempts 1" mq work --exec 'exit 1' --max-attempts 1 --backoff 0,0 --idle 0.5
mq publish q other >/dev/null   # seq 10
expect_rc 0 "a second dead letter" mq work --exec 'exit 1' --max-attempts 1 --backoff 0,0 --idle 0.5
expect_eq "two dead letters" "2" "$(mq dead count)"
expect_rc 0 "dead requeue --all --yes" mq dead requeue --all --yes
expect_eq "prints each SEQ NEW_SEQ" "9 11|10 12" "$(tr '\n' '|' <"$OUT" | sed 's/|$//')"
expect_eq "no dead letters left" "0" "$(mq dead count)"
expect_rc 0 "they die again" mq work --exec 'exit 1' --max-attempts 1 --backoff 0,0 --idle 0.5
expect_rc 0 "dead purge --yes" mq dead purge --yes
expect_eq "prints how many" "2" "$(cat "$OUT")"
expect_eq "none left" "0" "$(mq dead count)"
expect_eq "and the queue is empty" "0" "$(mq stats --json | json 'd["messages"]')"

# ---- the lease is extended while the command runs --------------------------------------
# Visibility 3 s, a command of 5 s: without extends another worker would take the
# event after 3 s (attempt 2). A second worker waits meanwhile.
mq publish slow '{"slow": true}' >/dev/null
"$MQ_BIN" work --exec 'echo "A $MQ_SEQ $MQ_ATTEMPTS" >> "$TMP/slow"; sleep 5' --visibility 3 --limit 1 \
    >"$TMP/a.out" 2>"$TMP/a.err" &
a=$!
wait_for "the first worker starts the command" 60 test -s "$TMP/slow"
mq work --exec 'echo "B $MQ_SEQ $MQ_ATTEMPTS" >> "$TMP/slow"' --visibility 3 --idle 6 >"$TMP/b.out" 2>"$TMP/b.err"
wait_exit $a 60
expect_eq "the first worker ended well" "0" "$RC"
expect_eq "only the first worker ran it, once" "A 13 1" "$(cat "$TMP/slow")"
expect_match "the first worker acked it" '1 claimed, 1 acked, 0 failed, 0 killed, 0 leases lost' "$(cat "$TMP/a.err")"
expect_match "the second got nothing" '0 claimed' "$(cat "$TMP/b.err")"

# ---- an event bigger than a pipe's buffer --------------------------------------------
head -c 300000 /dev/zero | tr '\0' 'x' | mq publish big --raw >/dev/null
mq publish big2 small >/dev/null
expect_rc 0 "a command that reads a 300 kB event" mq work --exec 'wc -c >> "$TMP/size"' --limit 1
expect_eq "it got every byte" "300000" "$(tr -d ' ' <"$TMP/size")"
head -c 300000 /dev/zero | tr '\0' 'y' | mq publish big --raw >/dev/null
expect_rc 0 "a command that does not read its stdin" mq work --exec 'true' --idle 0.5
expect_match "both acked" '2 claimed, 2 acked' "$(cat "$ERR")"

# ---- --limit, --min-priority -------------------------------------------------------------
for i in 1 2 3 4; do mq publish "lim$i" "$i" >/dev/null; done
expect_rc 0 "work --limit 2 stops after 2 events" mq work --exec 'cat >/dev/null' --limit 2 --concurrency 2
expect_match "2 claimed" '^mongomq work: 2 claimed, 2 acked' "$(cat "$ERR")"
expect_eq "2 left" "2" "$(mq stats --json | json 'd["messages"]')"
mq purge-group lim1 --yes; mq purge-group lim2 --yes; mq purge-group lim3 --yes; mq purge-group lim4 --yes
mq publish low l --priority 0 >/dev/null
mq publish high h --priority 3 >/dev/null
expect_rc 0 "work --min-priority 3" mq work --exec 'echo "$MQ_GROUP" >> "$TMP/prio"' --min-priority 3 --idle 0.5
expect_eq "only the high group" "high" "$(cat "$TMP/prio")"
run mq peek --json
expect_eq "the low one waits" '["low"]' "$(jl '[e["group"] for e in d]' <"$OUT")"

# ---- -v: one line per event ------------------------------------------------------------
expect_rc 0 "work -v" mq work --exec 'cat >/dev/null' --idle 0.5 -v
expect_match "a line for the acked event" 'seq [0-9]+ \(group low, attempt 1\): done in .*, acked' "$(cat "$ERR")"

# ---- --backoff: a failed event's group waits (held by the nack's delay) -----------------
mq publish backoff b >/dev/null
expect_rc 0 "a failure with --backoff 600,600" mq work --exec 'exit 1' --backoff 600,600 --limit 1
expect_match "it says when it comes again" 'exit status 1 .*; again in [0-9]+m[0-9]+s' "$(cat "$ERR")"
run mq stats --json
expect_eq "the group is held, not ready" "[1, 0]" "$(json '[d["groups"]["leased"], d["groups"]["ready"]]' <"$OUT")"
mq purge-group backoff --yes

# ---- --backoff doubles per attempt: BASE * 2^(attempts-1), times 0.5..1 ---------------
mq publish exp e >/dev/null
expect_rc 0 "three failures with --backoff 1,600 (--limit 3)" \
    timeout 60 "$MQ_BIN" work --exec 'exit 1' --backoff 1,600 --limit 3
delays=$(sed -n 's/.*attempt \([0-9]\)): exit status 1 .*; again in \([0-9.]*\)\(ms\|s\)$/\1 \2 \3/p' "$ERR")
# in seconds, one line per attempt: "1 0.73"
secs=$(echo "$delays" | awk '{ v = $3 == "ms" ? $2 / 1000 : $2; print $1, v }')
expect_eq "three failures, attempts 1 2 3" "1 2 3" "$(echo "$secs" | cut -d' ' -f1 | tr '\n' ' ' | sed 's/ $//')"
expect_eq "attempt 1 waits 0.5..1 s, attempt 2 1..2 s, attempt 3 2..4 s" "ok ok ok" \
    "$(echo "$secs" | awk '{ lo = 2 ^ ($1 - 1) / 2; hi = 2 ^ ($1 - 1);
        printf "%s%s", (NR > 1 ? " " : ""), (($2 >= lo - 0.05 && $2 <= hi + 0.05) ? "ok" : "no(" $2 "s)") }')"
mq purge-group exp --yes

# ---- --concurrency runs commands at the same time ---------------------------------------
# Each command marks itself and waits (up to 30 s) until both are marked: with one
# worker the first would wait alone and fail.
mq publish par1 x >/dev/null
mq publish par2 y >/dev/null
expect_rc 0 "two commands that need each other, --concurrency 2 --limit 2" \
    mq work --exec 'touch "$TMP/par.$MQ_GROUP"; i=0
        while [ "$(ls "$TMP"/par.* | wc -l)" -lt 2 ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
        [ "$(ls "$TMP"/par.* | wc -l)" -ge 2 ]' --concurrency 2 --limit 2
expect_match "both acked" '^mongomq work: 2 claimed, 2 acked, 0 failed, 0 killed, 0 leases lost$' "$(cat "$ERR")"

finish
