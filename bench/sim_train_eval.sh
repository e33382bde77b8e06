#!/usr/bin/env bash
# Closed loop in simulation on a GPU node: collect scripted-expert demonstrations of the ember10
# suite (EGL rendering, PNG cameras: the GPU nodes have no FFmpeg), train a policy on them for a
# bounded time, evaluate it on the suite's committed initial states: success per task.
#
#   bash bench/sim_train_eval.sh collect|train|eval|all|speed|rl
#
#   collect  ember sim collect --suite ember10 --episodes_per_task EPISODES --image_size IMAGE
#            --n_envs 16 --renderer egl --camera_dtype image, then ember data check
#   train    ember train (POLICY_TYPE, PRESET, batch BATCH, horizon HORIZON, vision tower at VISION px),
#            stopped after TRAIN_SECONDS at the latest; a checkpoint every SAVE steps keeps the work
#   eval     ember eval --checkpoint (the run's latest) --suite ember10 --trials TRIALS
#            --n_envs N_ENVS --replan_steps REPLAN --image_size IMAGE --renderer egl
#   all      the three in turn (longer than one device call at the defaults: run them apart, or
#            give DEADLINE_S: then training gets at most what collect and EVAL_S leave of it, as in
#            bench/results/groot_sim_h200_2026-12-01.md)
#   speed    ember bench sim --renderer egl --n_envs 1 --n_envs 4 --n_envs 16 (env steps/s)
#   rl       ember rl (GRPO, RL_MODE) on ember10 from the run's latest checkpoint (RUN) into RL_RUN,
#            cameras at IMAGE px as in eval, stopped after RL_SECONDS at the latest (a checkpoint
#            every RL_SAVE steps keeps the work; RL_RESUME=1 continues RL_RUN; every RL_EVAL_FREQ
#            steps, and at the start and end, RL_EVAL_TRIALS trials per task in closed loop:
#            RL_RUN_eval.jsonl, the success curve); then
#            `RUN=RL_RUN bash bench/sim_train_eval.sh eval` evaluates it like the supervised run
# Environment (defaults are the recipe of 2026-11-30, 71.4 % average success):
#   EPISODES=50 IMAGE=128 POLICY_TYPE=pi05 PRESET=small BATCH=128 HORIZON=10 VISION=112 STEPS=6000
#   LR=3e-4 SAVE=1000 WORKERS=12 TRAIN_SECONDS=540 TRIALS=50 N_ENVS=50 REPLAN=5 RUN=train (the run's name)
#   POLICY_TYPE    pi05 | groot (--policy.type; groot's small preset is docs/groot.md's)
#   GROOT_FLAGS    groot only, before TRAIN_EXTRA: default the from-scratch set (docs/groot.md,
#                  bench/results/groot_scratch_ember10_h200_2026-12-03.md: 67.6 % with small's
#                  pixel-shuffle layout; N1.5's own layout 50.2 %, ..._2026-12-05): the backbone
#                  trained, torch.nn.Linear's init in the embodiment heads, pi0.5's normalisation,
#                  prompt and loss mask; GROOT_FLAGS= (empty) trains with N1.5's defaults
#   TRAIN_EXTRA    more `ember train` flags, e.g. --dataset.image_transforms.enable=true
#   EVAL_EXTRA     more `ember eval` flags, e.g. --cuda_graphs false; EVAL_TAG: a suffix of the
#                  evaluation's name (eval_RUN<TAG>), to keep two evaluations of one run apart
#   DEADLINE_S     `all` only: seconds for the three stages together; TRAIN_SECONDS shrinks to
#                  DEADLINE_S less collect's time less EVAL_S (default 150) where that is less
#   rl: RL_RUN=rl RL_SECONDS=480 RL_ITERS=200 RL_SAVE=5 RL_GROUPS=16 RL_GROUP=8 RL_WORKERS=16
#   RL_ENVS=8 RL_LR=0 (ember rl's default by the policy's size: 1e-5 for small) RL_MODE=auto (ember rl's: sync on one GPU) RL_ALGO=grpo RL_NOISE_METHOD=sde RL_NOISE_LEVEL=0.5 (sde)
#   RL_NOISE=0.2 (every_step) RL_DENOISE=4 (0: the policy's steps) RL_MICRO=128 RL_KL_EVERY=4 RL_EPOCHS=1
#   RL_LR_WARMUP=-1 (steps of the learning rate's linear warm-up; -1: ember rl's default, 10 for small)
#   RL_EVAL_FREQ=10 RL_EVAL_TRIALS=10 RL_TARGET_KL=0 (off; > 0: PPO's early stop of the epochs)
#   RL_TRAIN=auto (ember rl's default: expert for small, the prefix frozen; all: the whole policy)
#   (RL_LR: 1e-4 made `small` worse, 77 -> 47 % in 50 steps, though it lifted tiny on `easy` on
#   the CPU; RL_EPOCHS=4 at lr 2e-5 learned as fast as lr 1e-4 with one pass did, on the CPU
#   (rl_epochs_cpu_2026-12-02.md), but on ember10 also made `small` worse, 83.4 -> 71.6 % in 30
#   steps (the whole policy; RL_TRAIN=expert: 80.8 % after 54 steps, and a 1.21x faster sync
#   step: sim_rl_ember10_h200_2026-12-02e.md); RL_MODE: sync ran 1.3-1.6x the env steps/s of async at these flags, the two halves
#   sharing one GPU; RL_MICRO and RL_KL_EVERY make the learner's step cheaper:
#   bench/results/sim_rl_ember10_h200_2026-12-02c.md, ..._2026-12-02d.md)
#   RL_EXTRA (more `ember rl` flags)
#   DEVICE=cuda RENDERER=egl  (DEVICE=cpu RENDERER=osmesa or none: a quick check of the stages on a
#                  machine without a GPU, with small EPISODES, STEPS, TRIALS)
#   WORK=/tmp/ember-sim  dataset, runs, evaluations (on the node)
#   EMBER          the binary (default build-gpu/bin/ember: bench/gpu_build.sh with .gl carried; or
#                  one built elsewhere, as groot_sim_h200_2026-12-01.md says how)
#   EMBER_SIM_ASSETS  assets/sim of the tree, where the binary was built in another place
# Device-time cost on one H200, 2026-11-30: collect 195 s (500 episodes, 18701 frames), train
# TRAIN_SECONDS (540 s), eval 137 s (500 trials); 2026-12-01 (nvidia-h200, process render
# layout): collect 78 s, eval of 200 trials 19-31 s; 2026-12-02 (nvidia-h200): collect 85 s, train
# all 6000 steps in ~410 s, eval of 500 trials 56 s (bench/results/sim_rl_ember10_h200_2026-12-02.md);
# rl: about 17.7 s a sync step at the defaults, 20 s an in-loop evaluation (..._2026-12-02d.md).
# Each phase fits one 10-minute call; the
# phases share WORK, so run them on the same warm machine.
# Writes under $OUT (default /tmp/ember-out), as the stages run: collect.log, RUN.log, RUN_metrics.jsonl,
# eval_RUN.txt (the success table), eval_RUN.json, eval_RUN_videos.txt (the rollout files,
# which stay on the node under WORK), bench_sim_egl.jsonl.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
ember="${EMBER:-$root/build-gpu/bin/ember}"
work="${WORK:-/tmp/ember-sim}"
out="${OUT:-/tmp/ember-out}"
export NCCL_NVLS_ENABLE=0  # NVLink multicast stays off on the shared machines (device README)
run="${RUN:-train}"
image="${IMAGE:-128}"
device="${DEVICE:-cuda}"
renderer="${RENDERER:-egl}"
mkdir -p "$work" "$out"
[[ -x "$ember" ]] || { echo "sim_train_eval.sh: $ember: not built (bench/gpu_build.sh)" >&2; exit 2; }
# the NVIDIA driver's EGL vendor file, where the node has it there (the device README)
vendor=/usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json
[[ -z "${__EGL_VENDOR_LIBRARY_FILENAMES:-}" && -f $vendor ]] && export __EGL_VENDOR_LIBRARY_FILENAMES=$vendor

