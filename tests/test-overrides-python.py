#!/usr/bin/env python3
# test-overrides-python.py: piquant's PyGObject overrides (Piq.py) from the
# source tree: numpy in and out without copies, lifetimes, the one-line calls
# against numpy oracles, and the refusals. Prints TAP.
#
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# The overrides of this tree are found by putting bindings/python/gi/overrides
# first on gi.overrides.__path__ before Piq is imported (set
# PIQ_OVERRIDES_DIR to test another copy, e.g. an installed one).

import gc
import os
import subprocess
import sys
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
OVERRIDES = os.environ.get("PIQ_OVERRIDES_DIR") or \
    os.path.join(HERE, os.pardir, "bindings", "python", "gi", "overrides")

try:
    import numpy as np
except ImportError:  # the overrides are about numpy
    print("1..0 # SKIP numpy is not installed for %s" % sys.executable)
    sys.exit(0)

import gi  # noqa: E402
import gi.overrides  # noqa: E402

gi.overrides.__path__.insert(0, os.path.abspath(OVERRIDES))
gi.require_version("GLib", "2.0")
gi.require_version("Gio", "2.0")
gi.require_version("Piq", "1.0")
from gi.repository import Gio, GLib, Piq  # noqa: E402

TESTS = []


class Failure(Exception):
    pass


class Skip(Exception):
    pass


def test(name):
    def register(fn):
        TESTS.append(("overrides/" + name, fn))
        return fn
    return register


def check(cond, msg):
    if not cond:
        raise Failure(msg)


def raises(exc, fn, *args, **kwargs):
    try:
        fn(*args, **kwargs)
    except exc as e:
        check(str(e), "%s with an empty message" % exc.__name__)
        return e
    except Exception as e:
        raise Failure("raised %s (%s), expected %s" % (type(e).__name__, e, exc.__name__))
    raise Failure("nothing raised, expected %s" % exc.__name__)


def normal(shape, seed=0, dtype=np.float32):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


# bitsandbytes' NF4 code book (bitsandbytes/functional.py, create_normal_map)
NF4 = np.array([-1.0, -0.6961928009986877, -0.5250730514526367, -0.39491748809814453,
                -0.28444138169288635, -0.18477343022823334, -0.09105003625154495, 0.0,
                0.07958029955625534, 0.16093020141124725, 0.24611230194568634,
                0.33791524171829224, 0.44070982933044434, 0.5626170039176941,
                0.7229568362236023, 1.0], dtype=np.float32)


def nf4_oracle(x, block):
    """(packed codes, f32 absmax scales, dequantized values) as bitsandbytes computes them."""
    blocks = x.reshape(-1, block)
    absmax = np.abs(blocks).max(axis=1).astype(np.float32)
    normed = blocks / absmax[:, None]
    codes = np.abs(normed[..., None] - NF4).argmin(axis=-1).astype(np.uint8).reshape(-1)
    packed = (codes[0::2] << 4) | codes[1::2]          # the first element in the high nibble
    values = (NF4[codes].reshape(blocks.shape) * absmax[:, None]).reshape(x.shape)
    return packed, absmax, values


# ------------------------------------------------------------ numpy in ----

@test("from-array/zero-copy")
def _():
    x = normal((6, 10))
    t = Piq.Tensor.from_array(x)
    check(t.shape == (6, 10) and isinstance(t.shape, tuple), "shape %r" % (t.shape,))
    check(t.get_dtype() == Piq.Dtype.F32, "dtype %s" % t.get_dtype())
    check(t.get_address()[0] == x.ctypes.data, "the tensor is not over the array's memory")
    check(t.is_writable(), "a writable array gave a read-only tensor")
    x[2, 3] = 42.0                                    # the tensor sees writes to the array
    check(t.get_value(23) == 42.0, "a write to the array is not seen: %r" % t.get_value(23))
    ro = x.copy()
    ro.flags.writeable = False
    check(not Piq.Tensor.from_array(ro).is_writable(), "a read-only array gave a writable tensor")
    check(not Piq.Tensor.from_array(x, writable=False).is_writable(), "writable=False ignored")


