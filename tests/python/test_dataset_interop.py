#!/usr/bin/env python3
"""pyarrow reads every table of ember-written LeRobot datasets (v3.0 and v2.1) and the values
match what was written.

    test_dataset_interop.py --write-tool build/bin/dataset_write_tool [--keep DIR]

The write tool (tests/tools/dataset_write_tool.cc) writes DIR/v30 and DIR/v21 with ember's
DatasetWriter, plus DIR/expected.json (the values as stored) and DIR/expected_rgb.bin (every
camera image as raw RGB). This script checks, with pyarrow and numpy only: info.json, every
data file (schema, row groups = episodes, values, PNG images decoded here), the episode and
task tables, and the statistics. Prints `N passed, M failed`; exit status 1 if any failed.
"""
import argparse
import json
import os
import struct
import subprocess
import sys
import tempfile
import zlib

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

STANDARD = ["timestamp", "frame_index", "episode_index", "index", "task_index"]
CAMERAS = {"observation.images.top": (24, 32), "observation.images.wrist": (16, 20)}

passed = 0
failed = 0


def check(cond, what):
    global passed, failed
    if cond:
        passed += 1
    else:
        failed += 1
        print(f"FAIL: {what}")


def decode_png(data):
    """Decodes an 8-bit RGB, non-interlaced PNG (what ember writes) to an (h, w, 3) array."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, w, h = 8, b"", None, None
    while pos < len(data):
        (n,) = struct.unpack(">I", data[pos:pos + 4])
        kind, body = data[pos + 4:pos + 8], data[pos + 8:pos + 8 + n]
        pos += 12 + n
        if kind == b"IHDR":
            w, h, depth, color, _, _, interlace = struct.unpack(">IIBBBBB", body)
            assert depth == 8 and color == 2 and interlace == 0, (depth, color, interlace)
        elif kind == b"IDAT":
            idat += body
    raw = zlib.decompress(idat)
    stride = w * 3
    out = np.zeros((h, stride), dtype=np.int32)
    prev = np.zeros(stride, dtype=np.int32)
    for y in range(h):
        f = raw[y * (stride + 1)]
        line = np.frombuffer(raw, dtype=np.uint8, count=stride, offset=y * (stride + 1) + 1).astype(np.int32)
        cur = np.zeros(stride, dtype=np.int32)
        for x in range(stride):
            a = cur[x - 3] if x >= 3 else 0
            b = prev[x]
            c = prev[x - 3] if x >= 3 else 0
            if f == 0:
                p = 0
            elif f == 1:
                p = a
            elif f == 2:
                p = b
            elif f == 3:
                p = (a + b) // 2
            else:  # Paeth
                pa_, pb, pc = abs(b - c), abs(a - c), abs(a + b - 2 * c)
                p = a if pa_ <= pb and pa_ <= pc else (b if pb <= pc else c)
            cur[x] = (line[x] + p) & 0xFF
        out[y] = cur
        prev = cur
    return out.astype(np.uint8).reshape(h, w, 3)


def expected_images(out_dir, expected):
    """(episode, frame, camera) -> (h, w, 3) uint8, from expected_rgb.bin."""
    blob = open(os.path.join(out_dir, "expected_rgb.bin"), "rb").read()
    images, pos = {}, 0
    for e, ep in enumerate(expected["episodes"]):
        for k in range(ep["length"]):
            for cam, (h, w) in CAMERAS.items():
                n = h * w * 3
                images[(e, k, cam)] = np.frombuffer(blob, dtype=np.uint8, count=n, offset=pos).reshape(h, w, 3)
                pos += n
    check(pos == len(blob), "expected_rgb.bin holds exactly the images of expected.json")
    return images


def check_info(root, expected, version):
    info = json.load(open(os.path.join(root, "meta/info.json")))
    total = sum(ep["length"] for ep in expected["episodes"])
    tasks = sorted({ep["task"] for ep in expected["episodes"]})
    check(info["codebase_version"] == version, f"{root}: codebase_version {info['codebase_version']}")
    check(info["total_episodes"] == len(expected["episodes"]), f"{root}: total_episodes")
    check(info["total_frames"] == total, f"{root}: total_frames")
    check(info["total_tasks"] == len(tasks), f"{root}: total_tasks")
    check(info["fps"] == 30 and isinstance(info["fps"], int), f"{root}: fps")
    check(info["splits"] == {"train": f"0:{len(expected['episodes'])}"}, f"{root}: splits")
    keys = [f["key"] for f in expected["features"]] + STANDARD
    check(list(info["features"]) == keys, f"{root}: feature order {list(info['features'])}")
    for f in expected["features"]:
        got = info["features"][f["key"]]
        check(got["dtype"] == f["dtype"] and got["shape"] == f["shape"], f"{root}: feature {f['key']} {got}")
    for k in STANDARD:
        check(info["features"][k]["shape"] == [1], f"{root}: standard feature {k}")
    if version == "v3.0":
        for k in ["chunks_size", "data_files_size_in_mb", "video_files_size_in_mb", "data_path", "video_path"]:
            check(k in info, f"{root}: info.json has {k}")
    else:
        check(info["total_chunks"] == 1 and info["total_videos"] == 0, f"{root}: total_chunks/total_videos")
    return info


def data_files(root):
    files = []
    for d, _, names in os.walk(os.path.join(root, "data")):
        files += [os.path.join(d, n) for n in names if n.endswith(".parquet")]
    return sorted(files)


def check_schema(path, schema):
    want = {
        "observation.state": pa.list_(pa.float32()),
        "action": pa.list_(pa.float32()),
        "next.reward": pa.float32(),
        "next.done": pa.bool_(),
        "observation.step": pa.int64(),
        "timestamp": pa.float32(),
    }
    for k in ["frame_index", "episode_index", "index", "task_index"]:
        want[k] = pa.int64()
    for cam in CAMERAS:
        want[cam] = pa.struct([("bytes", pa.binary()), ("path", pa.string())])
    for name, t in want.items():
        got = schema.field(name).type if name in schema.names else None
        check(got is not None and got.equals(t), f"{path}: column {name} is {got}, expected {t}")


def check_data(root, expected, images, tasks):
    """Every data file: schema, one row group per episode, the rows' values and images."""
    rows = []  # (table of one row group, file, group)
    for path in data_files(root):
        f = pq.ParquetFile(path)
        check_schema(path, f.schema_arrow)
        for g in range(f.num_row_groups):
            rows.append(f.read_row_group(g))
    eps = expected["episodes"]
    check(len(rows) == len(eps), f"{root}: {len(rows)} row groups for {len(eps)} episodes")
    index = 0
    for e, (t, ep) in enumerate(zip(rows, eps)):
        d = t.to_pydict()
        n = ep["length"]
        check(t.num_rows == n, f"{root}: episode {e} row group has {t.num_rows} rows, expected {n}")
        check(d["episode_index"] == [e] * n, f"{root}: episode {e} episode_index")
        check(d["frame_index"] == list(range(n)), f"{root}: episode {e} frame_index")
        check(d["index"] == list(range(index, index + n)), f"{root}: episode {e} index")
        ts = np.array(d["timestamp"], dtype=np.float32)
        check(np.array_equal(ts, (np.arange(n) / 30).astype(np.float32)), f"{root}: episode {e} timestamp")
        check(all(tasks[i] == ep["task"] for i in d["task_index"]), f"{root}: episode {e} task_index")
        for k, frame in enumerate(ep["frames"]):
            for key, v in frame.items():
                got = d[key][k]
                got = got if isinstance(got, list) else [got]
                if got != v:
                    check(False, f"{root}: episode {e} frame {k} {key}: {got} != {v}")
                    break
            else:
                check(True, "")
            for cam in CAMERAS:
                cell = d[cam][k]
                ok = cell["path"] == f"frame-{k:06d}.png" and np.array_equal(decode_png(cell["bytes"]), images[(e, k, cam)])
                check(ok, f"{root}: episode {e} frame {k} {cam}: image differs")
        index += n
    return rows


