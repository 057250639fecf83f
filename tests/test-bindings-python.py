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
import warnings

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


class Skip(Exception):
    """The case does not apply to this language (TAP SKIP)."""


class Todo(Exception):
    """The case is not written in this language yet (TAP TODO: an expected failure)."""


def test(name):
    """Register a case of binding-cases.txt; a name registered twice is one case run in parts."""
    def register(fn):
        full = "python/" + name
        for i, (n, prev) in enumerate(TESTS):
            if n == full:
                def both(prev=prev, fn=fn):
                    prev()
                    fn()
                TESTS[i] = (n, both)
                return fn
        TESTS.append((full, fn))
        return fn
    return register


def skip(name, why):
    def fn():
        raise Skip(why)
    test(name)(fn)


def todo(name, why):
    def fn():
        raise Todo(why)
    test(name)(fn)


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


def expect_piq_error(fn, *args):
    """Call fn(*args); it must raise GLib.Error in the piquant domain (the spec names no code)."""
    try:
        fn(*args)
    except GLib.Error as e:
        if e.domain != PIQ_ERROR_DOMAIN:
            raise Failure("raised %s:%d (%s), expected the %s domain" % (e.domain, e.code, e.message,
                                                                         PIQ_ERROR_DOMAIN))
        check(e.message, "the GError has an empty message")
        return e
    raise Failure("no GLib.Error raised")


def main():
    print("1..%d" % len(TESTS))
    failed = 0
    for i, (name, fn) in enumerate(TESTS, 1):
        try:
            fn()
        except Skip as e:
            print("ok %d - %s # SKIP %s" % (i, name, e))
        except Todo as e:
            print("not ok %d - %s # TODO %s" % (i, name, e))
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


def affine(dtype):
    """A per-tensor affine integer format (the default of Piq.Format)."""
    return Piq.Format(dtype=dtype)


def uint8_recipe(scale=0.5, zp=128, **kw):
    """A recipe that gives the per-tensor scale and zero point of an affine uint8 format."""
    return Piq.Recipe(scale=scale, zero_point=zp, **kw)


U8 = affine(Piq.Dtype.UINT8)


def qdst(fmt, src_or_shape):
    """A reusable quantize destination: new_quantized with the source's shape."""
    shape = src_or_shape if isinstance(src_or_shape, list) else list(src_or_shape.get_shape())
    return Piq.Tensor.new_quantized(fmt, shape)


def outs(result, n):
    """The last n values of a call that returns (ok, out1, ..., outn) or (out1, ..., outn)."""
    result = tuple(result) if isinstance(result, tuple) else (result,)
    if len(result) == n + 1:
        check(result[0] is True, "the call returned %r" % (result[0],))
    return result[-n:] if n > 1 else result[-1]


def sizes(fmt, shape):
    """(codes, scales, zero points) byte sizes of a format for a shape."""
    return outs(fmt.get_sizes(shape), 3)


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


@test("quantizer/properties")  # was quantizer/n-threads
def _():
    q = Piq.Quantizer()
    for n in (1, 3, 8):
        q.props.n_threads = n
        check(q.get_n_threads() == n, "n-threads %d read back as %d" % (n, q.get_n_threads()))
    q.set_n_threads(2)
    check(q.props.n_threads == 2, "set_n_threads(2) read back as %d" % q.props.n_threads)
    q.set_property("n-threads", 0)  # 0 = all cores
    check(q.props.n_threads >= 0, "n-threads 0 not accepted")


@test("quantizer/properties")  # was quantizer/simd-level
def _():
    q = Piq.Quantizer()
    lvl = q.props.simd_level
    # every value of the enum, read from it (as the GJS and Vala tests do)
    known = [getattr(Piq.SimdLevel, k) for k in dir(Piq.SimdLevel) if k.isupper()]
    known = [v for v in known if isinstance(v, Piq.SimdLevel)]
    check(Piq.SimdLevel.SCALAR in known and Piq.SimdLevel.AVX2 in known,
          "the enum's values were not found: %r" % (known,))
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


@test("quantizer/properties")  # was quantizer/max-simd-level
def _():
    q = Piq.Quantizer()
    q.props.max_simd_level = Piq.SimdLevel.SCALAR
    check(q.get_max_simd_level() == Piq.SimdLevel.SCALAR,
          "max-simd-level read back as %r" % (q.get_max_simd_level(),))
    check(q.props.simd_level == Piq.SimdLevel.SCALAR,
          "capped at SCALAR, simd-level is %r" % (q.props.simd_level,))


@test("format-recipe/properties")
def _():
    # PiqParams became an immutable Piq.Format (what the bytes mean) and a
    # mutable Piq.Recipe (how the scale is chosen, or the scale itself)
    f = Piq.Format(dtype=Piq.Dtype.UINT8)
    p = Piq.Recipe(scale=0.5, zero_point=128)
    check(f.props.dtype == Piq.Dtype.UINT8 and f.get_dtype() == Piq.Dtype.UINT8, "dtype")
    check(f.props.granularity == Piq.Granularity.TENSOR and f.get_granularity() == Piq.Granularity.TENSOR,
          "default granularity %r" % (f.props.granularity,))
    check(f.props.axis == 0 and f.get_axis() == 0, "default axis %r" % f.props.axis)
    check(f.props.scale_dtype == Piq.Dtype.F32 and f.get_scale_dtype() == Piq.Dtype.F32,
          "default scale-dtype %r" % (f.props.scale_dtype,))
    check(f.props.symmetric is False and not f.get_symmetric() and f.has_zero_points(),
          "Piq.Format(dtype=UINT8) is not affine")
    check(f.props.saturate is True and f.get_saturate(), "default saturate %r" % f.props.saturate)
    check(f.props.high_nibble_first is False and not f.get_high_nibble_first(), "default high-nibble-first")
    check(f.props.double_quant is False and not f.get_double_quant(), "default double-quant")
    # block-size reads the size in force (0 at construction means the default)
    check(f.props.block_size == f.get_block_size(), "block-size property %r, get_block_size() %r"
          % (f.props.block_size, f.get_block_size()))
    check(p.props.scale == 0.5 and p.get_scale() == 0.5 and p.has_scale(), "scale %r" % p.props.scale)
    check(p.props.zero_point == 128 and p.get_zero_point() == 128 and p.has_zero_point(),
          "zero-point %r" % p.props.zero_point)
    check(p.props.round_mode == Piq.RoundMode.NEAREST, "default round-mode %r" % (p.props.round_mode,))
    check(p.props.seed == 0, "default seed %r" % p.props.seed)
    # the old default MIN_MAX silently became ABS_MAX on symmetric and code formats;
    # the default rule is now the format's own rule, by name
    check(p.props.scale_rule == Piq.ScaleRule.DEFAULT, "default scale-rule %r" % (p.props.scale_rule,))
    check(p.props.include_zero is True, "default include-zero %r" % p.props.include_zero)
    p.props.seed = 0xFEDCBA9876543210  # all 64 bits survive
    check(p.get_seed() == 0xFEDCBA9876543210, "64-bit seed read back as %#x" % p.get_seed())
    p.set_round_mode(Piq.RoundMode.STOCHASTIC)
    check(p.props.round_mode == Piq.RoundMode.STOCHASTIC, "round-mode setter")
    check(f.validate(), "validate() of a valid format")
    p.props.zero_point = -5
    check(p.get_zero_point() == -5, "negative zero point")
    a = Piq.Recipe.new_affine(0.25, 7)
    fa = Piq.Format.new(Piq.Dtype.UINT4)
    check((fa.props.dtype, a.props.scale, a.props.zero_point) == (Piq.Dtype.UINT4, 0.25, 7),
          "new_affine: %r" % ((fa.props.dtype, a.props.scale, a.props.zero_point),))
    c = a.copy()
    check(c is not a and (c.props.scale, c.props.zero_point) == (0.25, 7) and c.has_scale(), "copy()")
    c.set_scale(0.5)
    check(a.props.scale == 0.25, "changing the copy changed the original")
    check(fa.validate(), "validate() of a valid format")
    check(fa.equal(Piq.Format(dtype=Piq.Dtype.UINT4)) and not fa.equal(f), "equal()")
    check(isinstance(fa.to_string(), str) and fa.to_string(), "to_string() %r" % fa.to_string())
    fixed = Piq.Recipe.new_fixed(2.0)
    check(fixed.has_scale() and fixed.get_scale() == 2.0 and not fixed.has_zero_point(), "new_fixed()")
    fixed.clear_scale()
    check(not fixed.has_scale() and not fixed.has_zero_point(), "clear_scale()")
    r = Piq.Recipe()
    check(not r.has_scale() and not r.has_zero_point(), "Piq.Recipe() gives a scale")
    r.props.scale = 0.125
    check(r.has_scale() and r.get_scale() == 0.125, "the scale property does not give a scale")
    # the constructors
    sym = Piq.Format.new_symmetric(Piq.Dtype.INT8)
    check(sym.props.symmetric and not sym.has_zero_points(), "new_symmetric()")
    ch = Piq.Format.new_per_channel(Piq.Dtype.INT8, -1)
    check(ch.props.granularity == Piq.Granularity.CHANNEL and ch.props.axis == -1, "new_per_channel()")
    blk = Piq.Format.new_per_block(Piq.Dtype.INT4, 0, Piq.Dtype.F16)
    check(blk.props.granularity == Piq.Granularity.BLOCK and blk.props.scale_dtype == Piq.Dtype.F16,
          "new_per_block()")
    check(blk.get_block_size() == 64 and blk.props.block_size == 64,
          "effective block size %d (property %d), expected the default 64" % (blk.get_block_size(),
                                                                              blk.props.block_size))
    check(Piq.Format.new_per_block(Piq.Dtype.INT4, 16, Piq.Dtype.F32).props.block_size == 16, "block size 16")
    e8 = Piq.Format.new_per_block(Piq.Dtype.INT8, 0, Piq.Dtype.E8M0)
    check(e8.get_block_size() == 32, "effective block size with E8M0 scales %d" % e8.get_block_size())


@test("dtype/enum-values")
def _():
    # the numeric values are ABI (piq-types.h)
    want = {"F32": 0, "F64": 1, "BF16": 2, "F16": 3, "UINT2": 16, "INT2": 17, "UINT4": 18,
            "INT4": 19, "UINT8": 20, "INT8": 21, "INT64": 27}
    for name, value in want.items():
        check(int(getattr(Piq.Dtype, name)) == value, "Piq.Dtype.%s = %d" % (name, int(getattr(Piq.Dtype, name))))
    check((int(Piq.ReduceOp.SET), int(Piq.ReduceOp.ADD)) == (0, 1), "ReduceOp values")
    check(int(Piq.Error.SIZE) == 1 and int(Piq.Error.INVALID_SCALE) == 3, "Error values")
    check(int(Piq.Error.NO_FORMAT) == 8 and int(Piq.Error.OVERLAP) == 11, "NO_FORMAT and OVERLAP values")
    check(int(Piq.ScaleRule.MIN_MAX) == 0 and int(Piq.ScaleRule.DEFAULT) == 7, "ScaleRule values")
    check([int(g) for g in (Piq.Granularity.TENSOR, Piq.Granularity.CHANNEL, Piq.Granularity.BLOCK)] == [0, 1, 2],
          "Granularity values")


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


@test("tensor/new-from-data")  # was tensor/new-from-data/numpy
def _():
    t, arr = f32_tensor(DATA)
    check(t.get_dtype() == Piq.Dtype.F32, "dtype %r" % (t.get_dtype(),))
    check(t.get_n_elements() == 37, "n-elements %d" % t.get_n_elements())
    check(t.get_n_bytes() == 37 * 4, "n-bytes %d" % t.get_n_bytes())
    check(t.is_writable(), "a tensor made from data is not writable")
    check(tensor_bytes(t) == arr.tobytes(), "get_bytes() differs from the numpy bytes")
    check_list(t.to_values(), [float(v) for v in arr], "to_values()", float_eq)
    check(float_eq(t.get_value(13), f32(-7.1)), "get_value(13) = %r" % t.get_value(13))
    check(t.get_format() is None, "a float tensor carries a format")
    check(t.get_shape() == [37] and t.get_n_dims() == 1 and t.get_dim(0) == 37 and t.get_dim(-1) == 37,
          "shape %r" % (t.get_shape(),))
    check(t.get_row_stride() == 0 and t.is_contiguous(), "packed: row stride %d" % t.get_row_stride())


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
    for recipe in (uint8_recipe(),
                   uint8_recipe(0.1, 3),
                   Piq.Recipe.new_affine(7.0, 255)):
        dst = Piq.Tensor.new_quantized(U8, [len(DATA)])
        check(dst.get_dtype() == Piq.Dtype.UINT8 and dst.get_n_bytes() == len(DATA), "new_quantized()")
        check(q.quantize(recipe, src, dst), "quantize() returned false")
        want = quantize_nearest(DATA, recipe.props.scale, recipe.props.zero_point, Piq.Dtype.UINT8)
        check_list(list(tensor_bytes(dst)), want,
                   "codes for scale %g zp %d" % (recipe.props.scale, recipe.props.zero_point))


@test("quantize/f32/uint8/params-attached")
def _():
    src, _arr = f32_tensor(DATA)
    dst = qdst(U8, src)
    Piq.Quantizer.get_default().quantize(uint8_recipe(0.5, 100), src, dst)
    f = dst.get_format()
    check(f is not None, "the quantized tensor carries no format")
    check(f.props.dtype == Piq.Dtype.UINT8 and f.equal(U8), "attached format %s" % f.to_string())
    check((dst.get_scale(), dst.get_zero_point()) == (0.5, 100),
          "the tensor's scale and zero point %r" % ((dst.get_scale(), dst.get_zero_point()),))
    check(dst.get_scales() is None and dst.get_zero_points() is None, "a per-tensor format has scale arrays")


