#!/usr/bin/env bash
# Run the harel interoperability test (tests/interop/harel_interop.py) against a built
# libmongomq, in the venv scripts/interop-venv.sh makes (once; PyPI is needed then).
#
#   scripts/interop-run.sh PATH/TO/libmongomq.so     (server URI in MONGOMQ_TEST_URI)
#
# A library built with -fsanitize=address is loaded into python with the ASan runtime
# (and libstdc++) preloaded, as ASan must come first, and with leak detection off: the
# leaks LSan would report at exit are the interpreter's. A TSan build is refused.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
LIB="${1:?usage: interop-run.sh PATH/TO/libmongomq.so}"
[[ -f "$LIB" ]] || { echo "interop-run: no library at $LIB" >&2; exit 1; }

PY="$(bash "$ROOT/scripts/interop-venv.sh")"

needed="$(readelf -d "$LIB" 2>/dev/null | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')"
if grep -q '^libtsan' <<<"$needed"; then
    echo "interop-run: $LIB is built with TSan, which cannot be loaded into python" >&2
    exit 1
fi
asan="$(grep '^libasan' <<<"$needed" || true)"
if [[ -n "$asan" ]]; then
    # libstdc++ too: ASan resolves its __cxa_throw interceptor when it starts, and
    # python does not link libstdc++ (without it the library's first throw aborts).
    preload=""
    for dep in "$asan" libstdc++.so.6; do
        path="$(ldd "$LIB" | awk -v lib="$dep" '$1 == lib { print $3 }')"
        [[ -f "$path" ]] || { echo "interop-run: cannot find $dep for $LIB" >&2; exit 1; }
        preload="$preload${preload:+:}$path"
    done
    export LD_PRELOAD="$preload${LD_PRELOAD:+:$LD_PRELOAD}"
    export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
fi

exec "$PY" "$ROOT/tests/interop/harel_interop.py" "$LIB"
