#!/usr/bin/env python3
"""A second compiler and standard library over the sources that do not need libtorch.

GCC 12 (the development machines, CI) builds ember; the GPU nodes build it with GCC 13, whose
libstdc++ headers include fewer others: a file that leans on GCC 12's transitive includes
(a braced list without <initializer_list>, std::function without <functional>) compiles here
and fails there. This check compiles, syntax only, with clang++ against libc++ and its
transitive includes removed (_LIBCPP_REMOVE_TRANSITIVE_INCLUDES), which is stricter than either
libstdc++ about missing standard includes, and is a second front end for compiler-specific
constructs:
  - every translation unit of compile_commands.json whose flags do not name libtorch's headers;
  - every header under src/ on its own (a header must include what it uses), except those that
    need libtorch (found by clang's "file not found" for torch/, ATen/ or c10/).
libtorch's own headers are left out: they take seconds a file and GCC 13 on the GPU node builds
them (scripts/gpu-test.sh). Exit 0: all compiled; 1: errors (printed); 77: no clang++/libc++
(scripts/setup.sh installs clang and libc++-dev), with the reason.

usage: portability_check.py BUILD_DIR SOURCE_DIR
"""
import json
import os
import shlex
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

TORCH_HEADERS = ("'torch/", "'ATen/", "'c10/")


def find_clang():
    for name in ("clang++", "clang++-16", "clang++-15", "clang++-14"):
        path = shutil.which(name)
        if path:
            probe = subprocess.run([path, "-std=c++20", "-stdlib=libc++", "-fsyntax-only", "-x", "c++", "-"],
                                   input="#include <vector>\nint main() { std::vector<int> v{1}; return v[0]; }\n",
                                   capture_output=True, text=True)
            if probe.returncode == 0:
                return path
    return None


def kept_flags(args):
    """The include paths, definitions and standard of a compile command (no output, PCH, warnings)."""
    out, i = [], 0
    while i < len(args):
        a = args[i]
        if a in ("-I", "-isystem", "-D", "-iquote"):
            out += [a, args[i + 1]]
            i += 2
            continue
        if a.startswith(("-I", "-D", "-std=")):
            out.append(a)
        elif a == "-include":  # the precompiled header
            i += 1
        i += 1
    return out


def compile_one(clang, flags, path, header):
    cmd = [clang, "-stdlib=libc++", "-D_LIBCPP_REMOVE_TRANSITIVE_INCLUDES", "-fsyntax-only", "-w"] + flags
    if header:
        cmd += ["-x", "c++-header"]
    cmd.append(path)
    r = subprocess.run(cmd, capture_output=True, text=True)
    return path, r.returncode, r.stderr


def main():
    if len(sys.argv) != 3:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    build, src = sys.argv[1], os.path.realpath(sys.argv[2])
    clang = find_clang()
    if not clang:
        print("skipped: no clang++ with libc++ here (scripts/setup.sh installs clang and libc++-dev)")
        return 77
    with open(os.path.join(build, "compile_commands.json")) as f:
        entries = json.load(f)
    units, union = [], ["-std=c++20"]
    for e in entries:
        path = os.path.realpath(e["file"])
        if not path.startswith(src + os.sep) or not path.endswith(".cc"):
            continue
        args = shlex.split(e["command"]) if "command" in e else e["arguments"]
        if any("torch/include" in a for a in args):
            continue
        flags = kept_flags(args)
        units.append((path, flags))
        union += [f for f in flags if f not in union]
    headers = sorted(os.path.join(d, n) for d, _, files in os.walk(os.path.join(src, "src")) for n in files
                     if n.endswith(".h"))
    jobs = [(p, fl, False) for p, fl in units] + [(h, union, True) for h in headers]
    failed, torch_headers = [], 0
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        for path, rc, err in pool.map(lambda j: compile_one(clang, j[1], j[0], j[2]), jobs):
            if rc == 0:
                continue
            if path.endswith(".h") and "file not found" in err and any(t in err for t in TORCH_HEADERS):
                torch_headers += 1
                continue
            failed.append((path, err))
    for path, err in failed:
        print(f"--- {os.path.relpath(path, src)}\n{err.strip()}")
    checked = len(jobs) - torch_headers
    print(f"{os.path.basename(clang)} with libc++: {checked} files compiled ({len(units)} translation units, "
          f"{len(headers) - torch_headers} headers on their own; {torch_headers} headers need libtorch), "
          f"{len(failed)} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
