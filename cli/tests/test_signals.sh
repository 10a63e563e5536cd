#!/usr/bin/env bash
# mongomq work and signals: the first SIGTERM/SIGINT stops claiming and lets the
# running commands finish (their events acked: nothing lost, nothing acked twice); a
# second kills them and gives their events back; a lease claimed as the stop came is
# given back without its command (not a delivery). No timing is asserted but loose
# upper bounds.
source "$(dirname "$0")/lib.sh"
export TMP

# ---- graceful: SIGTERM with two commands in flight -----------------------------------
for i in 1 2 3 4 5 6; do mq publish "g$i" "e$i" >/dev/null; done
"$MQ_BIN" work --exec 'touch "$TMP/started.$MQ_SEQ"; sleep 2; echo "$MQ_SEQ" >> "$TMP/done"' \
    --concurrency 2 >"$TMP/w.out" 2>"$TMP/w.err" &
w=$!
two_started() { [[ $(ls "$TMP" | grep -c '^started\.') -ge 2 ]]; }
wait_for "two commands start" 60 two_started
wait_for "the worker handles SIGTERM" 30 catches $w 15
kill -TERM $w
start=$SECONDS
wait_exit $w 60
expect_eq "the worker exits 0 after a graceful stop" "0" "$RC"
if ((SECONDS - start < 30)); then ok "it stopped promptly"; else not_ok "it took $((SECONDS - start)) s to stop"; fi
started=$(ls "$TMP" | sed -n 's/^started\.//p' | sort -n | tr '\n' ' ')
done_=$(sort -n "$TMP/done" | tr '\n' ' ')
expect_eq "every command that started finished" "$started" "$done_"
expect_match "it said it was stopping" 'stopping: no more claims' "$(cat "$TMP/w.err")"
n=$(wc -l <"$TMP/done" | tr -d ' ')
expect_match "the summary: what finished was acked" "^mongomq work: $n claimed, $n acked, 0 failed, 0 killed, 0 leases lost\$" "$(summary "$TMP/w.err")"
run mq stats --json
expect_eq "the others are still in the queue" "$((6 - n))" "$(json 'd["messages"]' <"$OUT")"
expect_eq "and none is held" "0" "$(json 'd["groups"]["leased"]' <"$OUT")"

# The rest, then: every event ran exactly once.
expect_rc 0 "a worker drains the rest" mq work --exec 'echo "$MQ_SEQ" >> "$TMP/done"' --idle 1
expect_eq "each of the 6 events ran once: nothing lost, nothing twice" "1 2 3 4 5 6" \
    "$(sort -n "$TMP/done" | tr '\n' ' ' | sed 's/ $//')"

# ---- graceful with SIGINT (what Ctrl-C sends), the command's own group untouched ------
mq publish int one >/dev/null
"$MQ_BIN" work --exec 'touch "$TMP/int.started"; sleep 2; echo "$MQ_SEQ" > "$TMP/int.done"' \
    >"$TMP/i.out" 2>"$TMP/i.err" &
w=$!
wait_for "the command starts" 60 test -e "$TMP/int.started"
wait_for "the worker handles SIGINT" 30 catches $w 2
kill -INT $w
wait_exit $w 60
expect_eq "SIGINT: exit 0" "0" "$RC"
expect_eq "SIGINT: the command finished" "7" "$(cat "$TMP/int.done" 2>/dev/null)"
expect_match "SIGINT: its event was acked" '1 claimed, 1 acked' "$(cat "$TMP/i.err")"

