#!/usr/bin/env python3
"""LeRobot's own reader on ember-written datasets: LeRobotDataset opens what ember's
DatasetWriter wrote and every frame, state, action, image and task matches what was written.
Also compares ember's statistics with LeRobot's compute_stats on the same frames.

  python bench/lerobot_interop.py --write-tool build/bin/dataset_write_tool \
      [--video-tool build/bin/video_dataset_tool] [--log bench/results/lerobot_interop.log]

With --video-tool (tests/tools/video_dataset_tool.cc) it also (a) opens an ember-written v3.0
dataset with two video cameras in LeRobot and compares every decoded frame with ember's own
decoding (and the stripe index each frame shows), and (b) converts tests/fixtures/lerobot_v2_1 with
ember's convert_v21_to_v30, opens the result in LeRobot and compares it, item by item, with
LeRobot's own conversion of the same fixture.

Needs a Python with `lerobot` installed (not part of CI: `pip install lerobot` into its own
venv). The write tool (tests/tools/dataset_write_tool.cc) writes OUT/v30 and OUT/v21 plus the
values it wrote (expected.json, expected_rgb.bin). Prints one line per check group and
`N passed, M failed`; exit status 1 if any failed.
"""
import argparse
import contextlib
import datetime
import io
import json
import os
import platform
import subprocess
import sys
import tempfile

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # never reach for the Hub: everything is local

import numpy as np  # noqa: E402

out_lines = []
passed = 0
failed = 0


def log(s=""):
    print(s)
    out_lines.append(s)


def check(cond, what):
    global passed, failed
    if cond:
        passed += 1
    else:
        failed += 1
        log(f"FAIL: {what}")
    return cond


CAMERAS = {"observation.images.top": (24, 32), "observation.images.wrist": (16, 20)}


def load_expected(out):
    expected = json.load(open(os.path.join(out, "expected.json")))
    blob = open(os.path.join(out, "expected_rgb.bin"), "rb").read()
    images, pos = {}, 0
    for e, ep in enumerate(expected["episodes"]):
        for k in range(ep["length"]):
            for cam, (h, w) in CAMERAS.items():
                n = h * w * 3
                images[(e, k, cam)] = np.frombuffer(blob, np.uint8, n, pos).reshape(h, w, 3)
                pos += n
    return expected, images


def compare_frames(ds, expected, images):
    """Every item of the LeRobotDataset against what ember wrote."""
    import torch

    frames = [(e, k) for e, ep in enumerate(expected["episodes"]) for k in range(ep["length"])]
    check(len(ds) == len(frames), f"len(ds) {len(ds)} == {len(frames)}")
    check(ds.num_episodes == len(expected["episodes"]), f"num_episodes {ds.num_episodes}")
    bad = 0
    for i, (e, k) in enumerate(frames):
        item = ds[i]
        want = expected["episodes"][e]["frames"][k]
        ok = item["task"] == expected["episodes"][e]["task"]
        ok &= int(item["index"]) == i and int(item["episode_index"]) == e and int(item["frame_index"]) == k
        ok &= abs(float(item["timestamp"]) - float(np.float32(k / 30))) == 0
        for key, v in want.items():
            got = item[key].reshape(-1).to(torch.float64).tolist()
            ok &= got == v
        for cam in CAMERAS:
            img = item[cam]  # (3, h, w) float32 in [0, 1]
            rgb = (img.permute(1, 2, 0) * 255).round().to(torch.uint8).numpy()
            ok &= np.array_equal(rgb, images[(e, k, cam)])
        if not ok:
            bad += 1
            if bad <= 5:
                log(f"FAIL: frame {i} (episode {e}, frame {k}) differs")
    check(bad == 0, f"{bad} of {len(frames)} frames differ")
    log(f"frames: {len(frames) - bad}/{len(frames)} identical (state, action, reward, done, step, timestamp, "
        f"indices, task, 2 image cameras)")


