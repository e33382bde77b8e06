#!/usr/bin/env python3
"""Parquet interoperability between ember and pyarrow, both directions.

A: ember's writer (tests/tools/parquet_write_tool) writes files; pyarrow reads every value
   and the schema and compares them with the FILE.expected.json the tool wrote beside each.
B: pyarrow writes seeded random tables across its settings (codecs, dictionary, data page
   v1/v2, page and row-group sizes, BYTE_STREAM_SPLIT / DELTA_* encodings, nested lists,
   fixed-size lists, structs, nulls everywhere); `ember data parquet --json` prints them and
   every value is compared with pyarrow's to_pylist().

Usage: test_interop.py --ember PATH --write-tool PATH [--keep DIR] [-k SUBSTRING]
Prints one line per case, then "N passed, M failed"; exits 1 if any case failed.
Needs only pyarrow and numpy.
"""

import argparse
import json
import math
import os
import random
import struct
import subprocess
import sys
import tempfile
import traceback

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq


class Mismatch(Exception):
    pass


# ---- comparing values ----

def same_float32(got, want):
    a, b = np.float32(got), np.float32(want)
    return a == b and math.copysign(1.0, float(a)) == math.copysign(1.0, float(b))


def compare(got, want, typ, where):
    """got: the value under test; want: the reference, as pyarrow's to_pylist() gives it
    (binary as bytes) or as an expected.json holds it (binary as hex); typ: the arrow type."""
    if pa.types.is_dictionary(typ):
        typ = typ.value_type
    if want is None or got is None:
        if want is not None or got is not None:
            raise Mismatch(f"{where}: got {got!r}, expected {want!r}")
        return
    if pa.types.is_float32(typ):
        if not isinstance(got, (int, float)) or not same_float32(got, want):
            raise Mismatch(f"{where}: got {got!r}, expected float32 {want!r}")
    elif pa.types.is_float64(typ):  # ember prints 1.0 as 1: ints are fine where doubles are
        if not isinstance(got, (int, float)) or float(got) != float(want) or \
                math.copysign(1.0, float(got)) != math.copysign(1.0, float(want)):
            raise Mismatch(f"{where}: got {got!r}, expected double {want!r}")
    elif pa.types.is_binary(typ) or pa.types.is_large_binary(typ) or pa.types.is_fixed_size_binary(typ):
        g = got.hex() if isinstance(got, bytes) else got
        w = want.hex() if isinstance(want, bytes) else want
        if g != w:
            raise Mismatch(f"{where}: got {g!r}, expected {w!r} (hex)")
    elif pa.types.is_list(typ) or pa.types.is_large_list(typ) or pa.types.is_fixed_size_list(typ):
        if not isinstance(got, list) or len(got) != len(want):
            raise Mismatch(f"{where}: got {got!r}, expected {want!r}")
        for i, (g, w) in enumerate(zip(got, want)):
            compare(g, w, typ.value_type, f"{where}[{i}]")
    elif pa.types.is_struct(typ):
        names = [typ.field(i).name for i in range(typ.num_fields)]
        if not isinstance(got, dict) or sorted(got) != sorted(names):
            raise Mismatch(f"{where}: got {got!r}, expected a struct with fields {names}")
        for i, name in enumerate(names):
            compare(got[name], want[name], typ.field(i).type, f"{where}.{name}")
    elif pa.types.is_boolean(typ):
        if not (isinstance(got, bool) and isinstance(want, bool) and got == want):
            raise Mismatch(f"{where}: got {got!r}, expected {want!r}")
    else:  # ints, strings
        if type(got) is not type(want) or got != want:
            raise Mismatch(f"{where}: got {got!r}, expected {want!r}")


# ---- direction A: pyarrow reads what ember wrote ----

