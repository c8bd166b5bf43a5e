#!/usr/bin/env bash
# Installs everything clawrl needs on a fresh machine, idempotently: the Rust components and
# targets, and MuJoCo 3.17.0 (into third_party/, from PyPI). Called by scripts/run and
# scripts/test, so nobody has to run it by hand.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

if ! command -v cargo >/dev/null 2>&1; then
    echo "bootstrap: cargo not found; install Rust with rustup (https://rustup.rs) first" >&2
    exit 1
fi
if ! command -v python3 >/dev/null 2>&1 || ! python3 -m pip --version >/dev/null 2>&1; then
    # MuJoCo's library comes from its PyPI wheel, fetched with pip.
    if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
        apt-get update -qq && apt-get install -y -qq python3 python3-pip binutils
    else
        echo "bootstrap: python3 with pip is needed to fetch MuJoCo; install it first" >&2
        exit 1
    fi
fi

if command -v rustup >/dev/null 2>&1; then
    have=$(rustup component list --installed 2>/dev/null || true)
    for c in rustfmt clippy; do
        grep -q "^$c" <<<"$have" || rustup component add "$c"
    done
fi
[ -x scripts/setup-targets.sh ] && scripts/setup-targets.sh
scripts/setup-cross.sh
scripts/setup-mujoco.sh
# strace lets runtime/tests/install_fsync.rs read the install's fsync and rename order from the
# real binary's system calls; without it that test fails, naming how to install it.
if ! command -v strace >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq strace; } ||
        echo "bootstrap: could not install strace; the install's fsync-order test (runtime/tests/install_fsync.rs) will fail" >&2
fi
# OSMesa is the software OpenGL that `clawrl eval --video` and render/tests draw with (opened at
# run time, so the build does not need it); best effort: without it those tests fail, naming it.
if ! ldconfig -p 2>/dev/null | grep -q 'libOSMesa\.so\.8' && command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libosmesa6; } ||
        echo "bootstrap: could not install libosmesa6; the rendering tests (render/tests) will fail" >&2
fi
# The official Python MCAP reader, the third-party peer hil-tests/tests/mcap.rs opens the runtime's
# MCAP with (into third_party/pymcap, from PyPI; best effort: without it that test fails, naming it).
if [ ! -d third_party/pymcap/mcap ]; then
    python3 -m pip install -q --disable-pip-version-check --target third_party/pymcap mcap==1.6.0 ||
        echo "bootstrap: could not install the Python mcap reader; hil-tests/tests/mcap.rs will fail" >&2
fi
# Ray, for `clawrl sweep` only (its own environment under third_party/ray; best effort: without
# it that command and cli/tests/sweep.rs fail, naming scripts/setup-ray.sh).
scripts/setup-ray.sh || echo "bootstrap: could not install Ray; clawrl sweep and cli/tests/sweep.rs will fail" >&2