@test("dequantize/uint8/f32/set-then-add")
def _():
    q = Piq.Quantizer()
    src, _arr = f32_tensor(DATA)
    qt = qdst(U8, src)
    q.quantize(uint8_recipe(0.1, 3), src, qt)
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
    fmt = affine(Piq.Dtype.UINT4)
    for scale, zp in ((0.5, 7), (9.0, 8), (0.3, 0), (0.25, 15)):
        recipe = Piq.Recipe(scale=scale, zero_point=zp)
        dst = Piq.Tensor.new_quantized(fmt, [len(DATA)])
        check(dst.get_n_bytes() == 19, "37 uint4 take %d bytes" % dst.get_n_bytes())
        q.quantize(recipe, src, dst)
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
    qt = q.quantize_new(affine(Piq.Dtype.UINT4), Piq.Recipe.new_affine(0.3, 6), src)
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
    qt = q.quantize_new(affine(Piq.Dtype.INT8), Piq.Recipe.new_affine(0.5, -3), src)
    codes = quantize_nearest(DATA, 0.5, -3, Piq.Dtype.INT8)
    check_list(np.frombuffer(tensor_bytes(qt), dtype=np.int8).tolist(), codes, "int8 codes")
    check_list(q.dequantize_new(qt, Piq.Dtype.F32).to_values(), dequantize_f32(codes, 0.5, -3), "int8 dequantized")


@test("quantize/f64/uint8/nearest")
def _():
    # an f64 source is computed in binary64: inv = 1.0 / scale
    q = Piq.Quantizer()
    src = Piq.Tensor.new_from_values(Piq.Dtype.F64, DATA)
    qt = q.quantize_new(U8, uint8_recipe(0.1, 3), src)
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
    f4 = affine(Piq.Dtype.UINT4)
    p = Piq.Recipe.new_affine(0.3, 6)
    y = dequantize_f32(quantize_nearest(DATA, 0.3, 6, Piq.Dtype.UINT4), 0.3, 6)
    out = Piq.Tensor.new(Piq.Dtype.F32, len(DATA))
    check(q.requantize(f4, p, src, out, Piq.ReduceOp.SET), "requantize(SET) returned false")
    check_list(out.to_values(), y, "SET")
    q.requantize(f4, p, src, out, Piq.ReduceOp.ADD)
    check_list(out.to_values(), [f32(np.float32(v) * 2) for v in y], "SET then ADD")
    inplace, _arr = f32_tensor(DATA)
    q.requantize(f4, p, inplace, inplace, Piq.ReduceOp.SET)
    check_list(inplace.to_values(), y, "in place")
    # stochastic: the same grid points as quantize + dequantize with the seed
    sp = Piq.Recipe(scale=0.37, zero_point=100, round_mode=Piq.RoundMode.STOCHASTIC, seed=31337)
    fsrc, _arr = f32_tensor(FINITE)
    fout = Piq.Tensor.new(Piq.Dtype.F32, len(FINITE))
    q.requantize(U8, sp, fsrc, fout, Piq.ReduceOp.SET)
    want = dequantize_f32(quantize_stochastic(FINITE, 0.37, 100, Piq.Dtype.UINT8, 31337), 0.37, 100)
    check_list(fout.to_values(), want, "stochastic requantize vs the counter hash")


@test("compute-params/min-max")  # was compute-params/min-max/uint8
def _():
    q = Piq.Quantizer()
    src, _arr = f32_tensor(FINITE)
    recipe = Piq.Recipe()
    check(q.compute_params(U8, recipe, src), "compute_params() returned false")
    scale, zp = minmax_params(FINITE, Piq.Dtype.UINT8)
    check(recipe.has_scale() and recipe.has_zero_point(), "compute_params() stored no scale or zero point")
    check(recipe.props.scale == scale, "scale %r, expected %r" % (recipe.props.scale, scale))
    check(recipe.props.zero_point == zp, "zero point %d, expected %d" % (recipe.props.zero_point, zp))
    qt = q.quantize_new(U8, recipe, src)
    check_list(list(tensor_bytes(qt)), quantize_nearest(FINITE, scale, zp, Piq.Dtype.UINT8), "codes")
    check((qt.get_scale(), qt.get_zero_point()) == (scale, zp), "the tensor records %r"
          % ((qt.get_scale(), qt.get_zero_point()),))
    # the default rule of an affine format is min/max: the same as asking for it
    explicit = Piq.Recipe(scale_rule=Piq.ScaleRule.MIN_MAX)
    q.compute_params(U8, explicit, src)
    check((explicit.props.scale, explicit.props.zero_point) == (scale, zp), "MIN_MAX differs from DEFAULT")


@test("compute-params/min-max")  # was compute-params/min-max/uint4
def _():
    q = Piq.Quantizer()
    f4 = affine(Piq.Dtype.UINT4)
    pos = [abs(x) + 0.75 for x in FINITE]  # all positive: include-zero moves lo to 0
    src, _arr = f32_tensor(pos)
    p = Piq.Recipe()
    q.compute_params(f4, p, src)
    want = minmax_params(pos, Piq.Dtype.UINT4, include_zero=True)
    check((p.props.scale, p.props.zero_point) == want,
          "include-zero: %r, expected %r" % ((p.props.scale, p.props.zero_point), want))
    check(p.props.zero_point == 0, "include-zero with positive data: zero point %d" % p.props.zero_point)
    # include-zero applies to the min/max rule only: name the rule
    p = Piq.Recipe(scale_rule=Piq.ScaleRule.MIN_MAX, include_zero=False)
    q.compute_params(f4, p, src)
    want = minmax_params(pos, Piq.Dtype.UINT4, include_zero=False)
    check((p.props.scale, p.props.zero_point) == want,
          "no include-zero: %r, expected %r" % ((p.props.scale, p.props.zero_point), want))
    const, _ = f32_tensor([3.0] * 9)
    p = Piq.Recipe(scale_rule=Piq.ScaleRule.MIN_MAX, include_zero=False)
    q.compute_params(f4, p, const)
    want = minmax_params([3.0] * 9, Piq.Dtype.UINT4, include_zero=False)
    check((p.props.scale, p.props.zero_point) == want,
          "constant tensor: %r, expected %r" % ((p.props.scale, p.props.zero_point), want))
    zeros, _ = f32_tensor([0.0] * 4)
    p = Piq.Recipe()
    q.compute_params(U8, p, zeros)
    check(p.props.scale == EPS32, "all-zero tensor: scale %r, expected eps %r" % (p.props.scale, EPS32))


@test("compute-params/abs-max")
def _():
    # the old ABS_MAX rule on integers is a symmetric format with its default rule
    q = Piq.Quantizer()
    src, _arr = f32_tensor(FINITE)
    for dtype in (Piq.Dtype.INT8, Piq.Dtype.UINT8, Piq.Dtype.INT4, Piq.Dtype.UINT4):
        fmt = Piq.Format(dtype=dtype, symmetric=True)
        want = absmax_params(FINITE, dtype)
        for rule in (Piq.ScaleRule.ABS_MAX, Piq.ScaleRule.DEFAULT):
            p = Piq.Recipe(scale_rule=rule)
            q.compute_params(fmt, p, src)
            check(p.props.scale == want[0],
                  "%s %s: scale %r, expected %r" % (dtype.value_nick, rule.value_nick, p.props.scale, want[0]))
            # a symmetric format has no zero point to give: its zero point is implied
            check(not p.has_zero_point(), "%s: compute_params() gave a symmetric format a zero point"
                  % dtype.value_nick)
        # quantize with the calibrated DEFAULT recipe (p); a given scale with a named rule is refused
        qt = q.quantize_new(fmt, p, src)
        check(qt.get_zero_point() == want[1], "%s: the tensor's zero point %d, expected %d"
              % (dtype.value_nick, qt.get_zero_point(), want[1]))
        codes = quantize_nearest(FINITE, want[0], want[1], dtype)
        check_list(unpack(tensor_bytes(qt), len(FINITE), dtype), codes, "%s codes" % dtype.value_nick)
        check_list(q.dequantize_new(qt, Piq.Dtype.F32).to_values(), dequantize_f32(codes, *want),
                   "%s dequantized" % dtype.value_nick)


@test("compute-params/mean-std")
def _():
    # dyadic data: every partial sum is exact, so the summation order cannot matter
    xs = [((i * 37) % 61 - 20) / 4.0 for i in range(203)]
    q = Piq.Quantizer()
    src, _arr = f32_tensor(xs)
    for dtype in (Piq.Dtype.UINT8, Piq.Dtype.INT8, Piq.Dtype.UINT4):
        p = Piq.Recipe(scale_rule=Piq.ScaleRule.MEAN_STD)
        q.compute_params(affine(dtype), p, src)
        scale, zp = meanstd_params(xs, dtype)
        check(abs(p.props.scale - scale) <= 4e-16 * scale,
              "%s: scale %r, expected %r" % (dtype.value_nick, p.props.scale, scale))
        check(p.props.zero_point == zp, "%s: zero point %d, expected %d" % (dtype.value_nick, p.props.zero_point, zp))


def stochastic_params(dtype, seed, scale=0.37, zp=None):
    """(format, recipe) of an affine integer type with stochastic rounding."""
    if zp is None:
        zp = 100 if dtype == Piq.Dtype.UINT8 else 7
    return affine(dtype), Piq.Recipe(scale=scale, zero_point=zp, round_mode=Piq.RoundMode.STOCHASTIC, seed=seed)


@test("quantize/stochastic/floor-or-ceil")
def _():
    q = Piq.Quantizer()
    src, _arr = f32_tensor(FINITE)
    for dtype in (Piq.Dtype.UINT8, Piq.Dtype.UINT4):
        f, p = stochastic_params(dtype, 12345)
        qt = q.quantize_new(f, p, src)
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
    f, p = stochastic_params(Piq.Dtype.UINT8, 987654321)
    a = tensor_bytes(q.quantize_new(f, p, src))
    b = tensor_bytes(q.quantize_new(f, p, src))
    check(a == b, "two calls with seed 987654321 differ")
    q2 = Piq.Quantizer(n_threads=4)
    check(tensor_bytes(q2.quantize_new(f, p, src)) == a, "4 threads differ from the default")
    other = tensor_bytes(q.quantize_new(*stochastic_params(Piq.Dtype.UINT8, 987654322), src))
    check(other != a, "seeds 987654321 and 987654322 gave the same %d bytes" % len(a))


@test("quantize/stochastic/counter-hash")
def _():
    q = Piq.Quantizer()
    src, _arr = f32_tensor(FINITE)
    for dtype, seed in ((Piq.Dtype.UINT8, 1), (Piq.Dtype.UINT8, 0xFEDCBA9876543210), (Piq.Dtype.UINT4, 42)):
        f, p = stochastic_params(dtype, seed)
        got = unpack(tensor_bytes(q.quantize_new(f, p, src)), len(FINITE), dtype)
        want = quantize_stochastic(FINITE, 0.37, p.props.zero_point, dtype, seed)
        check_list(got, want, "%s seed %#x" % (dtype.value_nick, seed))


@test("quantize/stochastic/seed-0-recorded")
def _():
    q = Piq.Quantizer()
    src, _arr = f32_tensor(FINITE)
    f, p = stochastic_params(Piq.Dtype.UINT8, 0)
    qt = q.quantize_new(f, p, src)
    used = qt.get_seed()
    check(used != 0, "seed 0: the output records seed 0")
    check(p.props.seed == 0, "quantize() changed the caller's seed to %#x" % p.props.seed)
    again = q.quantize_new(*stochastic_params(Piq.Dtype.UINT8, used), src)
    check(tensor_bytes(again) == tensor_bytes(qt), "re-running with the recorded seed %#x differs" % used)
    check(again.get_seed() == used, "a given seed is recorded as %#x" % again.get_seed())
    check_list(list(tensor_bytes(qt)), quantize_stochastic(FINITE, 0.37, 100, Piq.Dtype.UINT8, used),
               "recorded seed vs the counter hash")


@test("quantize/stochastic/probability")
def _():
    n = 20000
    q = Piq.Quantizer()
    src, _arr = f32_tensor([2.3] * n)  # v = 2.3 / 1 in binary32: frac ≈ 0.3
    p = Piq.Recipe(scale=1.0, zero_point=0, round_mode=Piq.RoundMode.STOCHASTIC, seed=7)
    codes = np.frombuffer(tensor_bytes(q.quantize_new(U8, p, src)), dtype=np.uint8)
    check(set(codes.tolist()) <= {2, 3}, "codes outside {2, 3}: %r" % sorted(set(codes.tolist())))
    frac = f32(2.3) - 2.0
    up = float((codes == 3).mean())
    sigma = math.sqrt(frac * (1 - frac) / n)
    check(abs(up - frac) < 5 * sigma, "rounded up %.4f of the time, expected %.4f ± %.4f" % (up, frac, 5 * sigma))