@test("from-array/dtypes")
def _():
    for np_dtype, piq_dtype in ((np.float32, Piq.Dtype.F32), (np.float64, Piq.Dtype.F64),
                                (np.float16, Piq.Dtype.F16), (np.int8, Piq.Dtype.INT8),
                                (np.uint8, Piq.Dtype.UINT8), (np.int32, Piq.Dtype.INT32),
                                (np.uint16, Piq.Dtype.UINT16)):
        a = np.arange(12, dtype=np_dtype).reshape(3, 4)
        t = Piq.Tensor.from_array(a)
        check(t.get_dtype() == piq_dtype, "%s -> %s" % (np.dtype(np_dtype), t.get_dtype()))
        v = np.asarray(t)
        check(v.dtype == np.dtype(np_dtype) and v.shape == (3, 4) and np.shares_memory(v, a),
              "%s round trip: %s %s" % (np.dtype(np_dtype), v.dtype, v.shape))


@test("from-array/bf16")
def _():
    f = np.array([1.0, -2.5, 0.15625, 2.0 ** 100, -0.0], dtype=np.float32)
    bits = (f.view(np.uint32) >> 16).astype(np.uint16)    # exact: these are bf16 values
    t = Piq.Tensor.from_array(bits, dtype=Piq.Dtype.BF16)
    check(t.get_dtype() == Piq.Dtype.BF16, "dtype %s" % t.get_dtype())
    check(list(t.to_values()) == [float(v) for v in f], "values %r" % list(t.to_values()))
    v = np.asarray(t)
    check(v.dtype == np.uint16 and np.shares_memory(v, bits), "the bf16 view is %s" % v.dtype)
    try:
        import ml_dtypes
    except ImportError:
        return
    t2 = Piq.Tensor.from_array(bits.view(ml_dtypes.bfloat16))
    check(t2.get_dtype() == Piq.Dtype.BF16, "ml_dtypes.bfloat16 -> %s" % t2.get_dtype())


@test("lifetime/tensor-keeps-array")
def _():
    x = normal(1000, seed=3)
    want = x.copy()
    t = Piq.Tensor.from_array(x)
    del x
    gc.collect()
    junk = [np.full(1000, 7.0, np.float32) for _ in range(50)]   # reuse of freed memory would show
    check(np.array_equal(np.asarray(t), want), "the tensor's data changed after the array was dropped")
    check(np.array_equal(Piq.dequantize(Piq.quantize(t, "int8")), Piq.dequantize(Piq.quantize(want, "int8"))),
          "quantizing the tensor after dropping the array differs")
    del junk


@test("lifetime/c-holds-tensor")
def _():
    # only C (a GListStore) holds the tensor: its wrapper, and so the array, live on
    x = normal(777, seed=4)
    want = x.copy()
    store = Gio.ListStore.new(Piq.Tensor)
    store.append(Piq.Tensor.from_array(x))
    del x
    gc.collect()
    junk = [np.full(777, 7.0, np.float32) for _ in range(50)]
    t = store.get_item(0)
    check(np.array_equal(np.asarray(t), want), "the array died while C held the tensor")
    del junk


# ----------------------------------------------------------- numpy out ----

@test("asarray/quantized-view")
def _():
    x = normal((8, 64), seed=5)
    t = Piq.quantize(x, "nf4")
    v = np.asarray(t)
    check(v.dtype == np.uint8 and v.shape == (t.props.n_bytes,), "codes view %s %s" % (v.dtype, v.shape))
    check(v.base is t, "the view does not keep the tensor")
    check(t.get_address()[0] == v.ctypes.data, "the view is a copy")
    before = Piq.dequantize(t)
    v[0] = 0x77                                        # writing through the view reaches the library
    after = Piq.dequantize(t)
    check(after[0, 0] == NF4[7] * t.scales_array()[0] == 0.0 and after[0, 1] == 0.0,
          "a write through the view is not seen: %r" % after[0, :2])
    check(np.array_equal(after[:, 2:], before[:, 2:]) and np.array_equal(after[1:], before[1:]),
          "a write of one byte changed other values")


