#!/usr/bin/env bash
# abi-check.sh [--update] <build-dir>
#
# Compares the ABI of <build-dir>/lib/libmongomq.so with the committed baseline
# abi/libmongomq.so.0.abi (libabigail: abidw, abidiff; Debian package abigail-tools)
# and fails on any change, harmless ones (an added function, an added enumerator)
# included: a change that is intended is committed together with the new baseline,
# written by --update. Only the interfaces the library exports and the types
# reachable from them count; the types include/ does not define (the opaque handles'
# insides) are private and may change freely.
#
# The library needs DWARF debug info: build it as RelWithDebInfo (the default) or Debug.
# The baseline stores file names without directories, so it holds no path of the
# machine that wrote it.
set -euo pipefail

usage() {
    echo "usage: $0 [--update] <build-dir>" >&2
    exit 2
}
update=0
if [[ ${1:-} == --update ]]; then
    update=1
    shift
fi
[[ $# -eq 1 ]] || usage
build=$1

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
headers=$root/include
baseline=$root/abi/libmongomq.so.0.abi

for tool in abidw abidiff readelf; do
    command -v "$tool" >/dev/null ||
        { echo "abi-check: $tool not found (apt-get install abigail-tools binutils)" >&2; exit 1; }
done

lib=$build/lib/libmongomq.so
if [[ ! -e $lib ]]; then
    lib=$(find "$build" -maxdepth 3 -name libmongomq.so 2>/dev/null | head -n 1)
fi
[[ -n $lib && -e $lib ]] ||
    { echo "abi-check: no libmongomq.so in $build (cmake --build $build --target mongomq)" >&2; exit 1; }
if ! readelf -S --wide "$lib" | grep -q '\.debug_info'; then
    echo "abi-check: $lib has no debug info; configure with -DCMAKE_BUILD_TYPE=RelWithDebInfo or Debug" >&2
    exit 1
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/mongomq-abi.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# The options that keep the XML small, about the exported interface only, and free
# of this machine's paths (--short-locs keeps the file names, which abidiff needs to
# tell the public types of include/ from the private ones).
abidw_opts=(--headers-dir "$headers" --drop-private-types --exported-interfaces-only
            --no-corpus-path --no-comp-dir-path --short-locs)
abidw "${abidw_opts[@]}" --out-file "$tmp/current.abi" "$lib"
# No directory of this machine may end up in the XML.
if grep -nE "(path|filepath|comp-dir-path)='/" "$tmp/current.abi" >&2 ||
   grep -nF "$root" "$tmp/current.abi" >&2; then
    echo "abi-check: abidw wrote absolute paths (above) despite ${abidw_opts[*]}" >&2
    exit 1
fi

if ((update)); then
    mkdir -p "$(dirname "$baseline")"
    cp "$tmp/current.abi" "$baseline"
    echo "abi-check: wrote ${baseline#"$root"/} from $lib ($(grep -c '<function-decl' "$baseline") functions)"
    exit 0
fi

[[ -f $baseline ]] ||
    { echo "abi-check: no baseline ${baseline#"$root"/}; write it with $0 --update $build" >&2; exit 1; }

# abidiff's status is a bit mask: 1 error, 2 usage error, 4 ABI change, 8 incompatible
# ABI change. --harmless makes the changes libabigail deems compatible count too.
# The header dirs make abidiff ignore changes to types include/ does not define. (No
# --drop-private-types here: libabigail 2.2's abidiff aborts with it on an ABI XML.)
set +e
abidiff --headers-dir1 "$headers" --headers-dir2 "$headers" \
    --exported-interfaces-only --fail-no-debug-info \
    --no-corpus-path --harmless \
    "$baseline" "$lib" >"$tmp/report.txt" 2>&1
status=$?
set -e

if ((status == 0)); then
    echo "abi-check: OK: $lib matches ${baseline#"$root"/} ($(grep -c '<function-decl' "$baseline") functions)"
    exit 0
fi
cat "$tmp/report.txt" >&2
if ((status & 3)); then
    echo "abi-check: abidiff failed (status $status)" >&2
elif ((status & 8)); then
    echo "abi-check: FAIL: INCOMPATIBLE ABI change against ${baseline#"$root"/} (status $status)." >&2
    echo "abi-check: this breaks programs linked to libmongomq.so.0: it needs a new SONAME." >&2
else
    echo "abi-check: FAIL: ABI change against ${baseline#"$root"/} (status $status)." >&2
    echo "abi-check: libabigail calls only removals incompatible: judge the report above (a changed" >&2
    echo "abi-check: parameter type breaks callers too). If the change is intended and compatible," >&2
    echo "abi-check: commit the new baseline with it: $0 --update $build" >&2
fi
exit 1
