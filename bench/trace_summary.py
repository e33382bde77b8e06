#!/usr/bin/env python3
"""Summarises a Chrome trace from `ember bench policy --profile DIR` (PyTorch's profiler).

    bench/trace_summary.py TRACE.json [--steps N] [--top K] [--json]

Prints, per step when --steps is given (the timed steps the trace holds):
  - the traced window's wall time;
  - GPU busy time (the union of kernel and memcpy/memset intervals) and the idle fraction: a
    high idle fraction on a GPU run means the host does not keep the GPU fed (launch-bound);
  - GPU time by kind of kernel (fp8 quantisation, matmul, attention, optimizer, copy/cast, norm,
    reduction, elementwise, communication, other), by name patterns;
  - a step with FP8 layers (`--fp8`) in parts: the quantisation kernels, the FP8 products (launched
    by aten::_scaled_mm), the other products and the rest;
  - the K GPU kernels with the most total time (name, calls, ms), and their share of busy time;
  - GPU time by the operator that launched it (kernels linked to CPU operators by the trace's
    "External id"): the launching operator and its nearest callers that are not casts, copies
    or views, e.g. "aten::copy_ < ToCopyBackward0" (the backward of a cast);
  - the GPU's idle gaps (10 us or more), by the operator that launched the work that ended each
    (the host was late with it); how long those launching operators had run on the host before
    their launch calls, and the CUDA runtime calls they made in that time (what made them late);
    and host calls that can wait for the GPU (synchronisations, cudaFree, synchronous copies)
    with their time;
  - with a trace recorded with `ember bench policy --profile_shapes`, matrix-product kernels by
    the operator's M x K x N and launcher, with their TFLOP/s (which products run slow);
  - kernel launches (cudaLaunchKernel and friends) and their host time;
  - the host's lead: how long after its launch call each kernel started (percentiles), and the
    share of kernels that started within 50 us of it (the GPU was waiting for the host);
  - the K CPU operators with the most inclusive time;
  - leaf operators per step (ATen operators that call no other, less views and no-ops): on a
    CUDA run each is about one kernel launch, so a CPU trace counts a step's launches too.
Standard library only.
"""
import argparse
import bisect
import collections
import json
import sys


def load(path):
    try:
        with open(path) as f:
            data = json.load(f)
    except (OSError, ValueError) as e:
        sys.exit(f"{path}: not a readable Chrome trace ({e})")
    events = data.get("traceEvents") if isinstance(data, dict) else None
    if not isinstance(events, list):
        sys.exit(f"{path}: no traceEvents list")
    return [e for e in events if isinstance(e, dict) and e.get("ph") == "X" and "dur" in e and "ts" in e]


def union_length(intervals):
    total, end = 0.0, None
    start = None
    for s, e in sorted(intervals):
        if end is None or s > end:
            if end is not None:
                total += end - start
            start, end = s, e
        else:
            end = max(end, e)
    if end is not None:
        total += end - start
    return total


# Kinds of GPU work, by kernel name (first match wins; case-insensitive).
KINDS = [
    ("fp8 quantisation", ("quantize_kernel",)),
    ("communication", ("nccl",)),
    ("attention", ("flash", "fmha", "attention", "efficient_attention")),
    ("matmul", ("nvjet", "gemm", "cutlass", "xmma", "cublas", "sm90_", "sm80_", "conv")),
    ("optimizer", ("fusedoptimizer", "adam", "multi_tensor_apply")),
    ("norm", ("rms_norm", "layer_norm", "rmsnorm", "layernorm", "norm_kernel")),
    ("copy/cast", ("copy", "memcpy", "memset", "catarray", "cat_", "index", "gather", "scatter")),
    ("reduction", ("reduce",)),
    ("elementwise", ("elementwise", "unrolled", "vectorized")),
]


def kind_of(name):
    low = name.lower()
    for kind, patterns in KINDS:
        if any(p in low for p in patterns):
            return kind
    return "other"


