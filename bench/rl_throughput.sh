#!/usr/bin/env bash
# `ember rl` throughput, async against sync in one run on the same machine and policy, and the
# rollout batcher's B_max x T_max table (async). Each run is ITERATIONS optimizer steps; the
# figures are the means over the steps after the first (the warm-up).
#
#   bash bench/rl_throughput.sh            # both parts
#   PART=modes|sync|async|batcher bash bench/rl_throughput.sh   (modes: sync, then async)
# Environment:
#   EMBER=build/bin/ember  POLICY="--policy.preset tiny --policy.image_size 32"  (or --checkpoint DIR)
#   DEVICE=cpu RENDERER=auto ITERATIONS=6 WORKERS=2 ENVS=4 N_GROUPS=4 GROUP=4 EPISODE=40
#   REPLAN=5 BATCH=8 TIMEOUT=5 BATCHES="1 4 8" TIMEOUTS="1 10"  EXTRA (more ember rl flags)
#   NAME_PREFIX (before each run's name, e.g. ppo_)  RUN_TIMEOUT (seconds a run may take, default 600)
# Writes under $OUT (default /tmp/ember-out): rl_<run>.log, rl_<run>_metrics.jsonl and
# rl_throughput.jsonl (one summary line per run).
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
ember="${EMBER:-$root/build/bin/ember}"
out="${OUT:-/tmp/ember-out}"
work="$(mktemp -d)"
mkdir -p "$out"
: "${POLICY:=--policy.preset tiny --policy.image_size 32}" "${DEVICE:=cpu}" "${RENDERER:=auto}" "${ITERATIONS:=6}"
: "${WORKERS:=2}" "${ENVS:=4}" "${N_GROUPS:=4}" "${GROUP:=4}" "${EPISODE:=40}" "${REPLAN:=5}" "${BATCH:=8}" "${TIMEOUT:=5}"
: "${BATCHES:=1 4 8}" "${TIMEOUTS:=1 10}" "${EXTRA:=}" "${PART:=all}"

run() {  # name, then extra flags
  local name="${NAME_PREFIX:-}$1"; shift
  ((${RUN_TIMEOUT:-600} >= 10)) || { echo "rl $name skipped: RUN_TIMEOUT=${RUN_TIMEOUT} s left"; return 1; }
  # shellcheck disable=SC2086
  timeout "${RUN_TIMEOUT:-600}" "$ember" rl $POLICY --output_dir "$work/$name" --device "$DEVICE" --renderer "$RENDERER" --suite easy --seed 0 \
    --rl.iterations "$ITERATIONS" --rl.env_workers "$WORKERS" --rl.envs_per_worker "$ENVS" --rl.groups_per_step "$N_GROUPS" \
    --rl.group_size "$GROUP" --rl.max_episode_steps "$EPISODE" --rl.replan_steps "$REPLAN" --rl.shaping 10 $EXTRA "$@" \
    >"$out/rl_$name.log" 2>&1 || { echo "rl $name failed (see $out/rl_$name.log)"; return 1; }
  cp "$work/$name/metrics.jsonl" "$out/rl_${name}_metrics.jsonl"
  python3 - "$name" "$work/$name/metrics.jsonl" "$EXTRA $*" >>"$out/rl_throughput.jsonl" <<'PY'
import json, sys
name, path, flags = sys.argv[1], sys.argv[2], sys.argv[3]
rows = [json.loads(l) for l in open(path)][1:]
keys = ["env_steps_per_s", "samples_per_s", "env_busy", "rollout_busy", "learner_busy", "staleness", "wall_s", "return", "success_rate"]
mean = {k: round(sum(r[k] for r in rows) / len(rows), 4) for k in keys}
print(json.dumps({"run": name, "flags": flags, "steps_averaged": len(rows), **mean}))
PY
  tail -n 1 "$out/rl_throughput.jsonl"
}

if [[ "$PART" == all || "$PART" == modes || "$PART" == sync ]]; then
  run sync --rl.mode sync --rl.max_batch "$BATCH" --rl.batch_timeout_ms "$TIMEOUT"
fi
if [[ "$PART" == all || "$PART" == modes || "$PART" == async ]]; then
  run async --rl.mode async --rl.max_batch "$BATCH" --rl.batch_timeout_ms "$TIMEOUT"
fi
if [[ "$PART" == all || "$PART" == batcher ]]; then
  for b in $BATCHES; do
    for t in $TIMEOUTS; do run "async_b${b}_t${t}" --rl.mode async --rl.max_batch "$b" --rl.batch_timeout_ms "$t"; done
  done
fi
rm -rf "$work"
