#!/usr/bin/env bash
# Installs what the robot computer's build needs beyond the host toolchain: the runtime
# (clawrl-runtime) is cross-built for aarch64-unknown-linux-gnu and run under qemu-user in CI
# (scripts/test-aarch64.sh). Idempotent: safe to run on every CI start.
#   - Debian's aarch64 cross toolchain: gcc (the linker .cargo/config.toml names), g++ (for any
#     dependency with a C++ part; cc-rs finds both by the aarch64-linux-gnu- prefix) and the ARM
#     C library to link against and to run with;
#   - qemu-user, whose qemu-aarch64 runs the ARM binary on the x86-64 CI machine;
#   - the Rust target aarch64-unknown-linux-gnu.
set -euo pipefail

# command that each package provides, to tell whether it is there without asking dpkg
declare -A provides=(
    [gcc-aarch64-linux-gnu]=aarch64-linux-gnu-gcc
    [g++-aarch64-linux-gnu]=aarch64-linux-gnu-g++
    [libc6-dev-arm64-cross]=/usr/aarch64-linux-gnu/lib/libc.so
    [qemu-user]=qemu-aarch64
)
missing=()
for pkg in gcc-aarch64-linux-gnu g++-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user; do
    want=${provides[$pkg]}
    if [[ $want == /* ]]; then
        [ -e "$want" ] || missing+=("$pkg")
    else
        command -v "$want" >/dev/null 2>&1 || missing+=("$pkg")
    fi
done
if [ ${#missing[@]} -gt 0 ]; then
    if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
        echo "setup-cross: installing ${missing[*]}"
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
    else
        echo "setup-cross: the aarch64 cross build needs ${missing[*]}; install them, e.g." >&2
        echo "    sudo apt-get install ${missing[*]}" >&2
        echo "(Debian/Ubuntu package names; elsewhere an aarch64-linux-gnu gcc/g++ cross" >&2
        echo "toolchain with its glibc, and qemu-user for qemu-aarch64)" >&2
        exit 1
    fi
fi

if command -v rustup >/dev/null 2>&1; then
    if ! rustup target list --installed | grep -qx aarch64-unknown-linux-gnu; then
        rustup target add aarch64-unknown-linux-gnu
    fi
else
    echo "setup-cross: rustup not found; add the Rust target aarch64-unknown-linux-gnu by hand" >&2
    exit 1
fi