# operators that launch no kernel (views, metadata, allocation, no-ops)
NO_KERNEL = {
    "aten::empty", "aten::empty_strided", "aten::view", "aten::as_strided", "aten::detach", "aten::_reshape_alias",
    "aten::resize_", "aten::t", "aten::transpose", "aten::expand", "aten::unsqueeze", "aten::squeeze", "aten::slice",
    "aten::select", "aten::alias", "aten::split", "aten::chunk", "aten::narrow", "aten::permute", "aten::reshape",
    "aten::lift_fresh", "aten::set_", "aten::is_nonzero", "aten::item", "aten::_local_scalar_dense",
    "aten::result_type", "aten::resolve_conj", "aten::resolve_neg", "aten::_unsafe_view", "aten::unbind",
    "aten::split_with_sizes", "aten::view_as", "aten::expand_as", "aten::contiguous", "aten::to",
}


def leaf_ops(events):
    """Counts of ATen operators that contain no other CPU operator on their thread."""
    by_thread = collections.defaultdict(list)
    for e in events:
        if e.get("cat") == "cpu_op":
            by_thread[(e.get("pid"), e.get("tid"))].append(e)
    counts = collections.Counter()
    for ops in by_thread.values():
        ops.sort(key=lambda e: (e["ts"], -e["dur"]))
        parent, stack = set(), []
        for i, e in enumerate(ops):
            while stack and ops[stack[-1]]["ts"] + ops[stack[-1]]["dur"] <= e["ts"]:
                stack.pop()
            if stack:
                parent.add(stack[-1])
            stack.append(i)
        for i, e in enumerate(ops):
            name = e.get("name", "?")
            if i not in parent and name.startswith("aten::") and name not in NO_KERNEL:
                counts[name] += 1
    return counts


# callers skipped when naming who launched a kernel: they only wrap another operator
WRAPPERS = {"aten::to", "aten::_to_copy", "aten::copy_", "aten::contiguous", "aten::clone", "aten::reshape",
            "aten::_reshape_alias", "aten::empty_like", "aten::fill_", "aten::zero_", "aten::zeros", "aten::zeros_like"}


def parents(ops):
    """Index of each CPU operator's enclosing operator on its thread (or None)."""
    parent = [None] * len(ops)
    by_thread = collections.defaultdict(list)
    for i, e in enumerate(ops):
        by_thread[(e.get("pid"), e.get("tid"))].append(i)
    for idx in by_thread.values():
        idx.sort(key=lambda i: (ops[i]["ts"], -ops[i]["dur"]))
        stack = []
        for i in idx:
            while stack and ops[stack[-1]]["ts"] + ops[stack[-1]]["dur"] <= ops[i]["ts"]:
                stack.pop()
            parent[i] = stack[-1] if stack else None
            stack.append(i)
    return parent


def launcher_paths(events, depth=2):
    """A function naming, for a GPU event, the CPU operator whose External id it carries, then up
    to `depth` callers that are not wrappers ("(no operator)" when none)."""
    ops = [e for e in events if e.get("cat") == "cpu_op"]
    parent = parents(ops)
    by_id = {}
    for i, e in enumerate(ops):
        ext = (e.get("args") or {}).get("External id")
        if ext is not None:
            by_id.setdefault(ext, i)

    def path_of(k):
        i = by_id.get((k.get("args") or {}).get("External id"))
        if i is None:
            return "(no operator)"
        names = [ops[i].get("name", "?")]
        j = parent[i]
        while j is not None and len(names) <= depth:
            name = ops[j].get("name", "?")
            if name not in WRAPPERS:
                names.append(name.replace("autograd::engine::evaluate_function: ", ""))
            j = parent[j]
        return " < ".join(names)

    return path_of


def by_launcher(events, gpu, depth=2):
    """GPU time keyed by (kind, launching operator and its callers)."""
    path_of = launcher_paths(events, depth)
    out = collections.defaultdict(lambda: [0, 0.0])
    for k in gpu:
        entry = out[(kind_of(k.get("name", "?")), path_of(k))]
        entry[0] += 1
        entry[1] += k["dur"]
    return out


def fp8_parts(events, gpu):
    """A step with FP8 layers in parts (kernel time, us): the quantisation kernels, the FP8
    products (kernels launched by aten::_scaled_mm), the other matrix products and the rest.
    Empty when the trace holds neither FP8 part."""
    path_of = launcher_paths(events, depth=0)
    parts = collections.defaultdict(lambda: [0, 0.0])
    for k in gpu:
        name = k.get("name", "")
        if kind_of(name) == "fp8 quantisation":
            part = "fp8 quantisation"
        elif path_of(k).startswith("aten::_scaled_mm"):
            part = "fp8 products"
        elif kind_of(name) == "matmul":
            part = "other products"
        else:
            part = "rest"
        parts[part][0] += 1
        parts[part][1] += k["dur"]
    if "fp8 quantisation" not in parts and "fp8 products" not in parts:
        return {}
    return parts


