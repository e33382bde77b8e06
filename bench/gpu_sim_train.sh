#!/usr/bin/env bash
# On the H200 machine: collect expert demonstrations of the ember10 suite (EGL, PNG
# cameras: no FFmpeg there), train a policy on them for a bounded time, evaluate it closed loop.
# Defaults: 128 px cameras, 20 episodes per task; train: small, batch 128, vision at 112 px.
#   bash bench/gpu_sim_train.sh bench|collect|train|eval
# bench: `ember bench sim` with EGL on 1, 4 and 16 threads, each also with serialized rendering.
# Work files in ${WORK:-/tmp/ember-sim}; logs and small results in ${OUT:-/tmp/ember-out}.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
ember="$root/build-gpu/bin/ember"
work="${WORK:-/tmp/ember-sim}"
out="${OUT:-/tmp/ember-out}"
mkdir -p "$work" "$out"
case "${1:?bench|collect|train|eval}" in
  bench)
    "$ember" bench sim --renderer egl --n_envs 1 --n_envs 4 --n_envs 16 --seconds 3 2>&1 | tee "$out/bench_sim_egl.jsonl" ;;
  collect)
    rm -rf "$work/data"
    "$ember" sim collect --suite ember10 --episodes_per_task "${EPISODES:-20}" --output_dir "$work/data" \
      --image_size "${IMAGE:-128}" --n_envs 16 --renderer egl --camera_dtype image 2>&1 | tail -15 | tee "$out/collect.log"
    "$ember" data check "$work/data" 2>&1 | tail -3 | tee -a "$out/collect.log" ;;
  train)
    rm -rf "$work/${RUN:-train}"
    # stopped after TRAIN_SECONDS at the latest; checkpoints every SAVE steps keep the work.
    # The vision tower reads VISION px (112: 8x8 patches of 14 per camera)
    timeout "${TRAIN_SECONDS:-300}" "$ember" train --dataset.root="$work/data" --output_dir="$work/${RUN:-train}" --device=cuda \
      --policy.preset="${PRESET:-small}" --policy.horizon="${HORIZON:-10}" --dataset.image_size="${VISION:-112}" \
      --steps="${STEPS:-6000}" --batch_size="${BATCH:-128}" --optimizer.lr="${LR:-3e-4}" --scheduler.warmup_steps=200 \
      --log_freq="${LOG:-100}" --save_freq="${SAVE:-1000}" --num_workers=12 ${TRAIN_EXTRA:-} \
      2>&1 | tail -40 | tee "$out/${RUN:-train}.log" || echo "train stopped (status $?)" | tee -a "$out/${RUN:-train}.log"
    cp "$work/${RUN:-train}/metrics.jsonl" "$out/${RUN:-train}_metrics.jsonl" ;;
  eval)
    ev="$work/eval_${RUN:-train}"
    rm -rf "$ev"
    "$ember" eval --checkpoint "$work/${RUN:-train}" --suite ember10 --trials "${TRIALS:-50}" --n_envs "${N_ENVS:-50}" --replan_steps "${REPLAN:-5}" \
      --image_size "${IMAGE:-128}" --renderer egl --device cuda --output_dir "$ev" 2>&1 | tail -20 | tee "$out/eval_${RUN:-train}.txt"
    cp "$ev/eval.json" "$out/eval_${RUN:-train}.json"
    ls "$ev"/videos | head -30 > "$out/eval_${RUN:-train}_videos.txt" ;;
esac