@test("asarray/float-view")
def _():
    t = Piq.Tensor.new_shaped(Piq.Dtype.F64, [3, 5])
    v = np.asarray(t)
    check(v.dtype == np.float64 and v.shape == (3, 5) and v.flags.writeable, "%s %s" % (v.dtype, v.shape))
    v[1, 2] = 2.5
    check(t.get_value(7) == 2.5, "a write through the view is not seen")
    e = np.asarray(Piq.Tensor.new(Piq.Dtype.F32, 0))
    check(e.shape == (0,) and e.dtype == np.float32, "empty tensor: %s %s" % (e.dtype, e.shape))
    # a strided tensor: rows 8 floats apart, 5 used
    base = np.arange(24, dtype=np.float32)
    s = Piq.Tensor.new_for_address(Piq.Dtype.F32, [3, 5], base.ctypes.data, base.nbytes, 32, False)
    s._keep = base
    sv = np.asarray(s)
    check(np.array_equal(sv, base.reshape(3, 8)[:, :5]) and not sv.flags.writeable,
          "strided view %r" % sv)


@test("lifetime/view-keeps-tensor")
def _():
    x = normal(4096, seed=6)
    t = Piq.quantize(x, "nf4")
    codes, scales = np.asarray(t), t.scales_array()
    want_codes, want_scales = codes.copy(), scales.copy()
    del t
    gc.collect()
    junk = [Piq.quantize(normal(4096, seed=9), "nf4") for _ in range(20)]
    check(np.array_equal(codes, want_codes), "the codes changed after the tensor was dropped")
    check(np.array_equal(scales, want_scales), "the scales changed after the tensor was dropped")
    del junk


@test("scales/requantize-keeps-old-view")
def _():
    x = normal(256, seed=7)
    fmt = Piq.Format.new_per_block(Piq.Dtype.UINT8, 64, Piq.Dtype.F32)     # affine: zero points
    t = Piq.quantize(x, fmt)
    s, z = t.scales_array(), t.zero_points_array()
    check(s.shape == (4,) and s.dtype == np.float32 and not s.flags.writeable, "scales %s %s" % (s.dtype, s.shape))
    check(z.shape == (4,) and z.dtype == np.int32 and not z.flags.writeable, "zero points %s %s" % (z.dtype, z.shape))
    # the dequantize formula over the views, as an oracle
    codes = np.asarray(t).reshape(4, 64).astype(np.float32)
    want = ((codes - z[:, None].astype(np.float32)) * s[:, None]).reshape(-1)
    check(np.array_equal(Piq.dequantize(t), want), "dequantize differs from (q - zp) * scale")
    old_s, old_z = s.copy(), z.copy()
    Piq.Quantizer.get_default().quantize(None, Piq.Tensor.from_array(x * 3), t)   # new scales
    gc.collect()
    check(np.array_equal(s, old_s) and np.array_equal(z, old_z), "the old views changed")
    fresh = Piq.quantize(x * 3, fmt)
    check(np.array_equal(t.scales_array(), fresh.scales_array()) and not np.array_equal(t.scales_array(), s),
          "new scales %r" % t.scales_array())
    check(Piq.quantize(x, "int8").scales_array() is None, "a per-tensor format has a scales array")
    check(Piq.Tensor.new(Piq.Dtype.F32, 4).scales_array() is None, "a float tensor has scales")


# ------------------------------------------------------------ one-liners ----

@test("quantize/nf4-oracle")
def _():
    x = normal((16, 256), seed=8)
    for block in (64, 128):
        t = Piq.quantize(x, "nf4", block_size=block)
        packed, absmax, values = nf4_oracle(x, block)
        check(t.shape == x.shape, "shape %r" % (t.shape,))
        check(t.get_format().get_block_size() == block, "block size %d" % t.get_format().get_block_size())
        check(np.array_equal(t.scales_array(), absmax), "block %d: scales are not the absmax" % block)
        got = np.asarray(t)
        bad = np.flatnonzero(got != packed)
        check(bad.size == 0, "block %d: %d of %d code bytes differ, first at %s"
              % (block, bad.size, packed.size, bad[:4]))
        y = Piq.dequantize(t)
        check(y.shape == x.shape and y.dtype == np.float32, "dequantized %s %s" % (y.dtype, y.shape))
        check(np.array_equal(y, values), "block %d: dequantized values differ from code * absmax" % block)