def matmul_shapes(events, gpu):
    """Matrix-product kernels keyed by (launching operator and callers, M x K x N, kernel), from
    the operators' "Input Dims" (a trace recorded with `--profile_shapes`): calls, kernel time,
    multiply-adds. Empty when the trace has no input sizes."""
    ops = {}
    for e in events:
        args = e.get("args") or {}
        if e.get("cat") == "cpu_op" and args.get("External id") is not None and args.get("Input Dims"):
            ops.setdefault(args["External id"], e)
    path_of = launcher_paths(events)
    out = collections.defaultdict(lambda: [0, 0.0, 0])
    for k in gpu:
        op = ops.get((k.get("args") or {}).get("External id"))
        if op is None or kind_of(k.get("name", "")) != "matmul":
            continue
        dims = [d for d in op["args"]["Input Dims"] if isinstance(d, list) and len(d) == 2]
        if op.get("name") == "aten::addmm":
            dims = dims[-2:]
        if len(dims) < 2 or dims[0][1] != dims[1][0]:
            continue
        (m, kk), (_, n) = dims[0], dims[1]
        entry = out[(path_of(k), f"{m}x{kk}x{n}", k.get("name", "?"))]
        entry[0] += 1
        entry[1] += k["dur"]
        entry[2] += m * kk * n
    return out


# host calls that wait for the GPU (or may: cudaFree and synchronous copies synchronise the device)
BLOCKING = ("Synchronize", "cudaMemcpy", "cudaFree", "cudaMalloc", "cuMemMap", "cuMemUnmap", "cuMemCreate",
            "cuMemRelease")


def idle_gaps(events, gpu, min_us=10.0):
    """The GPU's idle gaps of at least min_us between the first and last GPU event, keyed by the
    operator that launched the work ending each gap (the host was late with that launch), and the
    host calls that can block on the GPU, with their time (a synchronisation shows up there)."""
    path_of = launcher_paths(events)
    spans = sorted(gpu, key=lambda e: e["ts"])
    gaps = collections.defaultdict(lambda: [0, 0.0])
    enders = []  # the kernels that ended a gap
    end = None
    for k in spans:
        if end is not None and k["ts"] - end >= min_us:
            entry = gaps[path_of(k)]
            entry[0] += 1
            entry[1] += k["ts"] - end
            enders.append(k)
        end = k["ts"] + k["dur"] if end is None else max(end, k["ts"] + k["dur"])
    blocking = collections.defaultdict(lambda: [0, 0.0])
    for e in events:
        name = e.get("name", "")
        if e.get("cat") == "cuda_runtime" and "Async" not in name and any(b in name for b in BLOCKING):
            entry = blocking[name]
            entry[0] += 1
            entry[1] += e["dur"]
    return gaps, blocking, enders


def late_launch_work(events, enders):
    """For each kernel that ended an idle gap: how long its launching operator had been running
    on the host before the launch call (the operator's own host work made the launch late), and
    the CUDA runtime calls it made in that time, by name."""
    ops_by_id = {}
    for e in events:
        ext = (e.get("args") or {}).get("External id")
        if e.get("cat") == "cpu_op" and ext is not None:
            ops_by_id.setdefault(ext, e)
    runtime = sorted((e for e in events if e.get("cat") in ("cuda_runtime", "cuda_driver")), key=lambda e: e["ts"])
    by_tid = collections.defaultdict(list)  # each thread's runtime calls, by start time
    for e in runtime:
        by_tid[e.get("tid")].append(e)
    starts = {tid: [e["ts"] for e in calls_of] for tid, calls_of in by_tid.items()}
    launch_by_corr = {}
    for e in runtime:
        corr = (e.get("args") or {}).get("correlation")
        if corr is not None and is_launch(e):
            launch_by_corr[corr] = e
    before_launch, calls = 0.0, collections.defaultdict(lambda: [0, 0.0])
    for k in enders:
        args = k.get("args") or {}
        op, launch = ops_by_id.get(args.get("External id")), launch_by_corr.get(args.get("correlation"))
        if op is None or launch is None or launch["ts"] < op["ts"]:
            continue
        before_launch += launch["ts"] - op["ts"]
        tid = launch.get("tid")
        first = bisect.bisect_left(starts[tid], op["ts"])
        last = bisect.bisect_left(starts[tid], launch["ts"])
        for e in by_tid[tid][first:last]:
            entry = calls[e.get("name", "?")]
            entry[0] += 1
            entry[1] += e["dur"]
    return before_launch, calls


