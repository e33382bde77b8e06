#!/usr/bin/env bash
# Runs binaries built on the development machine on a GPU node, without building there (saves
# the ~75-100 s of bench/gpu_build.sh): unpacks the .deps bundle into a prefix, the glvnd loaders
# (.gl, for EGL) over / as the device README says, and writes one wrapper per binary of BIN_DIR
# into WRAP_DIR that sets LD_LIBRARY_PATH to the bundle and the node's torch libraries.
#
#   bash bench/node_wrap.sh BIN_DIR [WRAP_DIR]      (WRAP_DIR default /tmp/ember-bin; prints it)
#
# BIN_DIR: binaries built here with the project's toolchain and libtorch 2.11 (sm_90 kernels are
# always compiled), e.g.
#   cmake -S . -B build-node -G Ninja -DEMBER_PYTHON=$HOME/.cache/ember/venv/bin/python3 \
#     -DEMBER_WITH_FFMPEG=OFF -DCMAKE_BUILD_TYPE=Release && ninja -C build-node ember libero_like_tool
#   mkdir -p .node/bin && strip -o .node/bin/ember build-node/bin/ember   (and the others)
# with `/.node/` in .git/info/exclude and .node, .deps (and .gl for sim) carried.
# Measures nothing. The other bench scripts take the wrappers through EMBER=WRAP_DIR/ember (sim)
# or EMBER_BIN=WRAP_DIR (bench/lerobot_parity_h200.sh, bench/fp8_h200.sh).
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bin_dir="$(cd "${1:?usage: node_wrap.sh BIN_DIR [WRAP_DIR]}" && pwd)" || exit 2
wrap_dir="${2:-/tmp/ember-bin}"
"$root/scripts/gpu-gl.sh" || exit 1
prefix="$("$root/scripts/gpu-unpack.sh" "${DEPS_DIR:-/tmp/ember-deps}")" || exit 1
torch_dir="$(python3 -c 'import torch, os; print(os.path.dirname(torch.__file__))')" || exit 1
libs="$prefix/lib/x86_64-linux-gnu:$prefix/../lib/x86_64-linux-gnu:$torch_dir/lib:$torch_dir/../nvidia/cu13/lib:/usr/local/cuda/lib64"
mkdir -p "$wrap_dir"
for b in "$bin_dir"/*; do
  [[ -f "$b" && -x "$b" ]] || continue
  printf '#!/bin/sh\nLD_LIBRARY_PATH=%s exec %s "$@"\n' "$libs" "$b" >"$wrap_dir/$(basename "$b")"
  chmod +x "$wrap_dir/$(basename "$b")"
done
"$wrap_dir/ember" --version >&2 || exit 1
echo "$wrap_dir"