@test("error/size")
def _():
    q = Piq.Quantizer()
    src, _arr = f32_tensor(DATA)
    recipe = uint8_recipe()
    small = Piq.Tensor.new_quantized(U8, [len(DATA) - 1])
    small.set_data(b"\xAA" * (len(DATA) - 1))
    e = expect_error(Piq.Error.SIZE, q.quantize, recipe, src, small)
    check(tensor_bytes(small) == b"\xAA" * (len(DATA) - 1), "the destination was written before the error")
    small4 = Piq.Tensor.new_quantized(affine(Piq.Dtype.UINT4), [8])
    expect_error(Piq.Error.SIZE, q.quantize, Piq.Recipe.new_affine(1.0, 0), src, small4)
    qt = q.quantize_new(U8, recipe, src)
    expect_error(Piq.Error.SIZE, q.dequantize, qt, Piq.Tensor.new(Piq.Dtype.F32, 3), Piq.ReduceOp.SET)
    expect_error(Piq.Error.SIZE, Piq.Tensor.new_from_data, Piq.Dtype.F32, 10, b"\0" * 39)
    buf = np.zeros(4, dtype=np.float32)
    expect_error(Piq.Error.SIZE, Piq.Tensor.new_for_address, Piq.Dtype.F32, [5], buf.ctypes.data, buf.nbytes,
                 0, True)
    check(str(len(DATA) - 1) in e.message or str(len(DATA)) in e.message,
          "the message does not name the sizes: %r" % e.message)


@test("error/invalid-scale")
def _():
    q = Piq.Quantizer()
    src, _arr = f32_tensor(DATA)
    dst = qdst(U8, src)
    out = Piq.Tensor.new(Piq.Dtype.F32, len(DATA))
    for bad in (0.0, -0.5, INF, -INF, NAN, 1e-50, 1e39):
        p = Piq.Recipe.new_affine(1.0, 128)
        p.set_scale(bad)
        check(math.isnan(p.get_scale()) if math.isnan(bad) else p.get_scale() == bad, "set_scale(%r)" % bad)
        expect_error(Piq.Error.INVALID_SCALE, q.quantize, p, src, dst)
    # through the property: every route, NaN and ±Inf included, fails at the next call
    for bad in (0.0, -0.5, 1e-50, 1e39, INF, -INF, NAN):
        p = Piq.Recipe(zero_point=128, scale=bad)
        expect_error(Piq.Error.INVALID_SCALE, q.quantize, p, src, dst)
        p = Piq.Recipe.new_affine(0.5, 128)
        p.props.scale = bad
        expect_error(Piq.Error.INVALID_SCALE, q.quantize, p, src, dst)
    # Params.validate() is gone: the three operations check the scale the same way
    p = Piq.Recipe(scale=0.0, zero_point=128)
    expect_error(Piq.Error.INVALID_SCALE, q.quantize_new, U8, p, src)
    expect_error(Piq.Error.INVALID_SCALE, q.requantize, U8, p, src, out, Piq.ReduceOp.SET)


@test("error/invalid-zero-point")
def _():
    q = Piq.Quantizer()
    src, _arr = f32_tensor(DATA)
    out = Piq.Tensor.new(Piq.Dtype.F32, len(DATA))
    for dtype, zp in ((Piq.Dtype.UINT8, 256), (Piq.Dtype.UINT8, -1), (Piq.Dtype.UINT4, 16),
                      (Piq.Dtype.INT8, 128), (Piq.Dtype.INT4, -9)):
        f = affine(dtype)
        p = Piq.Recipe(scale=1.0, zero_point=zp)
        expect_error(Piq.Error.INVALID_ZERO_POINT, q.quantize, p, src, Piq.Tensor.new_quantized(f, [len(DATA)]))
        expect_error(Piq.Error.INVALID_ZERO_POINT, q.quantize_new, f, p, src)
        expect_error(Piq.Error.INVALID_ZERO_POINT, q.requantize, f, p, src, out, Piq.ReduceOp.SET)


@test("error/unsupported")
def _():
    q = Piq.Quantizer()
    src, _arr = f32_tensor(DATA)
    f = Piq.Format(dtype=Piq.Dtype.F32)
    expect_error(Piq.Error.UNSUPPORTED, f.validate)
    expect_error(Piq.Error.UNSUPPORTED, q.quantize_new, f, Piq.Recipe.new_fixed(1.0), src)
    qt = q.quantize_new(U8, uint8_recipe(), src)
    expect_error(Piq.Error.UNSUPPORTED, q.dequantize_new, qt, Piq.Dtype.UINT8)


@test("error/non-finite")
def _():
    q = Piq.Quantizer()
    for bad in (NAN, INF, -INF):
        src, _arr = f32_tensor([1.0, 2.0, bad, 3.0])
        p = Piq.Recipe(scale=0.125, zero_point=9)
        expect_error(Piq.Error.NON_FINITE, q.compute_params, U8, p, src)
        check((p.props.scale, p.props.zero_point) == (0.125, 9),
              "recipe changed by a failed compute_params(): %r" % ((p.props.scale, p.props.zero_point),))
        fresh = Piq.Recipe()
        expect_error(Piq.Error.NON_FINITE, q.compute_params, U8, fresh, src)
        check(not fresh.has_scale() and not fresh.has_zero_point(), "a failed compute_params() gave a scale")


@test("error/empty")
def _():
    q = Piq.Quantizer()
    empty = Piq.Tensor.new(Piq.Dtype.F32, 0)
    check(empty.get_n_elements() == 0, "n-elements")
    expect_error(Piq.Error.EMPTY, q.compute_params, U8, Piq.Recipe(), empty)


@test("error/read-only")
def _():
    q = Piq.Quantizer()
    src, _arr = f32_tensor(DATA)
    # a quantized tensor over bytes quantized elsewhere is read-only
    ro = Piq.Tensor.new_quantized_from_bytes(U8, [len(DATA)], GLib.Bytes.new(b"\x55" * len(DATA)),
                                             None, None, 0.5, 128)
    check(not ro.is_writable(), "a quantized tensor over GBytes is writable")
    expect_error(Piq.Error.READ_ONLY, q.quantize, uint8_recipe(), src, ro)
    check(tensor_bytes(ro) == b"\x55" * len(DATA), "the read-only codes were written")
    # numpy memory wrapped read-only, as a destination
    buf = np.full(len(DATA), 0x55, dtype=np.uint8)
    ro = Piq.Tensor.new_for_address(Piq.Dtype.UINT8, [len(DATA)], buf.ctypes.data, buf.nbytes, 0, False)
    check(not ro.is_writable(), "writable=False gave a writable tensor")
    expect_error(Piq.Error.READ_ONLY, ro.set_data, b"\0" * len(DATA))
    expect_error(Piq.Error.READ_ONLY, ro.fill, 1.0)
    fbuf = np.full(len(DATA), 2.5, dtype=np.float32)
    fro = Piq.Tensor.new_for_address(Piq.Dtype.F32, [len(DATA)], fbuf.ctypes.data, fbuf.nbytes, 0, False)
    expect_error(Piq.Error.READ_ONLY, q.dequantize, q.quantize_new(U8, uint8_recipe(), src), fro, Piq.ReduceOp.SET)
    check((buf == 0x55).all() and (fbuf == 2.5).all(), "the read-only numpy buffer was written")
    wrapped = Piq.Tensor.new_from_bytes(Piq.Dtype.UINT8, 4, GLib.Bytes.new(b"\1\2\3\4"))
    check(not wrapped.is_writable(), "a tensor wrapping GBytes is writable")
    expect_error(Piq.Error.READ_ONLY, wrapped.set_data, b"\0\0\0\0")
    expect_error(Piq.Error.READ_ONLY, wrapped.fill, 0.0)
    check(tensor_bytes(wrapped) == b"\1\2\3\4", "the GBytes tensor changed")
    fsrc = Piq.Tensor.new_from_bytes(Piq.Dtype.F32, len(DATA), GLib.Bytes.new(np.array(DATA, np.float32).tobytes()))
    expect_error(Piq.Error.READ_ONLY, q.requantize, U8, uint8_recipe(), fsrc, fsrc, Piq.ReduceOp.SET)
    check_list(list(tensor_bytes(q.quantize_new(U8, uint8_recipe(), fsrc))),
               quantize_nearest(DATA, 0.5, 128, Piq.Dtype.UINT8), "a GBytes tensor as a source")


@test("error/no-format")  # was error/no-params
def _():
    # PIQ_ERROR_NO_PARAMS became PIQ_ERROR_NO_FORMAT
    q = Piq.Quantizer()
    bare = Piq.Tensor.new(Piq.Dtype.UINT8, 4)
    check(bare.get_format() is None, "a plain uint8 tensor carries a format")
    expect_error(Piq.Error.NO_FORMAT, q.dequantize, bare, Piq.Tensor.new(Piq.Dtype.F32, 4), Piq.ReduceOp.SET)
    expect_error(Piq.Error.NO_FORMAT, q.dequantize_new, bare, Piq.Dtype.F32)


def quantize_raw(q, fmt, recipe, src_addr, shape, dst, scales=None, zero_points=None):
    """quantize_raw() into numpy arrays (addresses as integers); returns (scale, zero point)."""
    return outs(q.quantize_raw(fmt, recipe, Piq.Dtype.F32, src_addr, shape,
                               dst.ctypes.data, dst.nbytes,
                               scales.ctypes.data if scales is not None else None,
                               scales.nbytes if scales is not None else 0,
                               zero_points.ctypes.data if zero_points is not None else None,
                               zero_points.nbytes if zero_points is not None else 0), 2)


