#!/usr/bin/env python3
"""Bad input at the command line (issue 26): one line naming the file or flag, exit status 2,
never a crash, a hang or a half-written output.

Run by CTest: test_bad_input_cli.py --ember PATH --data tests/fixtures
"""
import argparse
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile

import checks
from checks import check


def run(ember, *args, preexec=None, timeout=120):
    p = subprocess.run([ember, *args], capture_output=True, text=True, timeout=timeout, preexec_fn=preexec)
    return p.returncode, p.stdout, p.stderr


def user_error(name, ember, args, must_mention, timeout=120):
    try:
        rc, out, err = run(ember, *args, timeout=timeout)
    except subprocess.TimeoutExpired:
        check(name, False, f"hung for {timeout} s")
        return
    lines = [l for l in err.splitlines() if l.strip()]
    check(name, rc == 2 and len(lines) == 1 and all(m in err for m in must_mention), f"rc={rc} stderr={err!r}")


def copy_fixture(data, name, tmp):
    root = os.path.join(tmp, name)
    shutil.copytree(os.path.join(data, name), root)
    return root


def on_full_disk(ember, args, size_kib, mnt):
    """Runs ember with `args` in a mount namespace of its own where `mnt` is a fresh tmpfs of
    size_kib KiB (a real file system that fills up: writes fail with ENOSPC). Returns (rc, stderr,
    what is left on the tmpfs), or None with the reason when no tmpfs can be mounted here."""
    os.makedirs(mnt, exist_ok=True)
    script = ('mnt="$1"; shift; mount -t tmpfs -o size=' + str(size_kib) + 'k tmpfs "$mnt" 2>/dev/null || exit 99; '
              '"$@" >/dev/null; rc=$?; echo "LEFT:$(ls -A "$mnt" | tr "\\n" " ")"; exit $rc')
    # as root a mount namespace is enough; elsewhere a user namespace maps us to root in it
    for flags in (["-m"], ["-r", "-m"]):
        try:
            p = subprocess.run(["unshare", *flags, "sh", "-c", script, "sh", mnt, ember, *args],
                               capture_output=True, text=True, timeout=120)
        except (FileNotFoundError, subprocess.TimeoutExpired) as e:
            return None, f"unshare: {e}"
        if p.returncode != 99 and "LEFT:" in p.stdout:
            left = p.stdout.split("LEFT:", 1)[1].split()
            return (p.returncode, p.stderr, left), ""
    return None, f"cannot mount a tmpfs in a new mount namespace ({p.stderr.strip() or 'no reason given'})"


