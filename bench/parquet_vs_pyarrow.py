#!/usr/bin/env python3
"""Side-by-side decode speed: `ember bench parquet` vs pyarrow, both single-threaded, same files.

  python3 bench/parquet_vs_pyarrow.py --ember build/bin/ember FILE... [--out bench/results/X.jsonl]

pyarrow decodes with pq.read_table(path, use_threads=False) into Arrow arrays (no conversion
to Python objects), which is what ember's reader does into its own columns. Each side is
repeated until it has run at least --min_seconds and --min_repeats; medians are compared.
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


def pyarrow_bench(files, min_seconds, min_repeats):
    for f in files:  # warm the page cache
        pq.read_table(f, use_threads=False)
    times, rows = [], 0
    while len(times) < min_repeats or sum(times) < min_seconds:
        t0 = time.perf_counter()
        rows = 0
        for f in files:
            rows += pq.read_table(f, use_threads=False).num_rows
        times.append(time.perf_counter() - t0)
    return statistics.median(times), min(times), rows, len(times)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ember", required=True)
    ap.add_argument("--min_seconds", type=float, default=2.0)
    ap.add_argument("--min_repeats", type=int, default=10)
    ap.add_argument("--out", help="append the JSON lines to this file")
    ap.add_argument("files", nargs="+")
    a = ap.parse_args()

    e = subprocess.run([a.ember, "bench", "parquet", *a.files, "--min_seconds", str(a.min_seconds),
                        "--min_repeats", str(a.min_repeats)], capture_output=True, text=True, check=True)
    ember = json.loads(e.stdout.strip().splitlines()[-1])
    med, best, rows, reps = pyarrow_bench(a.files, a.min_seconds, a.min_repeats)
    nbytes = sum(os.path.getsize(f) for f in a.files)
    date = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    ember["date"] = date
    pa = {"bench": "parquet", "reader": f"pyarrow {pyarrow.__version__}", "threads": 1, "device": ember["device"],
          "files": len(a.files), "bytes": nbytes, "rows": rows, "repeats": reps, "median_s": med, "best_s": best,
          "mb_per_s": nbytes / 1e6 / med, "rows_per_s": rows / med, "date": date}
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
