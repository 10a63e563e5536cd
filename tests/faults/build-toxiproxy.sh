#!/usr/bin/env bash
# Build toxiproxy-server (pinned) into <build>/tools/ with the Go toolchain.
#   tests/faults/build-toxiproxy.sh [BUILD_DIR]   prints the binary's path
# Reuses the binary when it is already there.
set -euo pipefail
export GOTOOLCHAIN=local
if ! command -v go >/dev/null && [ -x /usr/local/go/bin/go ]; then export PATH="/usr/local/go/bin:$PATH"; fi
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
BUILD="${1:-$ROOT/build}"
# v2.7.0: the newest whose go.mod asks for no more than Go 1.19 (Debian 12)
VERSION="v2.7.0"
OUT="$BUILD/tools/toxiproxy-server-$VERSION"
if [ ! -x "$OUT" ]; then
    command -v go >/dev/null || { echo "build-toxiproxy: go is needed (Debian: golang-go)" >&2; exit 1; }
    mkdir -p "$BUILD/tools"
    work="$(mktemp -d)"
    trap 'rm -rf "$work"' EXIT
    (
        cd "$work"
        go mod init mongomq-fault-tools >/dev/null 2>&1
        go get "github.com/Shopify/toxiproxy/v2@$VERSION" >&2
        go build -o "$OUT.tmp" github.com/Shopify/toxiproxy/v2/cmd/server >&2
    )
    mv "$OUT.tmp" "$OUT"
fi
echo "$OUT"
