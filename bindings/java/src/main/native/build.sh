#!/usr/bin/env bash
# Called by Maven (exec-maven-plugin, generate-sources):
#   build.sh JAVA_HOME TARGET_DIR
# 1. scripts/swig-generate.sh java (the one place SWIG code is generated, with the
#    project's pinned SWIG) makes the raw Java classes (TARGET/generated-sources/swig,
#    package org.mongomq.internal) and the JNI C wrapper from bindings/swig/mongomq.i +
#    lang/java.i.
# 2. cc compiles the wrapper into libmongomq_java.so, linked against libmongomq.so.0
#    with RPATH $ORIGIN, so that the copy of libmongomq.so.0 the jar carries beside it
#    is found wherever both are extracted.
# 3. Both go to TARGET/generated-resources/native/org/mongomq/native/linux-ARCH/,
#    which Maven packs into the jar.
# libmongomq comes from $MONGOMQ_PREFIX when set (an installed prefix with include/
# and lib/), else from the repository (scripts/stage.sh builds it into build/stage).
set -euo pipefail

JAVA_HOME_DIR="$1"
TARGET="$2"
HERE="$(cd "$(dirname "$0")" && pwd)"
JAVA_ROOT="$(cd "$HERE/../../.." && pwd)"
ROOT="$(cd "$JAVA_ROOT/../.." && pwd)"

if [[ -n "${MONGOMQ_PREFIX:-}" ]]; then
    PREFIX="$MONGOMQ_PREFIX"
else
    PREFIX="$(bash "$ROOT/scripts/stage.sh")"
fi
LIBDIR="$PREFIX/lib"
[[ -e "$LIBDIR/libmongomq.so.0" ]] || LIBDIR="$(dirname "$(find "$PREFIX" -name libmongomq.so.0 -print -quit)")"
[[ -e "$LIBDIR/libmongomq.so.0" ]] || { echo "build.sh: no libmongomq.so.0 under $PREFIX" >&2; exit 1; }

case "$(uname -m)" in
    x86_64 | amd64) ARCH=x86_64 ;;
    aarch64 | arm64) ARCH=aarch64 ;;
    *) ARCH="$(uname -m)" ;;
esac

GEN="$TARGET/generated-sources/swig/org/mongomq/internal"
RES="$TARGET/generated-resources/native/org/mongomq/native/linux-$ARCH"
OBJ="$TARGET/native"
rm -rf "$GEN" "$RES"
mkdir -p "$GEN" "$RES" "$OBJ"

bash "$ROOT/scripts/swig-generate.sh" java "$GEN" "$OBJ/mongomq_java_wrap.c"

# -fno-strict-aliasing: SWIG's Java wrappers pun pointers through jlong.
"${CC:-cc}" -shared -fPIC -O2 -g0 -fno-strict-aliasing -Wall \
    -I"$JAVA_HOME_DIR/include" -I"$JAVA_HOME_DIR/include/linux" -I"$PREFIX/include" \
    -o "$RES/libmongomq_java.so" "$OBJ/mongomq_java_wrap.c" \
    -L"$LIBDIR" -l:libmongomq.so.0 \
    -Wl,--no-undefined -Wl,--disable-new-dtags -Wl,-rpath,'$ORIGIN'
# The library itself, without its debug info (the jar carries it for machines where
# libmongomq is not installed; libmongoc, libbson and jansson are Debian's).
objcopy --strip-debug "$LIBDIR/libmongomq.so.0" "$RES/libmongomq.so.0"
