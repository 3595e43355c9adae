#!/usr/bin/env bash
# Installs the Debian packages Parallax needs to build and test, if any are missing, and any
# packages named as arguments (scripts/fuzz.sh adds Clang's).
# Idempotent: when everything is installed it changes nothing (not even `apt-get update`).
set -euo pipefail

PACKAGES=(
  cmake
  ninja-build
  g++
  libopenblas-dev
  nlohmann-json3-dev
  libcli11-dev
  libgtest-dev
  libgmock-dev
  libbenchmark-dev
  pkg-config
  libopenmpi-dev
  openmpi-bin
  coinor-libcbc-dev
  zlib1g-dev
  clang-format
  "$@"
)

is_installed() {
  [[ "$(dpkg-query -W -f='${db:Status-Status}' "$1" 2>/dev/null || true)" == "installed" ]]
}

missing=()
for pkg in "${PACKAGES[@]}"; do
  if ! is_installed "$pkg"; then
    missing+=("$pkg")
  fi
done

if [[ ${#missing[@]} -eq 0 ]]; then
  echo "install-deps: all ${#PACKAGES[@]} packages already installed"
  exit 0
fi

if [[ "$(id -u)" -eq 0 ]]; then
  SUDO=()
elif command -v sudo >/dev/null 2>&1; then
  SUDO=(sudo)
else
  echo "install-deps: missing packages: ${missing[*]}" >&2
  echo "install-deps: not root and no sudo; install them as root and rerun" >&2
  exit 1
fi

echo "install-deps: installing ${missing[*]}"
# `env` carries DEBIAN_FRONTEND through sudo, which resets the environment.
"${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update
"${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y "${missing[@]}"
