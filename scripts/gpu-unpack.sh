#!/usr/bin/env bash
# Unpacks the bundle made by scripts/gpu-bundle.sh into a prefix (never over /) and prints
# the prefix to hand to CMake:  EMBER_PREFIX=$(scripts/gpu-unpack.sh /tmp/ember-deps)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
prefix="${1:?usage: gpu-unpack.sh PREFIX}"
[[ "$prefix" == "/" ]] && { echo "gpu-unpack.sh: refusing to unpack over /" >&2; exit 2; }
shopt -s nullglob
debs=("$root"/.deps/debs/*.deb)
((${#debs[@]})) || { echo "gpu-unpack.sh: no bundle in $root/.deps/debs (run scripts/gpu-bundle.sh first)" >&2; exit 2; }
mkdir -p "$prefix"
for d in "${debs[@]}"; do dpkg -x "$d" "$prefix"; done
echo "$prefix/usr"
