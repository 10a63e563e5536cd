#!/usr/bin/env bash
# The bundled libmongomq: one libmongomq.so.0 (and libmongomq.a) with libmongoc,
# libbson, jansson and OpenSSL linked in, so that it needs nothing on the machine but
# glibc. Prints the install prefix it made (default build-bundle/prefix).
#
#   bash scripts/bundle.sh
#
# libmongoc is built here from Debian 12's own source tarball of mongo-c-driver
# 1.23.1 (the version the system build uses; checked against its SHA-256, fetched once
# into the cache dir), because Debian's static archives cannot be linked into a shared
# library: libicuuc.a is not position-independent, libsasl2.a needs a static GSSAPI
# Debian does not ship, and libmongoc-static and libmongocrypt-static each carry a copy
# of kms_message. The options chosen, and why (docs/design.md, "Packages"):
#   - TLS: OpenSSL, from Debian's PIC libssl.a/libcrypto.a, linked in;
#   - no Cyrus SASL (GSSAPI/Kerberos): SCRAM-SHA-1/256, X.509 and MONGODB-AWS remain;
#   - no ICU: SASLprep of a non-ASCII SCRAM-SHA-256 password is refused by libmongoc
#     with its own error; ICU's data alone would be ~30 MB;
#   - no client-side field-level encryption (libmongocrypt), which a queue never uses;
#   - no wire compression (zlib, snappy, zstd): a URI's compressors= is ignored;
#   - SRV URIs through glibc's libresolv.
# Env: MONGOMQ_BUNDLE_DIR (build-bundle), MONGOMQ_CACHE (~/.cache/mongomq), MONGOMQ_JOBS.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
DIR="${MONGOMQ_BUNDLE_DIR:-$ROOT/build-bundle}"
CACHE="${MONGOMQ_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/mongomq}"
JOBS="${MONGOMQ_JOBS:-$(nproc)}"
MONGOC_VERSION=1.23.1
MONGOC_TARBALL="mongo-c-driver_${MONGOC_VERSION}.orig.tar.gz"
MONGOC_SHA256=5e3502bd379b1717c1b7ad65ab7f84f79f83077aedb424e4eeab2640bb911810
DEBIAN_POOL="http://deb.debian.org/debian/pool/main/m/mongo-c-driver"
MULTIARCH="$(gcc -print-multiarch)"
SYSLIB="/usr/lib/$MULTIARCH"

log() { echo "bundle: $*" >&2; }

mkdir -p "$CACHE" "$DIR"
if [[ ! -f "$CACHE/$MONGOC_TARBALL" ]] ||
    ! echo "$MONGOC_SHA256  $CACHE/$MONGOC_TARBALL" | sha256sum -c --quiet - 2>/dev/null; then
    log "fetching $MONGOC_TARBALL (Debian's source of mongo-c-driver)"
    curl -fsS --retry 3 -m 300 -o "$CACHE/$MONGOC_TARBALL.part" "$DEBIAN_POOL/$MONGOC_TARBALL"
    echo "$MONGOC_SHA256  $CACHE/$MONGOC_TARBALL.part" | sha256sum -c --quiet -
    mv "$CACHE/$MONGOC_TARBALL.part" "$CACHE/$MONGOC_TARBALL"
fi

