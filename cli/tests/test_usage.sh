#!/usr/bin/env bash
# Help, bad options (exit 2, nothing on stdout, stderr naming the problem), bad and
# unreachable URIs (exit 2 for a malformed one, 3 for a server that does not answer).
source "$(dirname "$0")/lib.sh"

# ---- help --------------------------------------------------------------------------
expect_rc 0 "mongomq --help" mq --help
expect_match "main help lists the commands" 'publish GROUP.*' "$(cat "$OUT")"
expect_match "main help documents exit status 3" '3  the server could not be reached' "$(cat "$OUT")"
expect_match "main help documents exit status 2" '2  usage' "$(cat "$OUT")"
for cmd in publish work stats peek dead repair purge-group drop shard-plan; do
    expect_rc 0 "mongomq $cmd --help" mq "$cmd" --help
    expect_match "$cmd --help starts with its usage" "^Usage: mongomq $cmd" "$(head -1 "$OUT")"
    expect_eq "$cmd --help writes nothing on stderr" "" "$(cat "$ERR")"
    run mq help "$cmd"
    expect_eq "mongomq help $cmd is $cmd --help" "$(mq "$cmd" --help)" "$(cat "$OUT")"
done
expect_rc 0 "mongomq -h" mq -h
expect_rc 2 "mongomq help nosuch" mq help nosuch
expect_rc 0 "mongomq --version" mq --version
expect_match "--version names both versions" '^mongomq [0-9.]+ \(libmongomq [0-9.]+\)$' "$(cat "$OUT")"

# The man page is made of the same texts.
expect_rc 0 "mongomq help-man" mq help-man
expect_match "it is a man page" '^\.TH MONGOMQ 1 ' "$(head -1 "$OUT")"
for cmd in publish work stats peek dead repair purge-group drop shard-plan; do
    expect_match "the man page has $cmd's help" "^Usage: mongomq ${cmd//-/'\\-'}" "$(cat "$OUT")"
done

# ---- bad options: exit 2, stdout empty, stderr names the problem ---------------------
# usage NAME STDERR_REGEX CMD...
usage() {
    local name=$1 re=$2
    shift 2
    expect_rc 2 "$name" "$@"
    expect_eq "$name: nothing on stdout" "" "$(cat "$OUT")"
    expect_match "$name: stderr says why" "$re" "$(cat "$ERR")"
}
usage "no command" 'which command' mq
usage "unknown command" "no command 'frobnicate'" mq frobnicate
usage "unknown global option" "unrecognized option '--bogus'" mq --bogus stats
usage "unknown command option" "unrecognized option '--bogus'" mq stats --bogus
usage "publish without a group" 'which group' mq publish
usage "publish with too many arguments" 'too many arguments' mq publish g a b
usage "publish --priority 9" '--priority: expected 0..4' mq publish g e --priority 9
usage "publish --priority x" '--priority' mq publish g e -p x
usage "publish --at yesterday" "--at 'yesterday'" mq publish g e --at yesterday
usage "publish --at without a zone" 'needs a zone' mq publish g e --at 2026-01-01T09:00:00
usage "publish --at Feb 30" 'out of range' mq publish g e --at 2026-02-30T09:00:00Z
usage "publish --at with --delay" 'one of --at and --delay' mq publish g e --at 1 --delay 1
usage "publish --batch 0" '--batch' mq publish g --batch 0
usage "publish EVENT with --file" 'EVENT or --file' mq publish g e --file /dev/null
usage "publish --raw with EVENT" '--raw' mq publish g e --raw
usage "publish --file that does not exist" 'no-such-file' mq publish g --file "$TMP/no-such-file"
usage "publish --json with a bad event" 'not JSON' mq publish g '{oops' --json
usage "work without --exec" '--exec CMD is required' mq work
usage "work --concurrency 0" '--concurrency' mq work --exec true --concurrency 0
usage "work --backoff 5" '--backoff' mq work --exec true --backoff 5
usage "work --backoff 5,1" '--backoff' mq work --exec true --backoff 5,1
usage "work --visibility 0" '--visibility' mq work --exec true --visibility 0
usage "work --min-priority 5" '--min-priority' mq work --exec true --min-priority 5
usage "work --max-attempts -1" '--max-attempts' mq work --exec true --max-attempts -1
usage "work with a stray argument" "unexpected argument 'sleep'" mq work --exec echo sleep
usage "stats --watch -1" '--watch' mq stats --watch -1
usage "stats --yes" '--yes does not apply' mq stats --yes
usage "peek --limit 0" '--limit' mq peek --limit 0
usage "dead without what" 'list, count, requeue, purge' mq dead
usage "dead frob" "no 'dead frob'" mq dead frob
usage "dead requeue without seqs" 'SEQ... or --all' mq dead requeue
usage "dead requeue abc" "'abc' is not a seq" mq dead requeue abc
usage "dead requeue 1 --all" 'not both' mq dead requeue 1 --all
usage "dead list --yes" '--yes is for' mq dead list --yes
usage "purge-group without a group" 'which group' mq purge-group
# Confirmations: stdin not a terminal and no --yes -> refused before anything is sent.
usage "drop without --yes, stdin not a terminal" 'add --yes' mq drop </dev/null
usage "dead purge without --yes" 'add --yes' mq dead purge </dev/null
usage "dead requeue --all without --yes" 'add --yes' mq dead requeue --all </dev/null
usage "purge-group without --yes" 'add --yes' mq purge-group g </dev/null

# ---- URIs ----------------------------------------------------------------------------
usage "a malformed --uri" 'bad --uri' mq --uri 'not a uri' stats
usage "a bad --db (MQ_ERR_ARG from the library)" 'MQ_ERR_ARG' mq --db 'a/b' stats

DEAD='mongodb://127.0.0.1:1/?serverSelectionTimeoutMS=300'
expect_rc 3 "--uri of a server that does not answer" mq --uri "$DEAD" stats
expect_match "unreachable: stderr says so" 'server unreachable' "$(cat "$ERR")"
expect_eq "unreachable: nothing on stdout" "" "$(cat "$OUT")"
expect_rc 3 "MONGOMQ_URI of a server that does not answer" env MONGOMQ_URI="$DEAD" "$MQ_BIN" peek
expect_rc 3 "publish to a server that does not answer" mq --uri "$DEAD" publish g e
expect_rc 3 "work on a server that does not answer" mq --uri "$DEAD" work --exec true --idle 1
# Without serverSelectionTimeoutMS in the URI the command adds 5 s (libmongoc's own
# default is 30 s): a loose upper bound.
start=$SECONDS
expect_rc 3 "an unreachable server without a timeout in the URI" mq --uri mongodb://127.0.0.1:1 stats
if ((SECONDS - start < 25)); then ok "it gave up promptly ($((SECONDS - start)) s)"; else not_ok "it took $((SECONDS - start)) s"; fi

# The test server itself answers (so the codes above are about the URIs).
expect_rc 0 "stats on the test server" mq stats --json

finish
