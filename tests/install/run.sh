#!/usr/bin/env bash
# run.sh <source-dir> <build-dir>
#
# Installs the already-built project into a temporary prefix, then builds
# tests/install/consumer.c against the installed copy in the two ways a user would:
#   (a) pkg-config (mongomq.pc), with a plain `cc`;
#   (b) CMake, find_package(mongomq 0.1 CONFIG REQUIRED) + mongomq::mongomq
#       (tests/install/cmake-consumer).
# Both programs must run (no server needed), load libmongomq from the prefix, and not
# link libmongoc themselves (it is a private dependency). Also checks the .pc file:
# relocatable, no Requires, libmongoc in Libs.private.
set -euo pipefail

if [[ $# -ne 2 ]]; then
    echo "usage: $0 <source-dir> <build-dir>" >&2
    exit 2
fi
src=$(cd "$1" && pwd)
build=$(cd "$2" && pwd)
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cache=$build/CMakeCache.txt
[[ -f $cache ]] || { echo "install_consumers: $build is not a configured build dir" >&2; exit 1; }

fail() {
    echo "install_consumers: FAIL: $*" >&2
    exit 1
}
cache_get() { # cache_get VAR: the value of VAR in the build's CMakeCache.txt, or ""
    sed -n "s/^$1:[A-Z]*=//p" "$cache" | head -n 1
}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/mongomq-install.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix

# The consumers use the project's compiler, generator and sanitizers: a library built
# with -fsanitize=address needs its runtime in the program that loads it.
cc=$(cache_get CMAKE_C_COMPILER)
cc=${cc:-cc}
generator=$(cache_get CMAKE_GENERATOR)
sanitize=$(cache_get MONGOMQ_SANITIZE)
san_flags=()
if [[ -n $sanitize ]]; then
    san_flags=("-fsanitize=$sanitize" -fno-omit-frame-pointer)
fi
strict=(-std=c99 -Wall -Wextra -Werror -pedantic)

# --- install ------------------------------------------------------------------------
echo "install_consumers: cmake --install $build --prefix $prefix"
cmake --install "$build" --prefix "$prefix" >"$tmp/install.log" 2>&1 ||
    { cat "$tmp/install.log" >&2; fail "cmake --install failed"; }

pc=$(find "$prefix" -name mongomq.pc -path '*/pkgconfig/*' | head -n 1)
[[ -n $pc ]] || fail "no pkgconfig/mongomq.pc under the prefix"
pcdir=$(dirname "$pc")
libdir=$(dirname "$pcdir")
for f in libmongomq.so libmongomq.so.0; do
    [[ -e $libdir/$f ]] || fail "$libdir/$f not installed"
done
[[ -f $prefix/include/mongomq.h ]] || fail "include/mongomq.h not installed"
cmp -s "$prefix/include/mongomq.h" "$src/include/mongomq.h" ||
    fail "installed mongomq.h differs from $src/include/mongomq.h"
config=$(find "$prefix" -name mongomqConfig.cmake | head -n 1)
[[ -n $config ]] || fail "no mongomqConfig.cmake under the prefix"
echo "install_consumers: installed ${libdir#"$prefix"/}/libmongomq.so, include/mongomq.h, ${pc#"$prefix"/}, ${config#"$prefix"/}"

# check_program NAME EXE: runs EXE without LD_LIBRARY_PATH (its RUNPATH must find the
# installed library) and checks what it loads and links.
check_program() {
    local name=$1 exe=$2 loaded
    [[ -x $exe ]] || fail "$name: $exe was not built"
    if readelf -d "$exe" | grep -q 'NEEDED.*libmongoc'; then
        fail "$name: the program links libmongoc itself (it should be private to libmongomq)"
    fi
    loaded=$(env -u LD_LIBRARY_PATH ldd "$exe" | awk '$1 ~ /^libmongomq\.so/ { print $3 }')
    [[ -n $loaded ]] || fail "$name: ldd does not resolve libmongomq"
    [[ $(realpath "$loaded") == "$(realpath "$libdir")"/* ]] ||
        fail "$name: loads $loaded, not the installed copy in $libdir"
    env -u LD_LIBRARY_PATH "$exe" || fail "$name: $exe exited with $?"
    echo "install_consumers: $name: runs, loads $loaded"
}

# --- (a) pkg-config -----------------------------------------------------------------
part_pkgconfig() {
local pc_libdir pc_includedir requires static_libs shared_libs pc_flags
export PKG_CONFIG_PATH=$pcdir${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}
pc_libdir=$(pkg-config --variable=libdir mongomq)
pc_includedir=$(pkg-config --variable=includedir mongomq)
[[ $(realpath -m "$pc_libdir") == "$(realpath "$libdir")" ]] ||
    fail "mongomq.pc says libdir=$pc_libdir, but it is installed in $libdir (the .pc file is not relocatable: it keeps the configure-time prefix instead of the install prefix)"
[[ $(realpath -m "$pc_includedir") == "$(realpath "$prefix/include")" ]] ||
    fail "mongomq.pc says includedir=$pc_includedir, but the header is installed in $prefix/include"
requires=$(pkg-config --print-requires mongomq)
[[ -z $requires ]] || fail "mongomq.pc has Requires ($requires); libmongoc belongs in Libs.private"
static_libs=$(pkg-config --static --libs mongomq)
[[ " $static_libs " == *" -lmongoc-1.0 "* ]] ||
    fail "pkg-config --static --libs mongomq ($static_libs) does not mention -lmongoc-1.0"
shared_libs=$(pkg-config --libs mongomq)
[[ " $shared_libs " != *" -lmongoc-1.0 "* ]] ||
    fail "pkg-config --libs mongomq ($shared_libs) mentions -lmongoc-1.0; it belongs in Libs.private"
echo "install_consumers: pkg-config: libdir, includedir point into the prefix; no Requires; --static --libs: $static_libs"

read -r -a pc_flags <<<"$(pkg-config --cflags --libs mongomq)"
"$cc" "${strict[@]}" "${san_flags[@]}" "$here/consumer.c" -o "$tmp/consumer-pkgconfig" \
    "${pc_flags[@]}" "-Wl,-rpath,$pc_libdir" ||
    fail "(a) pkg-config: compiling consumer.c failed"
check_program "(a) pkg-config" "$tmp/consumer-pkgconfig"
}

# --- (b) CMake find_package -----------------------------------------------------------
part_cmake() {
local cmake_args found
cmake_args=(-S "$here/cmake-consumer" -B "$tmp/cmake-build"
            "-DCMAKE_PREFIX_PATH=$prefix" "-DCMAKE_C_COMPILER=$cc"
            -DCMAKE_BUILD_TYPE=RelWithDebInfo
            -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF)
[[ -n $generator ]] && cmake_args+=(-G "$generator")
if [[ -n $sanitize ]]; then
    cmake_args+=("-DCMAKE_C_FLAGS=${san_flags[*]}" "-DCMAKE_EXE_LINKER_FLAGS=${san_flags[*]}")
fi
cmake "${cmake_args[@]}" >"$tmp/cmake-configure.log" 2>&1 ||
    { cat "$tmp/cmake-configure.log" >&2; fail "(b) cmake: configuring cmake-consumer failed"; }
found=$(sed -n 's/^mongomq_DIR:[A-Z]*=//p' "$tmp/cmake-build/CMakeCache.txt")
[[ $found == "$prefix"/* ]] || fail "(b) cmake: found mongomq in '$found', not in $prefix"
cmake --build "$tmp/cmake-build" >"$tmp/cmake-build.log" 2>&1 ||
    { cat "$tmp/cmake-build.log" >&2; fail "(b) cmake: building cmake-consumer failed"; }
echo "install_consumers: cmake: find_package(mongomq 0.1) found ${found#"$prefix"/}"
check_program "(b) cmake" "$tmp/cmake-build/consumer"
}

# Each part runs in a subshell with errexit, so that a failure of (a) still lets (b)
# run. (Not as `( ... ) || ...`: bash ignores set -e in a subshell tested that way.)
failures=0
for part in part_pkgconfig part_cmake; do
    set +e
    ( set -e; "$part" )
    rc=$?
    set -e
    ((rc == 0)) || failures=$((failures + 1))
done
if ((failures)); then
    echo "install_consumers: FAILED: $failures of the 2 ways to consume the installed library" >&2
    exit 1
fi
echo "install_consumers: OK: pkg-config and CMake consumers of the installed library build and run${sanitize:+ (sanitize=$sanitize)}"
