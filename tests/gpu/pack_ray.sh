#!/usr/bin/env bash
# Builds .rayw/ for tests/gpu/ray_device_setup.sh on a machine with registries: ray==2.60.0 for the GPU
# image's Python 3.12, without jars/ and rllib/ (unused by bisectk), xz-compressed (~30 MB: the wheel,
# 79 MB, does not fit one device call's 64 MiB transfer beside the 54 MB DSL archive), plus the wheels
# of its dependencies (the setup script installs only those the image lacks).
set -euo pipefail
cd "$(dirname "$0")/../.."
D=$(mktemp -d)
python3 -m pip download -q ray==2.60.0 --python-version 3.12 --only-binary=:all: \
    --platform manylinux2014_x86_64 -d "$D/wheels"
mkdir -p "$D/site" .rayw
(cd "$D/site" && unzip -q "$D"/wheels/ray-2.60.0-*.whl && rm -rf ray/jars ray/rllib)
tar cf - -C "$D/site" . | xz -9 -T2 > .rayw/ray_site.tar.xz
find "$D/wheels" -name '*.whl' ! -name 'ray-2.60.0-*' -exec cp {} .rayw/ \;
rm -rf "$D"
du -sh .rayw
