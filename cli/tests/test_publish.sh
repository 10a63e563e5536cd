#!/usr/bin/env bash
# mongomq publish: the argument, lines of stdin and --file (batches), --raw bytes,
# --json, --priority, --at (epoch and ISO 8601 with zones), --delay; the seqs printed;
# dedup keys (--dedup-key, --dedup-key-field, --dedup-window, --dedup-scope);
# attributes (--attr, and work --exec's MQ_ATTR_*); the progress line on a terminal.
source "$(dirname "$0")/lib.sh"

expect_rc 0 "publish an event from the argument" mq publish one '{"n": 1}'
expect_eq "it prints its seq" "1" "$(cat "$OUT")"
expect_eq "nothing on stderr" "" "$(cat "$ERR")"

# Lines of stdin: empty lines skipped, \r\n and \n not part of the event.
expect_rc 0 "publish lines of stdin" mq publish lines < <(printf '{"n": 2}\r\n\n{"n": 3}\n{"n": 4}')
expect_eq "one seq per event" "2 3 4" "$(tr '\n' ' ' <"$OUT" | sed 's/ $//')"
run mq peek lines --json
expect_eq "the events are the lines without their ends" '["{\"n\": 2}", "{\"n\": 3}", "{\"n\": 4}"]' \
    "$(jl '[e["event"] for e in d]' <"$OUT")"
expect_eq "they are in group 'lines'" '["lines", "lines", "lines"]' "$(jl '[e["group"] for e in d]' <"$OUT")"

# --file with batches: 250 lines, 100 per batch -> 250 consecutive seqs.
for i in $(seq 1 250); do echo "{\"i\": $i}"; done >"$TMP/many.jsonl"
expect_rc 0 "publish --file with --batch 100" mq publish many --file "$TMP/many.jsonl" --batch 100
expect_eq "250 seqs" "250" "$(wc -l <"$OUT" | tr -d ' ')"
expect_eq "consecutive, in line order" "$(seq 5 254 | tr '\n' ' ')" "$(tr '\n' ' ' <"$OUT")"
run mq peek many --json --limit 3
expect_eq "the first events of the file come first" '["{\"i\": 1}", "{\"i\": 2}", "{\"i\": 3}"]' \
    "$(jl '[e["event"] for e in d]' <"$OUT")"
expect_rc 0 "publish --file - reads stdin" mq publish dash --file - <<<'{"dash": true}'
expect_eq "seq 255" "255" "$(cat "$OUT")"

# --raw: the whole input is one event, bytes kept (NUL, no trailing newline).
printf 'bin\000\001\377ary\n\n' >"$TMP/blob"
expect_rc 0 "publish --raw --file" mq publish blob --raw --file "$TMP/blob"
expect_eq "one seq" "256" "$(cat "$OUT")"
run mq peek blob --json
expect_eq "the bytes come back exactly (base64)" "$(base64 -w0 <"$TMP/blob")" "$(jl 'd[0]["event"]["base64"]' <"$OUT")"
expect_rc 0 "publish --raw of text from stdin" mq publish rawtext --raw < <(printf 'line 1\nline 2\n')
run mq peek rawtext --json
expect_eq "the text is one event, newlines and all" '"line 1\nline 2\n"' "$(jl 'json.dumps(d[0]["event"])' <"$OUT")"

# --json refuses what is not JSON, naming the line; nothing of that batch is published.
run mq stats --json
before=$(json 'd["messages"]' <"$OUT")
expect_rc 2 "publish --json with a bad line" mq publish strict --json --batch 10 \
    < <(printf '{"ok": 1}\n{"ok": 2}\nnot json\n{"ok": 4}\n')
expect_match "stderr names the line" 'line 3 is not JSON' "$(cat "$ERR")"
run mq stats --json
expect_eq "nothing of the bad batch was published" "$before" "$(json 'd["messages"]' <"$OUT")"
expect_rc 0 "publish --json with good lines" mq publish strict --json < <(printf '{"ok": 1}\n[2]\n"three"\n')
expect_eq "three seqs" "3" "$(wc -l <"$OUT" | tr -d ' ')"

# --priority: the group's priority.
expect_rc 0 "publish --priority 3" mq publish urgent '{"p": 3}' --priority 3
run mq peek urgent --json
expect_eq "the event has priority 3" "3" "$(jl 'd[0]["priority"]' <"$OUT")"
run mq stats --json
expect_eq "stats count one group at priority 3" "1" "$(json 'd["priorities"]["3"]["groups"]' <"$OUT")"

