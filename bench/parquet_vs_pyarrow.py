#!/usr/bin/env python3
"""Side-by-side decode speed: `ember bench parquet` vs pyarrow, both single-threaded, same files.

  python3 bench/parquet_vs_pyarrow.py --ember build/bin/ember FILE... [--out bench/results/X.jsonl]

pyarrow decodes with pq.read_table(path, use_threads=False) into Arrow arrays (no conversion
to Python objects), which is what ember's reader does into its own columns. The two sides run
in alternating rounds (--rounds), so that load from other processes hits both alike; each
round times at least --min_seconds. The medians over all rounds are compared.
Prints one JSON line per reader and one with the ratio.
"""
import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import time

import pyarrow
import pyarrow.parquet as pq


def pyarrow_round(files, min_seconds):
    times, rows = [], 0
    while not times or sum(times) < min_seconds:
        t0 = time.perf_counter()
        rows = 0
        for f in files:
            rows += pq.read_table(f, use_threads=False).num_rows
        times.append(time.perf_counter() - t0)
    return times, rows


def ember_round(ember, files, min_seconds):
    p = subprocess.run([ember, "bench", "parquet", *files, "--min_seconds", str(min_seconds), "--min_repeats", "1"],
                       capture_output=True, text=True, check=True)
    return json.loads(p.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ember", required=True)
    ap.add_argument("--min_seconds", type=float, default=0.5, help="per round and side")
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--out", help="append the JSON lines to this file")
    ap.add_argument("files", nargs="+")
    a = ap.parse_args()

    pyarrow_round(a.files, 0)  # warm the page cache and imports
    ember_times, pa_times, ember, rows = [], [], None, 0
    for _ in range(a.rounds):
        ember = ember_round(a.ember, a.files, a.min_seconds)
        ember_times.append(ember["median_s"])
        t, rows = pyarrow_round(a.files, a.min_seconds)
        pa_times += t
    med, best = statistics.median(pa_times), min(pa_times)
    nbytes = sum(os.path.getsize(f) for f in a.files)
    date = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    ember.update({"rounds": a.rounds, "median_s": statistics.median(ember_times), "best_s": min(ember_times),
                  "date": date})
    ember["mb_per_s"] = nbytes / 1e6 / ember["median_s"]
    ember["rows_per_s"] = ember["rows"] / ember["median_s"]
    pa = {"bench": "parquet", "reader": f"pyarrow {pyarrow.__version__}", "threads": 1, "device": ember["device"],
          "files": len(a.files), "bytes": nbytes, "rows": rows, "repeats": len(pa_times), "median_s": med,
          "best_s": best, "mb_per_s": nbytes / 1e6 / med, "rows_per_s": rows / med, "date": date}
    ratio = {"bench": "parquet", "compare": "ember/pyarrow", "speed_ratio": pa["median_s"] / ember["median_s"],
             "device": ember["device"], "commit": ember["commit"], "python": platform.python_version(),
             "files": [os.path.basename(f) for f in a.files], "date": date}
    lines = [json.dumps(ember), json.dumps(pa), json.dumps(ratio)]
    print("\n".join(lines))
    if a.out:
        with open(a.out, "a") as f:
            f.write("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