def compare_deltas(root, expected):
    """delta_timestamps through LeRobot: action chunks clamp to the episode and are padded."""
    from lerobot.datasets.lerobot_dataset import LeRobotDataset

    deltas = [0.0, 1 / 30, 2 / 30, 3 / 30]
    ds = LeRobotDataset("ember/interop", root=root, delta_timestamps={"action": deltas})
    lengths = [ep["length"] for ep in expected["episodes"]]
    starts = np.cumsum([0] + lengths)
    n_ok = 0
    for e in range(len(lengths)):
        for k in [0, lengths[e] - 2, lengths[e] - 1]:
            item = ds[int(starts[e] + k)]
            want, pad = [], []
            for d in range(4):
                q = min(k + d, lengths[e] - 1)
                want.append(expected["episodes"][e]["frames"][q]["action"])
                pad.append(k + d > lengths[e] - 1)
            ok = item["action"].double().tolist() == want and item["action_is_pad"].tolist() == pad
            n_ok += check(ok, f"delta_timestamps episode {e} frame {k}")
    log(f"delta_timestamps: {n_ok} action chunks (4 steps, padded at episode ends) identical")


def compare_stats(root, expected, images):
    """ember's per-episode statistics (meta/episodes) vs LeRobot's compute_stats on the frames."""
    import pyarrow.parquet as pq
    from lerobot.datasets.compute_stats import aggregate_stats, get_feature_stats

    eps = pq.read_table(os.path.join(root, "meta/episodes/chunk-000/file-000.parquet")).to_pydict()
    worst = {}
    image_std = {"lerobot_uint8": [], "lerobot_float32": [], "lerobot_float64": [], "ember": []}
    lerobot_eps = []
    for e, ep in enumerate(expected["episodes"]):
        mine = {}
        for col in eps:
            if col.startswith("stats/"):
                _, key, stat = col.split("/")
                mine.setdefault(key, {})[stat] = np.array(eps[col][e], dtype=np.float64)
        theirs = {}
        for key in ["observation.state", "action", "next.reward"]:
            x = np.array([f[key] for f in ep["frames"]], dtype=np.float32)
            theirs[key] = get_feature_stats(x, axis=0, keepdims=x.ndim == 1)
        for cam in CAMERAS:
            imgs = np.stack([images[(e, k, cam)] for k in range(ep["length"])]).transpose(0, 3, 1, 2)  # (n, 3, h, w)
            s8 = get_feature_stats(imgs, axis=(0, 2, 3), keepdims=True)  # LeRobot 0.4.4 as it records
            s32 = get_feature_stats(imgs.astype(np.float32), axis=(0, 2, 3), keepdims=True)  # upstream fix (#3697)
            s64 = get_feature_stats(imgs.astype(np.float64), axis=(0, 2, 3), keepdims=True)  # same, exact sums
            theirs[cam] = {k: v if k == "count" else np.squeeze(v / 255.0, axis=0) for k, v in s64.items()}
            image_std["lerobot_uint8"].append(float(np.squeeze(s8["std"] / 255.0)[0]))
            image_std["lerobot_float32"].append(float(np.squeeze(s32["std"] / 255.0)[0]))
            image_std["lerobot_float64"].append(float(theirs[cam]["std"].reshape(-1)[0]))
            image_std["ember"].append(float(mine[cam]["std"].reshape(-1)[0]))
        lerobot_eps.append(theirs)
        for key, st in theirs.items():
            for name, v in st.items():
                d = float(np.max(np.abs(np.asarray(v, np.float64).reshape(-1) - mine[key][name].reshape(-1))))
                worst[(key, name)] = max(worst.get((key, name), 0.0), d)
    log("per-episode statistics, max |ember - LeRobot compute_stats| over episodes:")
    for key in ["observation.state", "action", "next.reward", *CAMERAS]:
        row = ", ".join(f"{n} {worst[(key, n)]:.1e}" for n in ["min", "max", "mean", "std", "q01", "q10", "q50", "q90", "q99"])
        log(f"  {key}: {row}")
    for (key, name), d in worst.items():
        # vectors: LeRobot accumulates in float32; quantiles: a value may sit one histogram bin over
        tol = 2e-6 if name in ("mean", "std", "min", "max") else 1e-3
        check(d <= tol, f"stats {key}/{name} differ by {d}")
    log("  (images: LeRobot's get_feature_stats on float64 pixels; vectors: on the float32 frames, as LeRobot records)")
    log("image std, channel 0, first episodes: LeRobot 0.4.4 on uint8 pixels (its recorder; the squares wrap,")
    log("  lerobot#3682) / LeRobot on float32 pixels (upstream fix #3697) / on float64 pixels / ember:")
    for a, b, c, d in list(zip(*image_std.values()))[:4]:
        log(f"  {a:.8f} / {b:.8f} / {c:.8f} / {d:.8f}")
    # aggregation: LeRobot's aggregate_stats over ember's per-episode stats vs ember's stats.json
    ember_eps = []
    for e in range(len(expected["episodes"])):
        st = {}
        for col in eps:
            if col.startswith("stats/"):
                _, key, stat = col.split("/")
                st.setdefault(key, {})[stat] = np.array(eps[col][e])
        ember_eps.append(st)
    agg = aggregate_stats(ember_eps)
    mine = json.load(open(os.path.join(root, "meta/stats.json")))
    worst_agg = 0.0
    for key, st in agg.items():
        for name, v in st.items():
            worst_agg = max(worst_agg, float(np.max(np.abs(np.asarray(v, np.float64) - np.asarray(mine[key][name], np.float64)))))
    check(worst_agg < 1e-12, f"aggregate_stats differs from stats.json by {worst_agg}")
    log(f"stats.json vs LeRobot aggregate_stats of the episodes' stats: max |diff| {worst_agg:.1e}")