@test("quantize/int8-per-tensor")
def _():
    x = normal(10000, seed=10)
    t = Piq.quantize(x, Piq.Format.new_symmetric(Piq.Dtype.INT8))
    scale, zp = t.get_scale(), t.get_zero_point()
    check(scale > 0 and zp == 0, "scale %r, zero point %r" % (scale, zp))
    codes = np.asarray(t).view(np.int8)
    want = np.clip(np.rint(x.astype(np.float64) / scale), -128, 127).astype(np.int8)
    check(np.count_nonzero(codes != want) == 0, "%d codes differ from rint(x / scale)"
          % np.count_nonzero(codes != want))
    y = Piq.dequantize(t, dtype=np.float64)
    check(y.dtype == np.float64 and np.array_equal(y, want.astype(np.float64) * scale),
          "dequantize to f64 differs from code * scale")
    check(np.array_equal(Piq.dequantize(t, dtype=Piq.Dtype.F16), y.astype(np.float16)),
          "dequantize to f16 (a Piq.Dtype) differs from the f64 values rounded")
    # a dtype name is a per-tensor format of that dtype
    check(Piq.quantize(x, "int8").get_format().equal(Piq.Format.new(Piq.Dtype.INT8)), "'int8'")


@test("dequantize/accumulate")
def _():
    x = normal((4, 128), seed=11)
    t = Piq.quantize(x, "int8_block")
    y = Piq.dequantize(t)
    acc = np.full(x.shape, 0.5, np.float32)
    got = Piq.dequantize(t, out=acc, add=True)
    check(got is acc, "out= is not what is returned")
    check(np.array_equal(acc, np.float32(0.5) + y), "acc != 0.5 + dequantized")
    Piq.dequantize(t, out=acc)
    check(np.array_equal(acc, y), "out= without add does not overwrite")


@test("matmul/oracle")
def _():
    x, b = normal((5, 3, 64), seed=12), normal(24, seed=13)
    w = Piq.quantize(normal((24, 64), seed=14), "int8_block")
    wd = Piq.dequantize(w).astype(np.float64)
    want = x.astype(np.float64) @ wd.T + b
    for weights in (w, Piq.PackedWeights.new(w, Piq.Activation.FLOAT)):
        y = Piq.matmul(x, weights, bias=b)
        check(y.shape == (5, 3, 24) and y.dtype == np.float32, "%s %s" % (y.dtype, y.shape))
        # binary32 accumulation of 64 products: a few ulps of the sum of |terms|
        bound = 64 * 2.0 ** -23 * (np.abs(x).astype(np.float64) @ np.abs(wd).T + np.abs(b))
        check(np.all(np.abs(y - want) <= bound), "max error %g" % np.max(np.abs(y - want)))
    out = np.ones((5, 3, 24), np.float32)
    check(Piq.matmul(x, w, out=out, add=True) is out, "out= is not returned")
    check(np.all(np.abs(out - 1 - (want - b)) <= 2 * bound), "add=True")
    # dynamic int8 activations: packing for another policy is refused
    p = Piq.PackedWeights.new(w, Piq.Activation.DYNAMIC_INT8)
    raises(ValueError, Piq.matmul, x, p, activation=Piq.Activation.FLOAT)
    check(Piq.matmul(x, p).shape == (5, 3, 24), "dynamic int8")


# -------------------------------------------------------------- refusals ----

