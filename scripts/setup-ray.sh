#!/usr/bin/env bash
# Installs Ray (Tune, with its ASHA scheduler) for `clawrl sweep`, and for that command only:
# a pinned version in its own Python environment under third_party/ray/ (about 630 MB, 25 s
# from PyPI). Nothing else in clawrl needs Python. Idempotent: a working install of the pinned
# version is left alone. Called by scripts/bootstrap.sh.
set -euo pipefail

VERSION=2.60.0
root=$(cd "$(dirname "$0")/.." && pwd)
dest="$root/third_party/ray"
python="$dest/bin/python"

if [ -x "$python" ] && [ "$("$python" -c 'import ray, ray.tune; print(ray.__version__)' 2>/dev/null)" = "$VERSION" ]; then
    echo "Ray $VERSION already installed in $dest"
    exit 0
fi
rm -rf "$dest"
python3 -m venv "$dest"
"$python" -m pip install -q --disable-pip-version-check "ray[tune]==$VERSION"
"$python" -c 'import ray, ray.tune; print("Ray", ray.__version__, "installed in", ray.__file__.rsplit("/lib/", 1)[0])'