def check_ember_file(path, expected_path):
    with open(expected_path, encoding="utf-8") as f:
        expected = json.load(f)
    pf = pq.ParquetFile(path)
    if pf.metadata.num_row_groups != expected["row_groups"]:
        raise Mismatch(f"{pf.metadata.num_row_groups} row groups, expected {expected['row_groups']}")
    kv = {k.decode(): v.decode() for k, v in (pf.metadata.metadata or {}).items()}
    if kv != expected["metadata"]:
        raise Mismatch(f"key-value metadata {kv}, expected {expected['metadata']}")
    if not pf.metadata.created_by.startswith("ember"):
        raise Mismatch(f"created_by is {pf.metadata.created_by!r}")
    table = pq.read_table(path)
    names = list(expected["columns"])
    if table.column_names != names:
        raise Mismatch(f"columns {table.column_names}, expected {names}")
    for name in names:
        field = table.schema.field(name)
        if str(field.type) != expected["types"][name]:
            raise Mismatch(f"column {name}: pyarrow type {field.type}, expected {expected['types'][name]}")
        if field.nullable != expected["nullable"][name]:
            raise Mismatch(f"column {name}: nullable {field.nullable}, expected {expected['nullable'][name]}")
        got = table.column(name).to_pylist()
        want = expected["columns"][name]
        if len(got) != len(want):
            raise Mismatch(f"column {name}: {len(got)} rows, expected {len(want)}")
        for r, (g, w) in enumerate(zip(got, want)):
            compare(g, w, field.type, f"{name}[row {r}]")
    # small batches: pyarrow's record reader resumes inside pages and row groups
    r = 0
    for batch in pf.iter_batches(batch_size=7):
        for name in names:
            want = expected["columns"][name][r:r + batch.num_rows]
            for i, (a, w) in enumerate(zip(batch.column(name).to_pylist(), want)):
                compare(a, w, batch.schema.field(name).type, f"{name}[batch row {r + i}]")
        r += batch.num_rows
    if r != table.num_rows:
        raise Mismatch(f"iter_batches gave {r} rows, read_table {table.num_rows}")
    # the row groups one by one too (pyarrow's per-row-group path)
    start = 0
    for g in range(pf.metadata.num_row_groups):
        rg = pf.read_row_group(g)
        for name in names:
            want = expected["columns"][name][start:start + rg.num_rows]
            for r, (a, w) in enumerate(zip(rg.column(name).to_pylist(), want)):
                compare(a, w, rg.schema.field(name).type, f"{name}[group {g} row {r}]")
        start += rg.num_rows
    return f"{table.num_rows} rows, {len(names)} columns"


def direction_a(write_tool, workdir, results, only):
    out = os.path.join(workdir, "ember_written")
    proc = subprocess.run([write_tool, out], capture_output=True, text=True)
    if proc.returncode != 0:
        results.append(("A write tool", False, proc.stderr.strip()[-2000:]))
        return
    for fn in sorted(os.listdir(out)):
        if not fn.endswith(".parquet") or only not in fn:
            continue
        name = "A " + fn
        try:
            info = check_ember_file(os.path.join(out, fn), os.path.join(out, fn[:-8] + ".expected.json"))
            results.append((name, True, info))
        except Exception as e:  # noqa: BLE001 - every failure is reported per case
            results.append((name, False, describe(e)))


# ---- direction B: ember reads what pyarrow wrote ----

def describe(e):
    if isinstance(e, (Mismatch, subprocess.CalledProcessError)):
        return str(e)
    return "".join(traceback.format_exception_only(type(e), e)).strip()


class Gen:
    """Seeded random Python values for an arrow type, with nulls where the field allows."""

    WORDS = ["", "a", "pick up the cube", "héllo wörld", "日本語のテキスト", "emoji 🤖🦾", "tab\tnew\nline",
             'quote"back\\slash', "x" * 300]

    def __init__(self, seed, null_p):
        self.r = random.Random(seed)
        self.null_p = null_p

    def value(self, typ, nullable=True):
        r = self.r
        if nullable and r.random() < self.null_p:
            return None
        if pa.types.is_boolean(typ):
            return r.random() < 0.5
        if pa.types.is_integer(typ):
            lo, hi = (-2**(typ.bit_width - 1), 2**(typ.bit_width - 1) - 1) if pa.types.is_signed_integer(typ) \
                else (0, 2**typ.bit_width - 1)
            return r.choice([r.randint(max(lo, -100), 100), r.randint(lo, hi), lo, hi])
        if pa.types.is_float32(typ):
            while True:  # any finite float32, or a short decimal
                f = np.frombuffer(struct.pack("<I", r.getrandbits(32)), dtype=np.float32)[0]
                if np.isfinite(f):
                    return float(f) if r.random() < 0.7 else float(np.float32(r.randint(-999, 999) / 10))
        if pa.types.is_float64(typ):
            while True:
                d = struct.unpack("<d", struct.pack("<Q", r.getrandbits(64)))[0]
                if math.isfinite(d):
                    return d if r.random() < 0.7 else r.randint(-999, 999) / 10
        if pa.types.is_string(typ) or pa.types.is_large_string(typ):
            return r.choice(self.WORDS) + (str(r.randint(0, 30)) if r.random() < 0.5 else "")
        if pa.types.is_fixed_size_binary(typ):
            return bytes(r.getrandbits(8) for _ in range(typ.byte_width))
        if pa.types.is_dictionary(typ):
            return self.value(typ.value_type, False)
        if pa.types.is_binary(typ) or pa.types.is_large_binary(typ):
            return bytes(r.getrandbits(8) for _ in range(r.choice([0, 1, 3, 8, 20])))
        if pa.types.is_fixed_size_list(typ):
            f = typ.value_field
            return [self.value(f.type, f.nullable) for _ in range(typ.list_size)]
        if pa.types.is_list(typ) or pa.types.is_large_list(typ):
            f = typ.value_field
            return [self.value(f.type, f.nullable) for _ in range(r.choice([0, 0, 1, 2, 3, 5]))]
        if pa.types.is_struct(typ):
            return {typ.field(i).name: self.value(typ.field(i).type, typ.field(i).nullable) for i in range(typ.num_fields)}
        raise ValueError(f"no generator for {typ}")