# --at: epoch seconds and ISO 8601 (Z, offsets, fractions) name the same instants.
# 2030-01-01T00:00:00Z is 1893456000.
at() { # at GROUP TIME -> not_before of the group's event
    run mq publish "$1" "at $2" --at "$2"
    if [[ $RC != 0 ]]; then
        not_ok "publish --at $2: exit $RC" "$(cat "$ERR")"
        return
    fi
    mq peek "$1" --json | jl 'd[-1]["not_before"]'
}
expect_eq "--at epoch seconds" "1893456000.0" "$(at at-epoch 1893456000)"
expect_eq "--at epoch with a fraction" "1893456000.5" "$(at at-frac 1893456000.5)"
expect_eq "--at ISO 8601 Z" "1893456000.0" "$(at at-z 2030-01-01T00:00:00Z)"
expect_eq "--at ISO 8601 +01:00" "1893456000.0" "$(at at-plus 2030-01-01T01:00:00+01:00)"
expect_eq "--at ISO 8601 -0530" "1893456000.0" "$(at at-minus 2029-12-31T18:30-0530)"
expect_eq "--at ISO 8601 with milliseconds" "1893456000.25" "$(at at-ms 2030-01-01T00:00:00.250Z)"
expect_eq "--at a leap day" "1709164800.0" "$(at at-leap 2024-02-29T00:00:00Z)"
run mq stats --json
# 2024 is past: that group is ready; the other six wait.
expect_eq "scheduled groups are parked" "6" "$(json 'd["groups"]["parked"]' <"$OUT")"
now=$(date +%s)
expect_rc 0 "publish --delay 3600" mq publish later '{"later": true}' --delay 3600
nb=$(mq peek later --json | jl 'int(d[0]["not_before"])')
if ((nb > now + 3000 && nb < now + 4200)); then ok "--delay 3600 is an hour from now"; else not_ok "--delay 3600 gave $nb (now $now)"; fi
expect_rc 0 "publish lines with --at (one by one)" mq publish at-lines --at 1893456000 < <(printf 'a\nb\n')
expect_eq "two seqs" "2" "$(wc -l <"$OUT" | tr -d ' ')"

# What the library refuses comes back as a usage error naming the argument.
long=$(printf 'g%.0s' $(seq 1 1001))
expect_rc 2 "a group over 1000 bytes" mq publish "$long" e
expect_match "the library's message names the group" 'group' "$(cat "$ERR")"

# ---- dedup keys ---------------------------------------------------------------------
expect_rc 0 "publish with --dedup-key" mq publish dk-a '{"k": 1}' --dedup-key order-1
first=$(cat "$OUT")
expect_match "a plain seq" '^[0-9]+$' "$first"
expect_rc 0 "the same key again, to another group" mq publish dk-b '{"k": 2}' --dedup-key order-1
expect_eq "the first seq, a tab and duplicate" "$first"$'\t'"duplicate" "$(cat "$OUT")"
run mq peek dk-b --json
expect_eq "nothing was added to dk-b" "0" "$(jl 'len(d)' <"$OUT")"
expect_rc 0 "--raw with a key" mq publish dk-raw --raw --dedup-key raw-1 < <(printf 'bytes')
expect_rc 0 "--raw with the key again" mq publish dk-raw --raw --dedup-key raw-1 < <(printf 'other')
expect_match "a duplicate" $'\tduplicate$' "$(cat "$OUT")"
# Lines keyed by a JSON field: a key repeated in the input and one from before.
expect_rc 0 "lines with --dedup-key-field" mq publish dk-lines --dedup-key-field id --batch 2 \
    < <(printf '{"id": "x"}\n{"id": 7}\n{"id": "x"}\n{"id": "order-1"}\n{"id": 8}\n')
expect_eq "five lines, three added" "3" "$(grep -cv duplicate "$OUT")"
expect_eq "line 3 is a duplicate of line 1" "$(sed -n 1p "$OUT")"$'\t'"duplicate" "$(sed -n 3p "$OUT")"
expect_eq "line 4 a duplicate of the first publish" "$first"$'\t'"duplicate" "$(sed -n 4p "$OUT")"
run mq peek dk-lines --json
expect_eq "the events added, in order" '["{\"id\": \"x\"}", "{\"id\": 7}", "{\"id\": 8}"]' \
    "$(jl '[e["event"] for e in d]' <"$OUT")"