def full_disk_convert(ember, data, tmp):
    """`data convert` onto a disk that fills up part way: one error line naming the file and the
    reason, exit 2, nothing left on the disk (no half-written dataset, no temporary directory)."""
    src = os.path.join(data, "lerobot_v2_1")
    mnt = os.path.join(tmp, "full")
    # the fixture converts to ~56 KiB of tmpfs: these sizes stop it in the data, video and metadata stages
    for size in (8, 16, 28, 44):
        result, why = on_full_disk(ember, ["data", "convert", src, os.path.join(mnt, "out")], size, mnt)
        if result is None:
            print(f"skip convert onto a full disk: {why}")
            return
        rc, err, left = result
        errors = [l for l in err.splitlines() if l.startswith("ember: error:")]
        check(f"convert onto a full {size} KiB disk: one error naming the file, exit 2, nothing left",
              rc == 2 and len(errors) == 1 and "No space left on device" in errors[0] and mnt in errors[0] and left == [],
              f"rc={rc} errors={errors} left={left} stderr={err[-400:]!r}")
    # the same conversion fits on a disk large enough (the sizes above do fail for want of space)
    result, why = on_full_disk(ember, ["data", "convert", src, os.path.join(mnt, "out")], 4096, mnt)
    if result:
        check("convert fits on a 4 MiB disk", result[0] == 0 and result[2] == ["out"], f"{result}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ember", required=True)
    ap.add_argument("--data", required=True)
    a = ap.parse_args()
    ember = a.ember
    tmp = tempfile.mkdtemp(prefix="ember_bad_cli_")
    try:
        # commands that do not exist name what was given
        user_error("unknown command", ember, ["nonsense"], ["'nonsense' is not a subcommand", "data"])
        user_error("unknown option before a command", ember, ["--nope"], ["'--nope' is not an option", "data"])
        user_error("unknown data subcommand", ember, ["data", "nonsense"], ["ember data: 'nonsense'", "check"])
        user_error("no command", ember, [], ["a subcommand is required"])

        # JSON nested 100000 levels deep
        root = copy_fixture(a.data, "lerobot_v3_0", tmp)
        with open(os.path.join(root, "meta", "info.json"), "w") as f:
            f.write('{"codebase_version": "v3.0", "x": ' + "[" * 100000 + "]" * 100000 + "}")
        for cmd in ("info", "check"):
            rc, out, err = run(ember, "data", cmd, root)
            want = 1 if cmd == "check" else 2  # check lists the problem and exits 1
            check(f"deep info.json: data {cmd}", rc == want and "info.json: JSON nested deeper than 512 levels" in (out + err),
                  f"rc={rc} {out!r} {err!r}")
        user_error("deep info.json: data sample", ember, ["data", "sample", root, "--index", "0", "--out", os.path.join(tmp, "s")],
                   ["info.json: JSON nested deeper than 512 levels"])
        shutil.rmtree(root)

        # info.json a FIFO: refused at once
        root = copy_fixture(a.data, "lerobot_v3_0", tmp)
        os.remove(os.path.join(root, "meta", "info.json"))
        os.mkfifo(os.path.join(root, "meta", "info.json"))
        user_error("FIFO info.json: data info", ember, ["data", "info", root], ["info.json: is a FIFO"], timeout=20)
        user_error("FIFO info.json: data sample", ember,
                   ["data", "sample", root, "--index", "0", "--out", os.path.join(tmp, "s")], ["info.json: is a FIFO"], timeout=20)
        shutil.rmtree(root)

        # totals: refused naming the true count; check --fix repairs them
        root = copy_fixture(a.data, "lerobot_v3_0", tmp)
        info_path = os.path.join(root, "meta", "info.json")
        info = json.load(open(info_path))
        info["total_frames"] = 300
        json.dump(info, open(info_path, "w"), indent=4)
        user_error("more frames than the episodes hold", ember, ["data", "info", root],
                   ["'total_frames' is 300 but the episodes hold 261 frames", "--fix"])
        rc, out, err = run(ember, "data", "check", root, "--fix")
        fixed = json.load(open(info_path))
        check("check --fix rewrites total_frames", rc == 0 and fixed["total_frames"] == 261 and "total_frames: 300 -> 261" in out
              and fixed["splits"] == info["splits"], f"rc={rc} {out!r} {err!r}")
        rc, out, err = run(ember, "data", "check", root, "--decode_all", "--json")
        report = json.loads(out) if rc == 0 else {}
        check("check --decode_all decodes every frame", rc == 0 and report.get("frames_decoded", 0) >= 2 * 261,
              f"rc={rc} {out!r} {err!r}")

        # sample --out: a failure part way (the second PNG cannot be written) leaves DIR as it was
        out_dir = os.path.join(tmp, "sample")
        rc, out, err = run(ember, "data", "sample", root, "--index", "5", "--out", out_dir)
        before = {n: open(os.path.join(out_dir, n), "rb").read() for n in sorted(os.listdir(out_dir))}
        check("sample writes a directory", rc == 0 and "sample.json" in before and len(before) == 3, f"rc={rc} {err!r}")
        # a file size limit that lets the PNGs through and stops sample.json, written last
        scratch = os.path.join(tmp, "scratch")
        run(ember, "data", "sample", root, "--index", "200", "--out", scratch)
        sizes = {n: os.path.getsize(os.path.join(scratch, n)) for n in os.listdir(scratch)}
        biggest_png = max(v for n, v in sizes.items() if n.endswith(".png"))
        check("sample.json is bigger than the PNGs (the test's premise)", sizes["sample.json"] > biggest_png + 1, str(sizes))
        limit = (biggest_png + sizes["sample.json"]) // 2

        def small_files():
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

        rc, out, err = run(ember, "data", "sample", root, "--index", "200", "--out", out_dir, preexec=small_files)
        after = {n: open(os.path.join(out_dir, n), "rb").read() for n in sorted(os.listdir(out_dir))}
        left = [n for n in os.listdir(tmp) if n.startswith("sample.")]  # no temporary directory left
        check("sample failing part way leaves DIR as it was", rc == 2 and after == before and not left,
              f"rc={rc} {err!r} changed={sorted(set(after) ^ set(before))} left={left}")
        rc, out, err = run(ember, "data", "sample", root, "--index", "200", "--out", out_dir)
        check("sample replaces an earlier sample whole", rc == 0 and json.load(open(os.path.join(out_dir, "sample.json")))["index"] == 200,
              f"rc={rc} {err!r}")
        os.makedirs(os.path.join(tmp, "mine"))
        open(os.path.join(tmp, "mine", "notes.txt"), "w").write("keep")
        user_error("sample never replaces a directory of other files", ember,
                   ["data", "sample", root, "--index", "0", "--out", os.path.join(tmp, "mine")], ["notes.txt"])

        full_disk_convert(ember, a.data, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return checks.summary()


if __name__ == "__main__":
    sys.exit(main())