def lst(t, nullable=True):
    return pa.list_(pa.field("element", t, nullable=nullable))


SCHEMA = pa.schema([
    pa.field("bool", pa.bool_()),
    pa.field("int32", pa.int32()),
    pa.field("int64", pa.int64()),
    pa.field("float32", pa.float32()),
    pa.field("float64", pa.float64()),
    pa.field("string", pa.string()),
    pa.field("binary", pa.binary()),
    pa.field("int64_required", pa.int64(), nullable=False),
    pa.field("float32_required", pa.float32(), nullable=False),
    pa.field("string_required", pa.string(), nullable=False),
    pa.field("observation.state", lst(pa.float32())),
    pa.field("list2_int64", lst(lst(pa.int64()))),
    pa.field("list3_float64", lst(lst(lst(pa.float64())))),
    pa.field("list_required_elements", lst(pa.int32(), nullable=False), nullable=False),
    pa.field("list_string", lst(pa.string())),
    pa.field("list_bool", lst(pa.bool_())),
    pa.field("fixed_size_list", pa.list_(pa.float32(), 3)),
    pa.field("observation.image", pa.struct([pa.field("bytes", pa.binary()), pa.field("path", pa.string())])),
    pa.field("struct_nested", pa.struct([pa.field("id", pa.int32(), nullable=False),
                                         pa.field("v", lst(pa.float64())),
                                         pa.field("inner", pa.struct([pa.field("flag", pa.bool_())]))])),
    pa.field("list_struct", lst(pa.struct([pa.field("x", pa.float32()), pa.field("tag", pa.string())]))),
])

# types ember reads as one of its own: small and unsigned ints, large and fixed-size
# binary, large lists, dictionary-typed strings
OTHER_SCHEMA = pa.schema([
    pa.field("int8", pa.int8()),
    pa.field("int16", pa.int16()),
    pa.field("uint8", pa.uint8()),
    pa.field("uint16", pa.uint16()),
    pa.field("uint32", pa.uint32()),
    pa.field("large_string", pa.large_string()),
    pa.field("large_binary", pa.large_binary()),
    pa.field("fixed_size_binary", pa.binary(4)),
    pa.field("large_list", pa.large_list(pa.field("element", pa.float32()))),
    pa.field("dictionary_string", pa.dictionary(pa.int32(), pa.string())),
])

# many distinct values: wide dictionary indices, long RLE / bit-packed runs
WIDE_SCHEMA = pa.schema([
    pa.field("int64", pa.int64()),
    pa.field("string", pa.string()),
    pa.field("float32_required", pa.float32(), nullable=False),
])


def make_table(schema, rows, seed, null_p):
    g = Gen(seed, null_p)
    cols = {f.name: [g.value(f.type, f.nullable) for _ in range(rows)] for f in schema}
    return pa.Table.from_pydict(cols, schema=schema)


def big_values_table():
    """Values larger than a page: 3 MB binary cells, long strings, a long list."""
    r = random.Random(7)
    blob = bytes(r.getrandbits(8) for _ in range(1 << 16)) * 48
    return pa.table({
        "blob": pa.array([blob, None, b"", blob[:1000]], pa.binary()),
        "text": pa.array(["é" * 300000, "", None, "x"], pa.string()),
        "long_list": pa.array([list(range(200000)), [], None, [1]], pa.list_(pa.int64())),
    })


def constant_table():
    """One distinct value per column: one-entry dictionaries (index bit width 0) and long RLE runs."""
    n = 70000
    return pa.table({
        "int64": pa.array([7] * n, pa.int64()),
        "string": pa.array(["same"] * n, pa.string()),
        "float32_or_null": pa.array([1.5 if i % 3 else None for i in range(n)], pa.float32()),
        "list": pa.array([[0.25, 0.25]] * n, pa.list_(pa.float64())),
        "bool": pa.array([True] * n, pa.bool_()),
    })


