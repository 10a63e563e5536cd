#!/usr/bin/env bash
# Checks a bundled libmongomq: a shared library (.so) must export only mq_* and need
# no shared library but glibc's (the set a manylinux policy allows); a static archive
# (.a) must define no global symbol but mq_* and GNU unique ones (so it cannot clash with the libmongoc,
# OpenSSL or libstdc++ of the program that links it). Exit 1 naming what is wrong.
#   bash scripts/bundle-check.sh FILE...
set -euo pipefail
ALLOWED="libc.so.6 libm.so.6 libpthread.so.0 libdl.so.2 librt.so.1 libresolv.so.2 ld-linux-x86-64.so.2"
fail=0
for f in "$@"; do
    case "$f" in
    *.a)
        # GNU unique symbols ("u": libstdc++'s function-local statics and string
        # constants) cannot be made local; a link merges them, meaning for meaning.
        syms="$(nm --defined-only -g "$f" 2>/dev/null | awk 'NF==3 && $2 != "u" {print $3}' | sort -u)"
        ;;
    *)
        syms="$(nm -D --defined-only "$f" | awk 'NF==3 && $3 != "MONGOMQ_0" {print $3}' | sort -u)"
        for lib in $(readelf -d "$f" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
            if [[ " $ALLOWED " != *" $lib "* ]]; then
                echo "bundle-check: $f needs $lib, which is not in the allowed set ($ALLOWED)" >&2
                fail=1
            fi
        done
        ;;
    esac
    bad="$(grep -v '^mq_' <<<"$syms" || true)"
    if [[ -n "$bad" ]]; then
        echo "bundle-check: $f defines symbols outside mq_*: $(echo "$bad" | head -10 | tr '\n' ' ')" >&2
        fail=1
    fi
    n="$(grep -c '^mq_' <<<"$syms" || true)"
    echo "bundle-check: $f: $(du -kL "$f" | cut -f1) KiB, $n mq_* symbols"
done
if [[ $fail == 0 ]]; then echo "bundle-check: ok: only mq_* defined, only glibc needed"; fi
exit $fail