@test("address/quantize-into-buffer")  # was numpy/zero-copy/quantize-into-array
def _():
    # quantize() writes into library-owned tensors (new_quantized); straight into
    # numpy memory is the raw form's job, with the arrays' addresses
    q = Piq.Quantizer()
    x = np.array(FINITE, dtype=np.float32)
    src = Piq.Tensor.new_from_data(Piq.Dtype.F32, x.size, x.tobytes())
    codes = np.zeros(x.size, dtype=np.uint8)
    scale, zp = quantize_raw(q, U8, uint8_recipe(0.05, 90), x.ctypes.data, [x.size], codes)
    check((scale, zp) == (0.05, 90), "quantize_raw() reports %r" % ((scale, zp),))
    want = quantize_nearest(FINITE, 0.05, 90, Piq.Dtype.UINT8)
    check_list(codes.tolist(), want, "numpy array written in place")
    view = Piq.Tensor.new_for_address(Piq.Dtype.UINT8, [codes.size], codes.ctypes.data, codes.nbytes, 0, False)
    check(view.get_n_bytes() == codes.nbytes, "wrapped tensor")
    check_list(np.frombuffer(view.get_bytes().get_data(), dtype=np.uint8).tolist(), want, "get_bytes()")
    check(tensor_bytes(q.quantize_new(U8, uint8_recipe(0.05, 90), src)) == codes.tobytes(),
          "quantize_raw() and quantize_new() differ")
    codes4 = np.zeros((x.size + 1) // 2, dtype=np.uint8)
    quantize_raw(q, affine(Piq.Dtype.UINT4), Piq.Recipe.new_affine(1.0, 5), x.ctypes.data, [x.size], codes4)
    check(codes4.tobytes() == pack(quantize_nearest(FINITE, 1.0, 5, Piq.Dtype.UINT4), Piq.Dtype.UINT4),
          "packed uint4 numpy array")
    # a derived per-tensor scale comes back from the raw form
    scale, zp = quantize_raw(q, U8, None, x.ctypes.data, [x.size], codes)
    check((scale, zp) == minmax_params(FINITE, Piq.Dtype.UINT8), "derived (%r, %r)" % (scale, zp))


@test("address/dequantize-into-buffer")  # was numpy/zero-copy/dequantize-into-array
def _():
    q = Piq.Quantizer()
    src, _arr = f32_tensor(DATA)
    qt = q.quantize_new(U8, uint8_recipe(0.1, 3), src)
    y = np.array(dequantize_f32(quantize_nearest(DATA, 0.1, 3, Piq.Dtype.UINT8), 0.1, 3), dtype=np.float32)
    out = np.full(len(DATA), 1.5, dtype=np.float32)
    t = Piq.Tensor.new_for_address(Piq.Dtype.F32, [out.size], out.ctypes.data, out.nbytes, 0, True)
    check(t.is_writable() and t.get_shape() == [out.size], "wrapped tensor")
    q.dequantize(qt, t, Piq.ReduceOp.ADD)
    check_list(out.tolist(), (np.float32(1.5) + y).tolist(), "ADD into 1.5")
    q.dequantize(qt, t, Piq.ReduceOp.SET)
    check_list(out.tolist(), y.tolist(), "SET")
    q.dequantize(qt, t, Piq.ReduceOp.ADD)
    check_list(out.tolist(), (y + y).tolist(), "SET then ADD")
    check_list(np.frombuffer(t.get_bytes().get_data(), dtype=np.float32).tolist(), (y + y).tolist(), "get_bytes()")


@test("address/wrap-source")  # was numpy/zero-copy/source-address
def _():
    q = Piq.Quantizer()
    x = np.array(DATA, dtype=np.float32)
    src = Piq.Tensor.new_for_address(Piq.Dtype.F32, [x.size], x.ctypes.data, x.nbytes, 0, False)
    check(not src.is_writable(), "read-only source is writable")
    qt = q.quantize_new(U8, uint8_recipe(), src)
    check_list(list(tensor_bytes(qt)), quantize_nearest(DATA, 0.5, 128, Piq.Dtype.UINT8), "codes")
    x[0] = 10.0  # the tensor sees the array: no copy was made
    check(src.get_value(0) == 10.0, "the wrapped tensor reads %r after the array changed" % src.get_value(0))


@test("large/threads-and-simd")
def _():
    n = 262147
    rng = np.random.default_rng(20240611)
    x = (rng.standard_normal(n) * 40).astype(np.float32)
    x[::97] = np.rint(x[::97]) + 0.25  # ties for scale 0.5: v = 2k + 0.5
    x[1::89] = np.rint(x[1::89]) + 0.75  # v = 2k + 1.5
    src = Piq.Tensor.new_for_address(Piq.Dtype.F32, [n], x.ctypes.data, x.nbytes, 0, False)
    want = np_quantize_nearest(x, 0.5, 128, Piq.Dtype.UINT8)
    results = {}
    for label, kw in (("1 thread", dict(n_threads=1)), ("4 threads", dict(n_threads=4)),
                      ("all cores", dict(n_threads=0)),
                      ("scalar", dict(n_threads=3, max_simd_level=Piq.SimdLevel.SCALAR))):
        q = Piq.Quantizer(**kw)
        dst = Piq.Tensor.new_quantized(U8, [n])
        q.quantize(uint8_recipe(0.5, 128), src, dst)
        codes = np.frombuffer(tensor_bytes(dst), dtype=np.uint8)
        bad = np.nonzero(codes != want)[0]
        check(bad.size == 0, "%s: %d codes differ, first at %r: %r vs %r"
              % (label, bad.size, bad[:4].tolist(), codes[bad[:4]].tolist(), want[bad[:4]].tolist()))
        raw = np.empty(n, dtype=np.uint8)
        quantize_raw(q, U8, uint8_recipe(0.5, 128), x.ctypes.data, [n], raw)
        check(np.array_equal(raw, codes), "%s: quantize_raw() differs from quantize()" % label)
        y = np.empty(n, dtype=np.float32)
        out = Piq.Tensor.new_for_address(Piq.Dtype.F32, [n], y.ctypes.data, y.nbytes, 0, True)
        q.dequantize(dst, out, Piq.ReduceOp.SET)
        wy = (want.astype(np.float32) - np.float32(128)) * np.float32(0.5)
        check(np.array_equal(y, wy), "%s: dequantized values differ" % label)
        p = Piq.Recipe(round_mode=Piq.RoundMode.STOCHASTIC, seed=99, scale=9.0, zero_point=8)
        results[label] = tensor_bytes(q.quantize_new(affine(Piq.Dtype.UINT4), p, src))
    check(len(set(results.values())) == 1, "stochastic uint4 bytes depend on threads/SIMD: %r"
          % {k: hash(v) for k, v in results.items()})


@test("reuse/output-tensors")
def _():
    # output tensors allocated once and reused (ported from the GJS suite)
    q = Piq.Quantizer()
    src, _arr = f32_tensor(FINITE)
    qt = qdst(U8, src)
    acc = Piq.Tensor.new(Piq.Dtype.F32, len(FINITE))
    acc.fill(0)
    p = uint8_recipe(0.05, 90)
    for _i in range(50):
        q.quantize(p, src, qt)
        q.dequantize(qt, acc, Piq.ReduceOp.ADD)
    y = dequantize_f32(quantize_nearest(FINITE, 0.05, 90, Piq.Dtype.UINT8), 0.05, 90)
    want = []
    for v in y:
        acc_v = np.float32(0)
        for _i in range(50):
            acc_v = np.float32(acc_v + np.float32(v))
        want.append(float(acc_v))
    check_list(acc.to_values(), want, "50 accumulations")


@test("observer/min-max/merge-and-state")
def _():
    half = len(FINITE) // 2
    a, b, whole = (Piq.Observer.new(Piq.ObserverKind.MIN_MAX) for _ in range(3))
    for obs, xs in ((a, FINITE[:half]), (b, FINITE[half:]), (whole, FINITE)):
        t, _arr = f32_tensor(xs)
        obs.observe(t)
    a.merge(b)
    lo_hi = lambda o: (o.get_min().get_data(), o.get_max().get_data())  # noqa: E731
    check(lo_hi(a) == lo_hi(whole), "merged halves differ from one observer")
    back = Piq.Observer.new_deserialize(a.serialize())
    check(lo_hi(back) == lo_hi(a) and back.get_n_batches() == 2, "state round trip")
    r = back.compute_recipe(U8)
    want = minmax_params(FINITE, Piq.Dtype.UINT8)
    check((r.props.scale, r.props.zero_point) == want,
          "recipe %r, expected %r" % ((r.props.scale, r.props.zero_point), want))


@test("qat/per-tensor/ste-and-lsq")
def _():
    q = Piq.Quantizer()
    xs = [-6.0, -1.25, 0.0, 0.75, 3.0, 200.0]
    src, _a = f32_tensor(xs)
    out = Piq.Tensor.new(Piq.Dtype.F32, len(xs))
    mask = Piq.Tensor.new(Piq.Dtype.UINT8, len(xs))
    check(q.fake_quantize_per_tensor(U8, src, 0.5, 10, out, mask), "fake_quantize_per_tensor")
    check_list(out.to_values(), [-5.0, -1.0, 0.0, 1.0, 3.0, 122.5], "values")
    check_list(list(tensor_bytes(mask)), [0, 1, 1, 1, 1, 0], "mask")
    grad_out, _g = f32_tensor([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    grad_src = Piq.Tensor.new(Piq.Dtype.F32, len(xs))
    ok, g_scale, g_zp = q.fake_quantize_per_tensor_backward(U8, src, 0.5, 10, grad_out, 1.0, grad_src)
    check(ok, "fake_quantize_per_tensor_backward")
    check_list(grad_src.to_values(), [0.0, 2.0, 3.0, 4.0, 5.0, 0.0], "STE gradient")
    # −10 (clamped below) + 1 + 0 + 2 + 0 + 1470 (clamped above); −0.5 − 3
    check((g_scale, g_zp) == (1463.0, -3.5), "scale and zero-point gradients %r" % ((g_scale, g_zp),))


@test("matmul/int8-weights/both-policies")
def _():
    q = Piq.Quantizer()
    # W = [[1, 2, 3], [-4, 5, -6]] as int8 codes with scale 1: every product is exact
    w = Piq.Tensor.new_quantized_from_bytes(affine(Piq.Dtype.INT8), [2, 3],
                                            GLib.Bytes.new(bytes([1, 2, 3, 0xfc, 5, 0xfa])),
                                            None, None, 1.0, 0)
    x, _x = f32_tensor([127.0, -2.0, 5.0])   # amax 127: the int8 activations are x itself
    bias, _b = f32_tensor([0.5, -1.0])
    for act in (Piq.Activation.FLOAT, Piq.Activation.DYNAMIC_INT8):
        pw = Piq.PackedWeights.new(w, act)
        check((pw.get_n_out(), pw.get_n_in(), pw.get_activation()) == (2, 3, act), "packed shape")
        check(pw.get_weights() == w, "the packed weights keep their tensor")
        check((pw.get_n_bytes() == 0) == (act == Piq.Activation.FLOAT), "bytes held: %d" % pw.get_n_bytes())
        y = q.matmul_new(x, pw, bias, Piq.Dtype.F32)
        check(y.get_shape() == [2], "output shape %r" % (y.get_shape(),))
        check_list(y.to_values(), [138.5, -549.0], "X·Wᵀ + bias")
        check(q.matmul(x, pw, bias, y, Piq.ReduceOp.ADD), "matmul ADD")
        check_list(y.to_values(), [277.0, -1098.0], "ADD")
    expect_error(Piq.Error.UNSUPPORTED, Piq.PackedWeights.supports, Piq.Format.new_preset("nf4"),
                 Piq.Activation.DYNAMIC_INT8)


@test("matmul/int8-gemm/zero-points")
def _():
    q = Piq.Quantizer()
    # A = [[130, 126, 128]] with zero point 128 and scale 0.5: a − za = [2, −2, 0]
    a = Piq.Tensor.new_quantized_from_bytes(affine(Piq.Dtype.UINT8), [1, 3], GLib.Bytes.new(bytes([130, 126, 128])),
                                            None, None, 0.5, 128)
    w = Piq.Tensor.new_quantized_from_bytes(affine(Piq.Dtype.INT8), [2, 3],
                                            GLib.Bytes.new(bytes([1, 2, 3, 0xfc, 5, 0xfa])), None, None, 1.0, 0)
    pw = Piq.PackedWeights.new(w, Piq.Activation.DYNAMIC_INT8)
    sums = Piq.Tensor.new_shaped(Piq.Dtype.INT32, [1, 2])
    check(q.matmul_quantized(a, pw, None, None, sums, Piq.ReduceOp.SET), "int32 output")
    check(list(np.frombuffer(tensor_bytes(sums), dtype="<i4")) == [-2, -18], "exact sums")
    bias, _b = f32_tensor([0.5, -1.0])
    y = Piq.Tensor.new_shaped(Piq.Dtype.F32, [1, 2])
    check(q.matmul_quantized(a, pw, bias, None, y, Piq.ReduceOp.SET), "float output")
    check_list(y.to_values(), [-0.5, -10.0], "sa · sw · sum + bias")
    codes = Piq.Tensor.new_quantized(affine(Piq.Dtype.UINT8), [1, 2])
    check(q.matmul_quantized(a, pw, bias, Piq.Recipe.new_affine(0.25, 128), codes, Piq.ReduceOp.SET), "requantized")
    check(list(tensor_bytes(codes)) == [126, 88], "codes %r" % (list(tensor_bytes(codes)),))
    check((codes.get_scale(), codes.get_zero_point()) == (0.25, 128), "output scale and zero point")


@test("matmul/fp8/both-quantized")
def _():
    q = Piq.Quantizer()
    fp8 = Piq.Format.new_preset("fp8_e4m3")
    x, _x = f32_tensor([1.0, -2.0, 0.5, 3.0, 0.25, -1.0])
    check(x.reshape([2, 3]), "reshape A")
    wx, _w = f32_tensor([1.0, 2.0, 3.0, -4.0, 5.0, -6.0])
    check(wx.reshape([2, 3]), "reshape W")
    a = q.quantize_new(fp8, Piq.Recipe.new_fixed(1.0), x)     # every value is an E4M3 value
    w = q.quantize_new(fp8, Piq.Recipe.new_fixed(1.0), wx)
    pw = Piq.PackedWeights.new(w, Piq.Activation.FLOAT)
    bias, _b = f32_tensor([0.5, -1.0])
    y = Piq.Tensor.new_shaped(Piq.Dtype.F32, [2, 2])
    check(q.matmul_quantized(a, pw, bias, None, y, Piq.ReduceOp.SET), "matmul_quantized")
    check_list(y.to_values(), [-1.0, -18.0, 1.0, -5.75], "A·Wᵀ + bias")
    ref = q.matmul_new(q.dequantize_new(a, Piq.Dtype.F32), pw, bias, Piq.Dtype.F32)
    check(tensor_bytes(y) == tensor_bytes(ref), "the bytes of matmul(dequantize(A), W)")
    check(q.matmul_quantized(a, pw, bias, None, y, Piq.ReduceOp.ADD), "matmul_quantized ADD")
    check_list(y.to_values(), [-2.0, -36.0, 2.0, -11.5], "ADD")
    w8 = q.quantize_new(Piq.Format.new_preset("int8_block"), None, wx)
    pw8 = Piq.PackedWeights.new(w8, Piq.Activation.DYNAMIC_INT8)
    expect_error(Piq.Error.UNSUPPORTED, q.matmul_quantized, a, pw8, None, None, y, Piq.ReduceOp.SET)
    check_list(y.to_values(), [-2.0, -36.0, 2.0, -11.5], "nothing written on error")


@test("matmul/binary/xnor-popcount")
def _():
    q = Piq.Quantizer()
    fmt = Piq.Format.new_preset("binary")          # blocks of 128 > 40: one block per row
    # W [3, 40]: row 0 all +, row 1 all −, row 2 + for its first 20; scales 2, 0.5, 1
    codes = bytes([0xff] * 5 + [0x00] * 5 + [0xff, 0xff, 0x0f, 0x00, 0x00])
    scales = np.array([2.0, 0.5, 1.0], dtype="<f4").tobytes()
    w = Piq.Tensor.new_quantized_from_bytes(fmt, [3, 40], GLib.Bytes.new(codes), GLib.Bytes.new(scales), None, 1.0, 0)
    pw = Piq.PackedWeights.new(w, Piq.Activation.BINARY)
    check(pw.get_activation() == Piq.Activation.BINARY, "packed for the binary policy")
    # X [2, 40]: row 0 −2 ×10 then 1 ×30 (mean |x| 1.25), row 1 0.5 ×30 then −0.5 ×10 (mean 0.5)
    x, _x = f32_tensor([-2.0] * 10 + [1.0] * 30 + [0.5] * 30 + [-0.5] * 10)
    check(x.reshape([2, 40]), "reshape")
    bias, _b = f32_tensor([0.5, -1.0, 0.25])
    # sx · sw · (agreeing − disagreeing bits) + bias
    want = [1.25 * 2 * 20 + 0.5, 1.25 * 0.5 * -20 - 1.0, 1.25 * 1 * -20 + 0.25,
            0.5 * 2 * 20 + 0.5, 0.5 * 0.5 * -20 - 1.0, 0.5 * 1 * 20 + 0.25]
    y = q.matmul_new(x, pw, bias, Piq.Dtype.F32)
    check(y.get_shape() == [2, 3], "output shape %r" % (y.get_shape(),))
    check_list(tensor_f32(y).tolist(), want, "XNOR-popcount product")
    check(q.matmul(x, pw, bias, y, Piq.ReduceOp.ADD), "matmul ADD")
    check_list(tensor_f32(y).tolist(), [2 * v for v in want], "ADD")
    # an A already binary: the same product
    a = q.quantize_new(fmt, None, x)
    y2 = Piq.Tensor.new_shaped(Piq.Dtype.F32, [2, 3])
    check(q.matmul_quantized(a, pw, bias, None, y2, Piq.ReduceOp.SET), "matmul_quantized, binary A")
    check_list(tensor_f32(y2).tolist(), want, "binary A × binary W")
    expect_error(Piq.Error.UNSUPPORTED, Piq.PackedWeights.supports, Piq.Format.new_preset("nf4"),
                 Piq.Activation.BINARY)


NPY_23_HEADER = (b"\x93NUMPY\x01\x00\x76\x00{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }"
                 + b" " * 58 + b"\n")   # numpy.save's header for a (2, 3) float32 array (NEP 1)


@test("tensor/addresses")
def _():
    import ctypes
    q = Piq.Quantizer()
    x, _x = f32_tensor([math.sin(i) * 3 for i in range(128)])
    check(x.reshape([2, 64]), "reshape")
    for fmt in (Piq.Format.new_preset("nf4"), Piq.Format.new_per_channel(Piq.Dtype.UINT8, 0)):
        t = q.quantize_new(fmt, None, x)
        for get_address, get_bytes in ((t.get_address, t.get_bytes), (t.get_scales_address, t.get_scales),
                                       (t.get_zero_points_address, t.get_zero_points)):
            address, size = get_address()
            b = get_bytes()
            if b is None:
                check((address, size) == (0, 0), "no buffer: address 0, size 0")
            else:
                check(address != 0 and size == b.get_size(), "address and size %r" % ((address, size),))
                check(ctypes.string_at(address, size) == b.get_data(), "the bytes at the address")
    empty = Piq.Tensor.new(Piq.Dtype.F32, 0)
    check(empty.get_address() == (0, 0), "an empty tensor")


@test("io/npy-piqt/round-trip")
def _():
    import os
    import tempfile
    gi.require_version("Gio", "2.0")
    from gi.repository import Gio
    q = Piq.Quantizer()
    vals = [0.5, -1.25, 3.0, 7.5, -0.0, 2.0]
    with tempfile.TemporaryDirectory() as d:
        npy = Gio.File.new_for_path(os.path.join(d, "x.npy"))
        x, arr = f32_tensor(vals)
        check(x.reshape([2, 3]), "reshape")
        check(x.save_to_file(npy, Piq.FileFormat.NPY, None), "save .npy")
        with open(npy.get_path(), "rb") as f:
            raw = f.read()
        check(raw[:128] == NPY_23_HEADER and raw[128:] == arr.tobytes(), "numpy's bytes")
        a = np.load(npy.get_path())
        check(a.dtype == np.float32 and a.shape == (2, 3) and a.tobytes() == arr.tobytes(), "numpy reads it")
        np.save(npy.get_path(), np.arange(6, dtype=np.int16).reshape(3, 2))
        t = Piq.Tensor.new_from_file(npy, None)
        check((t.get_dtype(), t.get_shape()) == (Piq.Dtype.INT16, [3, 2]), "numpy's int16 array")
        check_list(t.to_values(), [0.0, 1.0, 2.0, 3.0, 4.0, 5.0], "its values")
        # a quantized tensor keeps its format, scales and codes in a container
        piqt = Gio.File.new_for_path(os.path.join(d, "w.piqt"))
        w, _w = f32_tensor([math.sin(i) * 3 for i in range(128)])
        nf4 = q.quantize_new(Piq.Format.new_preset("nf4"), None, w)
        check(nf4.save_to_file(piqt, Piq.FileFormat.PIQT, None), "save .piqt")
        back = Piq.Tensor.new_from_file(piqt, None)
        check(back.get_format().equal(nf4.get_format()), "the format comes back")
        check(tensor_bytes(back) == tensor_bytes(nf4), "the codes come back")
        check(back.get_scales().get_data() == nf4.get_scales().get_data(), "the scales come back")
        check_list(q.dequantize_new(back, Piq.Dtype.F32).to_values(),
                   q.dequantize_new(nf4, Piq.Dtype.F32).to_values(), "it decodes the same")
        expect_error(Piq.Error.UNSUPPORTED, nf4.save_to_file, npy, Piq.FileFormat.NPY, None)
        with open(piqt.get_path(), "r+b") as f:
            f.truncate(100)
        expect_error(Piq.Error.FILE_FORMAT, Piq.Tensor.new_from_file, piqt, None)
        check(sorted(os.listdir(d)) == ["w.piqt", "x.npy"], "no temporary files left")


@test("io/safetensors/round-trip")
def _():
    import json
    import os
    import struct
    import tempfile
    gi.require_version("Gio", "2.0")
    from gi.repository import Gio
    q = Piq.Quantizer()
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "m.safetensors")
        # a file written from the published format: length, JSON, data
        head = json.dumps({"b": {"dtype": "I16", "shape": [3], "data_offsets": [0, 6]},
                           "a": {"dtype": "F32", "shape": [2, 2], "data_offsets": [6, 22]},
                           "__metadata__": {"format": "pt"}}).encode()
        with open(path, "wb") as f:
            f.write(struct.pack("<Q", len(head)) + head + struct.pack("<3h", 1, -2, 3)
                    + struct.pack("<4f", 0.5, 1.5, -2.0, 4.0))
        st = Piq.Safetensors.new_from_file(Gio.File.new_for_path(path), None)
        check(st.get_names() == ["a", "b"] and st.get_metadata_keys() == ["format"], "names and keys")
        check(st.get_metadata("format") == "pt", "metadata")
        check(st.get_tensor("a").get_shape() == [2, 2], "shape")
        check_list(st.get_tensor("a").to_values(), [0.5, 1.5, -2.0, 4.0], "F32 values")
        check_list(st.get_tensor("b").to_values(), [1.0, -2.0, 3.0], "I16 values")
        # and written back with an NF4 tensor beside them
        w, _w = f32_tensor([math.cos(i) * 2 for i in range(128)])
        nf4 = q.quantize_new(Piq.Format.new_preset("nf4"), None, w)
        st.set_tensor("w", nf4)
        st.set_metadata("model", "test")
        check(st.save_to_file(Gio.File.new_for_path(path), None), "save")
        with open(path, "rb") as f:
            raw = f.read()
        n = struct.unpack("<Q", raw[:8])[0]
        head = json.loads(raw[8:8 + n])
        check(n % 8 == 0 and sorted(head) == ["__metadata__", "a", "b", "w", "w.piq_scales"], "entries %r" % sorted(head))
        check(head["a"] == {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 16]}, "a's entry %r" % head["a"])
        check("dtype=nf4" in head["__metadata__"]["w.piq_format"].split("\n"), "the format's keys")
        back = Piq.Safetensors.new_from_file(Gio.File.new_for_path(path), None)
        check(back.get_names() == ["a", "b", "w"], "names read back")
        check(back.get_metadata_keys() == ["format", "model"], "metadata read back")
        wb = back.get_tensor("w")
        check(wb.get_format().equal(nf4.get_format()) and tensor_bytes(wb) == tensor_bytes(nf4), "NF4 read back")
        check_list(q.dequantize_new(wb, Piq.Dtype.F32).to_values(),
                   q.dequantize_new(nf4, Piq.Dtype.F32).to_values(), "it decodes the same")
        st.set_tensor("w.piq_scales", w)
        expect_error(Piq.Error.UNSUPPORTED, st.save_to_file, Gio.File.new_for_path(path), None)
        check(sorted(os.listdir(d)) == ["m.safetensors"], "no temporary files left")


skip("binding/throws-piq-error",
     "PyGObject raises GLib.Error from the typelib's throws flag itself; the VAPI's throws clauses are Vala's")


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
        p = Piq.Format(dtype=Piq.Dtype.FP8_E4M3, saturate=saturate)
        check(p.props.saturate is saturate and not p.has_zero_points(), "fp8 format")
        t = q.quantize_new(p, Piq.Recipe.new_fixed(1.0), src)
        check(t.get_scale() == 1.0, "a given scale 1 is recorded as %r" % t.get_scale())
        check(t.get_n_bytes() == len(xs) and t.get_scales() is None, "one byte per element, no scales")
        want = [minifloat_encode(x, E4M3, saturate) for x in xs]
        check_list(list(tensor_bytes(t)), want, "fp8 codes, saturate=%s" % saturate)
        y = tensor_f32(q.dequantize_new(t, Piq.Dtype.F32))
        check_list(y.tolist(), [minifloat_decode(c, E4M3) for c in want], "decoded values", float_eq)
    # scale 1 is a plain cast, when asked for: no scale is ever given by default
    nonsat = list(tensor_bytes(q.quantize_new(Piq.Format(dtype=Piq.Dtype.FP8_E4M3, saturate=False),
                                              Piq.Recipe.new_fixed(1.0), src)))
    check(nonsat[3] == 0x7F and nonsat[4] == 0xFF and nonsat[5] == 0x7E and nonsat[6] == 0x7F,
          "non-saturating: 1000, -1000, 464, 465 -> %r" % (nonsat[3:7],))


@test("formats/mxfp4/e8m0-scales")
def _():
    q = Piq.Quantizer()
    xs = gen_a(70)  # blocks of 32, 32 and a ragged 6
    src, arr = f32_tensor(xs)
    p = Piq.Format.new_preset("mxfp4")
    check(p.props.dtype == Piq.Dtype.FP4_E2M1 and p.get_block_size() == 32
          and p.props.granularity == Piq.Granularity.BLOCK
          and p.props.scale_dtype == Piq.Dtype.E8M0, "mxfp4 preset")
    t = q.quantize_new(p, None, src)
    check(t.get_format().equal(p) and t.get_shape() == [70], "the tensor's format and shape")
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
    p = Piq.Format.new_preset("nf4")
    check(p.props.dtype == Piq.Dtype.NF4 and p.get_block_size() == 64 and p.props.high_nibble_first,
          "nf4 preset is bitsandbytes' layout")
    t = q.quantize_new(p, None, src)
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
    p_lo = Piq.Format(dtype=Piq.Dtype.NF4, granularity=Piq.Granularity.BLOCK, block_size=64,
                      high_nibble_first=False)
    lo = tensor_bytes(q.quantize_new(p_lo, None, src))
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
    p = Piq.Format(dtype=Piq.Dtype.INT8, granularity=Piq.Granularity.BLOCK, block_size=block)
    codes_size, scales_size, zps_size = sizes(p, [n])
    check(codes_size == n and scales_size == 5 * 4 and zps_size == 5 * 4,
          "sizes %r %r %r" % (codes_size, scales_size, zps_size))
    t = q.quantize_new(p, Piq.Recipe(scale_rule=Piq.ScaleRule.MIN_MAX), src)
    check(tensor_bytes(q.quantize_new(p, None, src)) == tensor_bytes(t), "DEFAULT differs from MIN_MAX")
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
    # (per-tensor scale 1 and zero point 0: a per-block format has none)
    w = Piq.Tensor.new_quantized_from_bytes(
        Piq.Format(dtype=Piq.Dtype.INT8, granularity=Piq.Granularity.BLOCK, block_size=block), [n],
        GLib.Bytes.new(codes.tobytes()), GLib.Bytes.new(scales.tobytes()), GLib.Bytes.new(zps.tobytes()), 1.0, 0)
    check(w.get_scales().get_data() == scales.tobytes(), "get_scales() of wrapped scales")
    check(w.get_zero_points().get_data() == zps.tobytes(), "get_zero_points() of wrapped zero points")
    y = tensor_f32(q.dequantize_new(w, Piq.Dtype.F32))
    check_list(y.tolist(), want_y, "dequantized from wrapped bytes")
    # codes without their scales cannot make a tensor that decodes
    expect_error(Piq.Error.SIZE, Piq.Tensor.new_quantized_from_bytes, p, [n],
                 GLib.Bytes.new(codes.tobytes()), None, None, 1.0, 0)
    expect_error(Piq.Error.SIZE, Piq.Tensor.new_quantized_from_bytes, p, [n],
                 GLib.Bytes.new(codes.tobytes()), GLib.Bytes.new(scales.tobytes()[:-4]),
                 GLib.Bytes.new(zps.tobytes()), 1.0, 0)


@test("formats/binary/dot")
def _():
    q = Piq.Quantizer()
    n = 300  # blocks of 128, 128 and 44
    p = Piq.Format.new_preset("binary")
    check(p.props.dtype == Piq.Dtype.BINARY and p.get_block_size() == 128, "binary preset")
    ta, tb = [], []
    ys = []
    for xs in (gen_a(n), gen_b(n)):
        src, arr = f32_tensor(xs)
        t = q.quantize_new(p, None, src)
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
    p = Piq.Format.new_preset("q8_0")
    t = q.quantize_new(p, None, src)
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
    p = Piq.Format.new_preset("msfp16")
    check(p.props.dtype == Piq.Dtype.BFP7 and p.get_block_size() == 16, "msfp16 preset")
    t = q.quantize_new(p, None, src)
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
    plain = q.quantize_new(Piq.Format.new_preset("nf4"), None, src)
    p = Piq.Format.new_preset("nf4_dq")
    check(p.props.double_quant, "nf4_dq preset")
    t = q.quantize_new(p, None, src)
    check(tensor_bytes(t) == tensor_bytes(plain), "double quantization changed the codes")
    blocks = (n + 63) // 64
    size = t.get_scales().get_size()
    check(size == 4 + 4 * 2 + blocks, "scales take %d bytes" % size)
    _codes, want_size, _zps = sizes(p, [n])
    check(want_size == size, "get_sizes() gives %d scale bytes" % want_size)
    absmax = np.frombuffer(plain.get_scales().get_data(), np.float32)
    offset = np.frombuffer(t.get_scales().get_data()[:4], np.float32)[0]
    check(offset == np.float32(np.float64(absmax.astype(np.float64).sum()) / blocks),
          "offset %r is not the mean absmax" % offset)
    y = tensor_f32(q.dequantize_new(t, Piq.Dtype.F32))
    y0 = tensor_f32(q.dequantize_new(plain, Piq.Dtype.F32))
    err, err0 = float(np.abs(y - arr).mean()), float(np.abs(y0 - arr).mean())
    check(err < err0 * 1.02, "double quantization MAE %g against %g" % (err, err0))
    bad = Piq.Format(dtype=Piq.Dtype.NF4, granularity=Piq.Granularity.BLOCK, block_size=64,
                     high_nibble_first=True, double_quant=True, scale_dtype=Piq.Dtype.F16)
    expect_error(Piq.Error.UNSUPPORTED, bad.validate)
    expect_error(Piq.Error.UNSUPPORTED, q.quantize_new, bad, None, src)


@test("formats/errors")
def _():
    q = Piq.Quantizer()
    src, _arr = f32_tensor(gen_a(70))
    # rows of 16 were spelled CHANNEL + block-size on a flat tensor; a block size
    # does not apply to a per-channel format, and channels are an axis of a shape
    per_row = Piq.Format(dtype=Piq.Dtype.INT8, granularity=Piq.Granularity.CHANNEL, block_size=16)
    expect_error(Piq.Error.UNSUPPORTED, per_row.validate)
    expect_error(Piq.Error.UNSUPPORTED, q.quantize_new, per_row, None, src)
    # a per-channel axis that the shape does not have (the old "70 is not whole rows")
    expect_piq_error(q.quantize_new, Piq.Format.new_per_channel(Piq.Dtype.INT8, 1), None, src)
    nf4 = Piq.Format(dtype=Piq.Dtype.NF4, granularity=Piq.Granularity.BLOCK, scale_dtype=Piq.Dtype.E8M0)
    expect_error(Piq.Error.UNSUPPORTED, q.quantize_new, nf4, None, src)
    expect_error(Piq.Error.UNSUPPORTED, Piq.Format.new_preset, "no-such-format")
    check("mxfp4" in Piq.Format.list_presets() and "q4_0" in Piq.Format.list_presets(), "list_presets()")
    for name in Piq.Format.list_presets():
        check(Piq.Format.new_preset(name).validate(), "preset %s does not validate" % name)



# ------------------------------------------------------------- shapes ----
# 2-D tensors are row-major; per-channel scales run along an axis, blocks along
# the last axis and never across rows.

def matrix(rows, cols, gen=gen_a):
    arr = np.array(gen(rows * cols), dtype=np.float32).reshape(rows, cols)
    return Piq.Tensor.new_from_data(Piq.Dtype.F32, arr.size, arr.tobytes()), arr


def shaped(arr):
    t = Piq.Tensor.new_from_data(Piq.Dtype.F32, arr.size, np.ascontiguousarray(arr, np.float32).tobytes())
    t.reshape(list(arr.shape))
    return t


def check_per_channel(q, fmt, arr, axis, what):
    """Quantize arr with fmt; expect min/max (affine) or abs-max (symmetric) per slice of axis."""
    dtype = fmt.props.dtype
    t = q.quantize_new(fmt, None, shaped(arr))
    check(t.get_shape() == list(arr.shape), "%s: shape %r" % (what, t.get_shape()))
    codes = np.frombuffer(tensor_bytes(t), dtype=np.int8).reshape(arr.shape)
    scales = np.frombuffer(t.get_scales().get_data(), dtype="<f4")
    n_ch = arr.shape[axis]
    check(scales.size == n_ch, "%s: %d scales, expected %d" % (what, scales.size, n_ch))
    if fmt.props.symmetric:
        check(t.get_zero_points() is None, "%s: a symmetric format has zero points" % what)
        zps = [0] * n_ch
    else:
        zps = np.frombuffer(t.get_zero_points().get_data(), dtype="<i4").tolist()
        check(len(zps) == n_ch, "%s: %d zero points" % (what, len(zps)))
    y = tensor_f32(q.dequantize_new(t, Piq.Dtype.F32)).reshape(arr.shape)
    for c in range(n_ch):
        sl = np.take(arr, c, axis=axis).ravel()
        s, zp = (absmax_params if fmt.props.symmetric else minmax_params)([float(v) for v in sl], dtype)
        check(float(scales[c]) == s and zps[c] == zp,
              "%s channel %d: scale %r zp %d, expected %r %d" % (what, c, float(scales[c]), zps[c], s, zp))
        want = quantize_nearest([float(v) for v in sl], s, zp, dtype)
        check_list(np.take(codes, c, axis=axis).ravel().tolist(), want, "%s channel %d codes" % (what, c))
        check_list(np.take(y, c, axis=axis).ravel().tolist(), dequantize_f32(want, s, zp),
                   "%s channel %d dequantized" % (what, c))
    return t


@test("shapes/per-channel/axis-0")
def _():
    q = Piq.Quantizer()
    _t, arr = matrix(5, 13)
    t = check_per_channel(q, Piq.Format.new_per_channel(Piq.Dtype.INT8, 0), arr, 0, "affine axis 0")
    check(sizes(t.get_format(), [5, 13]) == (65, 20, 20), "get_sizes() %r" % (sizes(t.get_format(), [5, 13]),))
    check_per_channel(q, Piq.Format(dtype=Piq.Dtype.INT8, granularity=Piq.Granularity.CHANNEL, symmetric=True),
                      arr, 0, "symmetric axis 0")
    # the old spelling, CHANNEL with block-size 13 on a flat tensor, is a 2-D tensor on axis 0;
    # 1×K and N×1 matrices are the edge cases
    check_per_channel(q, Piq.Format.new_per_channel(Piq.Dtype.INT8, 0), arr[:1], 0, "1×K axis 0")
    check_per_channel(q, Piq.Format.new_per_channel(Piq.Dtype.INT8, 0), arr[:, :1], 0, "N×1 axis 0")
    # a 3-D tensor, channels on axis 1
    cube = np.array(gen_b(2 * 3 * 7), dtype=np.float32).reshape(2, 3, 7)
    check_per_channel(q, Piq.Format.new_per_channel(Piq.Dtype.INT8, 1), cube, 1, "3-D axis 1")


@test("shapes/per-channel/axis-1")
def _():
    q = Piq.Quantizer()
    _t, arr = matrix(5, 13)
    t = check_per_channel(q, Piq.Format.new_per_channel(Piq.Dtype.INT8, 1), arr, 1, "affine axis 1")
    neg = q.quantize_new(Piq.Format.new_per_channel(Piq.Dtype.INT8, -1), None, shaped(arr))
    check(tensor_bytes(neg) == tensor_bytes(t) and neg.get_scales().get_data() == t.get_scales().get_data(),
          "axis -1 differs from axis 1 on a 2-D tensor")
    check_per_channel(q, Piq.Format(dtype=Piq.Dtype.INT8, granularity=Piq.Granularity.CHANNEL, axis=1,
                                    symmetric=True), arr, 1, "symmetric axis 1")
    check_per_channel(q, Piq.Format.new_per_channel(Piq.Dtype.INT8, 1), arr[:1], 1, "1×K axis 1")
    check_per_channel(q, Piq.Format.new_per_channel(Piq.Dtype.INT8, 1), arr[:, :1], 1, "N×1 axis 1")
    # the transpose quantized on axis 0 holds the same codes, transposed
    tt = q.quantize_new(Piq.Format.new_per_channel(Piq.Dtype.INT8, 0), None, shaped(arr.T.copy()))
    check(np.array_equal(np.frombuffer(tensor_bytes(tt), np.int8).reshape(13, 5).T,
                         np.frombuffer(tensor_bytes(t), np.int8).reshape(5, 13)), "axis 1 is not axis 0 of the transpose")
    # an axis the shape does not have
    expect_piq_error(q.quantize_new, Piq.Format.new_per_channel(Piq.Dtype.INT8, 2), None, shaped(arr))
    expect_piq_error(q.quantize_new, Piq.Format.new_per_channel(Piq.Dtype.INT8, -3), None, shaped(arr))


@test("shapes/per-block/ragged-rows")
def _():
    q = Piq.Quantizer()
    rows, cols, block = 3, 70, 32  # each row: blocks of 32, 32 and a ragged 6
    _t, arr = matrix(rows, cols)
    fmt = Piq.Format(dtype=Piq.Dtype.INT8, granularity=Piq.Granularity.BLOCK, block_size=block)
    check(sizes(fmt, [rows, cols]) == (210, 9 * 4, 9 * 4), "get_sizes() %r" % (sizes(fmt, [rows, cols]),))
    t = q.quantize_new(fmt, None, shaped(arr))
    check(t.get_shape() == [rows, cols], "shape %r" % (t.get_shape(),))
    scales = np.frombuffer(t.get_scales().get_data(), dtype="<f4")
    zps = np.frombuffer(t.get_zero_points().get_data(), dtype="<i4")
    codes = np.frombuffer(tensor_bytes(t), dtype=np.int8).reshape(rows, cols)
    check(scales.size == 9 and zps.size == 9, "%d scales, expected 3 per row" % scales.size)
    k = 0
    for r in range(rows):
        for b0 in range(0, cols, block):
            blk = [float(v) for v in arr[r, b0:b0 + block]]
            s, zp = minmax_params(blk, Piq.Dtype.INT8)
            check((float(scales[k]), int(zps[k])) == (s, zp),
                  "row %d block at %d: %r, expected %r" % (r, b0, (float(scales[k]), int(zps[k])), (s, zp)))
            check_list(codes[r, b0:b0 + block].tolist(), quantize_nearest(blk, s, zp, Piq.Dtype.INT8),
                       "row %d block at %d codes" % (r, b0))
            k += 1
    # the same rows as 1-D tensors give the same bytes (a block never spans rows)
    mx = Piq.Format.new_preset("mxfp4")
    whole = q.quantize_new(mx, None, shaped(arr))
    check(whole.get_scales().get_size() == 9, "mxfp4: %d E8M0 scales" % whole.get_scales().get_size())
    for r in range(rows):
        row = q.quantize_new(mx, None, f32_tensor(arr[r].tolist())[0])
        check(tensor_bytes(whole)[35 * r:35 * (r + 1)] == tensor_bytes(row), "mxfp4 row %d codes" % r)
        check(whole.get_scales().get_data()[3 * r:3 * (r + 1)] == row.get_scales().get_data(),
              "mxfp4 row %d scales" % r)
    # a 1×K matrix is a 1-D tensor; an N×1 matrix has one block per row
    one = q.quantize_new(fmt, None, shaped(arr[:1]))
    flat = q.quantize_new(fmt, None, f32_tensor(arr[0].tolist())[0])
    check(tensor_bytes(one) == tensor_bytes(flat) and one.get_scales().get_data() == flat.get_scales().get_data(),
          "1×K differs from 1-D")
    col = q.quantize_new(fmt, None, shaped(arr[:, :1]))
    check(col.get_scales().get_size() == rows * 4, "N×1: %d bytes of scales" % col.get_scales().get_size())
    y = q.dequantize_new(whole, Piq.Dtype.F32)
    check(y.get_shape() == [rows, cols], "dequantize_new() shape %r" % (y.get_shape(),))


@test("shapes/get-shape")
def _():
    q = Piq.Quantizer()
    t = Piq.Tensor.new_shaped(Piq.Dtype.F32, [3, 5, 7])
    check(t.get_shape() == [3, 5, 7] and t.get_n_dims() == 3, "shape %r" % (t.get_shape(),))
    check((t.get_dim(0), t.get_dim(1), t.get_dim(2), t.get_dim(-1), t.get_dim(-3)) == (3, 5, 7, 7, 3), "get_dim()")
    check(t.get_n_elements() == 105 and t.get_n_bytes() == 420, "n-elements %d" % t.get_n_elements())
    check(t.is_contiguous() and t.get_row_stride() == 0, "packed: row stride %d" % t.get_row_stride())
    check(t.reshape([15, 7]) and t.get_shape() == [15, 7], "reshape() to %r" % (t.get_shape(),))
    expect_piq_error(t.reshape, [4, 4])
    check(t.get_shape() == [15, 7], "a failed reshape() changed the shape to %r" % (t.get_shape(),))
    expect_piq_error(Piq.Tensor.new_shaped, Piq.Dtype.F32, [1] * 9)  # more than PIQ_MAX_DIMS
    check(Piq.MAX_DIMS == 8, "MAX_DIMS %r" % Piq.MAX_DIMS)
    t8 = Piq.Tensor.new_shaped(Piq.Dtype.F32, [1, 2, 1, 2, 1, 2, 1, 3])
    check(t8.get_n_elements() == 24 and t8.get_n_dims() == 8, "8 dimensions")
    # the quantized tensor keeps its source's shape; its shape is part of its meaning
    src, _arr = matrix(6, 10)
    src.reshape([6, 10])
    qt = q.quantize_new(U8, None, src)
    check(qt.get_shape() == [6, 10] and qt.get_dim(-1) == 10, "quantized shape %r" % (qt.get_shape(),))
    expect_piq_error(qt.reshape, [60])
    check(q.dequantize_new(qt, Piq.Dtype.F32).get_shape() == [6, 10], "dequantized shape")
    dst = Piq.Tensor.new_quantized(U8, [6, 10])
    check(dst.get_shape() == [6, 10] and dst.get_format().equal(U8), "new_quantized() shape and format")
    # a strided sub-matrix, wrapped without a copy: rows 1..3, columns 2..6 of a 5×8 buffer
    big = np.array(gen_b(40), dtype=np.float32).reshape(5, 8)
    sub = big[1:4, 2:7]
    st = Piq.Tensor.new_strided(Piq.Dtype.F32, [3, 5], GLib.Bytes.new(big.tobytes()), 4 * (8 + 2), 8 * 4)
    check(st.get_shape() == [3, 5] and st.get_row_stride() == 32 and not st.is_contiguous(), "strided tensor")
    check_list(st.to_values(), sub.ravel().tolist(), "strided to_values()")
    r = Piq.Recipe()
    qs = q.quantize_new(U8, r, st)
    qp = q.quantize_new(U8, None, shaped(sub))
    check(tensor_bytes(qs) == tensor_bytes(qp) and qs.get_scale() == qp.get_scale(),
          "the strided sub-matrix differs from its packed copy")
    # dequantize into a strided numpy view writes the rows' elements only
    out = np.full((5, 8), 9.0, dtype=np.float32)
    ot = Piq.Tensor.new_for_address(Piq.Dtype.F32, [3, 5], out.ctypes.data + 4 * (8 + 2), out.nbytes - 40, 32, True)
    q.dequantize(qs, ot, Piq.ReduceOp.SET)
    y = tensor_f32(q.dequantize_new(qp, Piq.Dtype.F32)).reshape(3, 5)
    check(np.array_equal(out[1:4, 2:7], y), "the strided destination holds other values")
    mask = np.ones((5, 8), bool)
    mask[1:4, 2:7] = False
    check((out[mask] == 9.0).all(), "elements outside the rows were written")


# ------------------------------------------------------- immutability ----

@test("immutability/recipe-after-quantize")
def _():
    q = Piq.Quantizer()
    src, _arr = f32_tensor(FINITE)
    for fmt, recipe in ((U8, Piq.Recipe.new_affine(0.05, 90)),
                        (Piq.Format.new_preset("fp8_e4m3"), Piq.Recipe.new_fixed(0.02)),
                        (Piq.Format.new_preset("nf4"), Piq.Recipe()),
                        (affine(Piq.Dtype.UINT4), Piq.Recipe(round_mode=Piq.RoundMode.STOCHASTIC, seed=5))):
        qt = q.quantize_new(fmt, recipe, src)
        y0 = tensor_bytes(q.dequantize_new(qt, Piq.Dtype.F32))
        scale0, zp0, seed0 = qt.get_scale(), qt.get_zero_point(), qt.get_seed()
        scales0 = qt.get_scales().get_data() if qt.get_scales() is not None else None
        what = fmt.to_string()
        # everything a recipe holds, changed after the fact
        recipe.set_scale(3.0)
        if fmt.has_zero_points():
            recipe.set_zero_point(7)
        recipe.set_round_mode(Piq.RoundMode.STOCHASTIC)
        recipe.set_seed(1234)
        recipe.set_scale_rule(Piq.ScaleRule.ABS_MAX)
        recipe.set_include_zero(False)
        recipe.clear_scale()
        check(tensor_bytes(q.dequantize_new(qt, Piq.Dtype.F32)) == y0, "%s: decode changed" % what)
        check((qt.get_scale(), qt.get_zero_point(), qt.get_seed()) == (scale0, zp0, seed0),
              "%s: the tensor's scale, zero point or seed changed" % what)
        check((qt.get_scales().get_data() if qt.get_scales() is not None else None) == scales0,
              "%s: the tensor's scales changed" % what)
        check(qt.get_format().equal(fmt), "%s: the tensor's format changed" % what)
    # a recipe filled by compute_params, then cleared
    r = Piq.Recipe()
    q.compute_params(U8, r, src)
    qt = q.quantize_new(U8, r, src)
    want = tensor_bytes(q.dequantize_new(qt, Piq.Dtype.F32))
    r.clear_scale()
    r.set_scale(100.0)
    check(tensor_bytes(q.dequantize_new(qt, Piq.Dtype.F32)) == want, "compute_params recipe: decode changed")


FORMAT_PROPS = [("dtype", Piq.Dtype.INT4), ("granularity", Piq.Granularity.BLOCK), ("axis", 1),
                ("block_size", 16), ("scale_dtype", Piq.Dtype.F16), ("symmetric", True),
                ("saturate", False), ("high_nibble_first", True), ("double_quant", True)]


@test("immutability/format-construct-only")
def _():
    q = Piq.Quantizer()
    f = Piq.Format(dtype=Piq.Dtype.UINT8)
    before = f.to_string()
    for name, value in FORMAT_PROPS:
        pspec = f.find_property(name.replace("_", "-"))
        check(pspec is not None, "Piq.Format has no property %s" % name)
        check(pspec.flags & GObject.ParamFlags.CONSTRUCT_ONLY, "%s is not construct-only" % name)
        old = f.get_property(name.replace("_", "-"))
        for how in ("props", "set_property"):
            # PyGObject 3.42 lets GObject refuse it: a GLib warning, turned into a Python warning
            with warnings.catch_warnings(record=True) as seen:
                warnings.simplefilter("always")
                try:
                    if how == "props":
                        setattr(f.props, name, value)
                    else:
                        f.set_property(name.replace("_", "-"), value)
                except TypeError:
                    pass
                else:
                    check(any("can't be set after construction" in str(w.message) for w in seen),
                          "setting %s through %s after construction neither raised nor warned: %r"
                          % (name, how, [str(w.message) for w in seen]))
            check(f.get_property(name.replace("_", "-")) == old, "%s changed to %r"
                  % (name, f.get_property(name.replace("_", "-"))))
    check(f.to_string() == before, "the format changed: %s" % f.to_string())
    # a quantized tensor holds a format that nobody can change
    src, _arr = f32_tensor(FINITE)
    qt = q.quantize_new(Piq.Format.new_preset("nf4"), None, src)
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        try:
            qt.get_format().props.high_nibble_first = False
        except TypeError:
            pass
    check(qt.get_format().props.high_nibble_first, "the tensor's nibble order changed")


# ------------------------------------------------- no silent defaults ----

@test("error/no-silent-default")  # was no-silent-default/fp8-preset-derives-scale
def _():
    # the old Params.new_preset("fp8_e4m3") quantized with scale 1.0 when nobody
    # called compute_params (61 % error on small weights); now quantize derives it
    q = Piq.Quantizer()
    xs = [v * 0.01 for v in gen_a(301)]
    src, arr = f32_tensor(xs)
    fmt = Piq.Format.new_preset("fp8_e4m3")
    check(fmt.props.granularity == Piq.Granularity.TENSOR and fmt.props.dtype == Piq.Dtype.FP8_E4M3, "preset")
    t = q.quantize_new(fmt, None, src)
    amax = float(np.abs(arr).max())
    want_scale = float(np.float32(amax) / np.float32(448.0))
    scale = t.get_scale()
    check(scale != 1.0 and abs(scale - want_scale) <= want_scale * 2.0 ** -23,
          "derived scale %r, expected amax / 448 = %r" % (scale, want_scale))
    y = tensor_f32(q.dequantize_new(t, Piq.Dtype.F32)).astype(np.float64)
    err = np.abs(y - arr.astype(np.float64))
    # half a step of E4M3 (3 mantissa bits; subnormal steps 2^-9), plus the binary32 rounding of x / scale
    bound = np.abs(arr.astype(np.float64)) * (2.0 ** -4 + 2.0 ** -20) + scale * 2.0 ** -10
    bad = np.nonzero(err > bound)[0]
    check(bad.size == 0, "%d elements beyond half an E4M3 step, first %r -> %r"
          % (bad.size, arr[bad[:3]].tolist(), y[bad[:3]].tolist()))
    rel = float(err.mean() / np.abs(arr).mean())
    check(rel < 0.05, "mean relative error %.3f on small weights" % rel)
    # compute_params derives the same scale once, into the recipe
    r = Piq.Recipe()
    check(q.compute_params(fmt, r, src) and r.has_scale() and not r.has_zero_point(), "compute_params()")
    check(r.get_scale() == scale, "compute_params() scale %r, quantize derived %r" % (r.get_scale(), scale))
    check(tensor_bytes(q.quantize_new(fmt, r, src)) == tensor_bytes(t), "calibrated bytes differ")
    # and the per-tensor integers do the same: no scale 1 by default
    u = q.quantize_new(U8, Piq.Recipe(), src)
    check((u.get_scale(), u.get_zero_point()) == minmax_params(xs, Piq.Dtype.UINT8),
          "uint8 without a scale: %r" % ((u.get_scale(), u.get_zero_point()),))


@test("error/no-silent-default")  # was no-silent-default/nan-scale-property
def _():
    q = Piq.Quantizer()
    src, _arr = f32_tensor(FINITE)
    fp8 = Piq.Format.new_preset("fp8_e4m3")
    out = Piq.Tensor.new(Piq.Dtype.F32, len(FINITE))
    for bad in (NAN, INF, -INF, 0.0, -1.0):
        r = Piq.Recipe.new_fixed(1.0)
        r.props.scale = bad
        got = r.props.scale
        check(math.isnan(got) if math.isnan(bad) else got == bad,
              "the scale property refused %r (reads %r): the next call would use another scale" % (bad, got))
        e = expect_error(Piq.Error.INVALID_SCALE, q.quantize_new, fp8, r, src)
        check(e.code == Piq.Error.INVALID_SCALE, "code %d" % e.code)
        expect_error(Piq.Error.INVALID_SCALE, q.quantize, r, src, Piq.Tensor.new_quantized(fp8, [len(FINITE)]))
        expect_error(Piq.Error.INVALID_SCALE, q.requantize, fp8, r, src, out, Piq.ReduceOp.SET)
        expect_error(Piq.Error.INVALID_SCALE, q.quantize_new, fp8, Piq.Recipe(scale=bad), src)
        ra = Piq.Recipe.new_affine(0.5, 128)
        ra.set_property("scale", bad)
        expect_error(Piq.Error.INVALID_SCALE, q.quantize_new, U8, ra, src)
    # a valid scale set afterwards makes the recipe usable again
    r.props.scale = 0.01
    check(q.quantize_new(fp8, r, src).get_scale() == 0.01, "scale 0.01 after an invalid one")


@test("error/no-silent-default")  # was no-silent-default/rule-must-apply
def _():
    q = Piq.Quantizer()
    src, _arr = f32_tensor(gen_a(70))
    out = Piq.Tensor.new(Piq.Dtype.F32, 70)
    mx = Piq.Format.new_preset("mxfp4")
    nf4 = Piq.Format.new_preset("nf4")
    mxint8 = Piq.Format.new_preset("mxint8")
    sym8 = Piq.Format.new_symmetric(Piq.Dtype.INT8)
    blk8 = Piq.Format(dtype=Piq.Dtype.INT8, granularity=Piq.Granularity.BLOCK, block_size=16)
    for fmt, rule in ((mx, Piq.ScaleRule.MIN_MAX), (mx, Piq.ScaleRule.ABS_MAX), (mx, Piq.ScaleRule.MEAN_STD),
                      (mxint8, Piq.ScaleRule.MIN_MAX), (nf4, Piq.ScaleRule.MIN_MAX), (nf4, Piq.ScaleRule.POW2_CEIL),
                      (sym8, Piq.ScaleRule.MIN_MAX), (sym8, Piq.ScaleRule.MEAN_STD), (U8, Piq.ScaleRule.ABS_MAX),
                      (U8, Piq.ScaleRule.POW2_FLOOR), (blk8, Piq.ScaleRule.MEAN_STD)):
        r = Piq.Recipe(scale_rule=rule)
        what = "%s with %s" % (fmt.to_string(), rule.value_nick)
        try:
            expect_error(Piq.Error.UNSUPPORTED, q.quantize_new, fmt, r, src)
            expect_error(Piq.Error.UNSUPPORTED, q.requantize, fmt, r, src, out, Piq.ReduceOp.SET)
            if fmt.props.granularity == Piq.Granularity.TENSOR:
                expect_error(Piq.Error.UNSUPPORTED, q.compute_params, fmt, r, src)
                check(not r.has_scale(), "a refused compute_params() stored a scale")
        except Failure as e:
            raise Failure("%s: %s" % (what, e))
    # the rules that do apply
    base = tensor_bytes(q.quantize_new(mx, None, src))
    check(tensor_bytes(q.quantize_new(mx, Piq.Recipe(scale_rule=Piq.ScaleRule.POW2_FLOOR), src)) == base,
          "mxfp4: POW2_FLOOR differs from DEFAULT (the OCP floor rule)")
    q.quantize_new(mx, Piq.Recipe(scale_rule=Piq.ScaleRule.POW2_CEIL), src)
    check(tensor_bytes(q.quantize_new(nf4, Piq.Recipe(scale_rule=Piq.ScaleRule.ABS_MAX), src))
          == tensor_bytes(q.quantize_new(nf4, None, src)), "nf4: ABS_MAX differs from DEFAULT")


@test("error/no-silent-default")  # was no-silent-default/calibrated-with-named-rule
def _():
    # compute_params() "stores them in the recipe, so later calls quantize with
    # them (calibration)", whatever rule derived them; only a scale the caller
    # gives alongside a named rule is contradictory
    q = Piq.Quantizer()
    src, _arr = f32_tensor(FINITE)
    for fmt, rule, params in ((U8, Piq.ScaleRule.MIN_MAX, minmax_params(FINITE, Piq.Dtype.UINT8)),
                              (U8, Piq.ScaleRule.MEAN_STD, meanstd_params(FINITE, Piq.Dtype.UINT8)),
                              (Piq.Format.new_symmetric(Piq.Dtype.INT8), Piq.ScaleRule.ABS_MAX,
                               absmax_params(FINITE, Piq.Dtype.INT8))):
        r = Piq.Recipe(scale_rule=rule)
        q.compute_params(fmt, r, src)
        # this case checks the calibrate-then-quantize flow; the rules' arithmetic is
        # checked exactly on exactly summable data above (mean/σ's one-pass variance
        # differs from the oracle's in the last bits on these data)
        tol = 1e-6 if rule == Piq.ScaleRule.MEAN_STD else 4e-16
        check(abs(r.props.scale - params[0]) <= tol * params[0], "%s: scale %r, expected %r"
              % (rule.value_nick, r.props.scale, params[0]))
        try:
            qt = q.quantize_new(fmt, r, src)
        except GLib.Error as e:
            raise Failure("%s: quantize with the calibrated recipe: %s" % (rule.value_nick, e.message))
        check((qt.get_scale(), qt.get_zero_point()) == (r.props.scale, params[1]),
              "%s: the tensor records %r" % (rule.value_nick, (qt.get_scale(), qt.get_zero_point())))
        check_list(list(tensor_bytes(qt)) if fmt.props.dtype == Piq.Dtype.UINT8
                   else np.frombuffer(tensor_bytes(qt), np.int8).tolist(),
                   quantize_nearest(FINITE, r.props.scale, params[1], fmt.props.dtype),
                   "%s codes" % rule.value_nick)


@test("error/no-silent-default")  # was no-silent-default/zero-point-on-symmetric
def _():
    q = Piq.Quantizer()
    src, _arr = f32_tensor(FINITE)
    out = Piq.Tensor.new(Piq.Dtype.F32, len(FINITE))
    for fmt in (Piq.Format.new_symmetric(Piq.Dtype.INT8), Piq.Format(dtype=Piq.Dtype.UINT4, symmetric=True),
                Piq.Format.new_preset("fp8_e4m3")):
        for zp in (3, 0):
            r = Piq.Recipe.new_affine(0.05, zp)
            what = "%s with zero point %d" % (fmt.to_string(), zp)
            try:
                expect_error(Piq.Error.INVALID_ZERO_POINT, q.quantize_new, fmt, r, src)
                expect_error(Piq.Error.INVALID_ZERO_POINT, q.quantize, r, src, qdst(fmt, src))
                expect_error(Piq.Error.INVALID_ZERO_POINT, q.requantize, fmt, r, src, out, Piq.ReduceOp.SET)
            except Failure as e:
                raise Failure("%s: %s" % (what, e))
    # an affine per-tensor format with a given scale needs its zero point too
    expect_error(Piq.Error.INVALID_ZERO_POINT, q.quantize_new, U8, Piq.Recipe.new_fixed(0.05), src)
    # the symmetric format takes a scale alone
    t = q.quantize_new(Piq.Format.new_symmetric(Piq.Dtype.INT8), Piq.Recipe.new_fixed(0.05), src)
    check_list(np.frombuffer(tensor_bytes(t), np.int8).tolist(), quantize_nearest(FINITE, 0.05, 0, Piq.Dtype.INT8),
               "symmetric int8 with a given scale")


@test("error/no-silent-default")  # was no-silent-default/options-must-apply
def _():
    q = Piq.Quantizer()
    src, _arr = f32_tensor(gen_a(70))
    # format options that do not apply: UNSUPPORTED at the first call, validate() beforehand
    for kw in (dict(dtype=Piq.Dtype.UINT8, block_size=16),
               dict(dtype=Piq.Dtype.INT8, axis=1),
               dict(dtype=Piq.Dtype.INT8, high_nibble_first=True),
               dict(dtype=Piq.Dtype.INT8, granularity=Piq.Granularity.BLOCK, double_quant=True),
               dict(dtype=Piq.Dtype.INT8, saturate=False),
               dict(dtype=Piq.Dtype.FP8_E4M3, granularity=Piq.Granularity.BLOCK, scale_dtype=Piq.Dtype.E8M0,
                    saturate=False),
               dict(dtype=Piq.Dtype.INT8, scale_dtype=Piq.Dtype.F16)):
        fmt = Piq.Format(**kw)
        try:
            expect_error(Piq.Error.UNSUPPORTED, fmt.validate)
            expect_error(Piq.Error.UNSUPPORTED, q.quantize_new, fmt, None, src)
        except Failure as e:
            raise Failure("%r: %s" % (kw, e))
    # recipe options that do not apply
    blk = Piq.Format.new_preset("int8_block")
    ch = Piq.Format.new_per_channel(Piq.Dtype.INT8, 0)
    for fmt, r, what in ((blk, Piq.Recipe.new_fixed(0.5), "a given scale on a per-block format"),
                         (ch, Piq.Recipe.new_fixed(0.5), "a given scale on a per-channel format"),
                         (U8, Piq.Recipe(scale=0.5, zero_point=128, scale_rule=Piq.ScaleRule.MIN_MAX),
                          "a given scale with a rule"),
                         (U8, Piq.Recipe(seed=5), "a seed with nearest rounding"),
                         (Piq.Format.new_symmetric(Piq.Dtype.INT8), Piq.Recipe(include_zero=False),
                          "include-zero off without min/max")):
        try:
            expect_error(Piq.Error.UNSUPPORTED, q.quantize_new, fmt, r, src)
        except Failure as e:
            raise Failure("%s: %s" % (what, e))


# ------------------------------------------------------------ aliasing ----
# A destination that overlaps a source fails with PIQ_ERROR_OVERLAP and writes
# nothing; exact in-place requantize is allowed. With 1 and 4 threads.

def threaded():
    return [Piq.Quantizer(n_threads=1), Piq.Quantizer(n_threads=4)]


@test("aliasing/quantize/overlap")
def _():
    n = 4096
    for q in threaded():
        buf = np.array(gen_a(n + 64), dtype=np.float32)
        keep = buf.copy()
        base = buf.ctypes.data
        src = Piq.Tensor.new_for_address(Piq.Dtype.F32, [n], base, 4 * n, 0, False)
        # codes over the source's memory (the raw form is how quantize reaches caller memory)
        for s_addr, d_addr, what in ((base, base, "codes at the source"),
                                     (base, base + 400, "codes inside the source"),
                                     (base + 8, base, "codes ending inside the source")):
            e = expect_error(Piq.Error.OVERLAP, q.quantize_raw, U8, uint8_recipe(), Piq.Dtype.F32, s_addr,
                             [n - 2], d_addr, n, None, 0, None, 0)
            check(np.array_equal(buf, keep), "%s (%d threads): memory written" % (what, q.props.n_threads))
            check(e.message, "empty message")
        # the scales of a block format over the source
        blk = Piq.Format.new_preset("int8_block")
        _c, scales_size, zps_size = sizes(blk, [n])
        codes = np.zeros(n, np.int8)
        expect_error(Piq.Error.OVERLAP, q.quantize_raw, blk, None, Piq.Dtype.F32, base, [n],
                     codes.ctypes.data, codes.nbytes, base + 4 * 10, scales_size, None, 0)
        check(np.array_equal(buf, keep) and not codes.any(), "scales over the source: memory written")
        # a tensor over the same memory as a quantize source is fine when it is only read
        qt = q.quantize_new(U8, uint8_recipe(), src)
        check_list(list(tensor_bytes(qt)), quantize_nearest(keep[:n].tolist(), 0.5, 128, Piq.Dtype.UINT8), "codes")


@test("aliasing/dequantize/overlap")
def _():
    n = 4096
    for q in threaded():
        x = np.array(gen_a(n), dtype=np.float32)
        codes = np.frombuffer(tensor_bytes(Piq.Quantizer().quantize_new(U8, uint8_recipe(0.05, 90),
                                                                          f32_tensor(x.tolist())[0])), np.uint8)
        buf = np.zeros(n * 5 + 64, dtype=np.uint8)
        buf[:n] = codes
        keep = buf.copy()
        for off, what in ((0, "floats at the codes"), (n // 2, "floats over the codes' tail"),
                          (n - 4, "floats over the codes' last bytes")):
            e = expect_error(Piq.Error.OVERLAP, q.dequantize_raw, U8, 0.05, 90, buf.ctypes.data, n, [n],
                             None, 0, None, 0, Piq.Dtype.F32, buf.ctypes.data + off, 4 * n, Piq.ReduceOp.SET)
            check(np.array_equal(buf, keep), "%s (%d threads): memory written" % (what, q.props.n_threads))
            check(e.message, "empty message")
        # next to each other is not overlap
        ok = q.dequantize_raw(U8, 0.05, 90, buf.ctypes.data, n, [n], None, 0, None, 0, Piq.Dtype.F32,
                              buf.ctypes.data + n, 4 * n, Piq.ReduceOp.SET)
        check(ok, "adjacent buffers refused")
        y = np.frombuffer(buf[n:5 * n].tobytes(), np.float32)
        check_list(y.tolist(), dequantize_f32(codes.tolist(), 0.05, 90), "adjacent dequantize")
        # floats over a block format's scales
        blk = Piq.Format.new_preset("int8_block")
        qt = q.quantize_new(blk, None, f32_tensor(x.tolist())[0])
        scales = qt.get_scales().get_data()
        sbuf = np.zeros(4 * n + 64, np.uint8)
        sbuf[:len(scales)] = np.frombuffer(scales, np.uint8)
        skeep = sbuf.copy()
        cbuf = np.frombuffer(tensor_bytes(qt), np.uint8).copy()
        expect_error(Piq.Error.OVERLAP, q.dequantize_raw, blk, 1.0, 0, cbuf.ctypes.data, cbuf.nbytes, [n],
                     sbuf.ctypes.data, len(scales), None, 0, Piq.Dtype.F32, sbuf.ctypes.data + 8, 4 * n,
                     Piq.ReduceOp.SET)
        check(np.array_equal(sbuf, skeep), "floats over the scales: memory written")


def requantize_aliasing_setup():
    n = 70001
    xs = FINITE * (n // len(FINITE)) + FINITE[:n % len(FINITE)]
    want = dequantize_f32(quantize_nearest(xs, 0.05, 90, Piq.Dtype.UINT8), 0.05, 90)
    return n, xs, want


def requantize_aliasing_buffer(n, xs):
    buf = np.array(xs + [0.0] * 16, dtype=np.float32)
    keep = buf.copy()
    a = Piq.Tensor.new_for_address(Piq.Dtype.F32, [n], buf.ctypes.data, 4 * n, 0, True)
    return buf, keep, a


@test("aliasing/requantize/overlap")
def _():
    n, xs, _want = requantize_aliasing_setup()
    for q in threaded():
        buf, keep, a = requantize_aliasing_buffer(n, xs)
        b = Piq.Tensor.new_for_address(Piq.Dtype.F32, [n], buf.ctypes.data + 40, 4 * n, 0, True)
        expect_error(Piq.Error.OVERLAP, q.requantize, U8, uint8_recipe(0.05, 90), a, b, Piq.ReduceOp.SET)
        expect_error(Piq.Error.OVERLAP, q.requantize, U8, uint8_recipe(0.05, 90), b, a, Piq.ReduceOp.ADD)
        # the same memory with another row stride is not the exact in-place case
        half = n // 2 * 2
        r1 = Piq.Tensor.new_for_address(Piq.Dtype.F32, [2, half // 2], buf.ctypes.data, 4 * half, 0, True)
        r2 = Piq.Tensor.new_for_address(Piq.Dtype.F32, [2, half // 2], buf.ctypes.data, 4 * half + 16,
                                        4 * (half // 2) + 16, True)
        expect_error(Piq.Error.OVERLAP, q.requantize, U8, uint8_recipe(0.05, 90), r1, r2, Piq.ReduceOp.SET)
        expect_error(Piq.Error.OVERLAP, q.requantize_raw, U8, uint8_recipe(0.05, 90), Piq.Dtype.F32,
                     buf.ctypes.data, [n], buf.ctypes.data + 4, 4 * n, Piq.ReduceOp.SET)
        check(np.array_equal(buf, keep), "%d threads: an overlapping requantize wrote" % q.props.n_threads)


@test("aliasing/requantize/in-place")
def _():
    n, xs, want = requantize_aliasing_setup()
    for q in threaded():
        buf, keep, a = requantize_aliasing_buffer(n, xs)
        # exact in place: the same tensor, another tensor over the same memory, the raw form
        check(q.requantize(U8, uint8_recipe(0.05, 90), a, a, Piq.ReduceOp.SET), "requantize(a, a)")
        check(np.array_equal(buf[:n], np.array(want, np.float32)), "%d threads: in place" % q.props.n_threads)
        buf[:] = keep
        a2 = Piq.Tensor.new_for_address(Piq.Dtype.F32, [n], buf.ctypes.data, 4 * n, 0, True)
        check(q.requantize(U8, uint8_recipe(0.05, 90), a, a2, Piq.ReduceOp.SET), "requantize(a, a2)")
        check(np.array_equal(buf[:n], np.array(want, np.float32)), "two tensors, one buffer")
        buf[:] = keep
        check(q.requantize_raw(U8, uint8_recipe(0.05, 90), Piq.Dtype.F32, buf.ctypes.data, [n],
                               buf.ctypes.data, 4 * n, Piq.ReduceOp.SET), "requantize_raw in place")
        check(np.array_equal(buf[:n], np.array(want, np.float32)), "raw in place")
        check(np.array_equal(buf[n:], keep[n:]), "in place wrote past the tensor")


if __name__ == "__main__":
    main()
