#!/usr/bin/env bash
# The bundled library on a machine that has nothing of ours: builds the C tarball
# (scripts/package.sh, which builds the library with scripts/bundle.sh), checks the
# exports and needed libraries of what it holds (scripts/bundle-check.sh), then runs
# the demo (examples/demo.c), built with the tarball's pkg-config file and linked once
# against libmongomq.a and once against libmongomq.so.0, inside a minimal Debian 12 root made by mmdebstrap
# (--variant=apt: no libmongoc, no OpenSSL, no compiler; cached in the cache dir,
# made again when missing) against the test server on the loopback.
# Not yet a stage of scripts/test.sh (issue 24 is in progress). Needs root (chroot).
# Env: MONGOMQ_TEST_URI (default: a test server started here), MONGOMQ_CACHE.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
CACHE="${MONGOMQ_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/mongomq}"
CHROOT="$CACHE/roots/bookworm-apt"
log() { echo "test-bundle: $*" >&2; }

TARBALL="$(bash "$ROOT/scripts/package.sh")"

if [[ ! -x "$CHROOT/bin/sh" ]]; then
    command -v mmdebstrap >/dev/null || {
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q mmdebstrap </dev/null >/dev/null ||
            { apt-get update -q </dev/null >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q mmdebstrap </dev/null >/dev/null; }
    }
    log "making a minimal Debian 12 root in $CHROOT"
    rm -rf "$CHROOT.part"
    mkdir -p "$(dirname "$CHROOT")"
    mmdebstrap --quiet --variant=apt --mode=root bookworm "$CHROOT.part" http://deb.debian.org/debian
    mv "$CHROOT.part" "$CHROOT"
fi
for lib in libmongoc-1.0.so.0 libbson-1.0.so.0 libssl.so.3 libjansson.so.4; do
    if [[ -e "$CHROOT/usr/lib/x86_64-linux-gnu/$lib" ]]; then
        log "the clean root has $lib: it is not clean"
        exit 1
    fi
done

started=0
if [[ -z "${MONGOMQ_TEST_URI:-}" ]]; then
    MONGOMQ_TEST_URI="$(bash "$ROOT/scripts/test-server.sh" start)"
    started=1
fi
work="$(mktemp -d)"
cleanup() {
    rm -rf "$work" "$CHROOT/opt/mongomq-test"
    if [[ $started == 1 ]]; then bash "$ROOT/scripts/test-server.sh" stop || true; fi
}
trap cleanup EXIT

tar -xzf "$TARBALL" -C "$work"
PREFIX="$(echo "$work"/libmongomq-*-linux-x86_64)"
[[ -s "$PREFIX/THIRD-PARTY-NOTICES" ]] || { log "the tarball has no THIRD-PARTY-NOTICES"; exit 1; }
bash "$ROOT/scripts/bundle-check.sh" "$PREFIX/lib/libmongomq.so.0" "$PREFIX/lib/libmongomq.a"
export PKG_CONFIG_PATH="$PREFIX/lib/pkgconfig"

# shellcheck disable=SC2046 # pkg-config's words are meant to split
gcc -std=c99 -O2 "$ROOT/examples/demo.c" $(pkg-config --cflags mongomq) "$PREFIX/lib/libmongomq.a" \
    $(pkg-config --static --libs-only-l mongomq | sed 's/-lmongomq//') -o "$work/demo-static"
# shellcheck disable=SC2046
gcc -std=c99 -O2 "$ROOT/examples/demo.c" $(pkg-config --cflags --libs mongomq) -o "$work/demo-shared"
mkdir -p "$CHROOT/opt/mongomq-test"
cp "$work/demo-static" "$work/demo-shared" "$CHROOT/opt/mongomq-test/"
cp -L "$PREFIX/lib/libmongomq.so.0" "$CHROOT/opt/mongomq-test/"
for kind in static shared; do
    log "demo ($kind) in the clean root"
    out="$(chroot "$CHROOT" /usr/bin/env -i PATH=/usr/bin:/bin LD_LIBRARY_PATH=/opt/mongomq-test \
        MONGOMQ_URI="$MONGOMQ_TEST_URI" MONGOC_DISABLE_SHM=1 /opt/mongomq-test/demo-$kind 2>&1)" || {
        echo "$out" >&2
        log "demo ($kind) failed in the clean root"
        exit 1
    }
    for want in "exactly once     : yes" "FIFO per group: OK"; do
        grep -qF "$want" <<<"$out" || { echo "$out" >&2; log "demo ($kind): no \"$want\""; exit 1; }
    done
done
log "ok: the bundled library's demo ran in a clean Debian 12 root, static and shared"