collect() {
  rm -rf "$work/data"
  "$ember" sim collect --suite ember10 --episodes_per_task "${EPISODES:-50}" --output_dir "$work/data" \
    --image_size "$image" --n_envs 16 --renderer "$renderer" --camera_dtype image 2>&1 | tee "$out/collect.log" | tail -n 15
  "$ember" data check "$work/data" 2>&1 | tail -n 3 | tee -a "$out/collect.log"
}

train() {
  rm -rf "${work:?}/$run"
  local groot=()
  [[ "${POLICY_TYPE:-pi05}" == groot ]] && read -ra groot <<<"${GROOT_FLAGS---policy.tune_backbone=true --policy.head_init=torch --policy.normalization=auto --policy.state_in_prompt=true --policy.loss_on_padded_steps=false}"
  timeout -k 120 "${TRAIN_SECONDS:-540}" "$ember" train --dataset.root="$work/data" --output_dir="$work/$run" --device="$device" \
    --policy.type="${POLICY_TYPE:-pi05}" --policy.preset="${PRESET:-small}" --policy.horizon="${HORIZON:-10}" --dataset.image_size="${VISION:-112}" \
    --steps="${STEPS:-6000}" --batch_size="${BATCH:-128}" --optimizer.lr="${LR:-3e-4}" --scheduler.warmup_steps=200 \
    --log_freq=100 --save_freq="${SAVE:-1000}" --num_workers="${WORKERS:-12}" "${groot[@]}" ${TRAIN_EXTRA:-} 2>&1 | tee "$out/$run.log" | tail -n 40
  local rc=${PIPESTATUS[0]}
  ((rc == 124)) && echo "train: stopped by TRAIN_SECONDS=${TRAIN_SECONDS:-540} (the step under way was saved; the latest checkpoint is evaluated)" | tee -a "$out/$run.log"
  cp "$work/$run/metrics.jsonl" "$out/${run}_metrics.jsonl"
  ((rc == 0 || rc == 124))
}