def state_rows(ep, key):
    return np.array([f[key] for f in ep["frames"]], dtype=np.float64)


def check_feature_stats(s, ep_frames, what, images=None):
    """Checks stats of one feature against a numpy computation over the given frames."""
    if images is not None:  # (n, h, w, 3) uint8, all frames (episodes here are < 100 frames)
        px = images.reshape(-1, 3).astype(np.float64)
        for name, want in [("min", px.min(0) / 255), ("max", px.max(0) / 255), ("mean", px.mean(0) / 255),
                           ("std", px.std(0) / 255)]:
            got = np.array(s[name], dtype=np.float64)
            check(got.shape == (3, 1, 1), f"{what}/{name}: shape {got.shape}, expected (3, 1, 1)")
            check(np.allclose(got.reshape(3), want, rtol=1e-12, atol=1e-12), f"{what}/{name}: {got.reshape(3)} != {want}")
        check(list(s["count"]) == [len(images)], f"{what}/count")
    else:
        x = ep_frames
        for name, want in [("min", x.min(0)), ("max", x.max(0)), ("mean", x.mean(0)), ("std", x.std(0))]:
            got = np.array(s[name], dtype=np.float64)
            check(np.allclose(got, want, rtol=1e-9, atol=1e-12), f"{what}/{name}: {got} != {want}")
        check(list(s["count"]) == [len(x)], f"{what}/count")
    for lo, hi in [("min", "q01"), ("q01", "q10"), ("q10", "q50"), ("q50", "q90"), ("q90", "q99")]:
        a, b = np.array(s[lo], dtype=np.float64), np.array(s[hi], dtype=np.float64)
        check(np.all(a <= b + 1e-9), f"{what}: {lo} <= {hi}")


