#!/usr/bin/env python3
"""Writes a LeRobot-like data table with pyarrow for the Parquet benchmark.

  python3 bench/make_lerobot_like.py OUT.parquet [--rows N] [--episode_len L]

Columns as LeRobot's recorder writes them (pyarrow defaults: snappy, dictionary, one row
group per episode): observation.state list<float>[14], action list<float>[7], timestamp float,
frame_index/episode_index/index/task_index int64, next.reward float, next.done bool.
"""
import argparse

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--rows", type=int, default=200_000)
    ap.add_argument("--episode_len", type=int, default=400)
    a = ap.parse_args()
    rng = np.random.default_rng(0)
    n = a.rows
    idx = np.arange(n, dtype=np.int64)
    frame = idx % a.episode_len
    ep = idx // a.episode_len

    def fixed_list(width):
        values = pa.array(rng.standard_normal(n * width).astype(np.float32))
        return pa.FixedSizeListArray.from_arrays(values, width)

    table = pa.table({
        "observation.state": fixed_list(14),
        "action": fixed_list(7),
        "timestamp": pa.array((frame / 30.0).astype(np.float32)),
        "frame_index": pa.array(frame),
        "episode_index": pa.array(ep),
        "index": pa.array(idx),
        "task_index": pa.array(ep % 10),
        "next.reward": pa.array(np.zeros(n, dtype=np.float32)),
        "next.done": pa.array(frame == a.episode_len - 1),
    })
    with pq.ParquetWriter(a.out, table.schema) as w:
        for start in range(0, n, a.episode_len):
            w.write_table(table.slice(start, a.episode_len))


if __name__ == "__main__":
    main()
