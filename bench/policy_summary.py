#!/usr/bin/env python3
"""One line per run of `ember bench policy` JSON lines files (and one per ratio line):

    bench/policy_summary.py FILE.jsonl...

Prints file, stream, attention, parameter dtype, samples/s, MFU, hardware FLOP utilisation, peak
memory, and the step time beside the host's time to queue a step (where reported); for ratio lines the measured varlen/padded speed ratio and the FLOP ratio. Standard
library only.
"""
import json
import os
import sys


def main():
    if len(sys.argv) < 2:
        sys.exit("usage: policy_summary.py FILE.jsonl...")
    for path in sys.argv[1:]:
        name = os.path.basename(path)
        try:
            with open(path) as f:
                lines = [json.loads(l) for l in f if l.strip().startswith("{")]
        except (OSError, ValueError) as e:
            print(f"{name}: unreadable ({e})")
            continue
        if not lines:
            print(f"{name}: no results")
        for r in lines:
            if r.get("bench") == "policy_ratio":
                flops = f" flops {r['flop_ratio']:.3f}" if "flop_ratio" in r else ""  # fp8/bf16 lines have none
                print(f"{name}: {r['stream']} {r.get('ratio_of', '')} ratio measured {r['measured_speed_ratio']:.3f}{flops}")
            elif r.get("bench") == "policy":
                print(f"{name}: {r['stream']} {r['attention']} {r.get('param_dtype', '?')} "
                      f"{r['samples_per_s']:.2f} samples/s mfu {100 * r['mfu']:.1f}% "
                      f"hfu {100 * r['hardware_flops_util']:.1f}% mem {r.get('peak_mem_gb', 0):.1f} GB"
                      + (f" step {1e3 * r['step_time_s']:.1f} ms (host queue {1e3 * r['host_queue_time_s']:.1f} ms)"
                         if "host_queue_time_s" in r else ""))


if __name__ == "__main__":
    main()
