#!/usr/bin/env python3
"""GR00T-N1.5 directories out of ember, checked by the reference's own modules (issue 41).

  ember export --checkpoint tests/fixtures/groot_n15_tiny --to groot_n15 OUT
      writes every key of the fixture's state dict and nothing else; then, where LeRobot 0.5.1's
      N1.5 modules are installed (--reference DIR: scripts/setup.sh puts them in
      ~/.cache/ember/groot-n15-ref, on top of the LeRobot 0.6.1 venv's Python, --lerobot-python),
      groot_n15_reference.py --verify OUT loads it strictly into Eagle 2.5 and
      FlowmatchingActionHead and reproduces the fixture's stored outputs. Without them the check
      prints "skipped: <reason>" (never silently).

Run by CTest: test_groot_n15.py --ember PATH --data tests/fixtures [--lerobot-python PY] [--reference DIR]
"""
import argparse
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile

import checks
from checks import check

HERE = os.path.dirname(os.path.abspath(__file__))


def keys(path):
    data = open(path, "rb").read()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    return {k: tuple(v["shape"]) for k, v in header.items() if k != "__metadata__"}


def verify_with_reference(py, ref, out_dir, inputs):
    if not py or not os.path.exists(py):
        print(f"skipped: N1.5 reference check: no Python at '{py}' (a venv with Python >= 3.12, torch and transformers: "
              "scripts/setup.sh's LeRobot venv)")
        return
    if not ref or not os.path.isdir(os.path.join(ref, "lerobot", "policies", "groot")):
        print(f"skipped: N1.5 reference check: '{ref}' holds no LeRobot 0.5.1 (scripts/requirements-groot-n15.txt, "
              "installed by scripts/setup.sh with the LeRobot venv)")
        return
    env = dict(os.environ, PYTHONPATH=ref + os.pathsep + os.environ.get("PYTHONPATH", ""))
    p = subprocess.run([py, os.path.join(HERE, "groot_n15_reference.py"), "--verify", out_dir, "--inputs", inputs],
                       capture_output=True, text=True, timeout=600, env=env)
    lines = [l for l in p.stdout.splitlines() if l.startswith(("skipped", "OK", "FAIL", "backbone", "loss", "sample", "noise"))]
    print("\n".join(lines))
    if p.stdout.startswith("skipped:"):
        return
    check("the reference's modules load ember's export strictly and reproduce the stored outputs",
          p.returncode == 0 and "OK" in lines, f"rc={p.returncode} stdout={p.stdout[-1500:]!r} stderr={p.stderr[-1500:]!r}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ember", required=True)
    ap.add_argument("--data", required=True, help="tests/fixtures")
    ap.add_argument("--lerobot-python", default="")
    ap.add_argument("--reference", default="", help="folder with LeRobot 0.5.1 and diffusers (scripts/setup.sh)")
    a = ap.parse_args()
    fixture = os.path.join(a.data, "groot_n15_tiny")
    tmp = tempfile.mkdtemp(prefix="ember_groot_n15_")
    try:
        out = os.path.join(tmp, "export")
        p = subprocess.run([a.ember, "export", "--checkpoint", fixture, "--to", "groot_n15", out], capture_output=True, text=True,
                           timeout=300)
        check("export --to groot_n15", p.returncode == 0 and os.path.exists(os.path.join(out, "model.safetensors")),
              f"rc={p.returncode} {p.stderr!r}")
        want, have = keys(os.path.join(fixture, "model.safetensors")), keys(os.path.join(out, "model.safetensors"))
        check("export writes every key of the reference's state dict with its shape, nothing else", want == have,
              f"missing {sorted(set(want) - set(have))[:5]}, extra {sorted(set(have) - set(want))[:5]}")
        config = json.load(open(os.path.join(out, "config.json")))
        check("config.json is N1.5's", config.get("model_type") == "gr00t_n1_5" and config["backbone_cfg"]["select_layer"] == 2,
              json.dumps(config)[:500])
        verify_with_reference(a.lerobot_python, a.reference, out, os.path.join(fixture, "reference.safetensors"))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return checks.summary()


if __name__ == "__main__":
    sys.exit(main())