VIDEO_CAMERAS = {"observation.images.top": (64, 96), "observation.images.wrist": (80, 96)}
FIXTURE_V21 = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data", "lerobot_v2_1")


def stripe_index(rgb):
    """The index a frame shows: 12 stripes (bit 11 left) in the top half, green channel."""
    h = rgb.shape[0]
    v = 0
    for b in range(12):
        v = v * 2 + int(rgb[h // 8:h * 3 // 8, b * 8 + 2:b * 8 + 6, 1].astype(np.float64).mean() > 128)
    return v


def to_rgb(img):
    """LeRobot's (3, h, w) float32 in [0, 1] as (h, w, 3) uint8."""
    import torch

    return (img.permute(1, 2, 0) * 255).round().clamp(0, 255).to(torch.uint8).numpy()


def read_frames(path, n, cams):
    """Raw RGB frames written in order item, camera (cams: key -> (h, w), in file order)."""
    blob = open(path, "rb").read()
    frames, pos = {}, 0
    for i in range(n):
        for cam, (h, w) in cams.items():
            frames[(i, cam)] = np.frombuffer(blob, np.uint8, h * w * 3, pos).reshape(h, w, 3)
            pos += h * w * 3
    check(pos == len(blob), f"{path}: {len(blob)} bytes, expected {pos}")
    return frames


def compare_video_dataset(tool, out):
    """(a) ember-written v3.0 with video cameras, decoded by LeRobot and by ember."""
    from lerobot.datasets.lerobot_dataset import LeRobotDataset

    subprocess.run([tool, "write", out], check=True)
    root = os.path.join(out, "v30video")
    info = json.load(open(os.path.join(root, "meta", "info.json")))
    codecs = {cam: info["features"][cam]["info"]["video.codec"] for cam in VIDEO_CAMERAS}
    n_videos = sum(len(f) for _, _, f in os.walk(os.path.join(root, "videos")))
    ds = LeRobotDataset("ember/video", root=root)
    log(f"video dataset: v3.0 by ember's DatasetWriter, {ds.num_episodes} episodes, {ds.num_frames} frames, "
        f"2 video cameras {codecs} in {n_videos} files; LeRobot decodes with {ds.video_backend}")
    n = len(ds)
    written = read_frames(os.path.join(out, "v30video_rgb.bin"), n, VIDEO_CAMERAS)
    subprocess.run([tool, "decode", root, os.path.join(out, "ember_decoded.bin")], check=True)
    ember = read_frames(os.path.join(out, "ember_decoded.bin"), n, dict(sorted(VIDEO_CAMERAS.items())))
    max_vs_ember, max_vs_written, bad_index, bad_values, sum_vs_written, n_px = 0, 0, 0, 0, 0.0, 0
    for i in range(n):
        item = ds[i]
        if item["observation.state"][0].item() != i or int(item["index"]) != i:
            bad_values += 1
        for cam in VIDEO_CAMERAS:
            got = to_rgb(item[cam]).astype(np.int16)
            max_vs_ember = max(max_vs_ember, int(np.abs(got - ember[(i, cam)]).max()))
            diff = np.abs(got - written[(i, cam)])
            max_vs_written = max(max_vs_written, int(diff.max()))
            sum_vs_written += float(diff.sum())
            n_px += diff.size
            if stripe_index(got.astype(np.uint8)) != i or stripe_index(ember[(i, cam)]) != i:
                bad_index += 1
    check(bad_values == 0, f"{bad_values} items with wrong state/index")
    check(bad_index == 0, f"{bad_index} camera frames show the wrong index")
    check(max_vs_ember <= 8, f"LeRobot vs ember decoded pixels max |diff| {max_vs_ember} <= 8")
    log(f"video frames: {2 * n - bad_index}/{2 * n} show their own index (LeRobot and ember); decoded pixels "
        f"max |LeRobot - ember| {max_vs_ember}; vs the frames written: max |diff| {max_vs_written}, "
        f"mean |diff| {sum_vs_written / n_px:.2f} (lossy encoding at crf 30)")


def compare_converted_fixture(tool, out):
    """(b) tests/fixtures/lerobot_v2_1 converted by ember, against LeRobot's own conversion."""
    import shutil

    from lerobot.datasets.lerobot_dataset import LeRobotDataset
    from lerobot.datasets.v30.convert_dataset_v21_to_v30 import convert_dataset

    mine = os.path.join(out, "fixture_ember")
    subprocess.run([tool, "convert", FIXTURE_V21, mine], check=True, capture_output=True)
    theirs_parent = os.path.join(out, "lerobot_conv")
    shutil.copytree(FIXTURE_V21, os.path.join(theirs_parent, "fixture"))
    with contextlib.redirect_stdout(io.StringIO()):
        convert_dataset("fixture", root=theirs_parent, push_to_hub=False)
    a = LeRobotDataset("ember/fixture", root=mine)
    b = LeRobotDataset("lerobot/fixture", root=os.path.join(theirs_parent, "fixture"))
    log(f"converted fixture: ember's convert_v21_to_v30 of tests/fixtures/lerobot_v2_1 opened by LeRobot: "
        f"{a.num_episodes} episodes, {a.num_frames} frames, decoded with {a.video_backend}")
    check(len(a) == len(b) == 135, f"len {len(a)} / {len(b)} == 135")
    cams = [k for k, f in a.meta.features.items() if f["dtype"] == "video"]
    bad_tab, bad_index, max_diff = 0, 0, 0
    for i in range(len(a)):
        x, y = a[i], b[i]
        for key, v in x.items():
            if key in cams:
                continue
            same = v == y[key] if isinstance(v, str) else bool((v == y[key]).all())
            if not same:
                bad_tab += 1
                if bad_tab <= 5:
                    log(f"FAIL: item {i} {key}: ember {v} / LeRobot {y[key]}")
        for cam in cams:
            p, q = to_rgb(x[cam]), to_rgb(y[cam])
            max_diff = max(max_diff, int(np.abs(p.astype(np.int16) - q).max()))
            if stripe_index(p) != i:
                bad_index += 1
    check(bad_tab == 0, f"{bad_tab} tabular values differ from LeRobot's conversion")
    check(bad_index == 0, f"{bad_index} camera frames of ember's conversion show the wrong index")
    check(max_diff == 0, f"ember's vs LeRobot's conversion: decoded pixels max |diff| {max_diff} == 0")
    ea = a.meta.episodes
    spans = ", ".join(f"{ea[e]['videos/observation.images.top/from_timestamp']:.6f}" for e in range(len(ea)))
    log(f"converted fixture: {len(a)}/{len(a)} items' tabular values identical to LeRobot's conversion; "
        f"{2 * len(a) - bad_index}/{2 * len(a)} frames show their own index; pixels max |ember conv - LeRobot conv| "
        f"{max_diff} (no re-encoding); top from_timestamps {spans}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--write-tool", required=True)
    ap.add_argument("--log", help="also write the output here")
    ap.add_argument("--episodes", type=int, default=8)
    ap.add_argument("--video-tool", help="tests/tools/video_dataset_tool: also check videos and conversion")
    args = ap.parse_args()

    import lerobot
    import torch
    from lerobot.datasets.lerobot_dataset import LeRobotDataset

    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    log(f"# lerobot_interop {datetime.date.today().isoformat()} host {platform.node()} ({platform.machine()}, CPU only)")
    log(f"# ember commit {commit} (+ working tree); lerobot {lerobot.__version__}, torch {torch.__version__}, "
        f"numpy {np.__version__}, python {platform.python_version()}")
    with tempfile.TemporaryDirectory(prefix="ember_lerobot_interop_") as out:
        subprocess.run([args.write_tool, out, "--episodes", str(args.episodes)], check=True)
        expected, images = load_expected(out)
        root = os.path.join(out, "v30")
        n_files = sum(len(f) for _, _, f in os.walk(os.path.join(root, "data")))
        log(f"dataset: v3.0, {len(expected['episodes'])} episodes, "
            f"{sum(ep['length'] for ep in expected['episodes'])} frames, {n_files} data files, "
            "features float32[6] state, float32[4] action, 2 image cameras (PNG), float32/bool/int64 scalars")
        ds = LeRobotDataset("ember/interop", root=root)
        log(f"LeRobotDataset opened it: {ds.num_episodes} episodes, {ds.num_frames} frames, fps {ds.fps}, "
            f"tasks {list(ds.meta.tasks.index)}")
        check(list(ds.meta.tasks.index) == sorted({ep['task'] for ep in expected['episodes']},
                                                  key=[ep['task'] for ep in expected['episodes']].index),
              "tasks in order of first appearance")
        compare_frames(ds, expected, images)
        compare_deltas(root, expected)
        compare_stats(root, expected, images)
        # v2.1: LeRobot 0.4 reads v3.0 only and says so; its own v2.1 -> v3.0 converter reads
        # ember's v2.1 files (episodes.jsonl, episodes_stats.jsonl, tasks.jsonl, data) instead
        root21 = os.path.join(out, "v21")
        try:
            LeRobotDataset("ember/interop21", root=root21)
            log("v2.1: LeRobot opened it")
        except Exception as e:  # noqa: BLE001
            msg = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            log(f"v2.1: LeRobot {lerobot.__version__} refuses it as expected ({type(e).__name__}: {msg[:120]})")
        from lerobot.datasets.v30.convert_dataset_v21_to_v30 import convert_dataset

        with contextlib.redirect_stdout(io.StringIO()):
            convert_dataset("v21", root=out, push_to_hub=False)
        ds21 = LeRobotDataset("ember/interop21", root=root21)
        log(f"v2.1: converted by LeRobot's convert_dataset_v21_to_v30, then opened: {ds21.num_episodes} episodes, "
            f"{ds21.num_frames} frames")
        compare_frames(ds21, expected, images)
        if args.video_tool:
            compare_video_dataset(args.video_tool, out)
            compare_converted_fixture(args.video_tool, out)
    log(f"{passed} passed, {failed} failed")
    if args.log:
        with open(args.log, "w") as f:
            f.write("\n".join(out_lines) + "\n")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