FLAT_FLOATS = ["float32", "float64", "float32_required"]
FLAT_INTS = ["int32", "int64", "int64_required"]
FLAT_BYTES = ["string", "binary", "string_required"]

# name, write_table keyword arguments, rows, null probability, schema
CASES = []
for codec in ["none", "snappy", "zstd", "gzip"]:
    for dictionary in [True, False]:
        for version in ["1.0", "2.0"]:
            CASES.append((f"{codec} dict={dictionary} page=v{version}",
                          dict(compression=codec, use_dictionary=dictionary, data_page_version=version), 300, 0.2, SCHEMA))
CASES += [
    ("small pages v1", dict(data_page_size=256, data_page_version="1.0"), 400, 0.2, SCHEMA),
    ("small pages v2", dict(data_page_size=256, data_page_version="2.0"), 400, 0.2, SCHEMA),
    ("small pages no dict", dict(data_page_size=128, use_dictionary=False), 400, 0.2, SCHEMA),
    ("small row groups", dict(row_group_size=37), 400, 0.2, SCHEMA),
    ("one big row group", dict(row_group_size=1 << 20), 1500, 0.1, SCHEMA),
    ("no nulls", dict(), 300, 0.0, SCHEMA),
    ("mostly nulls", dict(), 300, 0.9, SCHEMA),
    ("dictionary page limit (fallback to PLAIN mid-chunk)",
     dict(dictionary_pagesize_limit=64, data_page_size=512, write_batch_size=16), 400, 0.2, SCHEMA),
    ("BYTE_STREAM_SPLIT floats, DELTA_BINARY_PACKED ints v1",
     dict(use_dictionary=False, data_page_version="1.0",
          column_encoding={**{c: "BYTE_STREAM_SPLIT" for c in FLAT_FLOATS}, **{c: "DELTA_BINARY_PACKED" for c in FLAT_INTS}}),
     300, 0.2, SCHEMA),
    ("BYTE_STREAM_SPLIT floats, DELTA_BINARY_PACKED ints v2 small pages",
     dict(use_dictionary=False, data_page_version="2.0", data_page_size=200,
          column_encoding={**{c: "BYTE_STREAM_SPLIT" for c in FLAT_FLOATS}, **{c: "DELTA_BINARY_PACKED" for c in FLAT_INTS}}),
     300, 0.2, SCHEMA),
    ("BYTE_STREAM_SPLIT / DELTA_BINARY_PACKED in nested leaves",
     dict(use_dictionary=False, column_encoding={"observation.state.list.element": "BYTE_STREAM_SPLIT",
                                                 "list2_int64.list.element.list.element": "DELTA_BINARY_PACKED"}),
     300, 0.2, SCHEMA),
    ("DELTA_LENGTH_BYTE_ARRAY strings",
     dict(use_dictionary=False, column_encoding={c: "DELTA_LENGTH_BYTE_ARRAY" for c in FLAT_BYTES}), 300, 0.2, SCHEMA),
    ("DELTA_BYTE_ARRAY strings v2",
     dict(use_dictionary=False, data_page_version="2.0", column_encoding={c: "DELTA_BYTE_ARRAY" for c in FLAT_BYTES}),
     300, 0.2, SCHEMA),
    ("mostly nulls v2 zstd", dict(compression="zstd", data_page_version="2.0", data_page_size=128), 300, 0.9, SCHEMA),
    ("all nulls v2", dict(data_page_version="2.0"), 50, 1.0, SCHEMA),
    ("RLE booleans v1", dict(use_dictionary=False, column_encoding={"bool": "RLE", "list_bool.list.element": "RLE"}),
     300, 0.2, SCHEMA),
    ("RLE booleans v2", dict(use_dictionary=False, data_page_version="2.0",
                             column_encoding={"bool": "RLE", "list_bool.list.element": "RLE"}), 300, 0.2, SCHEMA),
    ("BYTE_STREAM_SPLIT ints",
     dict(use_dictionary=False, column_encoding={c: "BYTE_STREAM_SPLIT" for c in FLAT_INTS}), 300, 0.2, SCHEMA),
    ("DELTA encodings in nested and struct leaves v2",
     dict(use_dictionary=False, data_page_version="2.0", data_page_size=300,
          column_encoding={"list_string.list.element": "DELTA_BYTE_ARRAY",
                           "observation.image.bytes": "DELTA_LENGTH_BYTE_ARRAY",
                           "observation.image.path": "DELTA_BYTE_ARRAY",
                           "list3_float64.list.element.list.element.list.element": "BYTE_STREAM_SPLIT",
                           "struct_nested.id": "DELTA_BINARY_PACKED"}), 300, 0.2, SCHEMA),
    ("one row per row group", dict(row_group_size=1), 30, 0.2, SCHEMA),
    ("tiny write batches", dict(write_batch_size=3, data_page_size=64), 200, 0.2, SCHEMA),
    ("other types", dict(), 200, 0.2, OTHER_SCHEMA),
    ("other types no dict v2", dict(use_dictionary=False, data_page_version="2.0"), 200, 0.2, OTHER_SCHEMA),
    ("many distinct values", dict(), 70000, 0.05, WIDE_SCHEMA),
    ("non-compliant nested names (item)", dict(use_compliant_nested_type=False), 200, 0.2, SCHEMA),
    ("page checksums and page index", dict(write_page_checksum=True, write_page_index=True), 200, 0.2, SCHEMA),
    ("no stored arrow schema", dict(store_schema=False), 200, 0.2, SCHEMA),
    ("constant columns", dict(), 0, 0, constant_table),
    ("constant columns v2 no dict", dict(use_dictionary=False, data_page_version="2.0"), 0, 0, constant_table),
    ("values larger than a page", dict(data_page_size=4096), 0, 0, big_values_table),
    ("values larger than a page v2 no dict", dict(data_page_size=4096, data_page_version="2.0", use_dictionary=False),
     0, 0, big_values_table),
    ("empty table", dict(), 0, 0.2, SCHEMA),
    ("one row", dict(), 1, 0.0, SCHEMA),
]

