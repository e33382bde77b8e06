#!/usr/bin/env python3
"""The safetensors library reads what ember writes, and ember reads what the library writes.

    test_safetensors_interop.py --tool build/bin/safetensors_tool [--keep DIR]

ember -> Python: the tool (tests/tools/safetensors_tool.cc) writes DIR/numpy.safetensors, which
`safetensors.numpy.load_file` must load with the dtypes, shapes and values built below, and
DIR/all.safetensors (adding BF16 and the FP8 types, which numpy lacks), checked byte for byte
through `safetensors.deserialize` (BF16 compared as uint16 bit patterns).
Python -> ember: the library writes files (numpy.save_file, and serialize_file for BF16/FP8),
the tool dumps them as ember reads them, and dtypes, shapes, metadata and bytes must match.
Prints `N passed, M failed`; exit status 1 if any failed.
"""
import argparse
import json
import os
import struct
import subprocess
import sys
import tempfile

import numpy as np
import safetensors
from safetensors import TensorSpec, safe_open, serialize_file
from safetensors.numpy import load_file, save_file

passed = 0
failed = 0


def check(cond, what):
    global passed, failed
    if cond:
        passed += 1
    else:
        failed += 1
        print(f"FAIL: {what}")


def numpy_tensors():
    """What the tool writes into numpy.safetensors (mirrors numpy_tensors() there)."""
    return {
        "f32": ((np.arange(12, dtype=np.float32) - 5) * 0.25).reshape(3, 4),
        "f32_special": np.array([0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000, 1], dtype=np.uint32).view(np.float32),
        "f64": np.array([-2.0, -0.5, 1.0, 2.5, 4.0, 1e300], dtype=np.float64).reshape(2, 3),
        "i64": np.array([0, -1, 1 << 62, -(1 << 63)], dtype=np.int64),
        "i32": np.array([[1, -2], [3, -4]], dtype=np.int32),
        "i16": np.array([-32768, 0, 32767], dtype=np.int16),
        "i8": np.array([-128, 0, 127], dtype=np.int8),
        "u8": (np.arange(24, dtype=np.int64) * 37 % 256).astype(np.uint8).reshape(2, 3, 4),
        "u16": np.array([0, 65535], dtype=np.uint16),
        "bool": np.array([True, False, True, False, True]),
        "f16": np.array([0x3C00, 0xC000], dtype=np.uint16).view(np.float16),
        "scalar": np.array(3.5, dtype=np.float32),
        "empty": np.zeros((0, 3), dtype=np.float32),
    }


# name -> (dtype, shape, raw bytes) for the types numpy lacks
EXTRA = {
    "bf16": ("BF16", [5], np.array([0x3F80, 0xC000, 0x7F80, 0x0001, 0x7FC0], dtype=np.uint16).tobytes()),
    "f8_e4m3": ("F8_E4M3", [4], bytes([0x00, 0x38, 0x7E, 0xFF])),
    "f8_e5m2": ("F8_E5M2", [2], bytes([0x3C, 0xC0])),
}
NP_DTYPE = {"F64": np.float64, "F32": np.float32, "F16": np.float16, "I64": np.int64, "I32": np.int32,
            "I16": np.int16, "I8": np.int8, "U8": np.uint8, "U16": np.uint16, "BOOL": np.bool_}
METADATA = {"format": "pt", "written_by": "ember"}


def header_length(path):
    with open(path, "rb") as f:
        return struct.unpack("<Q", f.read(8))[0]


def same_array(got, want):
    return got.dtype == want.dtype and got.shape == want.shape and got.tobytes() == want.tobytes()


