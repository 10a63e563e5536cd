#!/usr/bin/env bash
# Builds the release artifacts into dist/ (nothing is published from here). So far:
#   dist/libmongomq-<version>-linux-x86_64.tar.gz   the bundled C library
#     (scripts/bundle.sh): include/mongomq.h, lib/libmongomq.so*, lib/libmongomq.a,
#     lib/pkgconfig/mongomq.pc, lib/cmake/mongomq/, THIRD-PARTY-NOTICES
# The per-language packages are issue 24's next steps (docs/design.md, "Packages").
# Prints each artifact's path and size.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
DIST="${MONGOMQ_DIST:-$ROOT/dist}"
PREFIX="$(bash "$ROOT/scripts/bundle.sh")"
MONGOC="$(dirname "$PREFIX")/mongoc"
VERSION="$(sed -n 's/^Version: //p' "$PREFIX/lib/pkgconfig/mongomq.pc")"
NAME="libmongomq-$VERSION-linux-x86_64"

# THIRD-PARTY-NOTICES: the licence of everything linked into the bundled library.
notices() {
    section() { printf '\n==============================================================================\n%s\n==============================================================================\n\n' "$1"; }
    echo "libmongomq $VERSION links in the following software. Their notices follow."
    echo "  - mongo-c-driver 1.23.1 (libmongoc, libbson; Apache-2.0), built from Debian 12's source"
    echo "  - OpenSSL 3.0 (libssl, libcrypto; Apache-2.0), Debian 12's libssl.a/libcrypto.a"
    echo "  - jansson 2.14 (MIT), Debian 12's libjansson.a"
    echo "  - the GCC C++ runtime (libstdc++; GPL-3.0 with the GCC Runtime Library Exception)"
    section "mongo-c-driver: COPYING"
    cat "$MONGOC/COPYING"
    section "mongo-c-driver: THIRD_PARTY_NOTICES"
    cat "$MONGOC/THIRD_PARTY_NOTICES"
    section "OpenSSL (Debian's copyright file of libssl3)"
    cat /usr/share/doc/libssl3/copyright
    section "jansson (Debian's copyright file of libjansson4)"
    cat /usr/share/doc/libjansson4/copyright
    section "libstdc++ (Debian's copyright file of libstdc++6)"
    cat /usr/share/doc/libstdc++6/copyright
}

stage="$(mktemp -d)"
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/$NAME" "$DIST"
cp -a "$PREFIX/include" "$PREFIX/lib" "$stage/$NAME/"
notices >"$stage/$NAME/THIRD-PARTY-NOTICES"
tar -C "$stage" --owner=0 --group=0 --sort=name -czf "$DIST/$NAME.tar.gz" "$NAME"
echo "package: $DIST/$NAME.tar.gz $(du -k "$DIST/$NAME.tar.gz" | cut -f1) KiB" >&2
echo "$DIST/$NAME.tar.gz"
