#!/usr/bin/env bash
# One device call on a GPU node: build ember, then the simulator's rendering layouts
# (`ember bench sim`) and `ember rl`'s throughput with them (bench/rl_throughput.sh): async
# against sync for GRPO and PPO, and the rollout batcher's B_max x T_max table.
#
#   SRC=.prev/wt25 bash .prev/wt25/bench/sim_rl_h200.sh      (carry .deps, .gl and the tree)
#
# Environment: SRC (the tree, default the repo), SIM_ENVS="1 16 32" SIM_SECONDS=2,
#   RL_PARTS="grpo ppo table" (which rl runs), ITERATIONS=5, and rl_throughput.sh's variables
#   (defaults below: tiny policy at 64 px, 16 workers x 4 envs, micro-batches of 64 chunks).
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
bash "$root/bench/gpu_build.sh" ember || exit 1
echo "build: $(( $(date +%s) - start )) s"
ember="$src/build-gpu/bin/ember"
vendor=/usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json
[[ -z "${__EGL_VENDOR_LIBRARY_FILENAMES:-}" && -f $vendor ]] && export __EGL_VENDOR_LIBRARY_FILENAMES=$vendor
nproc; nvidia-smi -L

sim_args=()
for n in ${SIM_ENVS:-1 16 32}; do sim_args+=(--n_envs "$n"); done
"$ember" bench sim --renderer egl "${sim_args[@]}" --threads 16 --seconds "${SIM_SECONDS:-2}" \
  --layout thread_per_view --layout thread --layout process 2>&1 | tee "$out/sim.jsonl"
echo "sim done: $(( $(date +%s) - start )) s"

export EMBER="$ember" DEVICE=cuda RENDERER=egl
: "${POLICY:=--policy.preset tiny --policy.image_size 64}" "${ITERATIONS:=5}" "${WORKERS:=16}" "${ENVS:=4}" \
  "${N_GROUPS:=16}" "${GROUP:=4}" "${EPISODE:=40}" "${BATCH:=64}" "${TIMEOUT:=5}"
export POLICY ITERATIONS WORKERS ENVS N_GROUPS GROUP EPISODE BATCH TIMEOUT
for part in ${RL_PARTS:-grpo ppo table}; do
  case "$part" in
    grpo) NAME_PREFIX=grpo_ EXTRA="--rl.micro_batch ${MICRO:-64} ${RL_EXTRA:-}" PART=modes bash "$root/bench/rl_throughput.sh" ;;
    ppo) NAME_PREFIX=ppo_ EXTRA="--rl.algo ppo --rl.micro_batch ${MICRO:-64} ${RL_EXTRA:-}" PART=modes bash "$root/bench/rl_throughput.sh" ;;
    table) NAME_PREFIX=grpo_ EXTRA="--rl.micro_batch ${MICRO:-64} ${RL_EXTRA:-}" PART=batcher BATCHES="${BATCHES:-16 64}" \
             TIMEOUTS="${TIMEOUTS:-1 10}" ITERATIONS=3 bash "$root/bench/rl_throughput.sh" ;;
  esac
  echo "rl $part done: $(( $(date +%s) - start )) s"
done
