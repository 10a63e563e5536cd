#!/usr/bin/env bash
# Builds the libFuzzer harnesses (fuzz/) with clang into build-fuzz/ and runs each for
# SECONDS (default 30), starting from its committed seed corpus (fuzz/corpus/<name>,
# replayed first: the regression inputs of crashes found before). New inputs go to
# build-fuzz/corpus/<name> (not committed); a crash leaves build-fuzz/crash-* and
# fails the script.
#   scripts/fuzz.sh [SECONDS]
# Needs clang and libclang-rt-14-dev (Debian), cmake, ninja, libmongoc, jansson.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
SECONDS_EACH="${1:-30}"
BUILD="$ROOT/build-fuzz"
CC=clang CXX=clang++ cmake -S "$ROOT/fuzz" -B "$BUILD" -G Ninja >/dev/null
ninja -C "$BUILD" -j2 >/dev/null
FAIL=0
for h in fuzz_validate fuzz_event fuzz_read; do
    mkdir -p "$BUILD/corpus/$h"
    echo "fuzz: $h for ${SECONDS_EACH} s"
    if ! (cd "$BUILD" && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
            "./$h" -max_total_time="$SECONDS_EACH" -timeout=10 -rss_limit_mb=1024 -print_final_stats=1 \
            "corpus/$h" "$ROOT/fuzz/corpus/$h" >"$BUILD/$h.log" 2>&1); then
        echo "fuzz: $h FAILED (log: $BUILD/$h.log; the input: $BUILD/crash-*)" >&2
        grep -E "FUZZ FAILURE|ERROR|SUMMARY|runtime error" "$BUILD/$h.log" | head -5 >&2 || true
        FAIL=1
    else
        grep -E "^stat::number_of_executed_units|^Done" "$BUILD/$h.log" | head -2 | sed "s/^/fuzz: $h: /"
    fi
done
exit "$FAIL"
