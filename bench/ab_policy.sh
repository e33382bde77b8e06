#!/usr/bin/env bash
# A/B of the policy's training step: `ember bench policy` with arm A and arm B (two builds, or
# two flag sets on one build), alternating, then the ratio B / A of samples/s and MFU per
# stream and attention layout.
#
#   bash bench/ab_policy.sh [STREAM...]          (default: libero community)
#
# Arms (environment):
#   A_EMBER, B_EMBER   the binaries (default: build-gpu/bin/ember for both; for two commits
#                      B_EMBER=.prev/base/build-gpu/bin/ember, built by
#                      `SRC=.prev/base bash bench/gpu_build.sh ember`; see that script)
#   A_FLAGS, B_FLAGS   flags of one arm only, e.g. B_FLAGS="--param_dtype fp32" or
#                      B_FLAGS="--no_warm_shapes" (default: none)
#   FLAGS              flags of both arms (default: --preset pi05 --attention varlen
#                      --device cuda --batch_size 16 --warmup 3 --steps 10 --param_dtype bf16;
#                      drop --attention for the full bench: varlen, padded and their ratio)
#   PAIRS=2            pairs per stream
# On a machine of 2 GPUs each pair runs A and B at the same time, one per GPU and half the
# cores each, and the next pair swaps the GPUs (the same binary measures about 1 % apart on
# the two GPUs of the x2 host). On one GPU the runs alternate A B, B A, ...
# Device-time cost: pi05 runs take about a minute each (model set-up, the warm-up, 10 timed
# steps of ~0.27 s at batch 16); the default (2 streams x 2 pairs) is 8 runs: about 8 minutes
# on one GPU, 4 on two. Not timed exactly; keep one call under the device tool's 10 minutes.
# Writes under $OUT (default /tmp/ember-out): ab_policy.jsonl (each `ember bench policy` line
# with "arm", "pair" and "gpu" added), ab_policy_<stream>_<pair>_<arm>.err; prints one line per
# run and the ratios (bench/policy_summary.py reads the file too).
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="${OUT:-/tmp/ember-out}"
export NCCL_NVLS_ENABLE=0  # NVLink multicast stays off on the shared machines (device README)
mkdir -p "$out"
a_ember="${A_EMBER:-$root/build-gpu/bin/ember}"
b_ember="${B_EMBER:-$root/build-gpu/bin/ember}"
read -r -a common <<<"${FLAGS:---preset pi05 --attention varlen --device cuda --batch_size 16 --warmup 3 --steps 10 --param_dtype bf16}"
read -r -a a_flags <<<"${A_FLAGS:-}"
read -r -a b_flags <<<"${B_FLAGS:-}"
pairs="${PAIRS:-2}"
streams=("$@")
((${#streams[@]})) || streams=(libero community)
for e in "$a_ember" "$b_ember"; do [[ -x "$e" ]] || { echo "ab_policy.sh: $e: not built (bench/gpu_build.sh)" >&2; exit 2; }; done
ngpu="$(nvidia-smi -L 2>/dev/null | wc -l)"
cores="$(nproc)"
: >"$out/ab_policy.jsonl"

# one ARM STREAM PAIR GPU [CORES]: one bench run, its JSON lines tagged and appended
one() {
  local arm=$1 stream=$2 pair=$3 gpu=$4 cpus=${5:-}
  local ember flags
  if [[ $arm == A ]]; then ember=$a_ember flags=("${a_flags[@]}"); else ember=$b_ember flags=("${b_flags[@]}"); fi
  local pin=()
  [[ -n "$cpus" ]] && pin=(taskset -c "$cpus")
  CUDA_VISIBLE_DEVICES=$gpu "${pin[@]}" "$ember" bench policy --stream "$stream" "${common[@]}" "${flags[@]}" \
    2>"$out/ab_policy_${stream}_${pair}_$arm.err" |
    grep '^{' | sed "s|^{|{\"arm\":\"$arm\",\"pair\":$pair,\"gpu\":$gpu,|" >"$out/.ab_${stream}_${pair}_$arm.jsonl"
  [[ -s "$out/.ab_${stream}_${pair}_$arm.jsonl" ]] || { echo "arm $arm, $stream, pair $pair: no result" >&2; tail -n 5 "$out/ab_policy_${stream}_${pair}_$arm.err" >&2; }
}

for stream in "${streams[@]}"; do
  for ((p = 1; p <= pairs; p++)); do
    if ((ngpu >= 2)); then
      half=$((cores / 2))
      ga=$(((p + 1) % 2)) gb=$((p % 2))
      one A "$stream" "$p" $ga "$((ga * half))-$((ga * half + half - 1))" &
      one B "$stream" "$p" $gb "$((gb * half))-$((gb * half + half - 1))" &
      wait
    elif ((p % 2)); then
      one A "$stream" "$p" 0; one B "$stream" "$p" 0
    else
      one B "$stream" "$p" 0; one A "$stream" "$p" 0
    fi
    cat "$out/.ab_${stream}_${p}_A.jsonl" "$out/.ab_${stream}_${p}_B.jsonl" >>"$out/ab_policy.jsonl"
    rm -f "$out/.ab_${stream}_${p}_A.jsonl" "$out/.ab_${stream}_${p}_B.jsonl"
  done
done

# each run, then the ratios B / A: per pair, and of the means over the pairs
python3 - "$out/ab_policy.jsonl" <<'PY'
import json, sys
from collections import defaultdict
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
runs = defaultdict(lambda: defaultdict(dict))  # (stream, attention, bf16|fp8) -> pair -> arm -> row
for r in rows:
    if r.get("bench") == "policy":
        runs[(r["stream"], r["attention"], "fp8" if r.get("fp8") else "bf16")][r["pair"]][r["arm"]] = r
        print(f"pair {r['pair']} arm {r['arm']} gpu {r['gpu']}: {r['stream']} {r['attention']} "
              f"{r['samples_per_s']:.2f} samples/s, MFU {100 * r['mfu']:.1f} %, {r.get('peak_mem_gb', 0):.1f} GB")
    elif r.get("bench") == "policy_ratio":
        flops = f" (FLOP ratio {r['flop_ratio']:.3f})" if "flop_ratio" in r else ""  # fp8/bf16 lines have none
        print(f"pair {r['pair']} arm {r['arm']}: {r['stream']} {r.get('ratio_of', 'varlen/padded')} "
              f"{r['measured_speed_ratio']:.3f}{flops}")
for (stream, attention, precision), pairs in sorted(runs.items()):
    attention = f"{attention} {precision}"
    both = [p for p in pairs.values() if "A" in p and "B" in p]
    if not both:
        print(f"{stream} {attention}: no complete pair")
        continue
    mean = lambda arm, key: sum(p[arm][key] for p in both) / len(both)
    per_pair = " ".join(f"{p['B']['samples_per_s'] / p['A']['samples_per_s']:.4f}" for p in both)
    print(f"{stream} {attention}: samples/s A {mean('A', 'samples_per_s'):.2f} B {mean('B', 'samples_per_s'):.2f} "
          f"ratio B/A {mean('B', 'samples_per_s') / mean('A', 'samples_per_s'):.4f} (pairs: {per_pair}); "
          f"MFU A {100 * mean('A', 'mfu'):.1f} % B {100 * mean('B', 'mfu'):.1f} %")
PY