evaluate() {
  local name="eval_$run${EVAL_TAG:-}" ev
  ev="$work/$name"
  rm -rf "$ev"
  # shellcheck disable=SC2086  # EVAL_EXTRA: several flags
  "$ember" eval --checkpoint "$work/$run" --suite ember10 --trials "${TRIALS:-50}" --n_envs "${N_ENVS:-50}" \
    --replan_steps "${REPLAN:-5}" --image_size "$image" --renderer "$renderer" --device "$device" --output_dir "$ev" ${EVAL_EXTRA:-} 2>&1 |
    tee "$out/$name.txt" | tail -n 20
  cp "$ev/eval.json" "$out/$name.json"
  ls "$ev/videos" >"$out/${name}_videos.txt"
}

rl() {
  local rl_run="${RL_RUN:-rl}" resume=()
  if [[ "${RL_RESUME:-0}" == 1 ]]; then resume=(--resume); else rm -rf "${work:?}/$rl_run"; fi
  timeout -k 120 "${RL_SECONDS:-480}" "$ember" rl --checkpoint "$work/$run" --output_dir "$work/$rl_run" --suite ember10 \
    --device "$device" --renderer "$renderer" --rl.camera_size "$image" --rl.mode "${RL_MODE:-auto}" --rl.algo "${RL_ALGO:-grpo}" \
    --rl.iterations "${RL_ITERS:-200}" --save_freq "${RL_SAVE:-5}" --rl.groups_per_step "${RL_GROUPS:-16}" \
    --rl.group_size "${RL_GROUP:-8}" --rl.env_workers "${RL_WORKERS:-16}" --rl.envs_per_worker "${RL_ENVS:-8}" \
    --rl.max_batch 64 --rl.batch_timeout_ms 5 --rl.micro_batch "${RL_MICRO:-128}" --rl.kl_every "${RL_KL_EVERY:-4}" --rl.epochs "${RL_EPOCHS:-1}" --rl.target_kl "${RL_TARGET_KL:-0}" --rl.train "${RL_TRAIN:-auto}" --rl.replan_steps "${REPLAN:-5}" \
    --optimizer.lr "${RL_LR:-0}" --rl.lr_warmup "${RL_LR_WARMUP:--1}" --rl.noise_method "${RL_NOISE_METHOD:-sde}" --rl.noise_level "${RL_NOISE_LEVEL:-0.5}" --rl.noise_std "${RL_NOISE:-0.2}" \
    --rl.denoise_steps "${RL_DENOISE:-4}" --eval_freq "${RL_EVAL_FREQ:-10}" \
    --eval.trials "${RL_EVAL_TRIALS:-10}" --eval.n_envs "${N_ENVS:-50}" "${resume[@]}" ${RL_EXTRA:-} 2>&1 |
    tee -a "$out/$rl_run.log" | tail -n 30
  local rc=${PIPESTATUS[0]}
  ((rc == 124)) && echo "rl: stopped by RL_SECONDS=${RL_SECONDS:-480} (the step under way was evaluated and saved)" | tee -a "$out/$rl_run.log"
  cp "$work/$rl_run/metrics.jsonl" "$out/${rl_run}_metrics.jsonl"
  cp "$work/$rl_run/eval.jsonl" "$out/${rl_run}_eval.jsonl" 2>/dev/null
  ((rc == 0 || rc == 124))
}

stage() {  # runs stage $1, printing how long it took
  local t=$SECONDS
  "$1"
  local rc=$?
  echo "sim_train_eval.sh: $1 took $((SECONDS - t)) s (rc $rc)"
  return $rc
}

all() {
  local t0=$SECONDS
  stage collect || return 1
  if [[ -n "${DEADLINE_S:-}" ]]; then
    local left=$((DEADLINE_S - (SECONDS - t0) - ${EVAL_S:-150}))
    ((left >= 60)) || { echo "sim_train_eval.sh: DEADLINE_S=$DEADLINE_S leaves ${left} s for training" >&2; return 1; }
    ((left < ${TRAIN_SECONDS:-540})) && TRAIN_SECONDS=$left
    echo "sim_train_eval.sh: training for at most ${TRAIN_SECONDS:-540} s (DEADLINE_S=$DEADLINE_S, EVAL_S=${EVAL_S:-150})"
  fi
  stage train && stage evaluate
}

case "${1:?usage: bench/sim_train_eval.sh collect|train|eval|all|speed|rl}" in
  collect) collect ;;
  train) train ;;
  eval) evaluate ;;
  all) all ;;
  rl) rl ;;
  speed) "$ember" bench sim --renderer egl --n_envs 1 --n_envs 4 --n_envs 16 --seconds 3 2>&1 | tee "$out/bench_sim_egl.jsonl" ;;
  *) echo "usage: bench/sim_train_eval.sh collect|train|eval|all|speed|rl" >&2; exit 2 ;;
esac