# Cases that fail because of a known ember READER bug: they stay in the run and stay
# reported as failures until the reader is fixed (see the writer session's report).
KNOWN_READER_BUGS = {}


def ember_rows(ember, path):
    proc = subprocess.run([ember, "data", "parquet", "--json", path], capture_output=True, text=True)
    if proc.returncode != 0:
        raise Mismatch(f"ember exited {proc.returncode}: {proc.stderr.strip()[-1500:]}")
    return [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]


def check_pyarrow_file(ember, path, table):
    rows = ember_rows(ember, path)
    if len(rows) != table.num_rows:
        raise Mismatch(f"ember printed {len(rows)} rows, the table has {table.num_rows}")
    for name in table.column_names:
        typ = table.schema.field(name).type
        want = table.column(name).to_pylist()
        for r, row in enumerate(rows):
            if name not in row:
                raise Mismatch(f"row {r}: ember printed no column {name!r} (has {sorted(row)})")
            compare(row[name], want[r], typ, f"{name}[row {r}]")
        if len(rows) and list(rows[0]) != table.column_names:
            raise Mismatch(f"ember's columns {list(rows[0])}, expected {table.column_names}")
    groups = pq.ParquetFile(path).metadata.num_row_groups
    return f"{table.num_rows} rows, {groups} row groups"


def direction_b(ember, workdir, results, only):
    out = os.path.join(workdir, "pyarrow_written")
    os.makedirs(out, exist_ok=True)
    for i, (name, kwargs, rows, null_p, schema) in enumerate(CASES):
        label = "B " + name
        if only not in label:
            continue
        path = os.path.join(out, f"case_{i:02d}.parquet")
        try:
            table = schema() if callable(schema) else make_table(schema, rows, seed=1000 + i, null_p=null_p)
            pq.write_table(table, path, **kwargs)
            info = check_pyarrow_file(ember, path, table)
            results.append((label, True, info))
        except Exception as e:  # noqa: BLE001
            msg = describe(e)
            if name in KNOWN_READER_BUGS:
                msg = f"KNOWN READER BUG ({KNOWN_READER_BUGS[name]}): {msg}"
            results.append((label + f" [{os.path.basename(path)}]", False, msg))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ember", required=True)
    ap.add_argument("--write-tool", required=True)
    ap.add_argument("--keep", help="write the files here and keep them (default: a temporary directory)")
    ap.add_argument("-k", default="", help="run only cases whose name contains this")
    args = ap.parse_args()

    results = []
    with tempfile.TemporaryDirectory(prefix="ember_interop_") as tmp:
        workdir = args.keep or tmp
        os.makedirs(workdir, exist_ok=True)
        direction_a(args.write_tool, workdir, results, args.k)
        direction_b(args.ember, workdir, results, args.k)

    for name, ok, info in results:
        print(f"{'PASS' if ok else 'FAIL'} {name}: {info}")
    passed = sum(1 for _, ok, _ in results if ok)
    failed = len(results) - passed
    print(f"{passed} passed, {failed} failed")
    return 1 if failed or not results else 0


if __name__ == "__main__":
    sys.exit(main())
