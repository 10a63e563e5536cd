#!/usr/bin/env bash
# check_symbols.sh <path-to-libmongomq.so>
#
# The shared library exports the C API of include/mongomq.h and nothing else:
#   - every dynamic symbol it defines starts with mq_ (the version node MONGOMQ_0,
#     an absolute symbol, aside), and carries the version MONGOMQ_0;
#   - none of them is a POSIX message-queue name of <mqueue.h>;
#   - every function the header declares with MQ_API is exported, and every exported
#     symbol is declared by the header;
#   - the SONAME is libmongomq.so.0.
set -euo pipefail

if [[ $# -ne 1 ]]; then
    echo "usage: $0 <path-to-libmongomq.so>" >&2
    exit 2
fi
lib=$1
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
header=$here/../include/mongomq.h

[[ -f $lib ]] || { echo "check_symbols: no such file: $lib" >&2; exit 1; }
[[ -f $header ]] || { echo "check_symbols: no header at $header" >&2; exit 1; }

fail=0
problem() {
    echo "check_symbols: FAIL: $*" >&2
    fail=1
}

# "address type name[@[@]version]", or "type name" for undefined-address symbols.
nm_out=$(nm -D --defined-only "$lib")
# name<TAB>type<TAB>version for every defined dynamic symbol.
defined=$(awk '{ name = $NF; type = $(NF-1); ver = "";
                 if (match(name, /@+/)) { ver = substr(name, RSTART + RLENGTH); name = substr(name, 1, RSTART - 1) }
                 printf "%s\t%s\t%s\n", name, type, ver }' <<<"$nm_out")

# 1. Every defined symbol starts with mq_ (the version node aside) and is versioned.
exported=()
offenders=()
unversioned=()
while IFS=$'\t' read -r name type ver; do
    [[ -z $name ]] && continue
    if [[ $name == MONGOMQ_0 && $type == A ]]; then
        continue
    fi
    if [[ $name != mq_* ]]; then
        offenders+=("$name ($type)")
        continue
    fi
    exported+=("$name")
    [[ $ver == MONGOMQ_0 ]] || unversioned+=("$name${ver:+@$ver}")
done <<<"$defined"
if ((${#offenders[@]})); then
    problem "${#offenders[@]} defined dynamic symbol(s) without the mq_ prefix:"
    printf '  %s\n' "${offenders[@]:0:100}" >&2
    ((${#offenders[@]} <= 100)) || echo "  ... and $((${#offenders[@]} - 100)) more" >&2
fi
if ((${#unversioned[@]})); then
    problem "symbol(s) not versioned MONGOMQ_0:"
    printf '  %s\n' "${unversioned[@]:0:100}" >&2
fi
if ! grep -qP '^MONGOMQ_0\tA\t' <<<"$defined"; then
    problem "the version node MONGOMQ_0 is missing (was the version script used?)"
fi
# A name may be defined under several versions; count it once from here on.
mapfile -t exported < <(printf '%s\n' "${exported[@]}" | sed '/^$/d' | sort -u)
echo "check_symbols: $(grep -c . <<<"$defined") defined dynamic symbols (${#exported[@]} distinct mq_* names), all mq_* but MONGOMQ_0: $([[ ${#offenders[@]} -eq 0 ]] && echo yes || echo NO)"

# 2. None of POSIX <mqueue.h>'s names.
posix=(mq_open mq_close mq_send mq_receive mq_unlink mq_notify mq_getattr mq_setattr
       mq_timedsend mq_timedreceive)
clashes=()
for p in "${posix[@]}"; do
    for e in "${exported[@]}"; do
        [[ $e == "$p" ]] && clashes+=("$p")
    done
done
if ((${#clashes[@]})); then
    problem "defines POSIX message-queue name(s): ${clashes[*]}"
fi
echo "check_symbols: none of the ${#posix[@]} POSIX <mqueue.h> names defined: $([[ ${#clashes[@]} -eq 0 ]] && echo yes || echo NO)"

# 3. SONAME.
soname=$(readelf -d "$lib" | sed -n 's/.*(SONAME).*\[\(.*\)\].*/\1/p')
if [[ $soname != libmongomq.so.0 ]]; then
    problem "SONAME is '${soname}', expected libmongomq.so.0"
fi
echo "check_symbols: SONAME ${soname:-<none>}"

# 4. The header's MQ_API functions are exactly the exported symbols.
mapfile -t declared < <(grep -oE '^MQ_API[^(]*\(' "$header" | sed -E 's/.*[ *]([A-Za-z_][A-Za-z0-9_]*)[[:space:]]*\($/\1/' | sort -u)
if ((${#declared[@]} == 0)); then
    problem "found no MQ_API function in $header"
fi
missing=$(comm -23 <(printf '%s\n' "${declared[@]}") <(printf '%s\n' "${exported[@]}"))
extra=$(comm -13 <(printf '%s\n' "${declared[@]}") <(printf '%s\n' "${exported[@]}" | sed '/^$/d'))
if [[ -n $missing ]]; then
    problem "declared by mongomq.h but not exported:"
    sed 's/^/  /' <<<"$missing" >&2
fi
if [[ -n $extra ]]; then
    problem "exported but not declared by mongomq.h:"
    sed 's/^/  /' <<<"$extra" >&2
fi
echo "check_symbols: ${#declared[@]} MQ_API functions in mongomq.h, all exported: $([[ -z $missing ]] && echo yes || echo NO); no undeclared export: $([[ -z $extra ]] && echo yes || echo NO)"

if ((fail)); then
    echo "check_symbols: FAILED ($lib)" >&2
    exit 1
fi
echo "check_symbols: OK ($lib)"
