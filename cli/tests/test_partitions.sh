#!/usr/bin/env bash
# Partitioned queues from the command (issue 23): --partitions P / MONGOMQ_PARTITIONS
# makes and opens a queue of P partitions; without them every command opens a queue
# with the partitions it has (the library names them when asked for another number);
# work --partition LIST claims only from those partitions; stats shows "partitions N".
source "$(dirname "$0")/lib.sh"

# partition GROUP P: mq_group_partition, computed here from its definition in
# include/mongomq.h (FNV-1a 64 of the bytes, MurmurHash3's fmix64, modulo P).
partition() {
    python3 -c '
import sys
m = (1 << 64) - 1
h = 0xcbf29ce484222325
for b in sys.argv[1].encode():
    h = ((h ^ b) * 0x100000001b3) & m
h ^= h >> 33; h = (h * 0xff51afd7ed558ccd) & m
h ^= h >> 33; h = (h * 0xc4ceb9fe1a85ec53) & m
h ^= h >> 33
print(h % int(sys.argv[2]))' "$1" "$2"
}

# ---- a queue of 4 partitions ---------------------------------------------------------
export MONGOMQ_PREFIX=p4
groups=(g0 g1 g2 g3 g4 g5 g6 g7 g8 g9 g10 g11)
declare -A part
for g in "${groups[@]}"; do part[$g]=$(partition "$g" 4); done
# Every partition holds some group (else the checks below prove less than they say).
expect_eq "the groups cover the 4 partitions" "0 1 2 3" "$(printf '%s\n' "${part[@]}" | sort -u | xargs)"

expect_rc 0 "the first publish with --partitions 4 makes the queue" mq --partitions 4 publish g0 first
# Partition k's n-th event gets seq (n - 1) * 4 + k + 1.
expect_eq "its seq is its partition's first" "$((part[g0] + 1))" "$(cat "$OUT")"
# Without --partitions the command opens it with the 4 it has, for every group.
declare -A count
count[${part[g0]}]=1
ok_seqs=1
for g in "${groups[@]:1}"; do
    run mq publish "$g" "e-$g"
    k=${part[$g]}
    n=$((${count[$k]:-0} + 1))
    count[$k]=$n
    if [[ $RC != 0 || $(cat "$OUT") != $(((n - 1) * 4 + k + 1)) ]]; then
        ok_seqs=0
        not_ok "publish $g without --partitions: exit $RC, seq $(cat "$OUT"), expected $(((n - 1) * 4 + k + 1))" "$(cat "$ERR")"
    fi
done
((ok_seqs)) && ok "publishes without --partitions use the queue's 4 partitions (seqs (n-1)*4+k+1)"

expect_rc 0 "stats without --partitions" mq stats
expect_eq "stats shows the partitions" "partitions 4" "$(sed -n 2p "$OUT")"
expect_eq "then the messages" "messages  12" "$(sed -n 3p "$OUT" | cut -d' ' -f1-3)"
expect_rc 0 "stats --json" mq stats --json
expect_eq "its JSON says 4 partitions" "4" "$(json 'd["partitions"]' <"$OUT")"
expect_rc 0 "MONGOMQ_PARTITIONS=4 opens it too" env MONGOMQ_PARTITIONS=4 "$MQ_BIN" stats --json
expect_rc 0 "--partitions 4 after the command" mq stats --json --partitions 4

expect_rc 2 "--partitions 2 on the queue of 4" mq --partitions 2 stats
expect_match "the library names both" 'has 4 partitions .*not 2' "$(cat "$ERR")"
expect_rc 2 "MONGOMQ_PARTITIONS=2 on the queue of 4" env MONGOMQ_PARTITIONS=2 "$MQ_BIN" peek
expect_rc 2 "--partitions 0" mq --partitions 0 stats
expect_match "it names the option" "^mongomq: --partitions: expected 1\.\.1024, got '0'" "$(cat "$ERR")"
expect_rc 2 "--partitions 1025 after the command" mq stats --partitions 1025
expect_match "it names the option" "^mongomq stats: --partitions: expected 1\.\.1024, got '1025'" "$(cat "$ERR")"
expect_rc 2 "MONGOMQ_PARTITIONS=x" env MONGOMQ_PARTITIONS=x "$MQ_BIN" stats
expect_match "it names the variable" "MONGOMQ_PARTITIONS: expected 1\.\.1024, got 'x'" "$(cat "$ERR")"
expect_eq "--partitions wins over MONGOMQ_PARTITIONS" "4" \
    "$(MONGOMQ_PARTITIONS=x "$MQ_BIN" --partitions 4 stats --json | json 'd["partitions"]')"

