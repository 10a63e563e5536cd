#!/usr/bin/env bash
# Install the Debian/Ubuntu packages needed to build and test mongomq.
# Idempotent: only missing packages are installed, and apt-get update runs
# only when something is missing. Needs root (or sudo) only in that case.
set -euo pipefail

PACKAGES=(
    build-essential
    ninja-build
    cmake
    pkg-config
    libmongoc-dev
    libbson-dev
    libjansson-dev
    libcmocka-dev
    default-jdk-headless
    maven
    abigail-tools
    python3
    python3-venv
    python3-dev        # the Python package (bindings/python): Python.h
    ruby               # the Ruby gem (bindings/ruby): Ruby 3.1, mkmf, minitest
    ruby-dev           # and its headers
    clang              # libFuzzer harnesses (fuzz/)
    clang-format       # the C and C++ style (.clang-format, scripts/format.sh)
    libclang-rt-14-dev # libFuzzer's and the sanitizers' runtime for clang
    openssl            # the TLS test's CA and certificate (tests/faults)
    libmicrohttpd-dev  # mongomq web's HTTP server (cli/web)
    chromium           # the dashboard's browser tests (tests/web, scripts/test-web.sh)
    chromium-driver
    python3-selenium
    python3-prometheus-client # the /metrics test parses with its text parser
)

export DEBIAN_FRONTEND=noninteractive

missing=()
for pkg in "${PACKAGES[@]}"; do
    status="$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true)"
    if [[ "$status" != "install ok installed" ]]; then
        missing+=("$pkg")
    fi
done

if ((${#missing[@]} == 0)); then
    echo "install-deps: all ${#PACKAGES[@]} packages already installed"
    exit 0
fi

echo "install-deps: installing: ${missing[*]}"

SUDO=()
if [[ "$(id -u)" -ne 0 ]]; then
    command -v sudo >/dev/null || { echo "install-deps: need root or sudo" >&2; exit 1; }
    SUDO=(sudo -n env DEBIAN_FRONTEND=noninteractive)
fi

"${SUDO[@]}" apt-get update -q </dev/null
"${SUDO[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}" </dev/null
echo "install-deps: done"