@test("refuse/arrays")
def _():
    x = normal((8, 64), seed=15)
    raises(ValueError, Piq.quantize, x[:, ::2], "nf4")                  # not contiguous
    raises(ValueError, Piq.quantize, np.asfortranarray(x), "nf4")
    raises(ValueError, Piq.Tensor.from_array, x.T)
    raises(ValueError, Piq.Tensor.from_array, x.astype(">f4"))          # not native byte order
    raises(ValueError, Piq.Tensor.from_array, np.array(1.0, np.float32))
    raises(TypeError, Piq.Tensor.from_array, [1.0, 2.0])                # not an ndarray
    raises(TypeError, Piq.Tensor.from_array, x, dtype=Piq.Dtype.F16)    # no reinterpretation
    raises(TypeError, Piq.Tensor.from_array, x.astype(np.int16), dtype=Piq.Dtype.BF16)
    raises(TypeError, Piq.Tensor.from_array, x.astype(np.complex64))
    raises(TypeError, Piq.quantize, x.astype(np.int32), "nf4")         # quantize takes floats
    raises(TypeError, Piq.quantize, x.view(np.uint16), "nf4")
    ro = x.copy()
    ro.flags.writeable = False
    raises(ValueError, Piq.Tensor.from_array, ro, writable=True)


@test("files/save-load")
def _():
    import tempfile
    x = normal((4, 64), seed=21)
    t = Piq.quantize(x, "nf4")
    f = Piq.Tensor.from_array(x)
    with tempfile.TemporaryDirectory() as d:
        # .npy: numpy reads what piquant writes, and the reverse
        f.save(os.path.join(d, "x.npy"))
        check(np.array_equal(np.load(os.path.join(d, "x.npy")), x), "numpy reads the .npy")
        np.save(os.path.join(d, "y.npy"), x * 2)
        y = Piq.load(os.path.join(d, "y.npy"))
        check(y.shape == (4, 64) and np.array_equal(np.asarray(y), x * 2), "piquant reads numpy's .npy")
        # .piqt: the quantized tensor whole
        t.save(os.path.join(d, "t.piqt"))
        back = Piq.load(os.path.join(d, "t.piqt"))
        check(back.get_format().equal(t.get_format()), "the format comes back")
        check(np.array_equal(Piq.dequantize(back), Piq.dequantize(t)), "it decodes the same")
        # safetensors: a dict, with metadata
        Piq.save(os.path.join(d, "m.safetensors"), {"w": t, "x": f}, metadata={"k": "v"})
        m = Piq.load(os.path.join(d, "m.safetensors"))
        check(sorted(m) == ["w", "x"], "names %r" % sorted(m))
        check(np.array_equal(np.asarray(m["x"]), x), "the float tensor")
        check(np.array_equal(Piq.dequantize(m["w"]), Piq.dequantize(t)), "the quantized tensor")
        check(Piq.Safetensors.new_from_file(Gio.File.new_for_path(os.path.join(d, "m.safetensors")),
                                            None).get_metadata("k") == "v", "metadata")
        raises(ValueError, t.save, os.path.join(d, "t.bin"))                       # no known suffix
        raises(GLib.Error, t.save, os.path.join(d, "t.npy"))                       # quantized as .npy
        raises(TypeError, Piq.save, os.path.join(d, "z.safetensors"), [t])
        check(sorted(os.listdir(d)) == ["m.safetensors", "t.piqt", "x.npy", "y.npy"], "files %r" % sorted(os.listdir(d)))


@test("refuse/out")
def _():
    t = Piq.quantize(normal((8, 64), seed=16), "nf4")
    raises(ValueError, Piq.dequantize, t, out=np.zeros((64, 8), np.float32))      # wrong shape
    raises(ValueError, Piq.dequantize, t, out=np.zeros(512, np.float32))
    raises(TypeError, Piq.dequantize, t, out=np.zeros((8, 64), np.int32))         # not float
    raises(ValueError, Piq.dequantize, t, out=np.zeros((8, 128), np.float32)[:, ::2])
    ro = np.zeros((8, 64), np.float32)
    ro.flags.writeable = False
    raises(ValueError, Piq.dequantize, t, out=ro)
    raises(ValueError, Piq.dequantize, t, add=True)                               # add needs out
    raises(TypeError, Piq.dequantize, t, out=np.zeros((8, 64), np.float32), dtype=np.float64)
    raises(ValueError, Piq.dequantize, Piq.Tensor.new(Piq.Dtype.F32, 4))         # no format
    raises(TypeError, Piq.dequantize, np.zeros(4, np.float32))
    w = Piq.quantize(normal((16, 64), seed=17), "int8_block")
    x = normal((2, 64), seed=18)
    raises(ValueError, Piq.matmul, normal((2, 32), seed=18), w)                   # wrong features
    raises(ValueError, Piq.matmul, x, w, bias=np.zeros(15, np.float32))
    raises(ValueError, Piq.matmul, x, w, out=np.zeros((2, 15), np.float32))
    raises(TypeError, Piq.matmul, x, "w")


