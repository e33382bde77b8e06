#!/usr/bin/env python3
"""LeRobot pi0.5 directories through the ember command line (issue 21).

  ember export --checkpoint tests/fixtures/lerobot_pi05_tiny --to lerobot OUT
      then, with LeRobot 0.6.1 (Python >= 3.12, --lerobot-python), lerobot_pi05_reference.py
      --verify OUT: LeRobot's own PI05Policy.from_pretrained(OUT) reproduces the fixture's stored
      outputs. Without that Python the check prints "skipped: <reason>" (never silently).
  ember predict --checkpoint <LeRobot dir> --noise FILE --raw_out FILE (safetensors and .npy)
  ember train --policy.path=<LeRobot dir>, then predict and export of its checkpoint
  the one-line errors (exit status 2): no tokenizer, bad noise, a non-empty OUT, bad --to.

Run by CTest: test_lerobot_pi05.py --ember PATH --data tests/fixtures [--lerobot-python PY]
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


def run(cmd, timeout=300):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    return p.returncode, p.stdout, p.stderr


def user_error(name, cmd, must_mention):
    rc, out, err = run(cmd)
    lines = [l for l in err.splitlines() if l.startswith("ember: error")]
    check(name, rc == 2 and len(lines) == 1 and all(m in err for m in must_mention), f"rc={rc} stderr={err!r}")


def write_npy(path, rows, cols, value):
    header = "{'descr': '<f4', 'fortran_order': False, 'shape': (%d, %d), }" % (rows, cols)
    header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode())
        f.write(struct.pack("<%df" % (rows * cols), *([value] * (rows * cols))))


def read_npy(path):
    data = open(path, "rb").read()
    n = struct.unpack("<H", data[8:10])[0]
    header = data[10:10 + n].decode()
    body = data[10 + n:]
    return header, struct.unpack("<%df" % (len(body) // 4), body)


def safetensors_header(path):
    data = open(path, "rb").read()
    n = struct.unpack("<Q", data[:8])[0]
    return json.loads(data[8:8 + n])


def verify_with_lerobot(py, out_dir, inputs):
    """LeRobot's PI05Policy loads the export and reproduces the reference outputs."""
    script = os.path.join(HERE, "lerobot_pi05_reference.py")
    if not py:
        print("skipped: LeRobot verification: no Python with LeRobot 0.6.1 given (--lerobot-python; "
              "~/.cache/ember/venv-lerobot/bin/python is used where it exists)")
        return
    if not os.path.exists(py):
        print(f"skipped: LeRobot verification: {py} does not exist (a venv with Python >= 3.12 and lerobot[pi]==0.6.1)")
        return
    rc, o, e = run([py, script, "--verify", out_dir, "--inputs", inputs], timeout=600)
    print(o.strip())
    if o.startswith("skipped:"):
        return  # the script names its reason (no LeRobot / Python too old)
    check("LeRobot's PI05Policy.from_pretrained(export) reproduces the reference outputs", rc == 0 and "passed" in o,
          f"rc={rc} stdout={o!r} stderr={e[-2000:]!r}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ember", required=True)
    ap.add_argument("--data", required=True, help="tests/fixtures")
    ap.add_argument("--lerobot-python", default="")
    a = ap.parse_args()
    ember = a.ember
    fixture = os.path.join(a.data, "lerobot_pi05_tiny")
    dataset = os.path.join(a.data, "lerobot_v3_0")
    tmp = tempfile.mkdtemp(prefix="ember_lerobot_")
    try:
        # export of the imported fixture, verified by LeRobot itself
        out = os.path.join(tmp, "export")
        rc, o, e = run([ember, "export", "--checkpoint", fixture, "--to", "lerobot", out])
        check("export --to lerobot", rc == 0 and os.path.exists(os.path.join(out, "model.safetensors")), f"rc={rc} {e!r}")
        keys_in = set(safetensors_header(os.path.join(fixture, "model.safetensors"))) - {"__metadata__"}
        keys_out = set(safetensors_header(os.path.join(out, "model.safetensors"))) - {"__metadata__"}
        check("export writes every key LeRobot's strict load expects", keys_in == keys_out,
              f"missing {sorted(keys_in - keys_out)[:5]}, extra {sorted(keys_out - keys_in)[:5]}")
        check("export lists the skipped tensors once", e.count("skipped 9 tensors") == 1, e)
        verify_with_lerobot(a.lerobot_python, out, os.path.join(fixture, "reference.safetensors"))
        user_error("export into a non-empty OUT", [ember, "export", "--checkpoint", fixture, "--to", "lerobot", out], ["OUT", "not empty"])
        user_error("export --to other", [ember, "export", "--checkpoint", fixture, "--to", "onnx", os.path.join(tmp, "x")], ["--to", "onnx"])

        # a tokenizer: the one a tiny ember run trains on the fixture dataset (512 pieces)
        run0 = os.path.join(tmp, "tiny")
        rc, o, e = run([ember, "train", f"--dataset.root={dataset}", f"--output_dir={run0}", "--steps=1", "--batch_size=2",
                        "--policy.preset=tiny", "--policy.horizon=6", "--num_workers=1", "--log_freq=1"], timeout=600)
        found = [os.path.join(r, f) for r, _, fs in os.walk(run0) for f in fs if f == "tokenizer.model"]
        check("a tiny run gives a tokenizer", rc == 0 and bool(found), f"rc={rc} {e[-1500:]!r}")
        if not found:
            return 1
        tokenizer = found[0]

        # the fixture's policy, adapted to the fixture dataset's features (cameras top/wrist,
        # state 8, action 7); no processor files: training takes the dataset's statistics
        policy = os.path.join(tmp, "policy")
        os.makedirs(policy)
        for f in ("model.safetensors", "ember_shrink.json"):
            shutil.copy(os.path.join(fixture, f), policy)
        cfg = json.load(open(os.path.join(fixture, "config.json")))
        feats = {}
        for k, v in cfg["input_features"].items():
            if k == "observation.images.base":
                k = "observation.images.top"
            if v["type"] == "STATE":
                v = {"type": "STATE", "shape": [8]}
            feats[k] = v
        cfg["input_features"] = feats
        cfg["output_features"] = {"action": {"type": "ACTION", "shape": [7]}}
        json.dump(cfg, open(os.path.join(policy, "config.json"), "w"), indent=2)

        # LeRobot's pi05 normalises by quantiles: a copy of the fixture dataset with them
        user_error("train --policy.path on a dataset without quantiles",
                   [ember, "train", f"--dataset.root={dataset}", f"--output_dir={os.path.join(tmp, 'noq')}", "--steps=1",
                    f"--policy.path={policy}", f"--policy.tokenizer_path={tokenizer}"], ["q01/q99", "ember data stats"])
        qdata = os.path.join(tmp, "dataset")
        shutil.copytree(dataset, qdata)
        rc, o, e = run([ember, "data", "stats", qdata, "--write"])
        check("data stats --write (quantiles)", rc == 0, f"rc={rc} {e!r}")
        dataset = qdata

        user_error("predict on a LeRobot directory without a tokenizer",
                   [ember, "predict", "--checkpoint", fixture, f"--dataset.root={dataset}"], ["--policy.tokenizer_path"])
        user_error("predict on a LeRobot directory without statistics",
                   [ember, "predict", "--checkpoint", policy, f"--dataset.root={dataset}", "--policy.tokenizer_path", tokenizer],
                   ["normalisation statistics"])

        # train from it
        run1 = os.path.join(tmp, "from_lerobot")
        rc, o, e = run([ember, "train", f"--dataset.root={dataset}", f"--output_dir={run1}", "--steps=2", "--batch_size=2",
                        f"--policy.path={policy}", f"--policy.tokenizer_path={tokenizer}", "--num_workers=1", "--log_freq=1"],
                       timeout=600)
        check("train --policy.path", rc == 0 and "initialised from" in e and "pi05/lerobot" in e, f"rc={rc} {e[-2000:]!r}")
        metrics = os.path.join(run1, "metrics.jsonl")
        losses = [json.loads(l)["loss"] for l in open(metrics) if '"loss"' in l] if os.path.exists(metrics) else []
        check("train --policy.path logs finite losses", len(losses) >= 2 and all(0 < x < 1e3 for x in losses), str(losses))
        ckpts = [os.path.join(r) for r, _, fs in os.walk(run1) for f in fs if f == "lerobot_config.json"]
        check("its checkpoint keeps LeRobot's config and unused tensors",
              bool(ckpts) and os.path.exists(os.path.join(ckpts[0], "lerobot_unused.safetensors")), str(ckpts))
        feats_json = json.load(open(os.path.join(ckpts[0], "features.json"))) if ckpts else {}
        check("its features keep LeRobot's rules", feats_json.get("lerobot_state_bins") and feats_json.get("loss_on_padded_steps"),
              str(feats_json)[:300])

        # --rename_map: the policy keeps the fixture's camera name, the dataset's camera fills it
        renamed = os.path.join(tmp, "policy_renamed")
        shutil.copytree(policy, renamed)
        cfg_r = json.load(open(os.path.join(renamed, "config.json")))
        cfg_r["input_features"] = {("observation.images.base" if k == "observation.images.top" else k): v
                                   for k, v in cfg_r["input_features"].items()}
        json.dump(cfg_r, open(os.path.join(renamed, "config.json"), "w"), indent=2)
        base_flags = [ember, "train", f"--dataset.root={dataset}", "--steps=1", "--batch_size=2", f"--policy.path={renamed}",
                      f"--policy.tokenizer_path={tokenizer}", "--num_workers=1", "--log_freq=1"]
        user_error("train --policy.path without a camera of the policy names it and --rename_map",
                   base_flags + [f"--output_dir={os.path.join(tmp, 'r0')}"], ["observation.images.base", "--rename_map"])
        rc, o, e = run(base_flags + [f"--output_dir={os.path.join(tmp, 'r1')}",
                                     '--rename_map={"observation.images.top": "observation.images.base"}'], timeout=600)
        check("train --rename_map fills the policy's camera from the dataset's", rc == 0, f"rc={rc} {e[-1500:]!r}")
        user_error("--rename_map from a key the dataset lacks",
                   base_flags + [f"--output_dir={os.path.join(tmp, 'r2')}", '--rename_map={"observation.images.side": "observation.images.base"}'],
                   ["--rename_map", "observation.images.side"])
        user_error("--rename_map that is not a JSON object",
                   base_flags + [f"--output_dir={os.path.join(tmp, 'r3')}", "--rename_map=top:base"], ["--rename_map", "JSON object"])
        # issue 42: two sources onto one camera, and an action width the imported tensors fix, were accepted
        user_error("--rename_map with two sources for one camera",
                   base_flags + [f"--output_dir={os.path.join(tmp, 'r4')}",
                                 '--rename_map={"observation.images.top": "observation.images.base", "observation.images.wrist": "observation.images.base"}'],
                   ["--rename_map", "both map to"])
        user_error("--policy.max_action_dim beside --policy.path",
                   base_flags + [f"--output_dir={os.path.join(tmp, 'r5')}", "--policy.max_action_dim=2"], ["--policy.max_action_dim", "--policy.path"])

        # predict with given noise, raw output in both formats; the same noise gives the same output
        noise = os.path.join(tmp, "noise.npy")
        write_npy(noise, 6, 8, 0.5)
        nan_noise = os.path.join(tmp, "nan_noise.npy")
        write_npy(nan_noise, 6, 8, float("nan"))
        user_error("predict --noise of NaNs (printed NaN actions)",
                   [ember, "predict", "--checkpoint", run1, f"--dataset.root={dataset}", "--index", "3", "--noise", nan_noise],
                   ["nan_noise.npy", "NaN"])
        raw_npy, raw_st = os.path.join(tmp, "raw.npy"), os.path.join(tmp, "raw.safetensors")
        rc, p1, e = run([ember, "predict", "--checkpoint", run1, f"--dataset.root={dataset}", "--index", "3", "--noise", noise,
                         "--raw_out", raw_npy])
        check("predict --noise .npy --raw_out .npy", rc == 0 and os.path.exists(raw_npy), f"rc={rc} {e!r}")
        rc2, o2, e2 = run([ember, "predict", "--checkpoint", run1, f"--dataset.root={dataset}", "--index", "3", "--noise", noise,
                           "--raw_out", raw_st])
        if os.path.exists(raw_npy) and os.path.exists(raw_st):
            header, values = read_npy(raw_npy)
            st = safetensors_header(raw_st)
            check("raw output is [chunk, max_action_dim] float32", "(6, 8)" in header and st["actions"]["shape"] == [6, 8]
                  and st["actions"]["dtype"] == "F32", f"{header} {st}")
            check("the same noise gives the same chunk", p1.splitlines()[1:-1] == o2.splitlines()[1:-1], f"{p1!r} vs {o2!r}")
        bad_noise = os.path.join(tmp, "bad.npy")
        write_npy(bad_noise, 5, 8, 0.0)
        user_error("predict --noise of the wrong shape",
                   [ember, "predict", "--checkpoint", run1, f"--dataset.root={dataset}", "--noise", bad_noise], ["bad.npy", "[6, 8]"])
        # the trained checkpoint exported, then predicted from the export with the same noise
        out2 = os.path.join(tmp, "export2")
        rc, o, e = run([ember, "export", "--checkpoint", run1, "--to", "lerobot", out2])
        check("export of a checkpoint trained from LeRobot", rc == 0, f"rc={rc} {e!r}")
        rc3, o3, e3 = run([ember, "predict", "--checkpoint", out2, f"--dataset.root={dataset}", "--index", "3", "--noise", noise,
                           "--policy.tokenizer_path", tokenizer])
        check("its export predicts what the checkpoint predicts", rc3 == 0 and o3.splitlines()[1:] == p1.splitlines()[1:-1],
              f"rc={rc3} {e3!r}\n{o3}\nvs\n{p1}")
        # the eval command accepts the flag and fails on the camera names, by name
        rc, o, e = run([ember, "eval", "--checkpoint", fixture, "--policy.tokenizer_path", tokenizer, "--suite", "ember10",
                        "--trials", "1", "--output_dir", os.path.join(tmp, "eval")])
        check("eval --checkpoint <LeRobot dir> loads it and names the camera the simulator lacks",
              rc == 2 and ("observation.images.base" in e or "without" in e or "MuJoCo" in e), f"rc={rc} {e!r}")
        if rc == 2 and "observation.images.base" in e:  # ember was built with the simulator
            # the export of the run trained from LeRobot's layout (cameras top, wrist), closed loop:
            # --rename_map puts the simulator's agentview camera in its top slot
            eval_dir = os.path.join(tmp, "eval2")
            rc, o, e = run([ember, "eval", "--checkpoint", out2, "--policy.tokenizer_path", tokenizer, "--suite", "ember10",
                            "--task", "press_red_button", "--trials", "1", "--no_videos", "--output_dir", eval_dir,
                            '--rename_map={"observation.images.agentview": "observation.images.top"}'], timeout=600)
            result = json.load(open(os.path.join(eval_dir, "eval.json"))) if os.path.exists(os.path.join(eval_dir, "eval.json")) else {}
            check("eval --rename_map runs an imported LeRobot policy closed loop", rc == 0 and bool(result), f"rc={rc} {e[-1500:]!r}")
            user_error("eval --rename_map from a camera the simulator lacks",
                       [ember, "eval", "--checkpoint", out2, "--policy.tokenizer_path", tokenizer, "--suite", "ember10",
                        "--trials", "1", "--output_dir", os.path.join(tmp, "eval3"), '--rename_map={"observation.images.side": "observation.images.top"}'],
                       ["--rename_map", "observation.images.side"])
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return checks.summary()


if __name__ == "__main__":
    sys.exit(main())
