#!/usr/bin/env bash
# Installs MuJoCo 3.17.0 (the version mujoco-rs 7 binds) into third_party/mujoco/ inside the repo.
#
# The library comes from the official `mujoco==3.17.0` wheel on PyPI: it carries
# libmujoco.so.3.17.0 (needs only libc/libm/libdl) and the C headers. Idempotent: a verified
# install is left alone. Cargo finds it through .cargo/config.toml (MUJOCO_DYNAMIC_LINK_DIR) and
# the sim crate's build script puts it on the loader path for `cargo run` and `cargo test`.
set -euo pipefail

VERSION=3.17.0
root=$(cd "$(dirname "$0")/.." && pwd)
dest="$root/third_party/mujoco"
lib="$dest/lib/libmujoco.so.$VERSION"

verify() {
    [ -f "$lib" ] && [ -f "$dest/lib/libmujoco.so" ] && [ -f "$dest/include/mujoco/mujoco.h" ] || return 1
    # The header's version macro must match: mujoco-rs checks mj_version() against 3.17.0 too.
    grep -q "#define mjVERSION_HEADER 3017000" "$dest/include/mujoco/mujoco.h" || return 1
    # The library must export mj_step and carry the version in its file name we link against.
    # (nm's output is captured first: `grep -q` closing the pipe early would trip pipefail.)
    local symbols
    symbols=$(nm -D --defined-only "$lib" 2>/dev/null) || return 1
    grep -q " T mj_step$" <<<"$symbols" || return 1
}

if verify; then
    echo "MuJoCo $VERSION already installed in $dest"
    exit 0
fi

platform=$(uname -m)
case "$platform" in
    x86_64|aarch64) ;;
    *) echo "setup-mujoco: unsupported architecture $platform" >&2; exit 1 ;;
esac

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "Fetching the mujoco==$VERSION wheel from PyPI..."
python3 -m pip download --quiet --no-deps --only-binary=:all: \
    --python-version 3.11 --platform "manylinux_2_28_$platform" \
    "mujoco==$VERSION" -d "$tmp"
wheel=$(ls "$tmp"/mujoco-"$VERSION"-*.whl)

# lib/libmujoco.so is a committed linker script that names the versioned library: keep it.
rm -rf "$dest/include" "$lib"
mkdir -p "$dest/lib" "$dest/include"
python3 - "$wheel" "$dest" "$VERSION" <<'PY'
import sys, zipfile, os, shutil
wheel, dest, version = sys.argv[1:]
with zipfile.ZipFile(wheel) as z:
    for name in z.namelist():
        if name == f"mujoco/libmujoco.so.{version}":
            with z.open(name) as src, open(os.path.join(dest, "lib", os.path.basename(name)), "wb") as out:
                shutil.copyfileobj(src, out)
        elif name.startswith("mujoco/include/") and not name.endswith("/"):
            rel = name[len("mujoco/include/"):]
            path = os.path.join(dest, "include", rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with z.open(name) as src, open(path, "wb") as out:
                shutil.copyfileobj(src, out)
PY
chmod 755 "$lib"

if ! verify; then
    echo "setup-mujoco: the unpacked MuJoCo in $dest failed verification" >&2
    exit 1
fi
echo "MuJoCo $VERSION installed in $dest"