def episode_images(expected, images, e, cam):
    return np.stack([images[(e, k, cam)] for k in range(expected["episodes"][e]["length"])])


def check_episode_stats(stats_of, expected, images, what):
    for e, ep in enumerate(expected["episodes"]):
        s = stats_of(e)
        for key in ["observation.state", "action", "next.reward"]:
            check_feature_stats(s[key], state_rows(ep, key), f"{what} episode {e} {key}")
        for cam in CAMERAS:
            check_feature_stats(s[cam], None, f"{what} episode {e} {cam}", episode_images(expected, images, e, cam))
        n = ep["length"]
        check_feature_stats(s["frame_index"], np.arange(n, dtype=np.float64).reshape(-1, 1), f"{what} episode {e} frame_index")


def check_v3_meta(root, expected, images):
    eps = pq.read_table(os.path.join(root, "meta/episodes/chunk-000/file-000.parquet"))
    d = eps.to_pydict()
    n = len(expected["episodes"])
    check(d["episode_index"] == list(range(n)), f"{root}: episodes episode_index")
    check(d["length"] == [ep["length"] for ep in expected["episodes"]], f"{root}: episodes length")
    check(d["tasks"] == [[ep["task"]] for ep in expected["episodes"]], f"{root}: episodes tasks")
    start = 0
    for e in range(n):
        check(d["dataset_from_index"][e] == start, f"{root}: episode {e} dataset_from_index")
        start += expected["episodes"][e]["length"]
        check(d["dataset_to_index"][e] == start, f"{root}: episode {e} dataset_to_index")
        path = os.path.join(root, f"data/chunk-{d['data/chunk_index'][e]:03d}/file-{d['data/file_index'][e]:03d}.parquet")
        idx = pq.read_table(path, columns=["index"]).column("index").to_pylist()
        check(d["dataset_from_index"][e] in idx and d["dataset_to_index"][e] - 1 in idx,
              f"{root}: episode {e} rows are in {path}")
    check(set(d["meta/episodes/chunk_index"]) == {0} and set(d["meta/episodes/file_index"]) == {0},
          f"{root}: meta/episodes chunk and file")
    check(eps.schema.field("stats/observation.images.top/mean").type.equals(pa.list_(pa.list_(pa.list_(pa.float64())))),
          f"{root}: image stats are list<list<list<double>>>")
    check(eps.schema.field("stats/frame_index/min").type.equals(pa.list_(pa.int64())), f"{root}: int stats min is list<int64>")

    def stats_of(e):
        out = {}
        for col in eps.column_names:
            if col.startswith("stats/"):
                _, key, stat = col.split("/")
                out.setdefault(key, {})[stat] = d[col][e]
        return out

    check_episode_stats(stats_of, expected, images, root + " episodes parquet")
    # tasks.parquet: task_index + task, with pandas metadata naming task the index
    t = pq.read_table(os.path.join(root, "meta/tasks.parquet"))
    check(t.column_names == ["task_index", "task"], f"{root}: tasks.parquet columns {t.column_names}")
    meta = json.loads(t.schema.metadata[b"pandas"])
    check(meta["index_columns"] == ["task"], f"{root}: pandas index_columns {meta['index_columns']}")
    try:
        import pandas  # noqa: F401  (optional: only pyarrow is required)
        df = pq.read_table(os.path.join(root, "meta/tasks.parquet")).to_pandas()
        check(df.index.name == "task" and list(df.columns) == ["task_index"], f"{root}: pandas sees {df}")
    except ImportError:
        pass
    return dict(zip(t.column("task_index").to_pylist(), t.column("task").to_pylist()))


