#!/usr/bin/env bash
# One device call on a GPU node: build ember, then the simulator's rendering layouts
# (`ember bench sim`) and `ember rl`'s throughput with them (bench/rl_throughput.sh): async
# against sync for GRPO and PPO, and the rollout batcher's B_max x T_max table.
#
#   SRC=.prev/wt25 bash .prev/wt25/bench/sim_rl_h200.sh      (carry .deps, .gl and the tree)
#
# Environment: SRC (the tree, default the repo), EMBER_BIN (a folder of bench/node_wrap.sh's
#   wrappers: no build on the node), SIM_ENVS="1 16 32" (empty: no sim bench)
#   SIM_SECONDS=2, RL_PARTS="grpo ppo table" (which rl runs, in order; also: nostream = GRPO
#   async with the rollout on the default stream, pi05 = the pi05 preset sync and async with
#   PI05_* sizes below), ITERATIONS=5, DEADLINE_S (no part starts after this many seconds of the
#   call; a running one is cut at it), and rl_throughput.sh's variables (defaults below: tiny
#   policy at 64 px, 16 workers x 4 envs, micro-batches of 64 chunks).
# Writes under $OUT (at most 8 files come back from a device call): sim.jsonl,
# rl_throughput.jsonl, and raw.tgz (configure/build logs, every run's log and metrics.jsonl).
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
src="$(cd "${SRC:-$root}" && pwd)"
final="${OUT:-/tmp/ember-out}"
out="$final/raw"
mkdir -p "$out"
export OUT="$out"
pack() { cp "$out/sim.jsonl" "$out/rl_throughput.jsonl" "$final/" 2>/dev/null; tar czf "$final/raw.tgz" -C "$out" . && rm -rf "$out"; }
trap pack EXIT
start=$(date +%s)
if [[ -n "${EMBER_BIN:-}" ]]; then
  ember="$EMBER_BIN/ember"
else
  SRC="$src" bash "$root/bench/gpu_build.sh" ember || exit 1
  echo "build: $(( $(date +%s) - start )) s"
  ember="$src/build-gpu/bin/ember"
fi
vendor=/usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json
[[ -z "${__EGL_VENDOR_LIBRARY_FILENAMES:-}" && -f $vendor ]] && export __EGL_VENDOR_LIBRARY_FILENAMES=$vendor
nproc; nvidia-smi -L

sim_args=()
for n in ${SIM_ENVS-1 16 32}; do sim_args+=(--n_envs "$n"); done
if ((${#sim_args[@]})); then
  "$ember" bench sim --renderer egl "${sim_args[@]}" --threads 16 --seconds "${SIM_SECONDS:-2}" \
    --layout thread_per_view --layout thread --layout process 2>&1 | tee "$out/sim.jsonl"
  echo "sim done: $(( $(date +%s) - start )) s"
fi

export EMBER="$ember" DEVICE=cuda RENDERER=egl
: "${POLICY:=--policy.preset tiny --policy.image_size 64}" "${ITERATIONS:=5}" "${WORKERS:=16}" "${ENVS:=4}" \
  "${N_GROUPS:=16}" "${GROUP:=4}" "${EPISODE:=40}" "${BATCH:=64}" "${TIMEOUT:=5}"
export POLICY ITERATIONS WORKERS ENVS N_GROUPS GROUP EPISODE BATCH TIMEOUT
deadline=${DEADLINE_S:-100000}
for part in ${RL_PARTS:-grpo ppo table}; do
  left=$((deadline - ($(date +%s) - start)))
  ((left > 10)) || { echo "rl $part skipped: DEADLINE_S=$deadline reached"; continue; }
  export RUN_TIMEOUT=$left
  case "$part" in
    grpo) NAME_PREFIX=grpo_ EXTRA="--rl.micro_batch ${MICRO:-64} ${RL_EXTRA:-}" PART=modes bash "$root/bench/rl_throughput.sh" ;;
    nostream) NAME_PREFIX=grpo_nostream_ EXTRA="--rl.micro_batch ${MICRO:-64} --rl.rollout_stream false ${RL_EXTRA:-}" PART=async \
                bash "$root/bench/rl_throughput.sh" ;;
    pi05) for m in sync async; do
            NAME_PREFIX=pi05_ POLICY="--policy.preset pi05 --policy.image_size ${PI05_IMAGE:-224}" ITERATIONS=${PI05_ITERATIONS:-3} \
              WORKERS=${PI05_WORKERS:-8} ENVS=${PI05_ENVS:-2} N_GROUPS=${PI05_GROUPS:-4} GROUP=4 EPISODE=${PI05_EPISODE:-20} \
              BATCH=${PI05_BATCH:-16} EXTRA="--rl.micro_batch ${PI05_MICRO:-16} ${RL_EXTRA:-}" PART=$m RUN_TIMEOUT=$((deadline - ($(date +%s) - start))) \
              bash "$root/bench/rl_throughput.sh"
          done ;;
    ppo) NAME_PREFIX=ppo_ EXTRA="--rl.algo ppo --rl.micro_batch ${MICRO:-64} ${RL_EXTRA:-}" PART=modes bash "$root/bench/rl_throughput.sh" ;;
    table) NAME_PREFIX=grpo_ EXTRA="--rl.micro_batch ${MICRO:-64} ${RL_EXTRA:-}" PART=batcher BATCHES="${BATCHES:-16 64}" \
             TIMEOUTS="${TIMEOUTS:-1 10}" ITERATIONS=3 bash "$root/bench/rl_throughput.sh" ;;
  esac
  echo "rl $part done: $(( $(date +%s) - start )) s"
done
