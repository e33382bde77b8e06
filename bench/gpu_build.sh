#!/usr/bin/env bash
# Builds ember on a GPU node that has no package archive and no -dev headers (the project's H200
# machines), from the bundle of Debian packages made by scripts/gpu-bundle.sh.
#
#   bash bench/gpu_build.sh [TARGET...]
#
# Measures nothing: the other bench/*.sh scripts run what it builds (SRC/build-gpu/bin/ember).
# TARGET: ninja targets (default: ember libero_like_tool). Add model_policy_gpu_test and
# train_gpu_test for the GPU tests (TEST=1 runs them; also nvjpeg_gpu_test when it is among the
# targets), cublaslt_candidates for that tool.
#
# Carry from the development machine (device tool `carry`):
#   .deps   scripts/gpu-bundle.sh's .deps/debs/*.deb (about 25 MB, 9.5 of them Boost's headers for ember serve)
#   .gl     the glvnd loaders for EGL rendering (only for sim; the device README says how to
#           download them); they are unpacked over / as that README says
#   .prev   optional: a second tree to build for A/B runs (bench/ab_policy.sh), e.g.
#           `echo /.prev/ >>.git/info/exclude; git worktree add .prev/base COMMIT`
# Environment:
#   SRC=.          the tree to build (SRC=.prev/base builds the second tree with this script,
#                  whatever that tree's own bench/ holds)
#   BUILD_DIR      default SRC/build-gpu
#   DEPS_DIR       where the bundle is unpacked (default /tmp/ember-deps, or /tmp/ember-deps-base
#                  for another SRC: two unpacks into one folder at once race); never /
#   EMBER_CMAKE_EXTRA  more cmake flags, e.g. -DEMBER_CUDA_KERNELS=OFF
#   TEST=1         then run model_policy_gpu_test and train_gpu_test (one per GPU if there are 2)
# Device-time cost: not timed on its own. A call that built two trees at once and then ran 1-
# and 2-GPU training runs took 250 s on nvidia-h200-x2 (2026-11-30); expect a few minutes on
# 16 cores, plus the machine's start on a fresh one. The GPU tests add about a minute.
# Writes configure.log, build.log (and the GPU tests' logs) under $OUT (default /tmp/ember-out);
# prints the binary's path.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
src="$(cd "${SRC:-$root}" && pwd)"
out="${OUT:-/tmp/ember-out}"
export NCCL_NVLS_ENABLE=0  # NVLink multicast stays off on the shared machines (device README)
mkdir -p "$out"
build="${BUILD_DIR:-$src/build-gpu}"
targets=("$@")
((${#targets[@]})) || targets=(ember libero_like_tool)
if [[ "$src" == "$root" ]]; then deps="${DEPS_DIR:-/tmp/ember-deps}"; else deps="${DEPS_DIR:-/tmp/ember-deps-base}"; fi
name="$([[ "$src" == "$root" ]] && echo "" || echo "_$(basename "$src")")"

# the glvnd loaders (EGL rendering in sim) go over /, as the device README says
"$root/scripts/gpu-gl.sh" || exit 1
# the bundle goes into a prefix of its own (scripts/gpu-unpack.sh reads $root/.deps/debs)
prefix="$("$root/scripts/gpu-unpack.sh" "$deps")" || exit 1
torch_prefix="$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)')" || exit 1
# RPATH, not RUNPATH (the node's toolchain writes RUNPATH, which a library's own dependencies do
# not see): the bundle's libcurl then finds its libssh2 & co. in the prefix, not the image's
cmake -S "$src" -B "$build" -G Ninja -DCMAKE_PREFIX_PATH="$prefix;$torch_prefix" -DEMBER_PYTHON="$(command -v python3)" \
  -DCMAKE_EXE_LINKER_FLAGS=-Wl,--disable-new-dtags ${EMBER_CMAKE_EXTRA:-} >"$out/configure$name.log" 2>&1 || { tail -n 30 "$out/configure$name.log"; exit 1; }
grep -h "ember: " "$out/configure$name.log" || true
ninja -C "$build" "${targets[@]}" >"$out/build$name.log" 2>&1 ||
  { grep -A5 -E "error|FAILED" "$out/build$name.log" | head -n 60; exit 1; }
echo "built: $build/bin/ember (${targets[*]})"

if [[ "${TEST:-0}" == 1 ]]; then
  ngpu="$(nvidia-smi -L 2>/dev/null | wc -l)"
  second=$((ngpu >= 2 ? 1 : 0))
  CUDA_VISIBLE_DEVICES=0 "$build/bin/model_policy_gpu_test" >"$out/model_policy_gpu_test$name.log" 2>&1 &
  if ((second)); then
    CUDA_VISIBLE_DEVICES=1 "$build/bin/train_gpu_test" >"$out/train_gpu_test$name.log" 2>&1 &
    wait
  else
    wait
    "$build/bin/train_gpu_test" >"$out/train_gpu_test$name.log" 2>&1
  fi
  # nvJPEG against libjpeg-turbo, where the caller built it (TARGET nvjpeg_gpu_test)
  if [[ -x "$build/bin/nvjpeg_gpu_test" ]]; then "$build/bin/nvjpeg_gpu_test" >"$out/nvjpeg_gpu_test$name.log" 2>&1; fi
  grep -h "PASSED\|FAILED" "$out"/*_gpu_test$name.log
  ! grep -q "FAILED" "$out"/*_gpu_test$name.log
fi
