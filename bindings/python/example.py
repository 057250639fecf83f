#!/usr/bin/env python3
# example.py: quantize a million normal samples to several formats with
# piquant from Python (PyGObject + numpy), and measure what each way of moving
# numpy data across costs.
#
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Installed piquant needs nothing; against a build tree run
#   GI_TYPELIB_PATH=$builddir/piquant LD_LIBRARY_PATH=$builddir/piquant/.libs python3 example.py

import time

import numpy as np
import gi

gi.require_version("GLib", "2.0")
gi.require_version("Piq", "1.0")
from gi.repository import GLib, Piq  # noqa: E402

N = 1_000_000

# (label, format properties, recipe properties). A Piq.Format says what the
# bytes mean and never changes; a Piq.Recipe says how the scale is chosen.
# Every format here is per tensor and affine, so its default rule is min/max
# over the data; the last one rounds stochastically, with a fixed seed.
FORMATS = [
    ("uint8", dict(dtype=Piq.Dtype.UINT8), {}),
    ("int8", dict(dtype=Piq.Dtype.INT8), {}),
    ("uint4", dict(dtype=Piq.Dtype.UINT4), {}),
    ("uint2", dict(dtype=Piq.Dtype.UINT2), {}),
    ("uint4 stochastic", dict(dtype=Piq.Dtype.UINT4), dict(round_mode=Piq.RoundMode.STOCHASTIC, seed=7)),
]


# [snippet:wrap]
def tensor_over(arr, writable=False):
    """A tensor over a numpy array's memory, without copying.

    piquant keeps no reference to the memory: the attribute set below keeps
    the array alive for as long as the tensor is."""
    if arr.dtype != np.float32 or not arr.flags.c_contiguous:
        raise ValueError("need a C-contiguous float32 array")
    if writable and not arr.flags.writeable:
        raise ValueError("the array is read-only")
    t = Piq.Tensor.new_for_address(Piq.Dtype.F32, list(arr.shape), arr.ctypes.data, arr.nbytes,
                                   0, writable)   # 0: rows are packed
    t.numpy_owner = arr
    return t
# [/snippet]


def quantization_table(q):
    # [snippet:setup]
    x = np.random.default_rng(42).standard_normal(N, dtype=np.float32)
    src = tensor_over(x)                     # read-only view of x
    y = np.empty_like(x)
    acc = tensor_over(y, writable=True)      # piquant writes straight into y
    # [/snippet]

    print(f"{'format':<17} {'bytes':>9} {'scale':>10} {'zero point':>10} {'RMSE':>9}")
    for label, format_props, recipe_props in FORMATS:
        # [snippet:quantize]
        fmt = Piq.Format(**format_props)             # immutable: what the bytes mean
        recipe = Piq.Recipe(**recipe_props)          # how the scale is chosen
        q.compute_params(fmt, recipe, src)           # min/max of the data -> recipe's scale, zero point
        packed = q.quantize_new(fmt, recipe, src)    # owns its format, scale and zero point
        # [/snippet]
        # [snippet:accumulate]
        acc.fill(0.0)                                # reset the reused accumulator
        q.dequantize(packed, acc, Piq.ReduceOp.ADD)  # y += dequantized values
        # [/snippet]
        rmse = np.sqrt(np.mean(np.square(y - x, dtype=np.float64)))
        print(f"{label:<17} {packed.props.n_bytes:>9} {packed.get_scale():>10.6f} "
              f"{packed.get_zero_point():>10} {rmse:>9.6f}")
    return src, x


def per_channel(q, x):
    # [snippet:shapes]
    w = x.reshape(1000, 1000)                    # a weight matrix [out, in]
    fmt = Piq.Format.new_per_channel(Piq.Dtype.INT8, 0)   # one scale per output channel
    packed = q.quantize_new(fmt, None, tensor_over(w))    # None: the format's own rule
    scales = np.frombuffer(packed.get_scales().get_data(), dtype=np.float32)
    y = np.frombuffer(q.dequantize_new(packed, Piq.Dtype.F32).get_bytes().get_data(),
                      dtype=np.float32).reshape(packed.get_shape())
    # [/snippet]
    rmse = np.sqrt(np.mean(np.square(y - w, dtype=np.float64)))
    print(f"{'int8 per channel':<17} {packed.props.n_bytes:>9} {'%d scales' % scales.size:>10} "
          f"{'int32':>10} {rmse:>9.6f}")


def best_us(fn, repeat=15):
    """The fastest of `repeat` calls, in microseconds."""
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best * 1e6


def numpy_routes(x):
    y = np.empty_like(x)
    t = Piq.Tensor.new(Piq.Dtype.F32, x.size)   # library-owned, as results are
    routes = [
        # [snippet:routes]
        # numpy -> tensor, 2 copies (tobytes, then into library storage)
        ("in,  2 copies: new_from_data(x.tobytes())",
         lambda: Piq.Tensor.new_from_data(Piq.Dtype.F32, x.size, x.tobytes())),
        # numpy -> tensor, no copy (x must outlive the tensor)
        ("in,  no copy:  new_for_address(x.ctypes.data)",
         lambda: Piq.Tensor.new_for_address(Piq.Dtype.F32, [x.size], x.ctypes.data, x.nbytes, 0, False)),
        # tensor -> numpy, 1 copy (get_data() copies into a bytes object)
        ("out, 1 copy:   frombuffer(get_bytes().get_data())",
         lambda: np.frombuffer(t.get_bytes().get_data(), dtype=np.float32)),
        # tensor -> numpy, no copy: let piquant write into a wrapped array
        ("out, no copy:  new_for_address(y.ctypes.data)",
         lambda: Piq.Tensor.new_for_address(Piq.Dtype.F32, [y.size], y.ctypes.data, y.nbytes, 0, True)),
        # [/snippet]
    ]
    mb = x.nbytes / 1e6
    print(f"\n{f'numpy <-> tensor, {x.nbytes} bytes':<51} {'us/call':>9} {'us/MB':>8}")
    for label, fn in routes:
        us = best_us(fn)
        print(f"{label:<51} {us:>9.1f} {us / mb:>8.2f}")


def show_error(q, src):
    # [snippet:errors]
    fmt = Piq.Format(dtype=Piq.Dtype.UINT8)
    too_small = Piq.Tensor.new_quantized(fmt, [10])   # a reusable destination, 10 elements
    try:
        q.quantize(None, src, too_small)              # its format decides; None: the default recipe
    except GLib.Error as e:
        if e.matches(Piq.Error.quark(), Piq.Error.SIZE):
            print(f"\nrefused, {Piq.Error(e.code).value_nick}: {e.message}")
        else:
            raise
    # [/snippet]


def main():
    q = Piq.Quantizer.get_default()
    print(f"piquant {Piq.VERSION_STRING}, {q.props.simd_level.value_nick} kernels, "
          f"{N} normal samples")
    src, x = quantization_table(q)
    per_channel(q, x)
    numpy_routes(x)
    show_error(q, src)


if __name__ == "__main__":
    main()