MONGOC_PREFIX="$DIR/mongoc"
if [[ ! -f "$MONGOC_PREFIX/.done-$MONGOC_SHA256" ]]; then
    log "building libmongoc $MONGOC_VERSION (static, position-independent)"
    rm -rf "$DIR/mongoc-src" "$DIR/mongoc-build" "$MONGOC_PREFIX"
    mkdir -p "$DIR/mongoc-src"
    tar -xzf "$CACHE/$MONGOC_TARBALL" -C "$DIR/mongoc-src" --strip-components=1
    cmake -S "$DIR/mongoc-src" -B "$DIR/mongoc-build" -G Ninja \
        -DCMAKE_BUILD_TYPE=RelWithDebInfo \
        -DCMAKE_INSTALL_PREFIX="$MONGOC_PREFIX" -DCMAKE_INSTALL_LIBDIR=lib \
        -DCMAKE_POSITION_INDEPENDENT_CODE=ON -DENABLE_PIC=ON \
        -DENABLE_STATIC=ON -DENABLE_TESTS=OFF -DENABLE_EXAMPLES=OFF \
        -DENABLE_MAN_PAGES=OFF -DENABLE_HTML_DOCS=OFF -DENABLE_UNINSTALL=OFF \
        -DENABLE_AUTOMATIC_INIT_AND_CLEANUP=OFF \
        -DENABLE_SSL=OPENSSL -DENABLE_SASL=OFF -DENABLE_ICU=OFF \
        -DENABLE_CLIENT_SIDE_ENCRYPTION=OFF -DENABLE_MONGODB_AWS_AUTH=ON \
        -DENABLE_SNAPPY=OFF -DENABLE_ZSTD=OFF -DENABLE_ZLIB=OFF \
        -DENABLE_SRV=ON -DENABLE_SHM_COUNTERS=ON -DENABLE_BSON=ON -DBUILD_VERSION="$MONGOC_VERSION" >"$DIR/mongoc-configure.log"
    cmake --build "$DIR/mongoc-build" -j "$JOBS" >"$DIR/mongoc-build.log"
    cmake --install "$DIR/mongoc-build" >/dev/null
    cp "$DIR/mongoc-src/COPYING" "$MONGOC_PREFIX/COPYING"
    cp "$DIR/mongoc-src/THIRD_PARTY_NOTICES" "$MONGOC_PREFIX/THIRD_PARTY_NOTICES"
    touch "$MONGOC_PREFIX/.done-$MONGOC_SHA256"
fi

log "building libmongomq against it"
cmake -S "$ROOT" -B "$DIR/mongomq-build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_INSTALL_PREFIX="$DIR/prefix" \
    -DMONGOMQ_BUNDLE_MONGOC="$MONGOC_PREFIX" \
    -DMONGOMQ_BUILD_TESTS=OFF -DMONGOMQ_BUILD_EXAMPLES=OFF -DMONGOMQ_BUILD_CLI=OFF >/dev/null
cmake --build "$DIR/mongomq-build" -j "$JOBS" >/dev/null
rm -rf "$DIR/prefix"
cmake --install "$DIR/mongomq-build" >/dev/null
# libmongomq.a: one relocatable object holding our objects and every archive member
# they need (libmongoc, libbson, jansson, OpenSSL, libstdc++), with every symbol but
# mq_* made local, so a C or Go program links it with a C compiler alone and its own
# OpenSSL or libmongoc cannot clash with ours.
objs=("$DIR/mongomq-build/lib/CMakeFiles/mongomq_objects.dir/"*.o)
ld -r -d -o "$DIR/libmongomq-all.o" "${objs[@]}" --start-group \
    "$MONGOC_PREFIX/lib/libmongoc-static-1.0.a" "$MONGOC_PREFIX/lib/libbson-static-1.0.a" \
    "$SYSLIB/libjansson.a" "$SYSLIB/libssl.a" "$SYSLIB/libcrypto.a" \
    "$(g++ -print-file-name=libstdc++.a)" "$(g++ -print-file-name=libgcc_eh.a)" --end-group
nm --defined-only -g "$DIR/libmongomq-all.o" | awk 'NF==3 && $3 ~ /^mq_/ {print $3}' >"$DIR/mq.syms"
objcopy --keep-global-symbols="$DIR/mq.syms" "$DIR/libmongomq-all.o"
rm -f "$DIR/prefix/lib/libmongomq.a"
ar rcs "$DIR/prefix/lib/libmongomq.a" "$DIR/libmongomq-all.o"
bash "$ROOT/scripts/bundle-check.sh" "$DIR/prefix/lib/libmongomq.so.0" "$DIR/prefix/lib/libmongomq.a" >&2
echo "$DIR/prefix"