@test("refuse/formats")
def _():
    x = normal(256, seed=19)
    raises(ValueError, Piq.quantize, x, "nf5")
    raises(ValueError, Piq.quantize, x, "int8", block_size=64)                    # not per block
    raises(TypeError, Piq.quantize, x, 4)
    raises(TypeError, Piq.quantize, x, "nf4", recipe="absmax")
    # errors of the library surface as GLib.Error
    raises(ValueError, Piq.quantize, x, "nf4", block_size=0)
    e = raises(GLib.Error, Piq.quantize, x, Piq.Format.new_per_channel(Piq.Dtype.INT8, 3))
    check(e.domain == "piq-error-quark", "domain %s" % e.domain)
    e = raises(GLib.Error, Piq.matmul, normal((2, 64)), Piq.quantize(normal((4, 64)), "nf4"),
               activation=Piq.Activation.DYNAMIC_INT8)
    check(e.domain == "piq-error-quark", "domain %s" % e.domain)


@test("docs/snippets")
def _():
    # the Python blocks of docs/bindings.md.in's overrides section run, in order
    path = os.path.join(HERE, os.pardir, "docs", "bindings.md.in")
    with open(path, encoding="utf-8") as f:
        page = f.read()
    start = page.find("### The Python overrides")
    check(start >= 0, "no overrides section in %s" % path)
    end = page.find("\n## ", start)
    section = page[start:end if end >= 0 else len(page)]
    blocks = section.split("```python\n")[1:]
    check(len(blocks) >= 3, "%d Python blocks in the overrides section" % len(blocks))
    namespace = {"__name__": "bindings_md"}
    for i, block in enumerate(blocks):
        code = block.split("```", 1)[0]
        try:
            exec(compile(code, "%s (overrides block %d)" % (path, i + 1), "exec"), namespace)
        except Exception as e:
            raise Failure("block %d raised %s: %s" % (i + 1, type(e).__name__, e))


@test("without-numpy")
def _():
    # the overrides load without numpy; the numpy helpers raise ImportError
    code = ("import sys; sys.modules['numpy'] = None\n"
            "import gi, gi.overrides\n"
            "gi.overrides.__path__.insert(0, %r)\n"
            "gi.require_version('Piq', '1.0')\n"
            "from gi.repository import Piq\n"
            "t = Piq.Tensor.new_shaped(Piq.Dtype.F32, [2, 3])\n"
            "assert t.shape == (2, 3), t.shape\n"
            "try:\n"
            "    Piq.dequantize(t)\n"
            "except ImportError as e:\n"
            "    print('ImportError:', e)\n"
            % os.path.abspath(OVERRIDES))
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    check(r.returncode == 0 and r.stdout.startswith("ImportError: ") and "numpy" in r.stdout,
          "rc %d, stdout %r, stderr %r" % (r.returncode, r.stdout, r.stderr[-500:]))


def main():
    # the overrides of this tree, not an installed copy
    loaded = sys.modules.get("gi.overrides.Piq")
    if loaded is None or not os.path.samefile(os.path.dirname(loaded.__file__), OVERRIDES):
        print("Bail out! the overrides were not loaded from %s" % OVERRIDES)
        sys.exit(1)
    print("1..%d" % len(TESTS))
    failed = 0
    for i, (name, fn) in enumerate(TESTS, 1):
        try:
            fn()
            print("ok %d %s" % (i, name))
        except Skip as e:
            print("ok %d %s # SKIP %s" % (i, name, e))
        except Exception:
            failed += 1
            print("not ok %d %s" % (i, name))
            for line in traceback.format_exc().splitlines():
                print("# " + line)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