# ---- forced: a second signal kills the running command ------------------------------
mq publish forced stuck >/dev/null   # seq 8
"$MQ_BIN" work --exec 'echo $$ > "$TMP/pid"; exec sleep 60' >"$TMP/f.out" 2>"$TMP/f.err" &
w=$!
wait_for "the long command starts" 60 test -s "$TMP/pid"
wait_for "the worker handles SIGINT" 30 catches $w 2
kill -INT $w
# Two signals sent at once may arrive as one: the second goes after the first is seen.
wait_for "the worker says it is stopping" 30 grep -q 'stopping' "$TMP/f.err"
kill -INT $w
start=$SECONDS
wait_exit $w 60
expect_eq "the worker exits 1 when it had to kill a command" "1" "$RC"
if ((SECONDS - start < 20)); then ok "it stopped promptly"; else not_ok "it took $((SECONDS - start)) s to stop"; fi
if kill -0 "$(cat "$TMP/pid")" 2>/dev/null; then not_ok "the command still runs"; else ok "the command is gone"; fi
expect_match "it says so" 'killing the running commands' "$(cat "$TMP/f.err")"
expect_match "summary: 1 killed" '1 claimed, 0 acked, 0 failed, 1 killed' "$(summary "$TMP/f.err")"
run mq stats --json
expect_eq "the event is still in the queue" "1" "$(json 'd["messages"]' <"$OUT")"
expect_eq "and claimable at once (not held)" "1" "$(json 'd["groups"]["ready"]' <"$OUT")"
expect_rc 0 "it is delivered again" mq work --exec 'printf "%s %s %s" "$MQ_SEQ" "$MQ_ATTEMPTS" "$(cat)" > "$TMP/again"' --idle 1
expect_eq "seq 8, its second delivery" "8 2 stuck" "$(cat "$TMP/again")"

# ---- a signal while idle: the waiting claim is cancelled at once ---------------------
"$MQ_BIN" work --exec true >"$TMP/idle.out" 2>"$TMP/idle.err" &
w=$!
wait_for "the idle worker handles SIGTERM" 30 catches $w 15
sleep 0.5   # (not needed for correctness: lets it reach its waiting claim, usually)
kill -TERM $w
start=$SECONDS
wait_exit $w 60
expect_eq "idle worker: exit 0" "0" "$RC"
if ((SECONDS - start < 10)); then ok "idle worker stopped promptly"; else not_ok "idle worker took $((SECONDS - start)) s"; fi
expect_match "idle worker: summary" '^mongomq work: 0 claimed' "$(summary "$TMP/idle.err")"

# ---- a SIGTERM right after a claim: the unstarted lease is given back (unclaim) --------
# 30 cycles of a worker (concurrency 2) on one event whose command always fails, each
# stopped 0..99 ms after it can take the signal: sometimes a waiting claim already holds
# the lease when the signal's cancel is seen, and the worker must not start the command
# then. It gives the lease back with mq_unclaim, which is not a delivery; a nack would
# be one that no command saw. So afterwards the event's attempts are the commands that
# ran, plus one for the delivery below. (With a nack there, this fails in most runs.)
mq publish stop-after-claim ev >/dev/null
cycles_ok=0
gave_back=0
for c in $(seq 1 30); do
    "$MQ_BIN" work --exec 'echo x >> "$TMP/sac.calls"; exit 1' --concurrency 2 --backoff 0.001,0.001 \
        >"$TMP/sac.out" 2>"$TMP/sac.err" &
    w=$!
    wait_for "cycle $c: the worker handles SIGTERM" 30 catches $w 15 || break
    sleep "0.0$((RANDOM % 100))"
    kill -TERM $w
    wait_exit $w 60
    if [[ $RC == 0 ]]; then cycles_ok=$((cycles_ok + 1)); else not_ok "cycle $c: exit $RC" "$(tail -3 "$TMP/sac.err")"; fi
    if grep -q 'given back unstarted$' "$TMP/sac.err"; then
        gave_back=$((gave_back + 1))
        expect_match "cycle $c: the summary counts the give-back" \
            '^mongomq work: [0-9]+ claimed, 0 acked, [0-9]+ failed, 0 killed, 0 leases lost, [12] given back unstarted$' \
            "$(summary "$TMP/sac.err")"
    fi
done
expect_eq "30 stops right after claims: each worker exits 0" "30" "$cycles_ok"
echo "# $gave_back of 30 cycles gave back a lease claimed as the stop came"
calls=$(cat "$TMP/sac.calls" 2>/dev/null | wc -l | tr -d ' ')
expect_rc 0 "the event is delivered once more" \
    mq work --exec 'echo "$MQ_ATTEMPTS" > "$TMP/sac.attempts"' --limit 1
expect_eq "its attempts are the commands that ran ($calls) + 1: no delivery counted that no command saw" \
    "$((calls + 1))" "$(cat "$TMP/sac.attempts" 2>/dev/null)"

finish