def is_launch(e):
    """A kernel launch call, through the runtime (cudaLaunchKernel...) or the driver
    (cuLaunchKernelEx, as cuBLASLt launches its kernels)."""
    return e.get("cat") in ("cuda_runtime", "cuda_driver") and "Launch" in e.get("name", "")


def host_lead(events, gpu):
    """For each kernel linked to its launch call (the trace's "correlation" ids), (kernel start,
    how long after the call began the kernel started) in us: a lead of a few us means the GPU was
    waiting for that launch (the host is what bounds the step there); milliseconds mean the host
    was ahead. Sorted by kernel start."""
    launch_ts = {}
    for e in events:
        corr = (e.get("args") or {}).get("correlation")
        if is_launch(e) and corr is not None:
            launch_ts[corr] = e["ts"]
    leads = []
    for k in gpu:
        corr = (k.get("args") or {}).get("correlation")
        if k.get("cat") == "kernel" and corr in launch_ts:
            leads.append((k["ts"], k["ts"] - launch_ts[corr]))
    return sorted(leads)


def by_tenth(leads, g0, g1, steps):
    """Where in the step the host falls behind: the kernels split by the tenth of the step they
    start in (the GPU span cut into `steps` equal steps), with each tenth's median lead and its
    share of kernels that started within STARVED_US of their launch."""
    step_us = (g1 - g0) / max(steps, 1)
    tenths = [[] for _ in range(10)]
    for ts, lead in leads:
        tenths[min(9, int(((ts - g0) % step_us) / step_us * 10))].append(lead)
    out = []
    for i, xs in enumerate(tenths):
        xs.sort()
        out.append({"tenth": i, "kernels": len(xs), "p50_us": xs[len(xs) // 2] if xs else None,
                    "starved_frac": sum(1 for x in xs if x < STARVED_US) / len(xs) if xs else None})
    return out


# a kernel starting within this many us of its launch call found the GPU waiting for it
STARVED_US = 50.0


def summarise(events, steps, top):
    gpu_cats = {"kernel", "gpu_memcpy", "gpu_memset"}
    gpu = [e for e in events if e.get("cat") in gpu_cats]
    t0 = min(e["ts"] for e in events)
    t1 = max(e["ts"] + e["dur"] for e in events)
    wall_us = t1 - t0
    out = {"wall_ms": wall_us / 1e3, "events": len(events)}
    per = 1.0 / steps if steps else 1.0
    if gpu:
        busy = union_length([(e["ts"], e["ts"] + e["dur"]) for e in gpu])
        g0 = min(e["ts"] for e in gpu)
        g1 = max(e["ts"] + e["dur"] for e in gpu)
        out["gpu_span_ms"] = (g1 - g0) / 1e3
        out["gpu_busy_ms"] = busy / 1e3
        out["gpu_idle_frac"] = 1 - busy / max(g1 - g0, 1e-9)
        kernels = collections.defaultdict(lambda: [0, 0.0])
        for e in gpu:
            k = kernels[e.get("name", "?")]
            k[0] += 1
            k[1] += e["dur"]
        kinds = collections.defaultdict(lambda: [0, 0.0])
        for name, (c, d) in kernels.items():
            k = kinds[kind_of(name)]
            k[0] += c
            k[1] += d
        out["kinds"] = [
            {"kind": kind, "calls": c * per, "ms": d / 1e3 * per, "share_of_busy": d / max(busy, 1e-9)}
            for kind, (c, d) in sorted(kinds.items(), key=lambda kv: -kv[1][1])
        ]
        out["top_kernels"] = [
            {"name": name[:120], "calls": c * per, "ms": d / 1e3 * per, "share_of_busy": d / max(busy, 1e-9)}
            for name, (c, d) in sorted(kernels.items(), key=lambda kv: -kv[1][1])[:top]
        ]
        parts = fp8_parts(events, gpu)
        if parts:
            out["fp8_parts"] = [
                {"part": part, "calls": c * per, "ms": d / 1e3 * per, "share_of_busy": d / max(busy, 1e-9)}
                for part, (c, d) in sorted(parts.items(), key=lambda kv: -kv[1][1])
            ]
        launchers = by_launcher(events, gpu)
        out["top_launchers"] = [
            {"kind": kind, "launcher": path[:160], "calls": c * per, "ms": d / 1e3 * per}
            for (kind, path), (c, d) in sorted(launchers.items(), key=lambda kv: -kv[1][1])[:top]
        ]
        gaps, blocking, enders = idle_gaps(events, gpu)
        before_launch, calls = late_launch_work(events, enders)
        out["late_ops_before_launch_ms"] = before_launch / 1e3 * per
        out["late_ops_runtime_calls"] = [
            {"name": name, "calls": c * per, "ms": d / 1e3 * per}
            for name, (c, d) in sorted(calls.items(), key=lambda kv: -kv[1][1])[:top]
        ]
        shapes = matmul_shapes(events, gpu)
        if shapes:
            out["matmul_shapes"] = [
                {"launcher": path[:100], "mkn": mkn, "kernel": name[:60], "calls": c * per, "ms": d / 1e3 * per,
                 "tflops": 2 * macs / max(d, 1e-9) / 1e6}
                for (path, mkn, name), (c, d, macs) in sorted(shapes.items(), key=lambda kv: -kv[1][1])[:top]
            ]
        out["idle_gaps_ms"] = sum(d for _, d in gaps.values()) / 1e3 * per
        out["idle_gaps"] = [
            {"before": path[:160], "gaps": c * per, "ms": d / 1e3 * per}
            for path, (c, d) in sorted(gaps.items(), key=lambda kv: -kv[1][1])[:top]
        ]
        out["blocking_calls"] = [
            {"name": name, "calls": c * per, "ms": d / 1e3 * per}
            for name, (c, d) in sorted(blocking.items(), key=lambda kv: -kv[1][1])
        ]
        launches = [e for e in events if is_launch(e)]
        out["launches"] = len(launches) * per
        out["launch_host_ms"] = sum(e["dur"] for e in launches) / 1e3 * per
        timed = host_lead(events, gpu)
        leads = sorted(lead for _, lead in timed)
        if leads:
            out["host_lead_by_tenth"] = by_tenth(timed, g0, g1, steps)
            def at(q):
                return leads[min(len(leads) - 1, int(q * len(leads)))]
            out["host_lead_us"] = {"p10": at(0.1), "p50": at(0.5), "p90": at(0.9)}
            out["starved_kernel_frac"] = sum(1 for x in leads if x < STARVED_US) / len(leads)
    cpu = collections.defaultdict(lambda: [0, 0.0])
    for e in events:
        if e.get("cat") == "cpu_op":
            c = cpu[e.get("name", "?")]
            c[0] += 1
            c[1] += e["dur"]
    out["top_cpu_ops_inclusive"] = [
        {"name": name[:120], "calls": c * per, "ms": d / 1e3 * per}
        for name, (c, d) in sorted(cpu.items(), key=lambda kv: -kv[1][1])[:top]
    ]
    leaves = leaf_ops(events)
    out["leaf_ops"] = sum(leaves.values()) * per
    out["top_leaf_ops"] = [{"name": name, "calls": c * per} for name, c in leaves.most_common(top)]
    if steps:
        out["steps"] = steps
        out["wall_ms"] *= per
        for k in ("gpu_span_ms", "gpu_busy_ms"):
            if k in out:
                out[k] *= per
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trace")
    ap.add_argument("--steps", type=int, default=0, help="timed steps in the trace: figures per step")
    ap.add_argument("--top", type=int, default=15)
    ap.add_argument("--json", action="store_true", help="one JSON object instead of text")
    a = ap.parse_args()
    if a.steps < 0 or a.top < 1:
        sys.exit("--steps must be >= 0 and --top >= 1")
    events = load(a.trace)
    if not events:
        sys.exit(f"{a.trace}: the trace holds no complete events")
    s = summarise(events, a.steps, a.top)
    if a.json:
        print(json.dumps(s))
        return
    unit = " per step" if a.steps else ""
    print(f"{a.trace}: {s['events']} events, wall {s['wall_ms']:.2f} ms{unit}")
    if "gpu_busy_ms" in s:
        print(f"GPU busy {s['gpu_busy_ms']:.2f} ms of {s['gpu_span_ms']:.2f} ms{unit} "
              f"(idle {100 * s['gpu_idle_frac']:.1f}%); {s['launches']:.0f} launches, "
              f"{s['launch_host_ms']:.2f} ms of host time in them{unit}")
        print("GPU time by kind (kernel time; overlapping kernels count twice):")
        for k in s["kinds"]:
            print(f"  {k['ms']:9.3f} ms {100 * k['share_of_busy']:5.1f}% {k['calls']:8.1f}x  {k['kind']}")
        print("top GPU kernels:")
        for k in s["top_kernels"]:
            print(f"  {k['ms']:9.3f} ms {100 * k['share_of_busy']:5.1f}% {k['calls']:8.1f}x  {k['name']}")
    if s.get("fp8_parts"):
        print("the FP8 step in parts (kernel time):")
        for k in s["fp8_parts"]:
            print(f"  {k['ms']:9.3f} ms {100 * k['share_of_busy']:5.1f}% {k['calls']:8.1f}x  {k['part']}")
    if "host_lead_us" in s:
        q = s["host_lead_us"]
        print(f"host lead (kernel start - its launch call): p10 {q['p10']:.0f} us, p50 {q['p50']:.0f} us, "
              f"p90 {q['p90']:.0f} us; {100 * s['starved_kernel_frac']:.1f}% of kernels started within "
              f"{STARVED_US:.0f} us of their launch (the GPU waited for the host)")
        print("  by tenth of the step (median lead, share of kernels started within that time):")
        for t in s["host_lead_by_tenth"]:
            if t["kernels"]:
                print(f"    {t['tenth']}: {t['kernels'] * (1.0 / s['steps'] if s.get('steps') else 1.0):7.1f} kernels, "
                      f"p50 {t['p50_us']:8.0f} us, {100 * t['starved_frac']:5.1f}% starved")
    if s.get("top_launchers"):
        print("GPU time by launching operator (< its callers):")
        for k in s["top_launchers"]:
            print(f"  {k['ms']:9.3f} ms {k['calls']:8.1f}x  {k['kind']:<13} {k['launcher']}")
    if s.get("matmul_shapes"):
        print("matrix products by shape (M x K x N of the operator's inputs; TFLOP/s of its kernels):")
        for k in s["matmul_shapes"]:
            print(f"  {k['ms']:9.3f} ms {k['calls']:8.1f}x {k['tflops']:7.1f} TFLOP/s  {k['mkn']:<18} {k['launcher']}  "
                  f"{k['kernel']}")
    if "idle_gaps" in s:
        print(f"GPU idle gaps of 10 us or more: {s['idle_gaps_ms']:.2f} ms{unit}, by the operator that launched "
              "the work ending them (the host was late with it):")
        for g in s["idle_gaps"]:
            print(f"  {g['ms']:9.3f} ms {g['gaps']:8.1f}x  {g['before']}")
        print(f"  the launching operators had run {s['late_ops_before_launch_ms']:.2f} ms{unit} on the host before "
              "those launches; their CUDA runtime calls in that time:")
        for c in s["late_ops_runtime_calls"] or [{"name": "(none)", "calls": 0, "ms": 0}]:
            print(f"  {c['ms']:9.3f} ms {c['calls']:8.1f}x  {c['name']}")
        print("host calls that can wait for the GPU (synchronisations, cudaFree, synchronous copies):")
        for b in s["blocking_calls"] or [{"name": "(none)", "calls": 0, "ms": 0}]:
            print(f"  {b['ms']:9.3f} ms {b['calls']:8.1f}x  {b['name']}")
    print("top CPU operators (inclusive):")
    for k in s["top_cpu_ops_inclusive"]:
        print(f"  {k['ms']:9.3f} ms {k['calls']:8.1f}x  {k['name']}")
    print(f"leaf operators (about one kernel each on CUDA): {s['leaf_ops']:.0f}{unit}")
    for k in s["top_leaf_ops"]:
        print(f"  {k['calls']:8.1f}x  {k['name']}")


if __name__ == "__main__":
    main()
