#!/usr/bin/env python3
# cost.py: what the Python overrides (gi/overrides/Piq.py) cost over the C
# calls they make. For 27,264,000 N(0,1) binary32 values, each operation is
# timed twice: as C makes it, one quantizer call on tensors made beforehand
# (called from Python through the typelib: the same library, the same
# kernels), and through the override. Prints the median of REPEAT runs of each
# and their ratio. Not a test: the numbers depend on the machine.
#
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Against a build tree run (from the top of it)
#   GI_TYPELIB_PATH=piquant LD_LIBRARY_PATH=piquant/.libs \
#     python3 bindings/python/cost.py [--in-tree] [--repeat N]
# --in-tree loads bindings/python/gi/overrides/Piq.py instead of an installed copy.

import argparse
import os
import platform
import statistics
import time

import gi
import gi.overrides

N = 27_264_000


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def median_ms(fns, repeat):
    """The median time of each of fns in ms, the calls interleaved so that a
    busy moment of a shared machine falls on both."""
    times = [[] for _ in fns]
    for _ in range(repeat):
        for fn, ts in zip(fns, times):
            t0 = time.perf_counter()
            fn()
            ts.append(time.perf_counter() - t0)
    return [statistics.median(ts) * 1e3 for ts in times]


def main():
    ap = argparse.ArgumentParser(description="the cost of the Python overrides over the C calls")
    ap.add_argument("--in-tree", action="store_true", help="use this tree's overrides")
    ap.add_argument("--repeat", type=int, default=7, help="runs of each (default 7; median)")
    args = ap.parse_args()
    if args.in_tree:
        gi.overrides.__path__.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                     "gi", "overrides"))
    gi.require_version("Piq", "1.0")
    from gi.repository import Piq
    import numpy as np

    if not hasattr(Piq, "quantize"):
        raise SystemExit("cost.py: the Piq overrides are not installed (try --in-tree)")
    q = Piq.Quantizer.get_default()
    x = np.random.default_rng(0).standard_normal(N, dtype=np.float32)
    src = Piq.Tensor.from_array(x)                  # made once, as a C program would
    y = np.empty_like(x)
    dst_f32 = Piq.Tensor.from_array(y)              # a reusable float destination
    int8 = Piq.Format.new(Piq.Dtype.INT8)
    nf4 = Piq.Format.new_preset("nf4")
    packed = {"int8": q.quantize_new(int8, None, src), "nf4": q.quantize_new(nf4, None, src)}
    dst_q = {"int8": Piq.Tensor.new_quantized(int8, [N]), "nf4": Piq.Tensor.new_quantized(nf4, [N])}

    rows = [
        # (operation, C call on pre-made tensors, override)
        ("quantize int8 per tensor, new result",
         lambda: q.quantize_new(int8, None, src), lambda: Piq.quantize(x, "int8")),
        ("quantize nf4 (blocks of 64), new result",
         lambda: q.quantize_new(nf4, None, src), lambda: Piq.quantize(x, "nf4", block_size=64)),
        ("quantize int8 into a reused tensor (C) / new (override)",
         lambda: q.quantize(None, src, dst_q["int8"]), lambda: Piq.quantize(x, "int8")),
        ("quantize nf4 into a reused tensor (C) / new (override)",
         lambda: q.quantize(None, src, dst_q["nf4"]), lambda: Piq.quantize(x, "nf4", block_size=64)),
        ("dequantize int8, new array",
         lambda: q.dequantize_new(packed["int8"], Piq.Dtype.F32), lambda: Piq.dequantize(packed["int8"])),
        ("dequantize nf4, new array",
         lambda: q.dequantize_new(packed["nf4"], Piq.Dtype.F32), lambda: Piq.dequantize(packed["nf4"])),
        ("dequantize int8 into out=",
         lambda: q.dequantize(packed["int8"], dst_f32, Piq.ReduceOp.SET),
         lambda: Piq.dequantize(packed["int8"], out=y)),
        ("dequantize nf4 into out=",
         lambda: q.dequantize(packed["nf4"], dst_f32, Piq.ReduceOp.SET),
         lambda: Piq.dequantize(packed["nf4"], out=y)),
        ("dequantize nf4, add=True into out=",
         lambda: q.dequantize(packed["nf4"], dst_f32, Piq.ReduceOp.ADD),
         lambda: Piq.dequantize(packed["nf4"], out=y, add=True)),
    ]

    print("%d N(0,1) f32 values; %s, %d CPUs (nproc %d), %s kernels, %d threads; median of %d"
          % (N, cpu_model(), os.cpu_count(), len(os.sched_getaffinity(0)),
             q.props.simd_level.value_nick, q.props.n_threads or len(os.sched_getaffinity(0)),
             args.repeat))
    print()
    print("| operation | C call, ms | override, ms | ratio |")
    print("|---|---:|---:|---:|")
    for label, c_call, override in rows:
        c_call(), override()                        # warm up: pages, thread pool
        c_ms, o_ms = median_ms((c_call, override), args.repeat)
        print("| %s | %.1f | %.1f | %.2f× |" % (label, c_ms, o_ms, o_ms / c_ms))

    # the fixed cost of the Python side, where the kernels take no time
    small = x[:4096].copy()
    s_src, s_out = Piq.Tensor.from_array(small), np.empty_like(small)
    s_dst = Piq.Tensor.from_array(s_out)
    s_packed = q.quantize_new(nf4, None, s_src)
    for label, c_call, override in (
            ("quantize nf4, 4096 values, new result",
             lambda: q.quantize_new(nf4, None, s_src), lambda: Piq.quantize(small, "nf4")),
            ("dequantize nf4, 4096 values, into out=",
             lambda: q.dequantize(s_packed, s_dst, Piq.ReduceOp.SET),
             lambda: Piq.dequantize(s_packed, out=s_out))):
        c_ms, o_ms = median_ms((c_call, override), 200)
        print("| %s | %.3f | %.3f | +%.0f µs |" % (label, c_ms, o_ms, (o_ms - c_ms) * 1e3))


if __name__ == "__main__":
    main()
