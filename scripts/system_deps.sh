#!/usr/bin/env bash
# The system packages the tests need, from Debian: chromium and its fonts (the browser tests), g++ and ninja (the
# CPU kernel), the aarch64 cross-compiler and qemu-user (the kernel's self-test on ARM). `make test` and CI (.ci/run) both call this first, so a newcomer's run tests what CI tests.
#
#   scripts/system_deps.sh            install what is missing (as root), or say in one line what to run
#   scripts/system_deps.sh --list     print the missing packages, one line, and install nothing
#   scripts/system_deps.sh --space    the same for make space-check: chromium, buildah (builds the Space's image
#                                     without a daemon) and mmdebstrap (its stand-in base when the registry is
#                                     out of reach); combines with --list
#
# Without root it installs nothing: it names the command to run and exits 1 in seconds, before any test.
set -euo pipefail

target="make test"
if [ "${1:-}" = "--space" ]; then target="make space-check"; shift; fi

missing=()
have() { command -v "$1" >/dev/null 2>&1; }
have chromium || have chromium-browser || missing+=(chromium fonts-liberation fonts-dejavu-core)
if [ "$target" = "make test" ]; then
  have g++ || missing+=(g++)
  have ninja || missing+=(ninja-build)
  have aarch64-linux-gnu-g++ || missing+=(g++-aarch64-linux-gnu)  # the kernel's self-test, built for ARM ...
  have qemu-aarch64 || missing+=(qemu-user)                         # ... and run there under emulation
else
  have buildah || missing+=(buildah)
  have mmdebstrap || missing+=(mmdebstrap)
fi

if [ "${1:-}" = "--list" ]; then
  echo "${missing[*]:-}"
  exit 0
fi
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" != 0 ] || ! have apt-get; then
  echo "$target needs system packages that are missing: run  sudo apt-get install -y ${missing[*]}" >&2
  exit 1
fi
echo "installing ${missing[*]} (apt-get) ..." >&2
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
