#!/usr/bin/env bash
# Installs the Debian packages Volley needs, and only those that are missing.
# Idempotent: on a machine that has everything it prints one line and exits 0.
set -euo pipefail

required=(
  cmake ninja-build g++ make pkg-config
  libboost1.81-dev libssl-dev libspdlog-dev libfmt-dev libcli11-dev
  libgtest-dev libbenchmark-dev libusrsctp-dev
  python3-matplotlib
  # clang and its runtime build the libFuzzer targets; iproute2 and util-linux
  # (taskset) are used by the netem namespaces script and the benchmarks.
  clang libclang-rt-14-dev util-linux iproute2
  # the openssl command makes the throw-away TLS certificates of the TLS tests
  openssl
  # `make docs` (the API reference) and the docs test
  doxygen
  # the Wireshark dissector tests (tools/wireshark/volley.lua)
  tshark
  # the HTTP load benchmark (bench/http_bench.py) drives the HTTP server with it
  wrk
  # receiving through io_uring (volley::net, `--io uring`) and the raw io_uring echo baseline
  liburing-dev
  # the package test checks the .deb with Debian's own checker
  lintian
  # a compiler cache: make test's four builds of unchanged sources come from it (CMake option VOLLEY_CCACHE)
  ccache
)

missing=()
for pkg in "${required[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true)
  [[ "$status" == "install ok installed" ]] || missing+=("$pkg")
done

if [[ ${#missing[@]} -eq 0 ]]; then
  echo "install-deps: all ${#required[@]} packages present"
  exit 0
fi

echo "install-deps: missing: ${missing[*]}"
if [[ $(id -u) -ne 0 ]]; then
  if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    SUDO=sudo
  else
    echo "install-deps: error: installing packages needs root. Run as root:" >&2
    echo "  apt-get update && apt-get install -y ${missing[*]}" >&2
    exit 1
  fi
else
  SUDO=
fi

export DEBIAN_FRONTEND=noninteractive
# A fresh machine may have empty package lists; update before installing.
$SUDO apt-get update -qq
$SUDO apt-get install -y --no-install-recommends "${missing[@]}"
echo "install-deps: installed ${#missing[@]} package(s)"
