#!/usr/bin/env python3
"""Command-line behaviour of `ember`: outputs, and one-line errors with exit status 2.

Run by CTest: test_cli.py --ember PATH --data tests/data
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

passed = failed = 0


def check(name, ok, detail=""):
    global passed, failed
    if ok:
        passed += 1
        print(f"ok   {name}")
    else:
        failed += 1
        print(f"FAIL {name}: {detail}")


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

    # the benchmark prints one JSON line with its figures
    rc, out, err = run(ember, "bench", "parquet", fixture, "--min_seconds", "0.05", "--min_repeats", "2")
    try:
        rec = json.loads(out.strip().splitlines()[-1])
        ok = rc == 0 and rec["rows"] == expected["num_rows"] and rec["mb_per_s"] > 0 and "device" in rec and "commit" in rec
    except Exception as e:  # noqa: BLE001
        ok, err = False, f"{e}: {out} {err}"
    check("bench parquet prints a JSON line", ok, err)

    # the demo (main job) runs on the bundled dataset
    rc, out, err = run(ember, "demo")
    check("demo", rc == 0 and "observation.state" in out, err[-400:])

    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
