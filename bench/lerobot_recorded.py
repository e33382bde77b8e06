#!/usr/bin/env python3
"""ember reads a dataset that LeRobot's own recorder wrote (LeRobotDataset.create -> add_frame ->
save_episode -> finalize), with video cameras and image cameras, and returns what LeRobot returns.

  /tmp/lerobot-venv/bin/python bench/lerobot_recorded.py --ember build/bin/ember [--keep DIR]

Needs the `lerobot` package (PyPI) in the Python that runs it. Frames are compared through
`ember data sample` (JSON + PNG per camera) against LeRobotDataset[i]: vectors exactly, camera
pixels within decoder colour-conversion differences (max abs difference reported).
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
from PIL import Image

from lerobot.datasets.lerobot_dataset import LeRobotDataset


def record(root, use_videos):
    features = {
        "observation.state": {"dtype": "float32", "shape": (6,), "names": [f"j{i}" for i in range(6)]},
        "action": {"dtype": "float32", "shape": (4,), "names": ["x", "y", "z", "g"]},
        "observation.images.cam": {"dtype": "video" if use_videos else "image", "shape": (64, 96, 3),
                                   "names": ["height", "width", "channels"]},
    }
    ds = LeRobotDataset.create(repo_id="local/recorded", fps=30, features=features, root=root,
                               robot_type="test_arm", use_videos=use_videos)
    rng = np.random.default_rng(0)
    for ep, (n, task) in enumerate([(20, "pick up the cube"), (31, "open the drawer"), (17, "pick up the cube")]):
        for k in range(n):
            img = np.zeros((64, 96, 3), dtype=np.uint8)
            img[:, : (k * 3) % 96] = (40 * ep, 200 - 5 * k, 100)  # a moving bar, different per episode
            ds.add_frame({"observation.state": rng.standard_normal(6).astype(np.float32),
                          "action": rng.standard_normal(4).astype(np.float32),
                          "observation.images.cam": img, "task": task})
        ds.save_episode()
    ds.finalize()
    return LeRobotDataset("local/recorded", root=root)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ember", required=True)
    ap.add_argument("--keep", help="keep the recorded datasets under this directory")
    a = ap.parse_args()
    passed = failed = 0
    base = a.keep or tempfile.mkdtemp()
    for use_videos in (False, True):
        root = os.path.join(base, "videos" if use_videos else "images")
        shutil.rmtree(root, ignore_errors=True)
        lr = record(root, use_videos)
        kind = "video" if use_videos else "image"
        check = subprocess.run([a.ember, "data", "check", root], capture_output=True, text=True)
        ok = check.returncode == 0
        print(f"{'ok  ' if ok else 'FAIL'} {kind}: ember data check: {check.stdout.strip().splitlines()[-1]}")
        passed, failed = passed + ok, failed + (not ok)
        worst, mismatches = 0, 0
        for i in range(len(lr)):
            item = lr[i]
            out = os.path.join(base, f"sample_{kind}")
            subprocess.run([a.ember, "data", "sample", root, "--index", str(i), "--out", out], check=True,
                           capture_output=True)
            s = json.load(open(os.path.join(out, "sample.json")))
            for key in ("observation.state", "action"):
                if not np.array_equal(np.array(s["features"][key]["values"], dtype=np.float32), item[key].numpy()):
                    mismatches += 1
            if s["task"] != item["task"] or s["index"] != int(item["index"]):
                mismatches += 1
            mine = np.asarray(Image.open(os.path.join(out, "observation.images.cam.png")), dtype=np.float64)
            theirs = item["observation.images.cam"].numpy().transpose(1, 2, 0) * 255.0  # CHW float [0,1]
            worst = max(worst, float(np.abs(mine - theirs).max()))
        ok = mismatches == 0 and worst <= (0.5 if not use_videos else 8.0)
        print(f"{'ok  ' if ok else 'FAIL'} {kind}: {len(lr)} frames, vectors/tasks/indices mismatches {mismatches}, "
              f"camera max |ember - LeRobot| {worst:.2f} / 255")
        passed, failed = passed + ok, failed + (not ok)
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
