#!/bin/sh
# Wheels for the lent GPU machine (Python 3.12, x86-64), for packages compiler/ imports that its
# image lacks. The image has numpy, ml_dtypes, networkx, onnx, torch, torch_geometric, cupy and
# jax (/work/.library/device/KINDS.md), so the campaign needs none today; when
# `benchmarks/gpu_campaign.py`'s environment step names a missing package, run here
#
#     benchmarks/gpu_wheels.sh networkx ml_dtypes
#
# which downloads each at the version requirements.txt pins (a package it does not name, a
# dependency of one it does, at the version this checkout's .venv holds) into .whl/ (ignored by
# git), and
# then, on the device, carry ".whl" and start the command with
#
#     python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
#         --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site || exit;
#
# --no-deps: a package's own requirements are not fetched; name them too (its METADATA's
# Requires-Dist lines: unzip -p .whl/NAME-*.whl '*/METADATA' | grep ^Requires-Dist).
set -eu
if [ $# -eq 0 ]; then
    echo "usage: benchmarks/gpu_wheels.sh PACKAGE... (names as pip knows them)" >&2
    exit 2
fi
cd "$(dirname "$0")/.."
for name in "$@"; do
    pin=$(grep -i -E "^${name}(\[[^]]*\])?==" requirements.txt | head -n 1 | sed 's/\[[^]]*\]//')
    if [ -z "$pin" ]; then
        version=$(.venv/bin/python -c 'import sys; from importlib import metadata
print(metadata.version(sys.argv[1]))' "$name" 2>/dev/null) || version=""
        if [ -z "$version" ]; then
            echo "error: $name is neither pinned in requirements.txt nor installed in .venv" >&2
            exit 1
        fi
        pin="$name==$version"
    fi
    .venv/bin/python -m pip download --no-deps --only-binary=:all: --python-version 3.12 \
        --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 \
        --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
        --platform manylinux1_x86_64 -d .whl "$pin"
done
