#!/usr/bin/env python3
# test-bindings-python.py: piquant through PyGObject and the typelib
#
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Every expected value is computed here, in Python (numpy binary32 arithmetic
# and a round-half-even written out below), from docs/numerics.md; nothing is
# read back from the library to build an expectation.  Prints TAP.

import math
import sys
import traceback

try:
    import numpy as np
except ImportError:  # numpy is part of what this test is about
    print("1..0 # SKIP numpy is not installed for %s" % sys.executable)
    sys.exit(0)

import gi

gi.require_version("GLib", "2.0")
gi.require_version("GObject", "2.0")
gi.require_version("Piq", "1.0")
from gi.repository import GLib, GObject, Piq  # noqa: E402

np.seterr(all="ignore")  # overflow to Inf and NaN are part of the data

PIQ_ERROR_DOMAIN = "piq-error-quark"
INF = float("inf")
NAN = float("nan")
EPS32 = 2.0 ** -23

RANGES = {
    Piq.Dtype.UINT2: (0, 3),
    Piq.Dtype.INT2: (-2, 1),
    Piq.Dtype.UINT4: (0, 15),
    Piq.Dtype.INT4: (-8, 7),
    Piq.Dtype.UINT8: (0, 255),
    Piq.Dtype.INT8: (-128, 127),
}

# 37 elements (odd, so a uint4 tensor ends in half a byte): exact ties for
# scale 0.5 (x·2 = k + 0.5), values beyond the range, ±Inf, NaN and −0.
DATA = [0.0, 0.25, 0.75, 1.25, 1.75, -0.25, -0.75, -1.25, 2.5, -2.5, 1.0,
        -1.0, 3.3, -7.1, 0.1, 2.2, 63.25, 63.75, -63.75, -64.25, 100.0,
        -100.0, 1e30, -1e30, INF, -INF, NAN, -0.0] + \
       [((i * 7919) % 211 - 105) / 7.0 for i in range(9)]
assert len(DATA) == 37

# finite data for compute_params and stochastic rounding
FINITE = [((i * 2654435761) % 1000003) / 1000003.0 * 13.0 - 4.5 for i in range(301)]


# ---------------------------------------------------------------- TAP ----

class Failure(Exception):
    pass


TESTS = []


def test(name):
    def register(fn):
        TESTS.append(("python/" + name, fn))
        return fn
    return register


def check(cond, msg):
    if not cond:
        raise Failure(msg)


def check_list(got, want, what, cmp=None):
    got = list(got)
    want = list(want)
    if len(got) != len(want):
        raise Failure("%s: %d elements, expected %d" % (what, len(got), len(want)))
    cmp = cmp or (lambda a, b: a == b)
    bad = [i for i in range(len(want)) if not cmp(got[i], want[i])]
    if bad:
        lines = ["%s: %d of %d differ" % (what, len(bad), len(want))]
        for i in bad[:8]:
            lines.append("  [%d] got %r, expected %r" % (i, got[i], want[i]))
        raise Failure("\n".join(lines))


def float_eq(a, b):
    # exact, NaN equal to NaN; -0.0 == 0.0 is accepted (the dequantized 0 has no sign contract)
    return (math.isnan(a) and math.isnan(b)) or a == b


def expect_error(code, fn, *args):
    """Call fn(*args); it must raise GLib.Error in the piquant domain with @code."""
    try:
        fn(*args)
    except GLib.Error as e:
        quark = GLib.quark_from_string(PIQ_ERROR_DOMAIN)
        if e.domain != PIQ_ERROR_DOMAIN or e.code != int(code) or not e.matches(quark, code):
            raise Failure("raised %s:%d (%s), expected %s:%d (%s)"
                          % (e.domain, e.code, e.message, PIQ_ERROR_DOMAIN, int(code), code))
        check(e.message, "the GError has an empty message")
        return e
    raise Failure("no GLib.Error raised, expected %s" % (code,))


def main():
    print("1..%d" % len(TESTS))
    failed = 0
    for i, (name, fn) in enumerate(TESTS, 1):
        try:
            fn()
        except Exception:  # noqa: BLE001  (any failure is a TAP failure)
            failed += 1
            print("not ok %d - %s" % (i, name))
            for line in traceback.format_exc().rstrip().splitlines():
                print("# " + line)
        else:
            print("ok %d - %s" % (i, name))
        sys.stdout.flush()
    sys.exit(1 if failed else 0)


# ------------------------------------------------------------- oracle ----

def f32(x):
    return float(np.float32(x))


def round_half_even(v):
    """nearbyint() in the default rounding mode, written out."""
    if math.isnan(v) or math.isinf(v):
        return v
    f = math.floor(v)
    d = v - f  # exact for a binary32 or binary64 v
    if d > 0.5:
        return f + 1
    if d < 0.5:
        return f
    return f if f % 2 == 0 else f + 1


def round_half_away(v):
    """round() of C, written out."""
    a = abs(v)
    f = math.floor(a)
    return math.copysign(f + 1 if a - f >= 0.5 else f, v)


def clamp_code(r, zp, qmin, qmax):
    """q = clamp(r + zp, qmin, qmax); r NaN -> zp (a NaN input)."""
    if math.isnan(r):
        return zp
    t = r + zp
    if t > qmax:
        return qmax
    if t < qmin:
        return qmin
    return int(t)


def scaled_f32(x, scale):
    """v = x · inv in binary32, inv = 1.0f / (float) scale."""
    inv = np.float32(1.0) / np.float32(scale)
    return float(np.float32(x) * inv)


def scaled_f64(x, scale):
    return x * (1.0 / scale)


def quantize_nearest(xs, scale, zp, dtype, f64=False):
    qmin, qmax = RANGES[dtype]
    out = []
    for x in xs:
        v = scaled_f64(x, scale) if f64 else scaled_f32(x, scale)
        out.append(clamp_code(round_half_even(v), zp, qmin, qmax))
    return out


def np_quantize_nearest(x, scale, zp, dtype):
    """The same as quantize_nearest, vectorized (for large arrays)."""
    qmin, qmax = RANGES[dtype]
    inv = np.float32(1.0) / np.float32(scale)
    v = x.astype(np.float32) * inv
    r = np.rint(v).astype(np.float64)
    q = np.clip(r + zp, qmin, qmax)
    q = np.where(np.isnan(r), zp, q)
    return q.astype(np.int64)


def dequantize_f32(codes, scale, zp):
    s = np.float32(scale)
    return [float(np.float32(q - zp) * s) for q in codes]


def dequantize_f64(codes, scale, zp):
    return [float(q - zp) * scale for q in codes]


def pack(codes, dtype):
    """Bytes of a quantized buffer as numerics/piq-types.h lay them out."""
    if dtype in (Piq.Dtype.UINT8, Piq.Dtype.INT8):
        return bytes(c & 0xFF for c in codes)
    bits = {Piq.Dtype.UINT4: 4, Piq.Dtype.INT4: 4, Piq.Dtype.UINT2: 2, Piq.Dtype.INT2: 2}[dtype]
    per = 8 // bits
    out = bytearray((len(codes) + per - 1) // per)
    for i, c in enumerate(codes):
        out[i // per] |= (c & ((1 << bits) - 1)) << (bits * (i % per))
    return bytes(out)


def unpack(data, n, dtype):
    bits = {Piq.Dtype.UINT4: 4, Piq.Dtype.INT4: 4, Piq.Dtype.UINT2: 2, Piq.Dtype.INT2: 2,
            Piq.Dtype.UINT8: 8, Piq.Dtype.INT8: 8}[dtype]
    per = 8 // bits
    signed = dtype in (Piq.Dtype.INT4, Piq.Dtype.INT2, Piq.Dtype.INT8)
    out = []
    for i in range(n):
        c = (data[i // per] >> (bits * (i % per))) & ((1 << bits) - 1)
        if signed and c >= 1 << (bits - 1):
            c -= 1 << bits
        out.append(c)
    return out


M32 = 0xFFFFFFFF
M64 = 0xFFFFFFFFFFFFFFFF


def splitmix_keys(seed):
    z = (seed + 0x9E3779B97F4A7C15) & M64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    z ^= z >> 31
    return z & M32, z >> 32


def mix32(x):
    x ^= x >> 16
    x = (x * 0x7FEB352D) & M32
    x ^= x >> 15
    x = (x * 0x846CA68B) & M32
    x ^= x >> 16
    return x


def quantize_stochastic(xs, scale, zp, dtype, seed):
    qmin, qmax = RANGES[dtype]
    k0, k1 = splitmix_keys(seed)
    out = []
    for i, x in enumerate(xs):
        v = np.float32(scaled_f32(x, scale))
        f = np.float32(math.floor(v))
        frac = float(v - f)  # binary32 subtraction, exact here
        h = mix32((i & M32) ^ k0 ^ mix32((i >> 32) ^ k1))
        u = (h >> 8) * 2.0 ** -24
        r = float(f) + (1 if u < frac else 0)
        out.append(clamp_code(r, zp, qmin, qmax))
    return out


def minmax_params(xs, dtype, include_zero=True):
    qmin, qmax = RANGES[dtype]
    x = np.array(xs, dtype=np.float32)
    lo, hi = np.float32(x.min()), np.float32(x.max())
    if include_zero or lo == hi:
        lo, hi = min(lo, np.float32(0)), max(hi, np.float32(0))
    scale = np.float32(hi - lo) / np.float32(qmax - qmin)
    scale = max(np.float32(scale), np.float32(EPS32))
    zp = qmin - round_half_even(float(np.float32(lo / scale)))
    return float(scale), int(min(max(zp, qmin), qmax))


def absmax_params(xs, dtype):
    qmin, qmax = RANGES[dtype]
    x = np.array(xs, dtype=np.float32)
    a = np.float32(np.abs(x).max())
    scale = max(np.float32(a / (np.float32(qmax - qmin) / np.float32(2))), np.float32(EPS32))
    zp = 0 if qmin < 0 else (qmin + qmax + 1) // 2
    return float(scale), zp


def meanstd_params(xs, dtype):
    qmin, qmax = RANGES[dtype]
    bits = {Piq.Dtype.UINT8: 8, Piq.Dtype.INT8: 8, Piq.Dtype.UINT4: 4, Piq.Dtype.INT4: 4}[dtype]
    signed = qmin < 0
    n = len(xs)
    s = sum(xs)
    s2 = sum(x * x for x in xs)
    mean = s / n
    var = (s2 - s * s / n) / (n - 1) if n > 1 else 0.0
    sigma = math.sqrt(max(var, 0.0))
    type_max = 2 ** (bits - (1 if signed else 0)) - 1
    c = 1.4 if bits == 2 else 2.7 if bits == 4 else 12.0
    scale = c * sigma / type_max
    if scale == 0:
        scale = 1.0
    centre = 0 if signed else (type_max + 1) >> 1
    zp = centre - round_half_away(mean / scale)
    return scale, int(min(max(zp, qmin), qmax))


# ------------------------------------------------------------ helpers ----

def f32_tensor(values):
    arr = np.array(values, dtype=np.float32)
    return Piq.Tensor.new_from_data(Piq.Dtype.F32, arr.size, arr.tobytes()), arr


def uint8_params(scale=0.5, zp=128, **kw):
    return Piq.Params(dtype=Piq.Dtype.UINT8, scale=scale, zero_point=zp, **kw)


def tensor_bytes(t):
    return t.get_bytes().get_data()


def tensor_f32(t):
    return np.frombuffer(tensor_bytes(t), dtype=np.float32)


# -------------------------------------------------------------- tests ----

@test("quantizer/new-and-default")
def _():
    q = Piq.Quantizer()
    check(isinstance(q, Piq.Quantizer) and isinstance(q, GObject.Object), "Piq.Quantizer() is not a GObject")
    q2 = Piq.Quantizer.new()
    check(isinstance(q2, Piq.Quantizer) and q2 is not q, "Piq.Quantizer.new() gave no new instance")
    d1 = Piq.Quantizer.get_default()
    d2 = Piq.Quantizer.get_default()
    check(isinstance(d1, Piq.Quantizer), "get_default() is not a Piq.Quantizer")
    check(d1 is d2, "get_default() returned two different objects")
    check(d1 is not q, "get_default() returned a fresh quantizer")


@test("quantizer/n-threads")
def _():
    q = Piq.Quantizer()
    for n in (1, 3, 8):
        q.props.n_threads = n
        check(q.get_n_threads() == n, "n-threads %d read back as %d" % (n, q.get_n_threads()))
    q.set_n_threads(2)
    check(q.props.n_threads == 2, "set_n_threads(2) read back as %d" % q.props.n_threads)
    q.set_property("n-threads", 0)  # 0 = all cores
    check(q.props.n_threads >= 0, "n-threads 0 not accepted")


@test("quantizer/simd-level")
def _():
    q = Piq.Quantizer()
    lvl = q.props.simd_level
    known = [Piq.SimdLevel.SCALAR, Piq.SimdLevel.NEON, Piq.SimdLevel.SSE4_2, Piq.SimdLevel.AVX2,
             Piq.SimdLevel.AVX512, Piq.SimdLevel.AVX512_BF16, Piq.SimdLevel.AVX512_FP16]
    check(isinstance(lvl, Piq.SimdLevel), "simd-level is %r, not a Piq.SimdLevel" % (lvl,))
    check(lvl in known, "simd-level %r is not a known level" % (lvl,))
    check(q.get_simd_level() == lvl, "get_simd_level() %r != property %r" % (q.get_simd_level(), lvl))
    pspec = q.find_property("simd-level")
    check(pspec is not None and pspec.flags & GObject.ParamFlags.READABLE, "simd-level is not readable")
    check(not pspec.flags & GObject.ParamFlags.WRITABLE, "simd-level is writable")
    try:
        q.props.simd_level = Piq.SimdLevel.SCALAR
    except TypeError:
        pass
    else:
        raise Failure("assigning the read-only simd-level did not raise TypeError")


@test("quantizer/max-simd-level")
def _():
    q = Piq.Quantizer()
    q.props.max_simd_level = Piq.SimdLevel.SCALAR
    check(q.get_max_simd_level() == Piq.SimdLevel.SCALAR,
          "max-simd-level read back as %r" % (q.get_max_simd_level(),))
    check(q.props.simd_level == Piq.SimdLevel.SCALAR,
          "capped at SCALAR, simd-level is %r" % (q.props.simd_level,))


@test("params/properties")
def _():
    p = Piq.Params(dtype=Piq.Dtype.UINT8, scale=0.5, zero_point=128)
    check(p.props.dtype == Piq.Dtype.UINT8 and p.get_dtype() == Piq.Dtype.UINT8, "dtype")
    check(p.props.scale == 0.5 and p.get_scale() == 0.5, "scale %r" % p.props.scale)
    check(p.props.zero_point == 128 and p.get_zero_point() == 128, "zero-point %r" % p.props.zero_point)
    check(p.props.round_mode == Piq.RoundMode.NEAREST, "default round-mode %r" % (p.props.round_mode,))
    check(p.props.seed == 0, "default seed %r" % p.props.seed)
    check(p.props.scale_rule == Piq.ScaleRule.MIN_MAX, "default scale-rule %r" % (p.props.scale_rule,))
    check(p.props.include_zero is True, "default include-zero %r" % p.props.include_zero)
    p.props.seed = 0xFEDCBA9876543210  # all 64 bits survive
    check(p.get_seed() == 0xFEDCBA9876543210, "64-bit seed read back as %#x" % p.get_seed())
    p.set_round_mode(Piq.RoundMode.STOCHASTIC)
    check(p.props.round_mode == Piq.RoundMode.STOCHASTIC, "round-mode setter")
    check(p.validate(), "validate() of valid parameters")
    p.props.zero_point = -5
    check(p.get_zero_point() == -5, "negative zero point")
    a = Piq.Params.new_affine(Piq.Dtype.UINT4, 0.25, 7)
    check((a.props.dtype, a.props.scale, a.props.zero_point) == (Piq.Dtype.UINT4, 0.25, 7),
          "new_affine: %r" % ((a.props.dtype, a.props.scale, a.props.zero_point),))
    c = a.copy()
    check(c is not a and (c.props.dtype, c.props.scale, c.props.zero_point) == (Piq.Dtype.UINT4, 0.25, 7),
          "copy()")
    check(a.validate(), "validate() of valid parameters")


@test("dtype/enum-values")
def _():
    # the numeric values are ABI (piq-types.h)
    want = {"F32": 0, "F64": 1, "BF16": 2, "F16": 3, "UINT2": 16, "INT2": 17, "UINT4": 18,
            "INT4": 19, "UINT8": 20, "INT8": 21, "INT64": 27}
    for name, value in want.items():
        check(int(getattr(Piq.Dtype, name)) == value, "Piq.Dtype.%s = %d" % (name, int(getattr(Piq.Dtype, name))))
    check((int(Piq.ReduceOp.SET), int(Piq.ReduceOp.ADD)) == (0, 1), "ReduceOp values")
    check(int(Piq.Error.SIZE) == 1 and int(Piq.Error.INVALID_SCALE) == 3, "Error values")


@test("dtype/functions")
def _():
    D = Piq.Dtype
    bits = {D.UINT2: 2, D.INT2: 2, D.UINT4: 4, D.INT4: 4, D.UINT8: 8, D.INT8: 8, D.UINT16: 16,
            D.INT16: 16, D.UINT32: 32, D.INT32: 32, D.UINT64: 64, D.INT64: 64,
            D.F32: 32, D.F64: 64, D.BF16: 16, D.F16: 16}
    for dtype, b in bits.items():
        name = dtype.value_nick
        check(D.get_bits(dtype) == b, "%s: %d bits" % (name, D.get_bits(dtype)))
        check(D.get_name(dtype) == name.replace("-", ""), "get_name(%s) = %r" % (name, D.get_name(dtype)))
        found = D.from_name(D.get_name(dtype))
        check(found[0] and found[1] == dtype, "from_name(%r) = %r" % (D.get_name(dtype), found))
        is_float = dtype in (D.F32, D.F64, D.BF16, D.F16)
        check(D.is_float(dtype) == is_float and D.is_quantized(dtype) != is_float, "%s: is_float/is_quantized" % name)
        rng = D.get_range(dtype)
        if is_float:
            check(not rng[0], "get_range(%s) succeeded" % name)
        else:
            signed = name.startswith("int")
            want = (-(1 << (b - 1)), (1 << (b - 1)) - 1) if signed else (0, (1 << b) - 1)
            check(rng[0] and (rng[1], rng[2]) == want, "get_range(%s) = %r, expected %r" % (name, rng, want))
        for n in (0, 1, 37, 1000003):
            size = D.get_size_for_n(dtype, n)
            check(size == (True, (n * b + 7) // 8), "get_size_for_n(%s, %d) = %r" % (name, n, size))
    check(not D.from_name("uint3")[0], "from_name('uint3') succeeded")
    expect_error(Piq.Error.OVERFLOW, D.get_size_for_n, D.F64, 1 << 63)


@test("tensor/new-from-data/numpy")
def _():
    t, arr = f32_tensor(DATA)
    check(t.get_dtype() == Piq.Dtype.F32, "dtype %r" % (t.get_dtype(),))
    check(t.get_n_elements() == 37, "n-elements %d" % t.get_n_elements())
    check(t.get_n_bytes() == 37 * 4, "n-bytes %d" % t.get_n_bytes())
    check(t.is_writable(), "a tensor made from data is not writable")
    check(tensor_bytes(t) == arr.tobytes(), "get_bytes() differs from the numpy bytes")
    check_list(t.to_values(), [float(v) for v in arr], "to_values()", float_eq)
    check(float_eq(t.get_value(13), f32(-7.1)), "get_value(13) = %r" % t.get_value(13))
    check(t.get_params() is None, "a float tensor carries params")


@test("tensor/new-from-values")
def _():
    t = Piq.Tensor.new_from_values(Piq.Dtype.F32, DATA)
    check(t.get_n_elements() == len(DATA), "n-elements %d" % t.get_n_elements())
    check_list(t.to_values(), [f32(x) for x in DATA], "F32 to_values()", float_eq)
    check(tensor_bytes(t) == np.array(DATA, dtype=np.float32).tobytes(), "F32 bytes")
    t64 = Piq.Tensor.new_from_values(Piq.Dtype.F64, DATA)
    check(t64.get_n_bytes() == 8 * len(DATA), "F64 n-bytes %d" % t64.get_n_bytes())
    check_list(t64.to_values(), DATA, "F64 to_values()", float_eq)
    u = Piq.Tensor.new(Piq.Dtype.UINT4, 5)
    check(u.get_n_bytes() == 3, "5 uint4 elements take %d bytes" % u.get_n_bytes())
    u.set_data(b"\x21\x43\x05")
    check_list(u.to_values(), [1.0, 2.0, 3.0, 4.0, 5.0], "uint4 to_values() after set_data()")


@test("quantize/f32/uint8/nearest")
def _():
    src, arr = f32_tensor(DATA)
    want = quantize_nearest(DATA, 0.5, 128, Piq.Dtype.UINT8)
    check_list(np_quantize_nearest(arr, 0.5, 128, Piq.Dtype.UINT8), want, "oracle self-check")
    # spot checks of the oracle itself: ties to even, NaN, ±Inf, clamp
    check(want[1:5] == [128, 130, 130, 132] and want[5:8] == [128, 126, 126], "oracle ties %r" % want[:8])
    check(want[24:27] == [255, 0, 128], "oracle Inf/NaN %r" % want[24:27])
    q = Piq.Quantizer()
    for params in (uint8_params(),
                   uint8_params(0.1, 3),
                   uint8_params(7.0, 255)):
        dst = Piq.Tensor.new(Piq.Dtype.UINT8, len(DATA))
        check(q.quantize(params, src, dst), "quantize() returned false")
        want = quantize_nearest(DATA, params.props.scale, params.props.zero_point, Piq.Dtype.UINT8)
        check_list(list(tensor_bytes(dst)), want,
                   "codes for scale %g zp %d" % (params.props.scale, params.props.zero_point))


@test("quantize/f32/uint8/params-attached")
def _():
    src, _arr = f32_tensor(DATA)
    dst = Piq.Tensor.new(Piq.Dtype.UINT8, len(DATA))
    Piq.Quantizer.get_default().quantize(uint8_params(0.5, 100), src, dst)
    p = dst.get_params()
    check(p is not None, "the quantized tensor carries no params")
    check((p.props.dtype, p.props.scale, p.props.zero_point) == (Piq.Dtype.UINT8, 0.5, 100),
          "attached params %r" % ((p.props.dtype, p.props.scale, p.props.zero_point),))


@test("dequantize/uint8/f32/set-then-add")
def _():
    q = Piq.Quantizer()
    src, _arr = f32_tensor(DATA)
    params = uint8_params(0.1, 3)
    qt = Piq.Tensor.new(Piq.Dtype.UINT8, len(DATA))
    q.quantize(params, src, qt)
    codes = quantize_nearest(DATA, 0.1, 3, Piq.Dtype.UINT8)
    y = dequantize_f32(codes, 0.1, 3)
    out = Piq.Tensor.new(Piq.Dtype.F32, len(DATA))
    check(q.dequantize(qt, out, Piq.ReduceOp.SET), "dequantize(SET) returned false")
    check_list(tensor_f32(out).tolist(), y, "SET")
    check(q.dequantize(qt, out, Piq.ReduceOp.ADD), "dequantize(ADD) returned false")
    check_list(tensor_f32(out).tolist(), [f32(np.float32(v) + np.float32(v)) for v in y], "SET then ADD")
    check(out.fill(0.1), "fill() returned false")
    q.dequantize(qt, out, Piq.ReduceOp.ADD)
    check_list(out.to_values(), [f32(np.float32(0.1) + np.float32(v)) for v in y], "fill(0.1) then ADD")


@test("quantize/f32/uint4/nearest")
def _():
    q = Piq.Quantizer()
    src, _arr = f32_tensor(DATA)
    for scale, zp in ((0.5, 7), (9.0, 8), (0.3, 0), (0.25, 15)):
        params = Piq.Params(dtype=Piq.Dtype.UINT4, scale=scale, zero_point=zp)
        dst = Piq.Tensor.new(Piq.Dtype.UINT4, len(DATA))
        check(dst.get_n_bytes() == 19, "37 uint4 take %d bytes" % dst.get_n_bytes())
        q.quantize(params, src, dst)
        codes = quantize_nearest(DATA, scale, zp, Piq.Dtype.UINT4)
        data = tensor_bytes(dst)
        check(data[-1] >> 4 == 0, "the unused high nibble of the last byte is %d" % (data[-1] >> 4))
        check_list(unpack(data, len(DATA), Piq.Dtype.UINT4), codes, "uint4 codes, scale %g zp %d" % (scale, zp))
        check(data == pack(codes, Piq.Dtype.UINT4), "packed bytes differ: %s vs %s"
              % (data.hex(), pack(codes, Piq.Dtype.UINT4).hex()))


@test("dequantize/uint4/f32/set-then-add")
def _():
    q = Piq.Quantizer()
    src, _arr = f32_tensor(DATA)
    params = Piq.Params(dtype=Piq.Dtype.UINT4, scale=0.3, zero_point=6)
    qt = q.quantize_new(params, src)
    check(qt.get_dtype() == Piq.Dtype.UINT4 and qt.get_n_elements() == len(DATA), "quantize_new() tensor")
    codes = quantize_nearest(DATA, 0.3, 6, Piq.Dtype.UINT4)
    check(tensor_bytes(qt) == pack(codes, Piq.Dtype.UINT4), "quantize_new() bytes")
    y = dequantize_f32(codes, 0.3, 6)
    out = Piq.Tensor.new(Piq.Dtype.F32, len(DATA))
    q.dequantize(qt, out, Piq.ReduceOp.SET)
    check_list(out.to_values(), y, "SET")
    q.dequantize(qt, out, Piq.ReduceOp.ADD)
    check_list(out.to_values(), [f32(np.float32(v) * 2) for v in y], "SET then ADD")
    new = q.dequantize_new(qt, Piq.Dtype.F32)
    check(new.get_dtype() == Piq.Dtype.F32, "dequantize_new() dtype")
    check_list(new.to_values(), y, "dequantize_new()")


@test("quantize/int8/nearest")
def _():
    q = Piq.Quantizer()
    src, _arr = f32_tensor(DATA)
    params = Piq.Params(dtype=Piq.Dtype.INT8, scale=0.5, zero_point=-3)
    qt = q.quantize_new(params, src)
    codes = quantize_nearest(DATA, 0.5, -3, Piq.Dtype.INT8)
    check_list(np.frombuffer(tensor_bytes(qt), dtype=np.int8).tolist(), codes, "int8 codes")
    check_list(q.dequantize_new(qt, Piq.Dtype.F32).to_values(), dequantize_f32(codes, 0.5, -3), "int8 dequantized")


@test("quantize/f64/uint8/nearest")
def _():
    # an f64 source is computed in binary64: inv = 1.0 / scale
    q = Piq.Quantizer()
    src = Piq.Tensor.new_from_values(Piq.Dtype.F64, DATA)
    params = uint8_params(0.1, 3)
    qt = q.quantize_new(params, src)
    codes = quantize_nearest(DATA, 0.1, 3, Piq.Dtype.UINT8, f64=True)
    check_list(list(tensor_bytes(qt)), codes, "codes")
    out = Piq.Tensor.new(Piq.Dtype.F64, len(DATA))
    q.dequantize(qt, out, Piq.ReduceOp.SET)
    check_list(out.to_values(), dequantize_f64(codes, 0.1, 3), "dequantized to f64")
    check(np.frombuffer(tensor_bytes(out), dtype=np.float64).tolist() == dequantize_f64(codes, 0.1, 3),
          "f64 bytes")


@test("requantize/f32")
def _():
    q = Piq.Quantizer()
    src, _arr = f32_tensor(DATA)
    p = Piq.Params(dtype=Piq.Dtype.UINT4, scale=0.3, zero_point=6)
    y = dequantize_f32(quantize_nearest(DATA, 0.3, 6, Piq.Dtype.UINT4), 0.3, 6)
    out = Piq.Tensor.new(Piq.Dtype.F32, len(DATA))
    check(q.requantize(p, src, out, Piq.ReduceOp.SET), "requantize(SET) returned false")
    check_list(out.to_values(), y, "SET")
    q.requantize(p, src, out, Piq.ReduceOp.ADD)
    check_list(out.to_values(), [f32(np.float32(v) * 2) for v in y], "SET then ADD")
    inplace, _arr = f32_tensor(DATA)
    q.requantize(p, inplace, inplace, Piq.ReduceOp.SET)
    check_list(inplace.to_values(), y, "in place")
    # stochastic: the same grid points as quantize + dequantize with the seed
    sp = Piq.Params(dtype=Piq.Dtype.UINT8, scale=0.37, zero_point=100,
                    round_mode=Piq.RoundMode.STOCHASTIC, seed=31337)
    fsrc, _arr = f32_tensor(FINITE)
    fout = Piq.Tensor.new(Piq.Dtype.F32, len(FINITE))
    q.requantize(sp, fsrc, fout, Piq.ReduceOp.SET)
    want = dequantize_f32(quantize_stochastic(FINITE, 0.37, 100, Piq.Dtype.UINT8, 31337), 0.37, 100)
    check_list(fout.to_values(), want, "stochastic requantize vs the counter hash")


@test("compute-params/min-max/uint8")
def _():
    q = Piq.Quantizer()
    src, _arr = f32_tensor(FINITE)
    params = Piq.Params(dtype=Piq.Dtype.UINT8)
    check(q.compute_params(params, src), "compute_params() returned false")
    scale, zp = minmax_params(FINITE, Piq.Dtype.UINT8)
    check(params.props.scale == scale, "scale %r, expected %r" % (params.props.scale, scale))
    check(params.props.zero_point == zp, "zero point %d, expected %d" % (params.props.zero_point, zp))
    qt = q.quantize_new(params, src)
    check_list(list(tensor_bytes(qt)), quantize_nearest(FINITE, scale, zp, Piq.Dtype.UINT8), "codes")


@test("compute-params/min-max/uint4")
def _():
    q = Piq.Quantizer()
    pos = [abs(x) + 0.75 for x in FINITE]  # all positive: include-zero moves lo to 0
    src, _arr = f32_tensor(pos)
    p = Piq.Params(dtype=Piq.Dtype.UINT4)
    q.compute_params(p, src)
    want = minmax_params(pos, Piq.Dtype.UINT4, include_zero=True)
    check((p.props.scale, p.props.zero_point) == want,
          "include-zero: %r, expected %r" % ((p.props.scale, p.props.zero_point), want))
    check(p.props.zero_point == 0, "include-zero with positive data: zero point %d" % p.props.zero_point)
    p = Piq.Params(dtype=Piq.Dtype.UINT4, include_zero=False)
    q.compute_params(p, src)
    want = minmax_params(pos, Piq.Dtype.UINT4, include_zero=False)
    check((p.props.scale, p.props.zero_point) == want,
          "no include-zero: %r, expected %r" % ((p.props.scale, p.props.zero_point), want))
    const, _ = f32_tensor([3.0] * 9)
    p = Piq.Params(dtype=Piq.Dtype.UINT4, include_zero=False)
    q.compute_params(p, const)
    want = minmax_params([3.0] * 9, Piq.Dtype.UINT4, include_zero=False)
    check((p.props.scale, p.props.zero_point) == want,
          "constant tensor: %r, expected %r" % ((p.props.scale, p.props.zero_point), want))
    zeros, _ = f32_tensor([0.0] * 4)
    p = Piq.Params(dtype=Piq.Dtype.UINT8)
    q.compute_params(p, zeros)
    check(p.props.scale == EPS32, "all-zero tensor: scale %r, expected eps %r" % (p.props.scale, EPS32))


@test("compute-params/abs-max")
def _():
    q = Piq.Quantizer()
    src, _arr = f32_tensor(FINITE)
    for dtype in (Piq.Dtype.INT8, Piq.Dtype.UINT8, Piq.Dtype.INT4, Piq.Dtype.UINT4):
        p = Piq.Params(dtype=dtype, scale_rule=Piq.ScaleRule.ABS_MAX)
        q.compute_params(p, src)
        want = absmax_params(FINITE, dtype)
        check((p.props.scale, p.props.zero_point) == want,
              "%s: %r, expected %r" % (dtype.value_nick, (p.props.scale, p.props.zero_point), want))


@test("compute-params/mean-std")
def _():
    # dyadic data: every partial sum is exact, so the summation order cannot matter
    xs = [((i * 37) % 61 - 20) / 4.0 for i in range(203)]
    q = Piq.Quantizer()
    src, _arr = f32_tensor(xs)
    for dtype in (Piq.Dtype.UINT8, Piq.Dtype.INT8, Piq.Dtype.UINT4):
        p = Piq.Params(dtype=dtype, scale_rule=Piq.ScaleRule.MEAN_STD)
        q.compute_params(p, src)
        scale, zp = meanstd_params(xs, dtype)
        check(abs(p.props.scale - scale) <= 4e-16 * scale,
              "%s: scale %r, expected %r" % (dtype.value_nick, p.props.scale, scale))
        check(p.props.zero_point == zp, "%s: zero point %d, expected %d" % (dtype.value_nick, p.props.zero_point, zp))


def stochastic_params(dtype, seed, scale=0.37, zp=None):
    if zp is None:
        zp = 100 if dtype == Piq.Dtype.UINT8 else 7
    return Piq.Params(dtype=dtype, scale=scale, zero_point=zp,
                      round_mode=Piq.RoundMode.STOCHASTIC, seed=seed)


@test("quantize/stochastic/floor-or-ceil")
def _():
    q = Piq.Quantizer()
    src, _arr = f32_tensor(FINITE)
    for dtype in (Piq.Dtype.UINT8, Piq.Dtype.UINT4):
        p = stochastic_params(dtype, 12345)
        qt = q.quantize_new(p, src)
        got = unpack(tensor_bytes(qt), len(FINITE), dtype)
        qmin, qmax = RANGES[dtype]
        zp = p.props.zero_point
        bad = []
        for i, x in enumerate(FINITE):
            v = scaled_f32(x, 0.37)
            lo = clamp_code(math.floor(v), zp, qmin, qmax)
            hi = clamp_code(math.ceil(v), zp, qmin, qmax)
            if got[i] not in (lo, hi):
                bad.append("[%d] %d not in {%d, %d}" % (i, got[i], lo, hi))
        check(not bad, "%s: %s" % (dtype.value_nick, "; ".join(bad[:6])))


@test("quantize/stochastic/same-seed-identical")
def _():
    q = Piq.Quantizer()
    src, _arr = f32_tensor(FINITE * 8)
    p = stochastic_params(Piq.Dtype.UINT8, 987654321)
    a = tensor_bytes(q.quantize_new(p, src))
    b = tensor_bytes(q.quantize_new(p, src))
    check(a == b, "two calls with seed 987654321 differ")
    q2 = Piq.Quantizer(n_threads=4)
    check(tensor_bytes(q2.quantize_new(p, src)) == a, "4 threads differ from the default")
    other = tensor_bytes(q.quantize_new(stochastic_params(Piq.Dtype.UINT8, 987654322), src))
    check(other != a, "seeds 987654321 and 987654322 gave the same %d bytes" % len(a))


@test("quantize/stochastic/counter-hash")
def _():
    q = Piq.Quantizer()
    src, _arr = f32_tensor(FINITE)
    for dtype, seed in ((Piq.Dtype.UINT8, 1), (Piq.Dtype.UINT8, 0xFEDCBA9876543210), (Piq.Dtype.UINT4, 42)):
        p = stochastic_params(dtype, seed)
        got = unpack(tensor_bytes(q.quantize_new(p, src)), len(FINITE), dtype)
        want = quantize_stochastic(FINITE, 0.37, p.props.zero_point, dtype, seed)
        check_list(got, want, "%s seed %#x" % (dtype.value_nick, seed))


@test("quantize/stochastic/seed-0-recorded")
def _():
    q = Piq.Quantizer()
    src, _arr = f32_tensor(FINITE)
    p = stochastic_params(Piq.Dtype.UINT8, 0)
    qt = q.quantize_new(p, src)
    used = qt.get_params().props.seed
    check(used != 0, "seed 0: the output's params record seed 0")
    check(p.props.seed == 0, "quantize() changed the caller's seed to %#x" % p.props.seed)
    again = q.quantize_new(stochastic_params(Piq.Dtype.UINT8, used), src)
    check(tensor_bytes(again) == tensor_bytes(qt), "re-running with the recorded seed %#x differs" % used)
    check_list(list(tensor_bytes(qt)), quantize_stochastic(FINITE, 0.37, 100, Piq.Dtype.UINT8, used),
               "recorded seed vs the counter hash")


@test("quantize/stochastic/probability")
def _():
    n = 20000
    q = Piq.Quantizer()
    src, _arr = f32_tensor([2.3] * n)  # v = 2.3 / 1 in binary32: frac ≈ 0.3
    p = Piq.Params(dtype=Piq.Dtype.UINT8, scale=1.0, zero_point=0,
                   round_mode=Piq.RoundMode.STOCHASTIC, seed=7)
    codes = np.frombuffer(tensor_bytes(q.quantize_new(p, src)), dtype=np.uint8)
    check(set(codes.tolist()) <= {2, 3}, "codes outside {2, 3}: %r" % sorted(set(codes.tolist())))
    frac = f32(2.3) - 2.0
    up = float((codes == 3).mean())
    sigma = math.sqrt(frac * (1 - frac) / n)
    check(abs(up - frac) < 5 * sigma, "rounded up %.4f of the time, expected %.4f ± %.4f" % (up, frac, 5 * sigma))


@test("error/size")
def _():
    q = Piq.Quantizer()
    src, _arr = f32_tensor(DATA)
    params = uint8_params()
    small = Piq.Tensor.new(Piq.Dtype.UINT8, len(DATA) - 1)
    small.set_data(b"\xAA" * (len(DATA) - 1))
    e = expect_error(Piq.Error.SIZE, q.quantize, params, src, small)
    check(tensor_bytes(small) == b"\xAA" * (len(DATA) - 1), "the destination was written before the error")
    small4 = Piq.Tensor.new(Piq.Dtype.UINT4, 8)
    expect_error(Piq.Error.SIZE, q.quantize, Piq.Params(dtype=Piq.Dtype.UINT4, scale=1.0), src, small4)
    qt = q.quantize_new(params, src)
    expect_error(Piq.Error.SIZE, q.dequantize, qt, Piq.Tensor.new(Piq.Dtype.F32, 3), Piq.ReduceOp.SET)
    expect_error(Piq.Error.SIZE, Piq.Tensor.new_from_data, Piq.Dtype.F32, 10, b"\0" * 39)
    buf = np.zeros(4, dtype=np.float32)
    expect_error(Piq.Error.SIZE, Piq.Tensor.new_for_address, Piq.Dtype.F32, 5, buf.ctypes.data, buf.nbytes, True)
    check(str(len(DATA) - 1) in e.message or str(len(DATA)) in e.message,
          "the message does not name the sizes: %r" % e.message)


@test("error/invalid-scale")
def _():
    q = Piq.Quantizer()
    src, _arr = f32_tensor(DATA)
    dst = Piq.Tensor.new(Piq.Dtype.UINT8, len(DATA))
    for bad in (0.0, -0.5, INF, -INF, NAN, 1e-50, 1e39):
        p = Piq.Params(dtype=Piq.Dtype.UINT8, zero_point=128)
        # the setter, not the property: GObject refuses NaN and ±Inf for the
        # "scale" property (its GParamSpec spans ±G_MAXDOUBLE)
        p.set_scale(bad)
        check(math.isnan(p.get_scale()) if math.isnan(bad) else p.get_scale() == bad, "set_scale(%r)" % bad)
        expect_error(Piq.Error.INVALID_SCALE, q.quantize, p, src, dst)
    for bad in (0.0, -0.5, 1e-50, 1e39):  # through the property (GObject refuses NaN there too)
        p = Piq.Params(dtype=Piq.Dtype.UINT8, zero_point=128, scale=bad)
        expect_error(Piq.Error.INVALID_SCALE, q.quantize, p, src, dst)
    p = Piq.Params(dtype=Piq.Dtype.UINT8, scale=0.0, zero_point=128)
    expect_error(Piq.Error.INVALID_SCALE, p.validate)


@test("error/invalid-zero-point")
def _():
    q = Piq.Quantizer()
    src, _arr = f32_tensor(DATA)
    for dtype, zp in ((Piq.Dtype.UINT8, 256), (Piq.Dtype.UINT8, -1), (Piq.Dtype.UINT4, 16),
                      (Piq.Dtype.INT8, 128), (Piq.Dtype.INT4, -9)):
        p = Piq.Params(dtype=dtype, scale=1.0, zero_point=zp)
        expect_error(Piq.Error.INVALID_ZERO_POINT, q.quantize, p, src, Piq.Tensor.new(dtype, len(DATA)))
        expect_error(Piq.Error.INVALID_ZERO_POINT, p.validate)


@test("error/unsupported")
def _():
    q = Piq.Quantizer()
    src, _arr = f32_tensor(DATA)
    p = Piq.Params(dtype=Piq.Dtype.F32, scale=1.0)
    expect_error(Piq.Error.UNSUPPORTED, q.quantize, p, src, Piq.Tensor.new(Piq.Dtype.F32, len(DATA)))
    qt = q.quantize_new(uint8_params(), src)
    expect_error(Piq.Error.UNSUPPORTED, q.dequantize_new, qt, Piq.Dtype.UINT8)


@test("error/non-finite")
def _():
    q = Piq.Quantizer()
    for bad in (NAN, INF, -INF):
        src, _arr = f32_tensor([1.0, 2.0, bad, 3.0])
        p = Piq.Params(dtype=Piq.Dtype.UINT8, scale=0.125, zero_point=9)
        expect_error(Piq.Error.NON_FINITE, q.compute_params, p, src)
        check((p.props.scale, p.props.zero_point) == (0.125, 9),
              "params changed by a failed compute_params(): %r" % ((p.props.scale, p.props.zero_point),))


@test("error/empty")
def _():
    q = Piq.Quantizer()
    empty = Piq.Tensor.new(Piq.Dtype.F32, 0)
    check(empty.get_n_elements() == 0, "n-elements")
    expect_error(Piq.Error.EMPTY, q.compute_params, Piq.Params(dtype=Piq.Dtype.UINT8), empty)


@test("error/read-only")
def _():
    q = Piq.Quantizer()
    src, _arr = f32_tensor(DATA)
    buf = np.full(len(DATA), 0x55, dtype=np.uint8)
    ro = Piq.Tensor.new_for_address(Piq.Dtype.UINT8, len(DATA), buf.ctypes.data, buf.nbytes, False)
    check(not ro.is_writable(), "writable=False gave a writable tensor")
    expect_error(Piq.Error.READ_ONLY, q.quantize, uint8_params(), src, ro)
    check((buf == 0x55).all(), "the read-only numpy buffer was written")
    wrapped = Piq.Tensor.new_from_bytes(Piq.Dtype.UINT8, 4, GLib.Bytes.new(b"\1\2\3\4"))
    check(not wrapped.is_writable(), "a tensor wrapping GBytes is writable")
    expect_error(Piq.Error.READ_ONLY, wrapped.set_data, b"\0\0\0\0")
    expect_error(Piq.Error.READ_ONLY, wrapped.fill, 0.0)
    check(tensor_bytes(wrapped) == b"\1\2\3\4", "the GBytes tensor changed")
    fsrc = Piq.Tensor.new_from_bytes(Piq.Dtype.F32, len(DATA), GLib.Bytes.new(np.array(DATA, np.float32).tobytes()))
    expect_error(Piq.Error.READ_ONLY, q.requantize, uint8_params(), fsrc, fsrc, Piq.ReduceOp.SET)
    check_list(list(tensor_bytes(q.quantize_new(uint8_params(), fsrc))),
               quantize_nearest(DATA, 0.5, 128, Piq.Dtype.UINT8), "a GBytes tensor as a source")


@test("error/no-params")
def _():
    q = Piq.Quantizer()
    bare = Piq.Tensor.new(Piq.Dtype.UINT8, 4)
    expect_error(Piq.Error.NO_PARAMS, q.dequantize, bare, Piq.Tensor.new(Piq.Dtype.F32, 4), Piq.ReduceOp.SET)


@test("numpy/zero-copy/quantize-into-array")
def _():
    q = Piq.Quantizer()
    x = np.array(FINITE, dtype=np.float32)
    src = Piq.Tensor.new_from_data(Piq.Dtype.F32, x.size, x.tobytes())
    codes = np.zeros(x.size, dtype=np.uint8)  # kept alive for as long as `dst` is used
    dst = Piq.Tensor.new_for_address(Piq.Dtype.UINT8, codes.size, codes.ctypes.data, codes.nbytes, True)
    check(dst.is_writable() and dst.get_n_bytes() == codes.nbytes, "wrapped tensor")
    q.quantize(uint8_params(0.05, 90), src, dst)
    want = quantize_nearest(FINITE, 0.05, 90, Piq.Dtype.UINT8)
    check_list(codes.tolist(), want, "numpy array written in place")
    check_list(np.frombuffer(dst.get_bytes().get_data(), dtype=np.uint8).tolist(), want, "get_bytes()")
    codes4 = np.zeros((x.size + 1) // 2, dtype=np.uint8)
    dst4 = Piq.Tensor.new_for_address(Piq.Dtype.UINT4, x.size, codes4.ctypes.data, codes4.nbytes, True)
    q.quantize(Piq.Params(dtype=Piq.Dtype.UINT4, scale=1.0, zero_point=5), src, dst4)
    check(codes4.tobytes() == pack(quantize_nearest(FINITE, 1.0, 5, Piq.Dtype.UINT4), Piq.Dtype.UINT4),
          "packed uint4 numpy array")


@test("numpy/zero-copy/dequantize-into-array")
def _():
    q = Piq.Quantizer()
    src, _arr = f32_tensor(DATA)
    qt = q.quantize_new(uint8_params(0.1, 3), src)
    y = np.array(dequantize_f32(quantize_nearest(DATA, 0.1, 3, Piq.Dtype.UINT8), 0.1, 3), dtype=np.float32)
    out = np.full(len(DATA), 1.5, dtype=np.float32)
    t = Piq.Tensor.new_for_address(Piq.Dtype.F32, out.size, out.ctypes.data, out.nbytes, True)
    q.dequantize(qt, t, Piq.ReduceOp.ADD)
    check_list(out.tolist(), (np.float32(1.5) + y).tolist(), "ADD into 1.5")
    q.dequantize(qt, t, Piq.ReduceOp.SET)
    check_list(out.tolist(), y.tolist(), "SET")
    q.dequantize(qt, t, Piq.ReduceOp.ADD)
    check_list(out.tolist(), (y + y).tolist(), "SET then ADD")
    check_list(np.frombuffer(t.get_bytes().get_data(), dtype=np.float32).tolist(), (y + y).tolist(), "get_bytes()")


@test("numpy/zero-copy/source-address")
def _():
    q = Piq.Quantizer()
    x = np.array(DATA, dtype=np.float32)
    src = Piq.Tensor.new_for_address(Piq.Dtype.F32, x.size, x.ctypes.data, x.nbytes, False)
    check(not src.is_writable(), "read-only source is writable")
    qt = q.quantize_new(uint8_params(), src)
    check_list(list(tensor_bytes(qt)), quantize_nearest(DATA, 0.5, 128, Piq.Dtype.UINT8), "codes")
    x[0] = 10.0  # the tensor sees the array: no copy was made
    check(src.get_value(0) == 10.0, "the wrapped tensor reads %r after the array changed" % src.get_value(0))


@test("numpy/large/threads-and-simd")
def _():
    n = 262147
    rng = np.random.default_rng(20240611)
    x = (rng.standard_normal(n) * 40).astype(np.float32)
    x[::97] = np.rint(x[::97]) + 0.25  # ties for scale 0.5: v = 2k + 0.5
    x[1::89] = np.rint(x[1::89]) + 0.75  # v = 2k + 1.5
    src = Piq.Tensor.new_for_address(Piq.Dtype.F32, n, x.ctypes.data, x.nbytes, False)
    want = np_quantize_nearest(x, 0.5, 128, Piq.Dtype.UINT8)
    results = {}
    for label, kw in (("1 thread", dict(n_threads=1)), ("4 threads", dict(n_threads=4)),
                      ("all cores", dict(n_threads=0)),
                      ("scalar", dict(n_threads=3, max_simd_level=Piq.SimdLevel.SCALAR))):
        q = Piq.Quantizer(**kw)
        codes = np.empty(n, dtype=np.uint8)
        dst = Piq.Tensor.new_for_address(Piq.Dtype.UINT8, n, codes.ctypes.data, codes.nbytes, True)
        q.quantize(uint8_params(0.5, 128), src, dst)
        bad = np.nonzero(codes != want)[0]
        check(bad.size == 0, "%s: %d codes differ, first at %r: %r vs %r"
              % (label, bad.size, bad[:4].tolist(), codes[bad[:4]].tolist(), want[bad[:4]].tolist()))
        y = np.empty(n, dtype=np.float32)
        out = Piq.Tensor.new_for_address(Piq.Dtype.F32, n, y.ctypes.data, y.nbytes, True)
        q.dequantize(dst, out, Piq.ReduceOp.SET)
        wy = (want.astype(np.float32) - np.float32(128)) * np.float32(0.5)
        check(np.array_equal(y, wy), "%s: dequantized values differ" % label)
        p = Piq.Params(dtype=Piq.Dtype.UINT4, round_mode=Piq.RoundMode.STOCHASTIC, seed=99, scale=9.0, zero_point=8)
        results[label] = tensor_bytes(q.quantize_new(p, src))
    check(len(set(results.values())) == 1, "stochastic uint4 bytes depend on threads/SIMD: %r"
          % {k: hash(v) for k, v in results.items()})



# ------------------------------------------------------------ formats ----
# The block formats of docs/formats.md, one test per family; every expectation
# is computed here from the format definitions, never read back from piquant.

def gen_a(n):
    """Deterministic values in [-3, 3], rounded to binary32 by the tensor."""
    return [((i * 7919) % 1009 - 504) / 168.0 for i in range(n)]


def gen_b(n):
    return [((i * 104729) % 1013 - 506) / 200.0 for i in range(n)]


def floor_log2(a):
    """floor(log2(a)) of a positive finite float, exactly."""
    return math.frexp(a)[1] - 1


# (ebits, mbits, bias, max, max_code, inf_code, nan_code) of docs/formats.md
E4M3 = (4, 3, 7, 448.0, 0x7E, 0, 0x7F)
E2M1 = (2, 1, 1, 6.0, 0x07, 0, 0)


def minifloat_encode(x, fmt, saturate):
    """Round to nearest, ties to even; overflow saturates or gives NaN/Inf."""
    ebits, mbits, bias, maxv, max_code, inf_code, nan_code = fmt
    width = 1 + ebits + mbits
    x = f32(x)
    sign = (1 << (width - 1)) if math.copysign(1.0, x) < 0 else 0
    if math.isnan(x):
        return sign | nan_code if nan_code else 0
    a = abs(x)
    emin = 1 - bias
    if math.isinf(a):
        mag = INF
    else:
        qe = (floor_log2(a) if a >= 2.0 ** emin else emin) - mbits
        mag = round_half_even(a / 2.0 ** qe) * 2.0 ** qe
    if mag > maxv:
        if saturate or not nan_code:
            return sign | max_code
        return sign | (inf_code or nan_code)
    if mag < 2.0 ** emin:
        return sign | int(mag / 2.0 ** (emin - mbits))
    e = floor_log2(mag)
    m = int(mag / 2.0 ** (e - mbits)) - (1 << mbits)
    return sign | (e + bias) << mbits | m


def minifloat_decode(code, fmt):
    ebits, mbits, bias, _maxv, _mc, inf_code, nan_code = fmt
    width = 1 + ebits + mbits
    mag = code & ((1 << (width - 1)) - 1)
    if nan_code and mag == nan_code:
        return NAN
    e, m = mag >> mbits, mag & ((1 << mbits) - 1)
    v = m * 2.0 ** (1 - bias - mbits) if e == 0 else ((1 << mbits) | m) * 2.0 ** (e - bias - mbits)
    return -v if code >> (width - 1) else v


def nibbles(data, n, high_first=False):
    out = []
    for i in range(n):
        b = data[i // 2]
        lo_half = (i % 2 == 1) if high_first else (i % 2 == 0)
        out.append(b & 0xF if lo_half else b >> 4)
    return out


@test("formats/fp8-e4m3/cast-saturate-nan")
def _():
    q = Piq.Quantizer()
    xs = [1.0, 448.0, 0.001953125, 1000.0, -1000.0, 464.0, 465.0, -0.0, 0.0, NAN,
          0.0029296875, 248.0, 1e-5, INF, -INF, 0.3, -2.7] + gen_a(40)
    src, _arr = f32_tensor(xs)
    want_fixed = {0: 0x38, 1: 0x7E, 2: 0x01, 3: 0x7E, 4: 0xFE, 5: 0x7E, 6: 0x7E, 7: 0x80,
                  9: 0x7F, 10: 0x02, 11: 0x78, 12: 0x00, 13: 0x7E, 14: 0xFE}
    for i, c in want_fixed.items():  # the oracle itself against hand-made codes
        check(minifloat_encode(xs[i], E4M3, True) == c, "oracle code of %r" % xs[i])
    for saturate in (True, False):
        p = Piq.Params(dtype=Piq.Dtype.FP8_E4M3, scale=1.0, saturate=saturate)
        t = q.quantize_new(p, src)
        check(t.get_n_bytes() == len(xs) and t.get_scales() is None, "one byte per element, no scales")
        want = [minifloat_encode(x, E4M3, saturate) for x in xs]
        check_list(list(tensor_bytes(t)), want, "fp8 codes, saturate=%s" % saturate)
        y = tensor_f32(q.dequantize_new(t, Piq.Dtype.F32))
        check_list(y.tolist(), [minifloat_decode(c, E4M3) for c in want], "decoded values", float_eq)
    nonsat = list(tensor_bytes(q.quantize_new(Piq.Params(dtype=Piq.Dtype.FP8_E4M3, saturate=False), src)))
    check(nonsat[3] == 0x7F and nonsat[4] == 0xFF and nonsat[5] == 0x7E and nonsat[6] == 0x7F,
          "non-saturating: 1000, -1000, 464, 465 -> %r" % (nonsat[3:7],))


@test("formats/mxfp4/e8m0-scales")
def _():
    q = Piq.Quantizer()
    xs = gen_a(70)  # blocks of 32, 32 and a ragged 6
    src, arr = f32_tensor(xs)
    p = Piq.Params.new_preset("mxfp4")
    check(p.props.dtype == Piq.Dtype.FP4_E2M1 and p.props.block_size == 32
          and p.props.scale_dtype == Piq.Dtype.E8M0, "mxfp4 preset")
    t = q.quantize_new(p, src)
    check(t.get_n_bytes() == 35, "70 fp4 take %d bytes" % t.get_n_bytes())
    scales = list(t.get_scales().get_data())
    codes = nibbles(tensor_bytes(t), 70)
    want_scales, want_codes, want_y = [], [], []
    for b0 in range(0, 70, 32):
        blk = [float(v) for v in arr[b0:b0 + 32]]
        amax = max(abs(v) for v in blk)
        e = floor_log2(amax) - 2  # the spec's floor rule, emax_elem(E2M1) = 2
        want_scales.append(e + 127)
        for v in blk:
            c = minifloat_encode(v * 2.0 ** -e, E2M1, True)
            want_codes.append(c)
            want_y.append(minifloat_decode(c, E2M1) * 2.0 ** e)
    check_list(scales, want_scales, "E8M0 scales")
    check_list(codes, want_codes, "E2M1 codes, low nibble first")
    y = tensor_f32(q.dequantize_new(t, Piq.Dtype.F32))
    check_list(y.tolist(), want_y, "dequantized")
    table = [0, 0.5, 1, 1.5, 2, 3, 4, 6]
    for c, s, v in zip(codes, [s for s in scales for _ in range(32)], y.tolist()):
        check(v == math.copysign(table[c & 7], -1.0 if c & 8 else 1.0) * 2.0 ** (s - 127),
              "code %d scale %d gave %r" % (c, s, v))


@test("formats/nf4/bnb-order-and-add")
def _():
    q = Piq.Quantizer()
    n = 201  # blocks of 64 and a ragged 9; an odd count ends in half a byte
    xs = gen_a(n)
    src, arr = f32_tensor(xs)
    p = Piq.Params.new_preset("nf4")
    check(p.props.dtype == Piq.Dtype.NF4 and p.props.block_size == 64 and p.props.high_nibble_first,
          "nf4 preset is bitsandbytes' layout")
    t = q.quantize_new(p, src)
    check(t.get_n_bytes() == 101, "201 nf4 take %d bytes" % t.get_n_bytes())
    absmax = np.frombuffer(t.get_scales().get_data(), dtype=np.float32)
    want_absmax = [np.abs(arr[b0:b0 + 64]).max() for b0 in range(0, n, 64)]
    check_list(absmax.tolist(), [float(v) for v in want_absmax], "f32 absmax per block")
    y = tensor_f32(q.dequantize_new(t, Piq.Dtype.F32))
    for i in range(n):
        a = float(absmax[i // 64])
        check(abs(float(y[i]) - float(arr[i])) <= 0.152 * a,
              "[%d] %r -> %r, more than half of NF4's widest gap" % (i, float(arr[i]), float(y[i])))
        if abs(float(arr[i])) == a:
            check(float(y[i]) == float(arr[i]), "[%d] the block's absmax %r came back as %r" % (i, a, float(y[i])))
    mae = float(np.abs(y - arr).mean())
    check(mae < 0.06 * float(np.abs(arr).max()), "MAE %g" % mae)
    # piquant's order: the same codes with the nibbles of every byte swapped
    p_lo = Piq.Params.new_preset("nf4")
    p_lo.props.high_nibble_first = False
    lo = tensor_bytes(q.quantize_new(p_lo, src))
    hi = tensor_bytes(t)
    check_list(list(hi), [((b & 0xF) << 4) | (b >> 4) for b in lo], "bnb bytes = piquant bytes, nibbles swapped")
    check(nibbles(hi, n, True) == nibbles(lo, n, False), "codes differ between the orders")
    # ADD into an accumulator
    acc = Piq.Tensor.new(Piq.Dtype.F32, n)
    acc.fill(0.5)
    q.dequantize(t, acc, Piq.ReduceOp.ADD)
    once = np.float32(0.5) + y
    check_list(tensor_f32(acc).tolist(), once.tolist(), "0.5 + dequantized")
    q.dequantize(t, acc, Piq.ReduceOp.ADD)
    check_list(tensor_f32(acc).tolist(), (once + y).tolist(), "ADD twice")


@test("formats/int8-block/wrap-scales-and-zero-points")
def _():
    q = Piq.Quantizer()
    n, block = 70, 16
    xs = gen_a(n)
    src, arr = f32_tensor(xs)
    p = Piq.Params(dtype=Piq.Dtype.INT8, granularity=Piq.Granularity.BLOCK, block_size=block,
                   scale_rule=Piq.ScaleRule.MIN_MAX)
    ok, scales_size, zps_size = p.get_scales_size(n)
    check(ok and scales_size == 5 * 4 and zps_size == 5 * 4, "sizes %r %r" % (scales_size, zps_size))
    t = q.quantize_new(p, src)
    scales = np.frombuffer(t.get_scales().get_data(), dtype="<f4")
    zps = np.frombuffer(t.get_zero_points().get_data(), dtype="<i4")
    codes = np.frombuffer(tensor_bytes(t), dtype=np.int8)
    want_y = []
    for b in range(5):
        blk = [float(v) for v in arr[b * block:(b + 1) * block]]
        s, zp = minmax_params(blk, Piq.Dtype.INT8)
        check(float(scales[b]) == s and int(zps[b]) == zp,
              "block %d: scale %r zp %d, expected %r %d" % (b, float(scales[b]), zps[b], s, zp))
        want = quantize_nearest(blk, s, zp, Piq.Dtype.INT8)
        check_list(codes[b * block:(b + 1) * block].tolist(), want, "block %d codes" % b)
        want_y += dequantize_f32(want, s, zp)
    # data quantized "elsewhere": codes, scales and zero points as plain bytes
    w = Piq.Tensor.new_from_data(Piq.Dtype.INT8, n, codes.tobytes())
    w.set_params(Piq.Params(dtype=Piq.Dtype.INT8, granularity=Piq.Granularity.BLOCK, block_size=block,
                            scale_rule=Piq.ScaleRule.MIN_MAX))
    w.set_scales(GLib.Bytes.new(scales.tobytes()))
    w.set_zero_points(GLib.Bytes.new(zps.tobytes()))
    check(w.get_scales().get_data() == scales.tobytes(), "get_scales() after set_scales()")
    y = tensor_f32(q.dequantize_new(w, Piq.Dtype.F32))
    check_list(y.tolist(), want_y, "dequantized from wrapped bytes")
    bare = Piq.Tensor.new_from_data(Piq.Dtype.INT8, n, codes.tobytes())
    bare.set_params(p)
    expect_error(Piq.Error.SIZE, q.dequantize_new, bare, Piq.Dtype.F32)


@test("formats/binary/dot")
def _():
    q = Piq.Quantizer()
    n = 300  # blocks of 128, 128 and 44
    p = Piq.Params.new_preset("binary")
    check(p.props.dtype == Piq.Dtype.BINARY and p.props.block_size == 128, "binary preset")
    ta, tb = [], []
    ys = []
    for xs in (gen_a(n), gen_b(n)):
        src, arr = f32_tensor(xs)
        t = q.quantize_new(p, src)
        check(t.get_n_bytes() == 38, "300 bits take %d bytes" % t.get_n_bytes())
        bits = tensor_bytes(t)
        check_list([(bits[i // 8] >> (i % 8)) & 1 for i in range(n)],
                   [1 if not math.copysign(1.0, float(v)) < 0 else 0 for v in arr], "sign bits")
        scales = np.frombuffer(t.get_scales().get_data(), dtype=np.float32)
        want_s = []
        for b0 in range(0, n, 128):
            # binary32, element i into partial sum i mod 16, combined pairwise (docs/formats.md)
            lanes = [np.float32(0)] * 16
            for i, v in enumerate(arr[b0:b0 + 128]):
                lanes[i % 16] = np.float32(lanes[i % 16] + np.abs(v))
            for h in (8, 4, 2, 1):
                for k in range(h):
                    lanes[k] = np.float32(lanes[k] + lanes[k + h])
            want_s.append(float(lanes[0] / np.float32(len(arr[b0:b0 + 128]))))
        check_list(scales.tolist(), want_s, "scales = mean |x| per block")
        y = tensor_f32(q.dequantize_new(t, Piq.Dtype.F32))
        check_list(y.tolist(), [want_s[i // 128] * (1 if (bits[i // 8] >> (i % 8)) & 1 else -1) for i in range(n)],
                   "dequantized ±scale")
        ta.append(t)
        ys.append(y.astype(np.float64))
    ok, dot = q.binary_dot(ta[0], ta[1])
    want = float(sum(float(a) * float(b) for a, b in zip(ys[0], ys[1])))
    check(ok and abs(dot - want) <= 1e-9 * max(1.0, abs(want)), "binary_dot %r, dequantized dot %r" % (dot, want))
    ok, self_dot = q.binary_dot(ta[0], ta[0])
    want = float(sum(float(a) * float(a) for a in ys[0]))
    check(abs(self_dot - want) <= 1e-9 * want, "a·a %r, expected %r" % (self_dot, want))


@test("formats/q8_0/ggml-bytes")
def _():
    q = Piq.Quantizer()
    n = 70  # 3 blocks, the last holds 6 values and 26 zeros
    xs = gen_a(n)
    src, arr = f32_tensor(xs)
    p = Piq.Params.new_preset("q8_0")
    t = q.quantize_new(p, src)
    raw = tensor_bytes(t)
    check(len(raw) == 3 * 34 and t.get_scales() is None, "3 blocks of 34 bytes, scales inside")
    want_y = []
    for b in range(3):
        blk = raw[34 * b:34 * (b + 1)]
        vals = [float(v) for v in arr[32 * b:32 * b + 32]] + [0.0] * max(0, 32 * b + 32 - n)
        amax = max(abs(v) for v in vals)
        d = np.float32(amax) / np.float32(127)
        dh = np.frombuffer(blk[:2], dtype="<f2")[0]
        check(dh == np.float16(d), "block %d: f16 scale %r, expected %r" % (b, float(dh), float(np.float16(d))))
        idv = np.float32(1) / d
        want = [int(round_half_away(float(np.float32(v) * idv))) for v in vals]
        check_list(np.frombuffer(blk[2:], dtype=np.int8).tolist(), want, "block %d qs" % b)
        want_y += [float(np.float32(c) * np.float32(dh)) for c in want]
    y = tensor_f32(q.dequantize_new(t, Piq.Dtype.F32))
    check_list(y.tolist(), want_y[:n], "dequantized qs·d")


@test("formats/msfp16/shared-exponent")
def _():
    # MSFP16: sign + 7-bit magnitude per element, one exponent byte per box of 16:
    # E = the box maximum's binary32 exponent + 1 (+1 when rounding it carries),
    # value = (-1)^s * mag * 2^(E - 127 - 7); computed here from the definition
    q = Piq.Quantizer()
    xs = gen_a(40)  # boxes of 16, 16 and a ragged 8
    src, arr = f32_tensor(xs)
    p = Piq.Params.new_preset("msfp16")
    check(p.props.dtype == Piq.Dtype.BFP7 and p.props.block_size == 16, "msfp16 preset")
    t = q.quantize_new(p, src)
    check(t.get_n_bytes() == 40, "40 bfp7 elements take %d bytes" % t.get_n_bytes())
    exps = list(t.get_scales().get_data())
    codes = list(tensor_bytes(t))
    y = tensor_f32(q.dequantize_new(t, Piq.Dtype.F32)).tolist()
    for b0 in range(0, 40, 16):
        blk = [float(v) for v in arr[b0:b0 + 16]]
        amax = max(abs(v) for v in blk)
        e = math.frexp(amax)[1] if amax else -127  # amax < 2^e
        if amax and round(amax * 2.0 ** (7 - e)) >= 128:
            e += 1
        want_e = e + 127 if amax else 0
        check(exps[b0 // 16] == want_e, "box %d: exponent %d, want %d" % (b0 // 16, exps[b0 // 16], want_e))
        for i, v in enumerate(blk):
            mag = min(int(round_half_even(abs(v) * 2.0 ** (127 + 7 - want_e))), 127)
            want = (128 if math.copysign(1.0, v) < 0 else 0) | mag
            check(codes[b0 + i] == want, "element %d: code %d, want %d" % (b0 + i, codes[b0 + i], want))
            val = math.copysign(mag * 2.0 ** (want_e - 127 - 7), v)
            check(y[b0 + i] == val, "element %d: %r, want %r" % (b0 + i, y[b0 + i], val))


@test("formats/nf4/double-quant")
def _():
    # bitsandbytes' compress_statistics: the same codes as plain nf4, the scales
    # stored as an f32 offset, one f32 per 256 blocks and a byte per block
    q = Piq.Quantizer()
    n = 64 * 300 + 5
    xs = gen_a(n)
    src, arr = f32_tensor(xs)
    plain = q.quantize_new(Piq.Params.new_preset("nf4"), src)
    p = Piq.Params.new_preset("nf4_dq")
    check(p.props.double_quant, "nf4_dq preset")
    t = q.quantize_new(p, src)
    check(tensor_bytes(t) == tensor_bytes(plain), "double quantization changed the codes")
    blocks = (n + 63) // 64
    size = t.get_scales().get_size()
    check(size == 4 + 4 * 2 + blocks, "scales take %d bytes" % size)
    ok, want_size, _ = p.get_scales_size(n)
    check(ok and want_size == size, "get_scales_size")
    absmax = np.frombuffer(plain.get_scales().get_data(), np.float32)
    offset = np.frombuffer(t.get_scales().get_data()[:4], np.float32)[0]
    check(offset == np.float32(np.float64(absmax.astype(np.float64).sum()) / blocks),
          "offset %r is not the mean absmax" % offset)
    y = tensor_f32(q.dequantize_new(t, Piq.Dtype.F32))
    y0 = tensor_f32(q.dequantize_new(plain, Piq.Dtype.F32))
    err, err0 = float(np.abs(y - arr).mean()), float(np.abs(y0 - arr).mean())
    check(err < err0 * 1.02, "double quantization MAE %g against %g" % (err, err0))
    bad = Piq.Params.new_preset("nf4_dq")
    bad.props.scale_dtype = Piq.Dtype.F16
    expect_error(Piq.Error.UNSUPPORTED, q.quantize_new, bad, src)


@test("formats/errors")
def _():
    q = Piq.Quantizer()
    src, _arr = f32_tensor(gen_a(70))
    per_row = Piq.Params(dtype=Piq.Dtype.INT8, granularity=Piq.Granularity.CHANNEL, block_size=16)
    expect_error(Piq.Error.SIZE, q.quantize_new, per_row, src)
    nf4 = Piq.Params.new_preset("nf4")
    nf4.props.scale_dtype = Piq.Dtype.E8M0
    expect_error(Piq.Error.UNSUPPORTED, q.quantize_new, nf4, src)
    expect_error(Piq.Error.UNSUPPORTED, Piq.Params.new_preset, "no-such-format")
    check("mxfp4" in Piq.Params.list_presets() and "q4_0" in Piq.Params.list_presets(), "list_presets()")


if __name__ == "__main__":
    main()