def check_v2_meta(root, expected, images):
    lines = [json.loads(s) for s in open(os.path.join(root, "meta/episodes.jsonl"))]
    check([x["episode_index"] for x in lines] == list(range(len(expected["episodes"]))), f"{root}: episodes.jsonl indices")
    check([x["length"] for x in lines] == [ep["length"] for ep in expected["episodes"]], f"{root}: episodes.jsonl length")
    check([x["tasks"] for x in lines] == [[ep["task"]] for ep in expected["episodes"]], f"{root}: episodes.jsonl tasks")
    stats = [json.loads(s) for s in open(os.path.join(root, "meta/episodes_stats.jsonl"))]
    check([x["episode_index"] for x in stats] == list(range(len(expected["episodes"]))), f"{root}: episodes_stats indices")
    check_episode_stats(lambda e: stats[e]["stats"], expected, images, root + " episodes_stats.jsonl")
    for e, ep in enumerate(expected["episodes"]):
        f = pq.ParquetFile(os.path.join(root, f"data/chunk-000/episode_{e:06d}.parquet"))
        check(f.num_row_groups == 1 and f.metadata.num_rows == ep["length"], f"{root}: episode {e} file")
    tasks = [json.loads(s) for s in open(os.path.join(root, "meta/tasks.jsonl"))]
    return {x["task_index"]: x["task"] for x in tasks}


def check_stats_json(root, expected, images):
    s = json.load(open(os.path.join(root, "meta/stats.json")))
    for key in ["observation.state", "action", "next.reward"]:
        rows = np.concatenate([state_rows(ep, key) for ep in expected["episodes"]])
        check_feature_stats(s[key], rows, f"{root} stats.json {key}")
    for cam in CAMERAS:
        got = np.array(s[cam]["mean"])
        check(got.shape == (3, 1, 1), f"{root} stats.json {cam} mean shape {got.shape}")
        # aggregated means are count-weighted means of the episodes' (all frames sampled here)
        means = [episode_images(expected, images, e, cam).reshape(-1, 3).mean(0) / 255 for e in range(len(expected["episodes"]))]
        counts = [ep["length"] for ep in expected["episodes"]]
        want = np.average(means, axis=0, weights=counts)
        check(np.allclose(got.reshape(3), want, rtol=1e-12), f"{root} stats.json {cam} mean {got.reshape(3)} != {want}")
        check(s[cam]["count"] == [sum(counts)], f"{root} stats.json {cam} count")
    for k in STANDARD:
        check(k in s and set(s[k]) >= {"min", "max", "mean", "std", "count", "q01", "q99"}, f"{root} stats.json {k}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--write-tool", required=True)
    ap.add_argument("--keep", help="write into this directory and keep it")
    args = ap.parse_args()
    tmp = None
    out = args.keep
    if out is None:
        tmp = tempfile.TemporaryDirectory(prefix="ember_dataset_interop_")
        out = tmp.name
    os.makedirs(out, exist_ok=True)
    subprocess.run([args.write_tool, out], check=True)
    expected = json.load(open(os.path.join(out, "expected.json")))
    images = expected_images(out, expected)

    for sub, version in [("v30", "v3.0"), ("v21", "v2.1")]:
        root = os.path.join(out, sub)
        check_info(root, expected, version)
        tasks = check_v3_meta(root, expected, images) if version == "v3.0" else check_v2_meta(root, expected, images)
        check(sorted(tasks.values()) == sorted({ep["task"] for ep in expected["episodes"]}), f"{root}: tasks")
        check_data(root, expected, images, tasks)
        check_stats_json(root, expected, images)
        if version == "v3.0":
            check(len(data_files(root)) >= 2, f"{root}: episodes spread over several data files")
            groups = [pq.ParquetFile(p).num_row_groups for p in data_files(root)]
            check(max(groups) >= 2, f"{root}: some data file holds several episodes (row groups {groups})")

    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
