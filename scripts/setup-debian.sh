#!/usr/bin/env bash
# setup-debian.sh: installs every Debian package that building shardc and
# running its whole test suite need (Debian 12 "bookworm" or later). Safe to
# run again: when everything is installed already it changes nothing.
set -euo pipefail

packages=(
    build-essential cmake ninja-build flex bison   # the build
    clang-14 libclang-rt-14-dev                    # libFuzzer, sanitizers
    llvm-14-tools                                  # FileCheck-14, not
    python3 git
    libcjson-dev libopenblas-dev openmpi-bin libopenmpi-dev  # the runtime
    python3-torch                                  # the tests' PyTorch oracle
    python3-numpy python3-pytest                   # the Python package's tests
)

missing=()
for p in "${packages[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
        missing+=("$p")
    fi
done
if [ ${#missing[@]} -eq 0 ]; then
    echo "setup-debian: all ${#packages[@]} packages are installed"
    exit 0
fi

sudo=()
if [ "$(id -u)" -ne 0 ]; then
    sudo=(sudo)
fi
echo "setup-debian: installing ${missing[*]}"
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive \
    apt-get install -y -qq --no-install-recommends "${missing[@]}" > /dev/null
echo "setup-debian: done"
