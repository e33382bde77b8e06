#!/usr/bin/env python3
"""Video decode speed: `ember bench decode` next to the `ffmpeg` command decoding the same files.

  python3 bench/decode_vs_ffmpeg.py --ember build/bin/ember [--threads N] [--workers W] FILE_OR_DATASET...
  python3 bench/decode_vs_ffmpeg.py --ember build/bin/ember --make 640x480 --seconds 10   # makes test videos

--make encodes test videos as LeRobot records them (libsvtav1, yuv420p, g=2, crf=30, 30 fps)
with the ffmpeg command, into /tmp/ember-decode-bench/. The ffmpeg side runs
`ffmpeg -threads N -i FILE -f null -` per file (it decodes and discards, no RGB conversion);
ember's side decodes to RGB, sequentially and at random frames (the loader's pattern).
Prints one JSON line per reader and one with the sequential ratio.
"""
import argparse
import datetime
import json
import os
import shutil
import subprocess
import sys
import time


def make_videos(size, seconds):
    out = "/tmp/ember-decode-bench"
    os.makedirs(out, exist_ok=True)
    files = []
    for cam, pattern in (("top", "testsrc2"), ("wrist", "mandelbrot")):
        path = os.path.join(out, f"{cam}_{size}.mp4")
        if not os.path.exists(path):
            subprocess.run(["ffmpeg", "-hide_banner", "-loglevel", "error", "-y", "-f", "lavfi", "-i",
                            f"{pattern}=size={size}:rate=30", "-t", str(seconds), "-c:v", "libsvtav1", "-pix_fmt",
                            "yuv420p", "-g", "2", "-crf", "30", path], check=True, env={**os.environ, "SVT_LOG": "1"})
        files.append(path)
    return files


def ffmpeg_frames_per_s(files, threads):
    frames, t0 = 0, time.perf_counter()
    for f in files:
        p = subprocess.run(["ffmpeg", "-hide_banner", "-nostats", "-threads", str(threads), "-i", f, "-f", "null", "-"],
                           capture_output=True, text=True, check=True)
        # the last "frame=" on stderr counts the decoded frames
        tail = [l for l in p.stderr.replace("\r", "\n").splitlines() if "frame=" in l]
        frames += int(tail[-1].split("frame=")[1].split()[0]) if tail else 0
    return frames, time.perf_counter() - t0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ember", required=True)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--make", help="make test videos of this size, e.g. 640x480")
    ap.add_argument("--seconds", type=int, default=10)
    ap.add_argument("--out", help="append the JSON lines to this file")
    ap.add_argument("paths", nargs="*")
    a = ap.parse_args()
    paths = list(a.paths)
    if a.make:
        paths += make_videos(a.make, a.seconds)
    if not paths:
        ap.error("give files or a dataset, or --make")
    p = subprocess.run([a.ember, "bench", "decode", *paths, "--threads", str(a.threads), "--workers", str(a.workers)],
                       capture_output=True, text=True, check=True)
    ember = json.loads(p.stdout.strip().splitlines()[-1])
    date = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    ember["date"] = date
    lines = [ember]
    if shutil.which("ffmpeg") and all(os.path.isfile(x) for x in paths):
        frames, secs = ffmpeg_frames_per_s(paths, a.threads)
        ff = {"bench": "decode", "reader": "ffmpeg command (-f null)", "threads": a.threads, "files": len(paths),
              "sequential_frames": frames, "sequential_fps": frames / secs, "device": ember["device"], "date": date}
        lines.append(ff)
        lines.append({"bench": "decode", "compare": "ember/ffmpeg sequential",
                      "speed_ratio": ember["sequential_fps"] * 1 / ff["sequential_fps"] / max(1, a.workers),
                      "note": "ember per worker; ember converts to RGB, ffmpeg -f null does not",
                      "files": [os.path.basename(x) for x in paths], "date": date})
    else:
        lines.append({"bench": "decode", "note": "ffmpeg command not found or a dataset given: no comparison"})
    text = "\n".join(json.dumps(l) for l in lines)
    print(text)
    if a.out:
        with open(a.out, "a") as f:
            f.write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