expect_rc 2 "a line without the field" mq publish dk-lines --dedup-key-field id < <(printf '{"id": 9}\n{"no": 1}\n')
expect_match "stderr names the line and the field" 'line 2 has no usable "id"' "$(cat "$ERR")"
# Scope group: the same key in two groups is two events.
expect_rc 0 "group scope, group 1" mq publish dk-g1 e --dedup-key same --dedup-scope group
expect_rc 0 "group scope, group 2" mq publish dk-g2 e --dedup-key same --dedup-scope group
expect_match "not a duplicate" '^[0-9]+$' "$(cat "$OUT")"
expect_rc 0 "group scope, group 1 again" mq publish dk-g1 e --dedup-key same --dedup-scope group
expect_match "a duplicate" $'\tduplicate$' "$(cat "$OUT")"
# A window of 1 s: once the event is acked and the window over, the key is free.
expect_rc 0 "a 1 s window" mq publish dk-w e --dedup-key short --dedup-window 1
expect_rc 0 "drain it" mq work --exec true --idle 0.5
sleep 1.2
expect_rc 0 "the key again after the window" mq publish dk-w e --dedup-key short --dedup-window 1
expect_match "added" '^[0-9]+$' "$(cat "$OUT")"
# Bad keys and options: usage errors, nothing sent.
expect_rc 2 "an empty key" mq publish dk e --dedup-key ''
expect_rc 2 "a key over 512 bytes" mq publish dk e --dedup-key "$(printf 'k%.0s' $(seq 1 513))"
expect_rc 2 "--dedup-key for lines" mq publish dk --dedup-key k < <(echo '{}')
expect_rc 2 "--dedup-key-field with EVENT" mq publish dk e --dedup-key-field id
expect_rc 2 "a window of 0.5 s" mq publish dk e --dedup-key k --dedup-window 0.5
expect_rc 2 "an unknown scope" mq publish dk e --dedup-key k --dedup-scope shard
expect_match "naming the choices" 'queue or group' "$(cat "$ERR")"

# ---- attributes -----------------------------------------------------------------------
expect_rc 0 "publish with --attr" mq publish attr-g '{"a": 1}' --attr content-type=application/json \
    --attr tenant.id=t-1 --attr empty= --attr x-y=1 --attr x.y=2
run mq peek attr-g --json
expect_eq "peek shows the attributes in order" \
    '{"content-type": "application/json", "tenant.id": "t-1", "empty": "", "x-y": "1", "x.y": "2"}' \
    "$(jl 'json.dumps(d[0]["attrs"])' <"$OUT")"
expect_rc 0 "work --exec sees them as MQ_ATTR_*" mq work --exec 'env | grep "^MQ_ATTR_" | sort >'"$TMP/attrs.env" --idle 0.5
expect_eq "one variable per name, upper case, '-' and '.' as '_', the last of x-y and x.y" \
    "MQ_ATTR_CONTENT_TYPE=application/json MQ_ATTR_EMPTY= MQ_ATTR_TENANT_ID=t-1 MQ_ATTR_X_Y=2" \
    "$(tr '\n' ' ' <"$TMP/attrs.env" | sed 's/ $//')"
expect_rc 0 "lines with --attr, in batches" mq publish attr-lines --attr k=v --batch 2 < <(printf '1\n2\n3\n')
run mq peek attr-lines --json
expect_eq "every line has it" '[{"k": "v"}, {"k": "v"}, {"k": "v"}]' "$(jl 'json.dumps([e["attrs"] for e in d])' <"$OUT")"
expect_rc 2 "--attr without =" mq publish attr-g e --attr novalue
expect_match "naming the option" "expected KEY=VALUE" "$(cat "$ERR")"
expect_rc 2 "a key the library refuses" mq publish attr-g e --attr 'sp ace=1'
expect_match "the library's message names it" 'attrs\[0\].key "sp ace"' "$(cat "$ERR")"
expect_rc 2 "17 attributes" mq publish attr-g e $(for i in $(seq 1 17); do printf -- '--attr k%d=v ' "$i"; done)
expect_match "at most 16" "at most 16" "$(cat "$ERR")"

# ---- a progress line on a terminal -----------------------------------------------------
# stdin a pipe that feeds 20 lines over 2 s, stderr a pseudo-terminal (util-linux
# `script`), stdout a file: after 1 s the progress line shows, and it is wiped at the end.
printf '%s\n' 'for i in $(seq 1 20); do echo "{\"slow\": $i}"; sleep 0.1; done | "$1" publish slow >"$2"' \
    >"$TMP/slow.sh"
script -qec "bash $TMP/slow.sh $MQ_BIN $TMP/slow.seqs" /dev/null >"$OUT" 2>"$ERR"
expect_eq "20 events published, their seqs in the file (not on the terminal)" "20" \
    "$(wc -l <"$TMP/slow.seqs" | tr -d ' ')"
expect_match "a progress line on the terminal" 'mongomq publish: [0-9]+ events published' "$(tr '\r' '\n' <"$OUT")"
expect_match "wiped at the end" $'\r\033\\[K' "$(cat "$OUT")"
run mq publish quiet < <(for i in 1 2 3; do echo "{\"q\": $i}"; sleep 0.5; done)
expect_eq "no terminal, no progress line" "" "$(cat "$ERR")"

finish
