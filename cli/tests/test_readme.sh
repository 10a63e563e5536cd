#!/usr/bin/env bash
# The "From the shell" example, exactly as written: the first ```sh block of the
# section "## From the shell" in cli/README.md (and in the top-level README.md once
# the section is there) runs with `mongomq` on the PATH, MONGOMQ_URI and MONGOMQ_DB
# set, and must succeed; when a ```text block follows it in the section, stdout must be
# that text, with the stats line's database and time left out of the comparison.
source "$(dirname "$0")/lib.sh"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)

# extract FILE: writes $TMP/example.sh and, if the section shows it, $TMP/expected.
extract() {
    rm -f "$TMP/example.sh" "$TMP/expected"
    python3 - "$1" "$TMP" <<'PY'
import sys
lines = open(sys.argv[1], encoding="utf-8").read().split("\n")
out = sys.argv[2]
try:
    start = lines.index("## From the shell")
except ValueError:
    sys.exit(3)
section = []
for line in lines[start + 1:]:
    if line.startswith("## "):
        break
    section.append(line)
blocks, cur, lang = [], None, None
for line in section:
    if cur is None and line.startswith("```"):
        cur, lang = [], line[3:].strip()
    elif cur is not None and line.startswith("```"):
        blocks.append((lang, "\n".join(cur) + "\n"))
        cur = None
    elif cur is not None:
        cur.append(line)
for i, (lang, text) in enumerate(blocks):
    if lang == "sh":
        open(out + "/example.sh", "w").write(text)
        if i + 1 < len(blocks) and blocks[i + 1][0] == "text":
            open(out + "/expected", "w").write(blocks[i + 1][1])
        sys.exit(0)
sys.exit(4)
PY
}

normalize() { sed -E 's/^queue( +)[^ ]+ at [^ ]+$/queue\1<queue> at <time>/' "$1"; }

# check FILE: runs FILE's example on a fresh database.
check() {
    local file=$1 label=$2
    extract "$file"
    case $? in
    0) ;;
    3)
        echo "# $label has no \"## From the shell\" section"
        return 3
        ;;
    *)
        not_ok "$label: no \`\`\`sh block in \"## From the shell\""
        return 1
        ;;
    esac
    export MONGOMQ_DB="mqt_cli_readme_$$_$RANDOM"
    (cd "$TMP" && PATH="$MQ_BIN_DIR:$PATH" bash -e -o pipefail example.sh) >"$TMP/actual" 2>"$TMP/stderr"
    local rc=$?
    expect_eq "$label: the example runs as written" "0" "$rc"
    if [[ $rc != 0 ]]; then sed 's/^/    stderr: /' "$TMP/stderr"; fi
    if [[ -e $TMP/expected ]]; then
        if diff <(normalize "$TMP/expected") <(normalize "$TMP/actual") >"$TMP/diff"; then
            ok "$label: it prints what the README shows"
        else
            not_ok "$label: its output differs from the README's" "$(cat "$TMP/diff")"
        fi
    fi
    mq drop --yes >/dev/null 2>&1
}

check "$ROOT/cli/README.md" "cli/README.md"
expect_eq "cli/README.md has the section" "0" "$?"
check "$ROOT/README.md" "README.md"

finish
