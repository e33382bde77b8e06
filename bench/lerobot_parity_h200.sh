#!/usr/bin/env bash
# ember's pi0.5 against LeRobot 0.6.1's own PI05Policy at pi0.5's real shapes on one GPU
# (issue 21): LeRobot writes a policy directory with random weights and its float32 and bf16
# outputs (tests/python/lerobot_pi05_reference.py --full-size), while ember builds; then
# lerobot_pi05_gpu_test imports that directory and compares ember's loss and sample_actions in
# both attention layouts, float32 and both bf16 modes.
#
#   bash bench/lerobot_parity_h200.sh
#
# Needs: a GPU machine whose python3 holds torch 2.11 and transformers 5 (the project's H200
# image), and LeRobot 0.6.1 with the pure-Python packages that image lacks, carried as wheels in
# .whl/ (device tool carry [".deps", ".whl"]), made on the development machine with
#   python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
#     --platform manylinux_2_28_x86_64 -d .whl lerobot==0.6.1 draccus mergedeep gymnasium farama-notifications toml \
#     transformers==5.5.4 huggingface_hub==1.33.0 tokenizers==0.22.2 safetensors==0.8.0
# Device-time cost: about 5 minutes on nvidia-h200 (the build, ~3.6e9 random weights drawn and
# 7 GB written by LeRobot, two ember runs of each layout).
# TRAIN=1 then fine-tunes from that directory on LIBERO-like data (`ember train --policy.path`,
# bf16 parameters, batch 16, STEPS=60) beside the same run from random initialisation
# (--policy.preset=pi05), metrics under $OUT as import.jsonl and random.jsonl: the import should
# change nothing on the hot path. PARITY=0 skips the parity test. About 2 more minutes.
# EMBER_BIN=DIR (with PARITY=0): ember and libero_like_tool from DIR (bench/node_wrap.sh's
# wrappers), no build on the node.
# Writes reference.log, build logs and lerobot_pi05_gpu_test.log under $OUT.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="${OUT:-/tmp/ember-out}"
ref="${REF_DIR:-/tmp/lerobot-pi05-full}"
mkdir -p "$out"
cd "$root"
[[ -z "${EMBER_BIN:-}" || "${PARITY:-1}" == 0 ]] || { echo "error: EMBER_BIN needs PARITY=0 (the parity test is built on the node)" >&2; exit 2; }
ls .whl/lerobot-0.6.1-*.whl >/dev/null 2>&1 || { echo "error: .whl/lerobot-0.6.1-*.whl missing (see this script's header)" >&2; exit 2; }
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/lerobot-site .whl/*.whl || exit 2
# LeRobot 0.6.1 needs transformers >= 5.4, < 5.6 (its pi extra): fail here, before the build
PYTHONPATH=/tmp/lerobot-site python3 -c "import transformers, lerobot; from lerobot.policies.pi05 import modeling_pi05; \
from transformers.masking_utils import create_causal_mask; import inspect; \
assert 'cache_position' in inspect.signature(create_causal_mask).parameters, transformers.__version__; \
print('lerobot', lerobot.__version__, 'transformers', transformers.__version__)" || exit 2
(PYTHONPATH=/tmp/lerobot-site HF_HUB_OFFLINE=1 PYTHONUNBUFFERED=1 \
   python3 tests/python/lerobot_pi05_reference.py --full-size "$ref" >"$out/reference.log" 2>&1
 echo $? >"$out/reference.rc") &
bin="${EMBER_BIN:-build-gpu/bin}" build_rc=0
if [[ -z "${EMBER_BIN:-}" ]]; then
  targets=(lerobot_pi05_gpu_test)
  [[ "${TRAIN:-0}" == 1 ]] && targets+=(ember libero_like_tool)
  bash bench/gpu_build.sh "${targets[@]}" >"$out/gpu_build.out" 2>&1 || build_rc=$?
fi
wait
echo "reference: exit $(cat "$out/reference.rc")"; tail -n 12 "$out/reference.log"
((build_rc == 0)) || { echo "error: the build failed, see $out/build.log" >&2; exit 1; }
grep -q '^skipped' "$out/reference.log" && { echo "error: LeRobot did not run (reference.log)" >&2; exit 1; }
[[ "${PARITY:-1}" == 1 ]] && EMBER_LEROBOT_FULL_SIZE="$ref" build-gpu/bin/lerobot_pi05_gpu_test 2>&1 | tee "$out/lerobot_pi05_gpu_test.log"
[[ "${TRAIN:-0}" == 1 ]] || exit 0
data=/tmp/lerobot-parity-data
rm -rf "$data" /tmp/lerobot-parity-tok /tmp/lerobot-parity-import /tmp/lerobot-parity-random
"$bin/libero_like_tool" "$data" --episodes 40 --frames 50 >"$out/train.log" 2>&1 || exit 1
# a tokenizer for the imported policy (no PaliGemma model here): the one a 1-step tiny run trains
"$bin/ember" train --dataset.root="$data" --output_dir=/tmp/lerobot-parity-tok --policy.preset=tiny --device=cpu \
  --steps=1 --batch_size=2 >>"$out/train.log" 2>&1 || exit 1
tok="$(find /tmp/lerobot-parity-tok -name tokenizer.model | head -n 1)"
common=(--dataset.root="$data" --policy.param_dtype=bf16 --device=cuda --steps="${STEPS:-60}" --batch_size=16
        --log_freq=10 --seed=0 --save_checkpoint=false)
"$bin/ember" train "${common[@]}" --output_dir=/tmp/lerobot-parity-import --policy.path="$ref" --policy.tokenizer_path="$tok" \
  --rename_map='{"observation.images.image": "observation.images.base", "observation.images.wrist_image": "observation.images.wrist"}' \
  >>"$out/train.log" 2>&1
cp /tmp/lerobot-parity-import/metrics.jsonl "$out/import.jsonl"
"$bin/ember" train "${common[@]}" --output_dir=/tmp/lerobot-parity-random --policy.preset=pi05 >>"$out/train.log" 2>&1
cp /tmp/lerobot-parity-random/metrics.jsonl "$out/random.jsonl"
tail -n 2 "$out/import.jsonl" "$out/random.jsonl"