# ---- work --partition ------------------------------------------------------------------
expect_rc 0 "work --partition 0,2" mq work --partition 0,2 --exec 'echo "$MQ_GROUP"' --idle 1
took=$(sort "$OUT" | xargs)
want=$(for g in "${groups[@]}"; do [[ ${part[$g]} == 0 || ${part[$g]} == 2 ]] && echo "$g"; done | sort | xargs)
expect_eq "it took every group of partitions 0 and 2, and only those" "$want" "$took"
left=$(for g in "${groups[@]}"; do [[ ${part[$g]} == 1 || ${part[$g]} == 3 ]] && echo x; done | wc -l | tr -d ' ')
expect_eq "the other partitions' events are still queued" "$left" "$(mq stats --json | json 'd["messages"]')"
expect_rc 0 "work --partition 1-3" mq work --partition 1-3 --exec 'echo "$MQ_GROUP"' --idle 1
want=$(for g in "${groups[@]}"; do [[ ${part[$g]} == 1 || ${part[$g]} == 3 ]] && echo "$g"; done | sort | xargs)
expect_eq "it took the rest (2 had nothing left)" "$want" "$(sort "$OUT" | xargs)"
expect_eq "the queue is empty" "0" "$(mq stats --json | json 'd["messages"]')"

bad() {
    local name=$1 re=$2
    shift 2
    expect_rc 2 "$name" mq work --exec true --idle 1 "$@"
    expect_eq "$name: nothing on stdout" "" "$(cat "$OUT")"
    expect_match "$name: stderr names it" "$re" "$(cat "$ERR")"
}
bad "--partition x" "--partition 'x': 'x' is not a partition" --partition x
bad "--partition 3-1" "--partition '3-1': the range 3-1 runs backwards" --partition 3-1
bad "--partition 1,0-2" "--partition '1,0-2': partition 1 is given twice" --partition 1,0-2
bad "--partition 1,,2" "--partition '1,,2': an empty item" --partition 1,,2
bad "--partition ''" "--partition '': no partition" --partition ''
bad "--partition 1024" "--partition '1024': '1024' is not a partition \(0\.\.1023\)" --partition 1024
bad "--partition 2,4 on a queue of 4" "--partition '2,4': partition 4 is outside 0\.\.3 \(the queue has 4 partitions\)" --partition 2,4
mq publish g1 late >/dev/null
bad "nothing is claimed after a bad --partition" "outside 0\.\.3" --partition 0-4
expect_eq "the event is still there" "1" "$(mq stats --json | json 'd["messages"]')"

# ---- a queue of one partition: as before -------------------------------------------------
export MONGOMQ_PREFIX=p1
expect_rc 0 "publish on a new queue without --partitions" mq publish a one
expect_eq "seq 1" "1" "$(cat "$OUT")"
expect_rc 0 "stats of a queue of one partition" mq stats
expect_match "no partitions line" '^messages  1' "$(sed -n 2p "$OUT")"
expect_eq "its JSON says 1" "1" "$(mq stats --json | json 'd["partitions"]')"
bad "--partition 1 on a queue of one" "--partition '1': partition 1 is outside 0\.\.0 \(the queue has 1 partition\)" --partition 1
expect_rc 2 "--partitions 4 on a queue of one with events" mq --partitions 4 stats
expect_match "the library says it holds events of one partition" 'already holds events of one partition' "$(cat "$ERR")"
expect_rc 0 "work --partition 0 on a queue of one" mq work --partition 0 --exec cat --idle 1
expect_eq "it took the event" "one" "$(cat "$OUT")"
mq drop --yes >/dev/null 2>&1
export MONGOMQ_PREFIX=p4
finish
