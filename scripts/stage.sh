#!/usr/bin/env bash
# Builds libmongomq and the mongomq command (build/, RelWithDebInfo) and installs them into a staging prefix
# (build/stage) that the language bindings build and test against, as a user's
# machine with libmongomq installed would. Prints the prefix. Safe to run from
# several scripts at once (one builds, the others wait).
#
# Use:  PREFIX="$(bash scripts/stage.sh)"
#       export PKG_CONFIG_PATH="$PREFIX/lib/pkgconfig" LD_LIBRARY_PATH="$PREFIX/lib"
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BUILD="$ROOT/build"
PREFIX="${MONGOMQ_STAGE:-$BUILD/stage}"
mkdir -p "$BUILD"
exec 9>"$BUILD/.stage.lock"
flock 9
{
    cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo
    cmake --build "$BUILD" -j "${MONGOMQ_JOBS:-$(nproc)}"  # everything install() names
    cmake --install "$BUILD" --prefix "$PREFIX" --component Unspecified
} >"$BUILD/stage.log" 2>&1 || { cat "$BUILD/stage.log" >&2; exit 1; }
echo "$PREFIX"
