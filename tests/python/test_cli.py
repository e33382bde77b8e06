#!/usr/bin/env python3
"""Command-line behaviour of `ember`: outputs, and one-line errors with exit status 2.

Run by CTest: test_cli.py --ember PATH --data tests/fixtures
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

import checks
from checks import check


def run(ember, *args):
    p = subprocess.run([ember, *args], capture_output=True, text=True, timeout=120)
    return p.returncode, p.stdout, p.stderr


def user_error(name, ember, args, must_mention):
    rc, out, err = run(ember, *args)
    lines = [l for l in err.splitlines() if l.strip()]
    check(name, rc == 2 and len(lines) == 1 and all(m in err for m in must_mention),
          f"rc={rc} stderr={err!r}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ember", required=True)
    ap.add_argument("--data", required=True)
    a = ap.parse_args()
    ember, pq = a.ember, os.path.join(a.data, "parquet")
    fixture = os.path.join(pq, "gzip_dict_v2_list.parquet")

    # rows as JSON lines
    rc, out, err = run(ember, "data", "parquet", fixture, "--json")
    rows = [json.loads(l) for l in out.splitlines()]
    expected = json.load(open(os.path.join(pq, "gzip_dict_v2_list.expected.json")))
    check("json prints every row", rc == 0 and len(rows) == expected["num_rows"], f"rc={rc} rows={len(rows)} {err}")
    check("json keeps column order", rc == 0 and list(rows[0].keys()) == list(expected["columns"].keys()))
    check("json int64 values", [r["index"] for r in rows] == expected["columns"]["index"])
    check("json doubles read back exactly",
          all(r["annotation"] == e for r, e in zip(rows, expected["columns"]["annotation"])))

    rc, out, _ = run(ember, "data", "parquet", fixture, "--json", "--head", "3", "--columns", "note,index")
    rows = [json.loads(l) for l in out.splitlines()]
    check("--head and --columns", rc == 0 and len(rows) == 3 and all(list(r) == ["note", "index"] for r in rows), out)

    rc, out, _ = run(ember, "data", "parquet", fixture)
    check("text summary shows schema and row groups",
          rc == 0 and "schema:" in out and "row groups:" in out and "struct<bytes: binary, path: string>" in out, out[:400])

    # user errors: one line, exit status 2, naming the file and field
    with tempfile.TemporaryDirectory() as tmp:
        missing = os.path.join(tmp, "missing.parquet")
        user_error("missing file", ember, ["data", "parquet", missing], [missing])
        junk = os.path.join(tmp, "junk.parquet")
        with open(junk, "wb") as f:
            f.write(b"this is not a parquet file at all")
        user_error("not a parquet file", ember, ["data", "parquet", junk], [junk, "PAR1"])
        truncated = os.path.join(tmp, "truncated.parquet")
        with open(fixture, "rb") as f, open(truncated, "wb") as g:
            g.write(f.read()[:-100])
        user_error("truncated file", ember, ["data", "parquet", truncated, "--json"], [truncated])
    user_error("unknown column", ember, ["data", "parquet", fixture, "--columns", "nope"], ["nope", fixture])
    user_error("unknown flag", ember, ["data", "parquet", fixture, "--bogus"], ["--bogus"])
    user_error("bad flag value", ember, ["data", "parquet", fixture, "--head", "-3"], ["--head"])
    user_error("no subcommand", ember, ["data"], ["subcommand"])
    user_error("directory instead of a file", ember, ["data", "parquet", pq], [pq])

    # LeRobot datasets: info, check, sample (the fixtures' cameras are videos)
    video = "video support: FFmpeg" in run(ember, "--version")[1]
    if not video:
        print("ember was built without FFmpeg: checking the video datasets' clear error instead of check/sample")
        user_error("video dataset without FFmpeg", ember,
                   ["data", "sample", os.path.join(a.data, "lerobot_v3_0"), "--index", "0", "--out", "/tmp/ember-s"],
                   ["built without video support"])
    for name in ("lerobot_v2_1", "lerobot_v3_0") if video else ():
        root = os.path.join(a.data, name)
        rc, out, err = run(ember, "data", "info", root, "--json")
        info = json.loads(out) if rc == 0 else {}
        check(f"info {name}", rc == 0 and info.get("total_episodes") in (3, 5) and len(info.get("cameras", [])) == 2,
              out + err)
        rc, out, err = run(ember, "data", "check", root)
        check(f"check {name} is clean", rc == 0 and out.strip().endswith("video files)") and "ok (" in out, out + err)
    with tempfile.TemporaryDirectory() as tmp:
      if video:
          broken = os.path.join(tmp, "broken")
          shutil.copytree(os.path.join(a.data, "lerobot_v3_0"), broken)
          os.remove(os.path.join(broken, "videos", "observation.images.wrist", "chunk-000", "file-001.mp4"))
          data_file = os.path.join(broken, "data", "chunk-000", "file-000.parquet")
          with open(data_file, "rb") as f:
              head = f.read()
          with open(data_file, "wb") as f:
              f.write(head[: len(head) // 2])
          rc, out, err = run(ember, "data", "check", broken, "--json")
          rep = json.loads(out) if out.strip() else {}
          files = [p["file"] for p in rep.get("problems", [])]
          check("check lists each broken file", rc == 1 and any("file-001.mp4" in f for f in files)
                and any("file-000.parquet" in f for f in files) and len(files) == 2, out + err)
          info_path = os.path.join(broken, "meta", "info.json")
          info = json.load(open(info_path))
          info["total_frames"] = 999
          json.dump(info, open(info_path, "w"))
          rc, out, err = run(ember, "data", "check", broken)
          check("check reports info.json contradicting the episodes",
                rc == 1 and "total_frames" in out and "info.json" in out, out + err)
          user_error("info on a path without meta/", ember, ["data", "info", broken + "/nope"], ["nope"])
          user_error("sample with a contradicting info.json", ember,
                     ["data", "sample", broken, "--index", "0", "--out", os.path.join(tmp, "s")], ["total_frames"])

          out_dir = os.path.join(tmp, "sample")
          root = os.path.join(a.data, "lerobot_v3_0")
          rc, out, err = run(ember, "data", "sample", root, "--index", "44", "--out", out_dir,
                             "--delta", "action=-0.0333333333,0,0.0333333333")
          sample = json.load(open(os.path.join(out_dir, "sample.json"))) if rc == 0 else {}
          check("sample writes json and camera PNGs",
                rc == 0 and sample["index"] == 44 and sample["features"]["action"]["shape"] == [3, 7]
                and sample["is_pad"]["action_is_pad"] == [1, 0, 0]
                and os.path.exists(os.path.join(out_dir, "observation.images.top.png")), out + err)
          user_error("sample index out of range", ember, ["data", "sample", root, "--index", "261", "--out", out_dir],
                     ["261", "out of range"])
          user_error("sample bad delta", ember,
                     ["data", "sample", root, "--index", "1", "--out", out_dir, "--delta", "action=0,0.01"],
                     ["multiple of 1/fps"])
          user_error("sample unknown delta key", ember,
                     ["data", "sample", root, "--index", "1", "--out", out_dir, "--delta", "nope=0"], ["nope"])
          copy = os.path.join(tmp, "copy")
          shutil.copytree(os.path.join(a.data, "lerobot_v2_1"), copy)
          before = json.load(open(os.path.join(copy, "meta", "stats.json")))
          rc, out, err = run(ember, "data", "stats", copy, "--write")
          after = json.load(open(os.path.join(copy, "meta", "stats.json")))
          same = all(abs(x - y) < 1e-6 for x, y in zip(before["action"]["mean"], after["action"]["mean"]))
          check("stats --write recomputes stats.json", rc == 0 and "wrote" in out and same
                and "q99" in after["observation.state"] and "observation.images.top" in after, out + err)
          conv = os.path.join(tmp, "converted")
          rc, out, err = run(ember, "data", "convert", os.path.join(a.data, "lerobot_v2_1"), conv)
          rc2, out2, err2 = run(ember, "data", "check", conv)
          info = json.loads(run(ember, "data", "info", conv, "--json")[1] or "{}")
          check("convert v2.1 -> v3.0, then check is clean", rc == 0 and rc2 == 0 and info.get("codebase_version") == "v3.0"
                and info.get("total_frames") == 135, out + err + out2 + err2)
          user_error("convert onto an existing dataset", ember,
                     ["data", "convert", os.path.join(a.data, "lerobot_v2_1"), conv], [conv])
          user_error("info on a missing dataset", ember, ["data", "info", os.path.join(tmp, "none")], ["info.json"])

    if video:
        rc, out, err = run(ember, "bench", "decode", os.path.join(a.data, "lerobot_v2_1"), "--random_per_file", "4")
        check("bench decode prints a JSON line", rc == 0 and json.loads(out)["sequential_frames"] == 135 * 2, out + err)

    # the benchmark prints one JSON line with its figures
    rc, out, err = run(ember, "bench", "parquet", fixture, "--min_seconds", "0.05", "--min_repeats", "2")
    try:
        rec = json.loads(out.strip().splitlines()[-1])
        ok = rc == 0 and rec["rows"] == expected["num_rows"] and rec["mb_per_s"] > 0 and "device" in rec and "commit" in rec
    except Exception as e:  # noqa: BLE001
        ok, err = False, f"{e}: {out} {err}"
    check("bench parquet prints a JSON line", ok, err)

    # the policy benchmark's profiler trace, and the script that summarises it
    with tempfile.TemporaryDirectory() as tmp:
        rc, out, err = run(ember, "bench", "policy", "--preset", "tiny", "--device", "cpu", "--attention", "varlen",
                           "--warmup", "1", "--steps", "2", "--batch_size", "2", "--profile", os.path.join(tmp, "prof"))
        trace = os.path.join(tmp, "prof", "tiny_libero_varlen.json")
        ok = rc == 0 and json.loads(out.strip().splitlines()[-1]).get("profile") == trace and os.path.exists(trace)
        check("bench policy --profile writes a trace", ok, out + err)
        # --profile_after: extra untimed steps recorded after the timed ones
        rc, out, err = run(ember, "bench", "policy", "--preset", "tiny", "--device", "cpu", "--attention", "varlen",
                           "--warmup", "0", "--steps", "2", "--batch_size", "2", "--profile", os.path.join(tmp, "after"),
                           "--profile_after", "1")
        try:
            j = json.loads(out.strip().splitlines()[-1])
            with open(os.path.join(tmp, "after", "tiny_libero_varlen.json")) as f:
                recorded = [e for e in json.load(f)["traceEvents"] if e.get("cat") == "cpu_op"]
            ok = rc == 0 and j["profile_steps"] == 1 and j["steps"] == 2 and recorded
        except Exception as e:  # noqa: BLE001
            ok, out = False, f"{e}: {out} {err}"
        check("bench policy --profile_after records extra steps", ok, out + err)
        user_error("--profile_after without --profile", ember,
                   ["bench", "policy", "--preset", "tiny", "--device", "cpu", "--profile_after", "1"], ["--profile_after"])
        user_error("--fp8_kernels with an unknown kernel", ember,
                   ["bench", "policy", "--preset", "tiny", "--device", "cpu", "--fp8", "--fp8_kernels", "vector,fast"],
                   ["--fp8_kernels", "fast"])
        rc, out, err = run(ember, "bench", "policy", "--preset", "tiny", "--device", "cpu", "--attention", "varlen",
                           "--warmup", "0", "--steps", "1", "--batch_size", "2", "--profile", os.path.join(tmp, "shapes"),
                           "--profile_shapes")
        with open(os.path.join(tmp, "shapes", "tiny_libero_varlen.json")) as f:
            recorded = [e for e in json.load(f)["traceEvents"] if e.get("name") == "aten::mm"]
        check("bench policy --profile_shapes records matrix products' input sizes",
              rc == 0 and recorded and all(len(e["args"]["Input Dims"]) == 2 for e in recorded), out + err)
        user_error("--profile_shapes without --profile", ember,
                   ["bench", "policy", "--preset", "tiny", "--device", "cpu", "--profile_shapes"], ["--profile"])
        summary_py = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench", "trace_summary.py")
        p = subprocess.run([sys.executable, summary_py, trace, "--steps", "2", "--json"], capture_output=True, text=True)
        try:
            s = json.loads(p.stdout)
            ok = (p.returncode == 0 and s["steps"] == 2 and s["top_cpu_ops_inclusive"] and s["wall_ms"] > 0
                  and s["leaf_ops"] > 100 and not any(k["name"] == "aten::view" for k in s["top_leaf_ops"]))
        except Exception as e:  # noqa: BLE001
            ok, p = False, f"{e}: {p.stdout} {p.stderr}"
        check("trace_summary.py reads the trace", ok, str(p))
        # GPU kernels grouped by kind (a synthetic two-step trace: no GPU here)
        kernels = [("nvjet_sm90_tst_128x256_64x4_2x1_v_bz_coopA_NTN", 300), ("pytorch_flash::flash_fwd_kernel", 100),
                   ("multi_tensor_apply_kernel<FusedOptimizerTensorListMetadata>", 50),
                   ("bfloat16_copy_kernel_cuda", 30), ("ncclDevKernel_AllReduce_Sum_f32_RING_LL", 20),
                   ("vectorized_elementwise_kernel<GeluCUDAKernelImpl>", 10), ("mystery", 4)]
        # the copy kernel is launched by aten::copy_ inside a cast's backward (through wrappers)
        ts, evs = 0, []
        for step in range(2):
            for name, dur in kernels:
                ext = None
                if "copy" in name:
                    ext = 1000 + step
                    evs.append({"ph": "X", "cat": "cpu_op", "name": "autograd::engine::evaluate_function: ToCopyBackward0",
                                "ts": ts, "dur": 9, "pid": 1, "tid": 2})
                    evs.append({"ph": "X", "cat": "cpu_op", "name": "aten::_to_copy", "ts": ts + 1, "dur": 7, "pid": 1, "tid": 2})
                    evs.append({"ph": "X", "cat": "cpu_op", "name": "aten::copy_", "ts": ts + 2, "dur": 5, "pid": 1, "tid": 2,
                                "args": {"External id": ext}})
                if name.startswith("nvjet"):  # a 64 x 32 x 16 product, with its input sizes
                    ext = 3000 + step
                    evs.append({"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": ts, "dur": 9, "pid": 1, "tid": 2,
                                "args": {"External id": ext, "Input Dims": [[64, 32], [32, 16]]}})
                if name == "mystery":  # the host was 50 us late launching it, after a synchronisation
                    ext = 2000 + step
                    evs.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaStreamSynchronize", "ts": ts, "dur": 40,
                                "pid": 1, "tid": 2})
                    # the operator runs 4 us before its launch, 2 of them in a runtime call
                    evs.append({"ph": "X", "cat": "cpu_op", "name": "aten::mystery_op", "ts": ts + 41, "dur": 6,
                                "pid": 1, "tid": 2, "args": {"External id": ext}})
                    evs.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaFuncGetAttributes", "ts": ts + 42,
                                "dur": 2, "pid": 1, "tid": 2})
                    ts += 50
                # each kernel's launch call, 200 us ahead of it except the late one's (5 us)
                corr = len(evs)
                lead = 5 if name == "mystery" else 200
                evs.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "ts": ts - lead, "dur": 3,
                            "pid": 1, "tid": 2, "args": {"correlation": corr}})
                evs.append({"ph": "X", "cat": "kernel", "name": name, "ts": ts, "dur": dur,
                            "args": dict({"External id": ext} if ext else {}, correlation=corr)})
                ts += dur
        gpu_trace = os.path.join(tmp, "gpu.json")
        with open(gpu_trace, "w") as f:
            json.dump({"traceEvents": evs}, f)
        p = subprocess.run([sys.executable, summary_py, gpu_trace, "--steps", "2", "--json"], capture_output=True, text=True)
        try:
            summary = json.loads(p.stdout)
            kinds = {k["kind"]: round(k["ms"], 6) for k in summary["kinds"]}
            launchers = {(k["kind"], k["launcher"]): round(k["ms"], 6) for k in summary["top_launchers"]}
            ok = (p.returncode == 0 and kinds == {"matmul": 0.3, "attention": 0.1, "optimizer": 0.05, "copy/cast": 0.03,
                                                  "communication": 0.02, "elementwise": 0.01, "other": 0.004}
                  and launchers.get(("copy/cast", "aten::copy_ < ToCopyBackward0")) == 0.03
                  and launchers.get(("matmul", "aten::mm")) == 0.3
                  and [(k["mkn"], k["calls"], round(k["tflops"], 9)) for k in summary["matmul_shapes"]]
                  == [("64x32x16", 1.0, round(2 * 64 * 32 * 16 / 300e-6 / 1e12, 9))]
                  and [(g["before"], round(g["ms"], 6)) for g in summary["idle_gaps"]] == [("aten::mystery_op", 0.05)]
                  and [(b["name"], round(b["ms"], 6)) for b in summary["blocking_calls"]] == [("cudaStreamSynchronize", 0.04)]
                  and summary["host_lead_us"] == {"p10": 5, "p50": 200, "p90": 200}
                  and round(summary["late_ops_before_launch_ms"], 6) == 0.004
                  and [(c["name"], c["calls"], round(c["ms"], 6)) for c in summary["late_ops_runtime_calls"]]
                  == [("cudaFuncGetAttributes", 1.0, 0.002)]
                  and round(summary["starved_kernel_frac"], 6) == round(2 / 14, 6)
                  and sum(t["kernels"] for t in summary["host_lead_by_tenth"]) == 14
                  and sum(t["starved_frac"] * t["kernels"] for t in summary["host_lead_by_tenth"]
                          if t["kernels"]) == 2)
            kinds = (kinds, launchers, summary.get("idle_gaps"), summary.get("blocking_calls"),
                     summary.get("host_lead_us"), summary.get("starved_kernel_frac"),
                     summary.get("late_ops_before_launch_ms"), summary.get("late_ops_runtime_calls"))
        except Exception as e:  # noqa: BLE001
            ok, kinds = False, f"{e}: {p.stdout} {p.stderr}"
        check("trace_summary.py groups GPU kernels by kind and finds idle gaps", ok, str(kinds))
        # an FP8 step in parts: quantisation kernels, products launched by aten::_scaled_mm, the rest
        evs = []
        for i, (name, dur, op) in enumerate([
                ("void ember::kernels::quantize_kernel<Plain<bf16>, false>", 40, None),
                ("sm90_xmma_gemm_e4m3e4m3_f32", 100, "aten::_scaled_mm"), ("nvjet_hsh_128x256", 60, "aten::mm"),
                ("vectorized_elementwise_kernel<Mul>", 10, "aten::mul")]):
            ts = 1000 * i
            if op:
                evs.append({"ph": "X", "cat": "cpu_op", "name": op, "ts": ts, "dur": 5, "pid": 1, "tid": 2,
                            "args": {"External id": 10 + i}})
            evs.append({"ph": "X", "cat": "kernel", "name": name, "ts": ts + 10, "dur": dur,
                        "args": {"External id": 10 + i} if op else {}})
        fp8_trace = os.path.join(tmp, "fp8.json")
        with open(fp8_trace, "w") as f:
            json.dump({"traceEvents": evs}, f)
        p = subprocess.run([sys.executable, summary_py, fp8_trace, "--steps", "1", "--json"], capture_output=True, text=True)
        try:
            parts = {k["part"]: round(k["ms"], 6) for k in json.loads(p.stdout)["fp8_parts"]}
            ok = p.returncode == 0 and parts == {"fp8 quantisation": 0.04, "fp8 products": 0.1, "other products": 0.06,
                                                 "rest": 0.01}
        except Exception as e:  # noqa: BLE001
            ok, parts = False, f"{e}: {p.stdout} {p.stderr}"
        check("trace_summary.py splits an FP8 step into quantisation, FP8 products and the rest", ok, str(parts))
        # --warm_shapes: one untimed step per distinct batch shape among the timed ones (the tiny
        # libero stream's 3 timed batches differ in prompt lengths: at least 2 shapes)
        rc, out, err = run(ember, "bench", "policy", "--preset", "tiny", "--device", "cpu", "--attention", "varlen",
                           "--warmup", "0", "--steps", "3", "--batch_size", "2", "--warm_shapes")
        try:
            j = json.loads(out.strip().splitlines()[-1])
            ok = rc == 0 and 2 <= j["warm_shape_steps"] <= 3 and j["samples_per_s"] > 0
        except Exception as e:  # noqa: BLE001
            ok, out = False, f"{e}: {out} {err}"
        check("bench policy --warm_shapes", ok, out)
        # on by default; --no_warm_shapes runs none
        runs = {}
        for flag in ([], ["--no_warm_shapes"]):
            rc, out, err = run(ember, "bench", "policy", "--preset", "tiny", "--device", "cpu", "--attention", "varlen",
                               "--warmup", "0", "--steps", "3", "--batch_size", "2", *flag)
            try:
                runs[bool(flag)] = json.loads(out.strip().splitlines()[-1])["warm_shape_steps"] if rc == 0 else None
            except Exception:  # noqa: BLE001
                runs[bool(flag)] = None
        check("bench policy warms shapes by default, not with --no_warm_shapes",
              runs[False] is not None and runs[False] >= 2 and runs[True] == 0, str(runs))
        # filler up to a multiple of 64 prefix tokens: counted in the hardware FLOPs, not in MFU
        rc, out, err = run(ember, "bench", "policy", "--preset", "tiny", "--device", "cpu", "--attention", "varlen",
                           "--warmup", "0", "--steps", "1", "--batch_size", "2", "--prefix_multiple", "64")
        try:
            j = json.loads(out.strip().splitlines()[-1])
            ok = (rc == 0 and j["prefix_multiple"] == 64 and j["filler_tflops_per_sample"] > 0
                  and j["hardware_flops_util"] > j["mfu"] > 0
                  and 0 < j["host_queue_time_s"] <= j["step_time_s"])
        except Exception as e:  # noqa: BLE001
            ok, out = False, f"{e}: {out} {err}"
        check("bench policy --prefix_multiple", ok, out)
        user_error("bench policy --prefix_multiple", ember,
                   ["bench", "policy", "--preset", "tiny", "--device", "cpu", "--steps", "1", "--prefix_multiple", "-1"],
                   ["--prefix_multiple", "-1"])
        user_error("bench policy --param_dtype", ember,
                   ["bench", "policy", "--preset", "tiny", "--device", "cpu", "--steps", "1", "--param_dtype", "fp16"],
                   ["--param_dtype", "fp16"])
        user_error("bench policy --profile into a file", ember,
                   ["bench", "policy", "--preset", "tiny", "--device", "cpu", "--steps", "1", "--profile", summary_py],
                   ["--profile"])

    # issue 42: every numeric bench flag has a range, checked before any work (these aborted,
    # ran out of memory, hung or were accepted); the error names the flag
    root = os.path.join(a.data, "lerobot_v3_0")
    for args, flag in [
        (["bench", "loader", root, "--workers", "100000"], "--workers"),
        (["bench", "loader", root, "--batch_size", "1000000000"], "--batch_size"),
        (["bench", "loader", root, "--image_shift", "nan"], "--image_shift"),
        (["bench", "jpeg_decode", root, "--threads", "100000"], "--threads"),
        (["bench", "jpeg_decode", root, "--batch_size", "1000000000"], "--batch_size"),
        (["bench", "jpeg_decode", root, "--image_size", "100000"], "--image_size"),
        (["bench", "jpeg", root, "--image_size", "100000"], "--image_size"),
        (["bench", "jpeg", root, "--frames", "1000000000"], "--frames"),
        (["bench", "decode", root, "--workers", "100000"], "--workers"),
        (["bench", "policy", "--preset", "tiny", "--batch_size", "1000000000"], "--batch_size"),
        (["bench", "policy", "--preset", "tiny", "--steps", "99999999999999999999"], "--steps"),
        (["bench", "parquet", fixture, "--min_seconds", "nan"], "--min_seconds"),
        (["bench", "sim", "--seconds", "-1"], "--seconds"),
        (["bench", "sim", "--seconds", "nan"], "--seconds"),
    ]:
        user_error("bench " + args[1] + " " + flag + " " + args[-1], ember, args, [flag])

    # bench/dist_scaling.sh on CPU ranks (Gloo): the tiny preset on 1 rank, then 2 ranks with and
    # without ZeRO-1; one JSON line per multi-rank run with its efficiency
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench", "dist_scaling.sh")
    if not video:
        print("skip dist_scaling.sh on CPU ranks: ember was built without FFmpeg and the fixture's cameras are videos")
    else:
        with tempfile.TemporaryDirectory() as tmp:
            env = dict(os.environ, OUT=os.path.join(tmp, "out"), RUNS=os.path.join(tmp, "runs"), DEVICE="cpu", EMBER=ember,
                       EXTRA="--dataset.image_size=32 --policy.horizon=10", STEPS="6", LOG_FREQ="2", BATCH="4",
                       WORKERS="1", GPUS="2", ZERO="1", EMBER_COMMIT="test")
            p = subprocess.run(["bash", script, os.path.join(a.data, "lerobot_v3_0"), "tiny"], capture_output=True, text=True,
                               env=env, timeout=300)
            try:
                lines = [json.loads(l) for l in p.stdout.splitlines() if l.startswith("{")]
                ok = (p.returncode == 0 and [l["config"] for l in lines] == ["2gpu", "2gpu_zero1"]
                      and all(l["gpus"] == 2 and l["samples_per_s_2gpu"] > 0 and 0 < l["scaling_efficiency"] for l in lines)
                      and all(l["commit"] == "test" and "extra_step_s" in l for l in lines))
            except Exception as e:  # noqa: BLE001
                ok, lines = False, f"{e}"
            check("dist_scaling.sh on CPU ranks", ok, f"{lines} {p.stderr[-600:]}")

    # the demo (main job), shortened: collect -> train -> evaluate (or train on the bundled
    # dataset when built without the simulator)
    with tempfile.TemporaryDirectory() as tmp:
        rc, out, err = run(ember, "demo", "--output_dir", os.path.join(tmp, "run"), "--steps", "20",
                           "--episodes", "2", "--trials", "1", "--device", "cpu")
        check("demo", rc == 0 and "ember demo: done" in out, (out + err)[-400:])

    return checks.summary()


if __name__ == "__main__":
    sys.exit(main())