def ember_to_python(tool, tmp):
    subprocess.run([tool, "write", tmp], check=True)
    path = os.path.join(tmp, "numpy.safetensors")
    check(header_length(path) % 8 == 0, "ember pads the header to 8 bytes")
    loaded = load_file(path)
    want = numpy_tensors()
    check(sorted(loaded) == sorted(want), f"numpy.safetensors names {sorted(loaded)}")
    for name, arr in want.items():
        if name in loaded:
            check(same_array(loaded[name], arr), f"{name}: {loaded[name]!r} != {arr!r}")
    with safe_open(path, framework="np") as f:
        check(f.metadata() == METADATA, f"metadata {f.metadata()}")

    path = os.path.join(tmp, "all.safetensors")
    with open(path, "rb") as f:
        entries = dict(safetensors.deserialize(f.read()))
    check(sorted(entries) == sorted(list(want) + list(EXTRA)), f"all.safetensors names {sorted(entries)}")
    for name, (dtype, shape, data) in EXTRA.items():
        e = entries.get(name, {})
        check(e.get("dtype") == dtype and list(e.get("shape", [])) == shape, f"{name}: {e.get('dtype')} {e.get('shape')}")
        check(bytes(e.get("data", b"")) == data, f"{name}: bytes differ")
    bits = np.frombuffer(bytes(entries["bf16"]["data"]), dtype=np.uint16)
    check(bits.tolist() == [0x3F80, 0xC000, 0x7F80, 0x0001, 0x7FC0], f"bf16 bit patterns {bits}")
    for name, arr in want.items():
        e = entries.get(name, {})
        check(bytes(e.get("data", b"")) == arr.tobytes(), f"all.safetensors {name}: bytes differ")


def dump(tool, path):
    out = subprocess.run([tool, "dump", path], check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def python_to_ember(tool, tmp):
    want = numpy_tensors()
    path = os.path.join(tmp, "py_numpy.safetensors")
    save_file(want, path, metadata={"source": "python", "note": "ünïcode"})
    d = dump(tool, path)
    check(d["metadata"] == {"source": "python", "note": "ünïcode"}, f"metadata {d['metadata']}")
    check(sorted(d["tensors"]) == sorted(want), f"names {sorted(d['tensors'])}")
    for name, arr in want.items():
        t = d["tensors"].get(name)
        if t is None:
            continue
        check(np.dtype(NP_DTYPE[t["dtype"]]) == arr.dtype, f"{name}: dtype {t['dtype']} vs {arr.dtype}")
        check(t["shape"] == list(arr.shape), f"{name}: shape {t['shape']} vs {list(arr.shape)}")
        check(bytes.fromhex(t["hex"]) == arr.tobytes(), f"{name}: bytes differ")

    # BF16 and FP8 through the low-level writer (numpy has no such dtypes)
    buffers = {name: np.frombuffer(data, dtype=np.uint8).copy() for name, (_, _, data) in EXTRA.items()}
    spec_dtype = {"BF16": "bfloat16", "F8_E4M3": "float8_e4m3fn", "F8_E5M2": "float8_e5m2"}  # TensorSpec's names
    specs = {name: TensorSpec(dtype=spec_dtype[dtype], shape=shape, data_ptr=buffers[name].ctypes.data,
                              data_len=len(data))
             for name, (dtype, shape, data) in EXTRA.items()}
    path = os.path.join(tmp, "py_extra.safetensors")
    serialize_file(specs, path, None)
    d = dump(tool, path)
    for name, (dtype, shape, data) in EXTRA.items():
        t = d["tensors"].get(name, {})
        check(t.get("dtype") == dtype and t.get("shape") == shape, f"{name}: {t}")
        check(bytes.fromhex(t.get("hex", "")) == data, f"{name}: bytes differ")

    # a file ember must refuse: the library never writes one, so make it by hand
    path = os.path.join(tmp, "bad.safetensors")
    header = json.dumps({"x": {"dtype": "F32", "shape": [2], "data_offsets": [0, 4]}}).encode()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(header)) + header + b"\0" * 4)
    r = subprocess.run([tool, "dump", path], capture_output=True, text=True)
    check(r.returncode == 2 and "'x'" in r.stderr and path in r.stderr, f"bad file: {r.returncode} {r.stderr!r}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tool", required=True)
    ap.add_argument("--keep", help="write into this directory and keep it")
    args = ap.parse_args()
    print(f"safetensors {safetensors.__version__}, numpy {np.__version__}")
    if args.keep:
        os.makedirs(args.keep, exist_ok=True)
        ember_to_python(args.tool, args.keep)
        python_to_ember(args.tool, args.keep)
    else:
        with tempfile.TemporaryDirectory() as tmp:
            ember_to_python(args.tool, tmp)
            python_to_ember(args.tool, tmp)
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
