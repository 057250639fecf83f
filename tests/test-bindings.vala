/* test-bindings.vala: piquant through piquant-1.0.vapi
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Built and run by test-bindings-vala.sh. Every expected value is computed here
 * in Vala, in binary32 (float) with a round-half-even written out, from
 * docs/numerics.md. Prints TAP.
 */

errordomain TestError {
    FAILED,
    SKIPPED,
    TODO
}

delegate void TestFunc () throws GLib.Error;

class TestCase {
    public string name;
    public TestFunc func;

    public TestCase (string name, owned TestFunc func) {
        this.name = name;
        this.func = (owned) func;
    }

    /* a case not written in Vala yet: TAP TODO, an expected failure */
    public static TestCase todo (string name, string why) {
        return new TestCase (name, () => { throw new TestError.TODO (why); });
    }
}

const double EPS32 = 1.1920928955078125e-07; /* 2^-23 */

/* 37 elements (odd: a uint4 tensor ends in half a byte): ties for scale 0.5,
 * values beyond the range, ±Inf, NaN and −0 */
float[] make_data () {
    float[] d = {
        0.0f, 0.25f, 0.75f, 1.25f, 1.75f, -0.25f, -0.75f, -1.25f, 2.5f, -2.5f, 1.0f,
        -1.0f, 3.3f, -7.1f, 0.1f, 2.2f, 63.25f, 63.75f, -63.75f, -64.25f, 100.0f,
        -100.0f, 1e30f, -1e30f, float.INFINITY, -float.INFINITY, float.NAN, -0.0f
    };
    for (int i = 0; i < 9; i++)
        d += (float) (((i * 7919) % 211 - 105) / 7.0);
    return d;
}

float[] make_finite () {
    float[] d = {};
    for (int64 i = 0; i < 301; i++)
        d += (float) ((double) ((i * 2654435761) % 1000003) / 1000003.0 * 13.0 - 4.5);
    return d;
}

/* ------------------------------------------------------------- helpers -- */

void check (bool cond, string msg) throws TestError {
    if (!cond)
        throw new TestError.FAILED (msg);
}

bool float_eq (double a, double b) {
    return (a.is_nan () && b.is_nan ()) || a == b;
}

void check_doubles (double[] got, double[] want, string what) throws TestError {
    if (got.length != want.length)
        throw new TestError.FAILED ("%s: %d elements, expected %d", what, got.length, want.length);
    var msg = new StringBuilder ();
    int bad = 0;
    for (int i = 0; i < want.length; i++) {
        if (!float_eq (got[i], want[i])) {
            if (bad++ < 8)
                msg.append_printf ("\n  [%d] got %.9g, expected %.9g", i, got[i], want[i]);
        }
    }
    if (bad > 0)
        throw new TestError.FAILED ("%s: %d of %d differ%s", what, bad, want.length, msg.str);
}

void check_codes (int64[] got, int64[] want, string what) throws TestError {
    if (got.length != want.length)
        throw new TestError.FAILED ("%s: %d elements, expected %d", what, got.length, want.length);
    var msg = new StringBuilder ();
    int bad = 0;
    for (int i = 0; i < want.length; i++) {
        if (got[i] != want[i]) {
            if (bad++ < 8)
                msg.append_printf ("\n  [%d] got %" + int64.FORMAT + ", expected %" + int64.FORMAT, i, got[i], want[i]);
        }
    }
    if (bad > 0)
        throw new TestError.FAILED ("%s: %d of %d differ%s", what, bad, want.length, msg.str);
}

void get_range (Piq.Dtype dtype, out int64 qmin, out int64 qmax) {
    switch (dtype) {
    case Piq.Dtype.UINT4: qmin = 0; qmax = 15; break;
    case Piq.Dtype.INT4: qmin = -8; qmax = 7; break;
    case Piq.Dtype.INT8: qmin = -128; qmax = 127; break;
    default: qmin = 0; qmax = 255; break;
    }
}

/* -------------------------------------------------------------- oracle -- */

double round_half_even (double v) {
    if (!v.is_finite ())
        return v;
    double f = Math.floor (v);
    double d = v - f;
    if (d > 0.5)
        return f + 1;
    if (d < 0.5)
        return f;
    return Math.fmod (f, 2.0) == 0 ? f : f + 1;
}

int64 clamp_code (double r, int64 zp, int64 qmin, int64 qmax) {
    if (r.is_nan ())
        return zp;
    double t = r + zp;
    if (t > qmax)
        return qmax;
    if (t < qmin)
        return qmin;
    return (int64) t;
}

/* v = x · inv in binary32, inv = 1.0f / (float) scale; volatile-free but every
 * intermediate is stored in a float, which rounds it on x86-64 and aarch64 */
float scaled_f32 (float x, double scale) {
    float s = (float) scale;
    float inv = 1.0f / s;
    float v = x * inv;
    return v;
}

int64[] quantize_nearest (float[] xs, double scale, int64 zp, Piq.Dtype dtype) {
    int64 qmin, qmax;
    get_range (dtype, out qmin, out qmax);
    var out_codes = new int64[xs.length];
    for (int i = 0; i < xs.length; i++)
        out_codes[i] = clamp_code (round_half_even (scaled_f32 (xs[i], scale)), zp, qmin, qmax);
    return out_codes;
}

double[] dequantize_f32 (int64[] codes, double scale, int64 zp) {
    var y = new double[codes.length];
    float s = (float) scale;
    for (int i = 0; i < codes.length; i++) {
        float v = (float) (codes[i] - zp) * s;
        y[i] = v;
    }
    return y;
}

uint32 mix32 (uint32 x) {
    x ^= x >> 16;
    x *= 0x7FEB352Du;
    x ^= x >> 15;
    x *= 0x846CA68Bu;
    x ^= x >> 16;
    return x;
}

int64[] quantize_stochastic (float[] xs, double scale, int64 zp, Piq.Dtype dtype, uint64 seed) {
    int64 qmin, qmax;
    get_range (dtype, out qmin, out qmax);
    uint64 z = seed + 0x9E3779B97F4A7C15UL;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9UL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBUL;
    z ^= z >> 31;
    uint32 k0 = (uint32) z, k1 = (uint32) (z >> 32);
    var out_codes = new int64[xs.length];
    for (int i = 0; i < xs.length; i++) {
        uint64 idx = i;
        float v = scaled_f32 (xs[i], scale);
        float f = Math.floorf (v);
        float frac = v - f;
        uint32 h = mix32 ((uint32) idx ^ k0 ^ mix32 ((uint32) (idx >> 32) ^ k1));
        float u = (float) (h >> 8) * (float) (1.0 / 16777216.0);
        out_codes[i] = clamp_code (f + (u < frac ? 1 : 0), zp, qmin, qmax);
    }
    return out_codes;
}

void minmax_params (float[] xs, Piq.Dtype dtype, bool include_zero, out double scale, out int64 zp) {
    int64 qmin, qmax;
    get_range (dtype, out qmin, out qmax);
    float lo = float.INFINITY, hi = -float.INFINITY;
    foreach (float x in xs) {
        lo = float.min (lo, x);
        hi = float.max (hi, x);
    }
    if (include_zero || lo == hi) {
        lo = float.min (lo, 0.0f);
        hi = float.max (hi, 0.0f);
    }
    float range = hi - lo;
    float s = range / (float) (qmax - qmin);
    if (s < (float) EPS32)
        s = (float) EPS32;
    float ratio = lo / s;
    double z = qmin - round_half_even (ratio);
    zp = (int64) z.clamp (qmin, qmax);
    scale = s;
}

/* --------------------------------------------------------- tensor glue -- */

/* a float[] as the bytes new_from_data takes: a view, no copy here */
Piq.Tensor f32_tensor (float[] xs) throws Piq.Error {
    unowned uint8[] raw = (uint8[]) xs;
    raw.length = xs.length * (int) sizeof (float);
    return new Piq.Tensor.from_data (Piq.Dtype.F32, xs.length, raw);
}

/* the same, as a rows × cols matrix (row-major) */
Piq.Tensor f32_matrix (float[] xs, uint64 rows, uint64 cols) throws Piq.Error {
    var t = f32_tensor (xs);
    t.reshape ({ rows, cols });
    return t;
}

/* the bytes of any Vala array, as a GBytes copy */
Bytes array_bytes (void* data, size_t size) {
    unowned uint8[] raw = (uint8[]) data;
    raw.length = (int) size;
    return new Bytes (raw);
}

int64[] tensor_codes (Piq.Tensor t) {
    /* get_value() gives the code of a quantized tensor */
    var codes = new int64[(int) t.get_n_elements ()];
    for (int i = 0; i < codes.length; i++)
        codes[i] = (int64) t.get_value (i);
    return codes;
}

int64[] unpack (uint8[] data, int n, int bits) {
    int per = 8 / bits;
    var codes = new int64[n];
    for (int i = 0; i < n; i++)
        codes[i] = (data[i / per] >> (bits * (i % per))) & ((1 << bits) - 1);
    return codes;
}

double[] as_doubles (float[] xs) {
    var d = new double[xs.length];
    for (int i = 0; i < xs.length; i++)
        d[i] = xs[i];
    return d;
}


/* ------------------------------------------------------------- formats -- */
/* The block formats of docs/formats.md; every expectation is computed here
 * from the format definitions, never read back from piquant. */

float[] gen_a (int n) {
    var out_v = new float[n];
    for (int i = 0; i < n; i++)
        out_v[i] = (float) (((i * 7919) % 1009 - 504) / 168.0);
    return out_v;
}

float[] gen_b (int n) {
    var out_v = new float[n];
    for (int i = 0; i < n; i++)
        out_v[i] = (float) (((i * 104729) % 1013 - 506) / 200.0);
    return out_v;
}

/* floor(log2(a)) of a positive finite number, exactly */
int floor_log2 (double a) {
    int e;
    Math.frexp (a, out e);
    return e - 1;
}

bool is_negative (double x) {
    return Math.copysign (1.0, x) < 0;
}

struct Minifloat {
    int ebits;
    int mbits;
    int bias;
    double max;
    uint max_code;
    uint inf_code;
    uint nan_code;
}

Minifloat fmt_e4m3 () {
    return { 4, 3, 7, 448.0, 0x7E, 0, 0x7F };
}

Minifloat fmt_e2m1 () {
    return { 2, 1, 1, 6.0, 0x07, 0, 0 };
}

/* round to nearest, ties to even; overflow saturates or gives NaN/Inf */
uint minifloat_encode (float x, Minifloat f, bool saturate) {
    int width = 1 + f.ebits + f.mbits;
    uint sign = is_negative (x) ? 1u << (width - 1) : 0;
    if (x.is_nan ())
        return f.nan_code != 0 ? sign | f.nan_code : 0;
    double a = Math.fabs (x);
    int emin = 1 - f.bias;
    double mag;
    if (a.is_infinity () != 0) {
        mag = double.INFINITY;
    } else {
        int qe = (a >= Math.ldexp (1.0, emin) ? floor_log2 (a) : emin) - f.mbits;
        mag = Math.ldexp (round_half_even (Math.ldexp (a, -qe)), qe);
    }
    if (mag > f.max) {
        if (saturate || f.nan_code == 0)
            return sign | f.max_code;
        return sign | (f.inf_code != 0 ? f.inf_code : f.nan_code);
    }
    if (mag < Math.ldexp (1.0, emin))
        return sign | (uint) Math.ldexp (mag, f.mbits - emin);
    int e = floor_log2 (mag);
    uint m = (uint) Math.ldexp (mag, f.mbits - e) - (1u << f.mbits);
    return sign | (uint) (e + f.bias) << f.mbits | m;
}

double minifloat_decode (uint code, Minifloat f) {
    int width = 1 + f.ebits + f.mbits;
    uint mag = code & ((1u << (width - 1)) - 1);
    if (f.nan_code != 0 && mag == f.nan_code)
        return double.NAN;
    uint e = mag >> f.mbits, m = mag & ((1u << f.mbits) - 1);
    double v = e == 0 ? Math.ldexp (m, 1 - f.bias - f.mbits)
                      : Math.ldexp ((1u << f.mbits) | m, (int) e - f.bias - f.mbits);
    return (code >> (width - 1)) != 0 ? -v : v;
}

int64[] nibbles (uint8[] data, int n, bool high_first) {
    var out_c = new int64[n];
    for (int i = 0; i < n; i++) {
        bool low = high_first ? i % 2 == 1 : i % 2 == 0;
        out_c[i] = low ? data[i / 2] & 0xF : data[i / 2] >> 4;
    }
    return out_c;
}

float f32_at (uint8[] b, int i) {
    float v = 0;
    Memory.copy (&v, &b[i], 4);
    return v;
}

double f16_at (uint8[] b, int i) {
    uint h = b[i] | (uint) b[i + 1] << 8;
    uint e = (h >> 10) & 0x1F, m = h & 0x3FF;
    double v = e == 0 ? Math.ldexp (m, -24) : e == 31 ? (m != 0 ? double.NAN : double.INFINITY)
                                                       : Math.ldexp (1024 + m, (int) e - 25);
    return (h & 0x8000) != 0 ? -v : v;
}

int32 int32_at (uint8[] b, int i) {
    int32 v = 0;
    Memory.copy (&v, &b[i], 4);
    return v;
}

/* the affine int8 format with blocks of block_size along the last axis */
Piq.Format int8_blocks (uint block_size) {
    return (Piq.Format) Object.new (typeof (Piq.Format), "dtype", Piq.Dtype.INT8,
                                    "granularity", Piq.Granularity.BLOCK,
                                    "block-size", block_size, "symmetric", false);
}

/* quantize into a fresh destination must fail with code, and write nothing */
void expect_refused (Piq.Quantizer q, string what, Piq.Format format, Piq.Recipe? recipe, Piq.Tensor src,
                     int code) throws GLib.Error {
    Piq.Tensor? dst = null;
    try {
        /* the destination's constructor is a call that uses the format: it may refuse first */
        dst = new Piq.Tensor.quantized (format, src.get_shape ());
        q.quantize (recipe, src, dst);
        throw new TestError.FAILED ("accepted: %s".printf (what));
    } catch (Piq.Error e) {
        if (e.code != code)
            throw new TestError.FAILED ("%s: code %d (%s), expected %d".printf (what, e.code, e.message, code));
    }
    if (dst != null)
        check (dst.get_bytes ().compare (new Bytes (new uint8[dst.get_n_bytes ()])) == 0,
               "%s: the refused call wrote its destination".printf (what));
}

/* ------------------------------------------- ported from the Python suite -- */

/* fn () must throw a Piq.Error with code and a message; returns it */
GLib.Error expect_error (int code, string what, TestFunc fn) throws GLib.Error {
    try {
        fn ();
    } catch (TestError e) {
        throw e;
    } catch (GLib.Error e) {
        if (e.domain != Piq.Error.quark () || e.code != code)
            throw new TestError.FAILED ("%s: %s:%d (%s), expected %s:%d", what, e.domain.to_string (), e.code,
                                        e.message, Piq.Error.quark ().to_string (), code);
        check (e.message != null && e.message.length > 0, "%s: the GError has an empty message".printf (what));
        return e;
    }
    throw new TestError.FAILED ("%s: no error, expected code %d", what, code);
}

/* the codes of a quantized tensor's bytes, signed types sign-extended */
int64[] signed_codes (uint8[] data, int n, Piq.Dtype dtype) {
    int bits = (int) dtype.get_bits ();
    int64[] codes = unpack (data, n, bits);
    if (dtype == Piq.Dtype.INT8 || dtype == Piq.Dtype.INT4 || dtype == Piq.Dtype.INT2) {
        for (int i = 0; i < n; i++)
            if (codes[i] >= (1 << (bits - 1)))
                codes[i] -= 1 << bits;
    }
    return codes;
}

void absmax_params (float[] xs, Piq.Dtype dtype, out double scale, out int64 zp) {
    int64 qmin, qmax;
    get_range (dtype, out qmin, out qmax);
    float a = 0;
    foreach (float x in xs)
        a = float.max (a, Math.fabsf (x));
    float half = (float) (qmax - qmin) / 2.0f;
    float s = a / half;
    if (s < (float) EPS32)
        s = (float) EPS32;
    scale = s;
    zp = qmin < 0 ? 0 : (qmin + qmax + 1) / 2;
}

void meanstd_params (double[] xs, Piq.Dtype dtype, out double scale, out int64 zp) {
    int64 qmin, qmax;
    get_range (dtype, out qmin, out qmax);
    int bits = (int) dtype.get_bits ();
    bool signed = qmin < 0;
    int n = xs.length;
    double s = 0, s2 = 0;
    foreach (double x in xs)
        s += x;
    foreach (double x in xs)
        s2 += x * x;
    double mean = s / n;
    double variance = n > 1 ? (s2 - s * s / n) / (n - 1) : 0.0;
    double sigma = Math.sqrt (double.max (variance, 0.0));
    double type_max = Math.pow (2, bits - (signed ? 1 : 0)) - 1;
    double c = bits == 2 ? 1.4 : bits == 4 ? 2.7 : 12.0;
    scale = c * sigma / type_max;
    if (scale == 0)
        scale = 1.0;
    int64 centre = signed ? 0 : ((int64) type_max + 1) >> 1;
    /* round () of C: ties away from zero */
    double z = centre - Math.round (mean / scale);
    zp = (int64) z.clamp (qmin, qmax);
}

/* n standard normal deviates, deterministic: the Park–Miller generator (exact
 * in binary64) and Box–Muller; the GJS and Lua suites use the same recipe */
double[] normals (int n, double seed) {
    double s = seed;
    var out_v = new double[n];
    for (int i = 0; i < n; i += 2) {
        s = Math.fmod (s * 16807, 2147483647);
        double u1 = s / 2147483647;
        s = Math.fmod (s * 16807, 2147483647);
        double u2 = s / 2147483647;
        double r = Math.sqrt (-2 * Math.log (u1));
        out_v[i] = r * Math.cos (2 * Math.PI * u2);
        if (i + 1 < n)
            out_v[i + 1] = r * Math.sin (2 * Math.PI * u2);
    }
    return out_v;
}

bool floats_equal (float[] a, float[] b) {
    return a.length == b.length && Memory.cmp (a, b, a.length * sizeof (float)) == 0;
}

/* --------------------------------------------------------------- tests -- */

TestCase[] make_tests () {
    TestCase[] tests = {};
    float[] data = make_data ();
    float[] finite = make_finite ();

    /* Piq-1.0.metadata maps every GError of the GIR to Piq.Error, and nothing else */
    tests += new TestCase ("vala/binding/throws-piq-error", () => {  /* was vapi/throws-piq-error */
        string? dir = Environment.get_variable ("VAPIDIR");
        if (dir == null)
            throw new TestError.SKIPPED ("VAPIDIR is not set");
        string vapi, gir;
        try {
            FileUtils.get_contents (Path.build_filename (dir, "piquant-1.0.vapi"), out vapi);
            FileUtils.get_contents (Path.build_filename (dir, "Piq-1.0.gir"), out gir);
        } catch (FileError e) {
            throw new TestError.SKIPPED (e.message);
        }
        int n_glib = vapi.split ("throws GLib.Error").length - 1;
        int n_piq = vapi.split ("throws Piq.Error").length - 1;
        int n_gir = gir.split ("throws=\"1\"").length - 1;
        /* The file functions pass GIO's errors on: they alone throw GLib.Error. */
        string[] io = { "Tensor.from_file (", "Tensor.from_stream (", "Safetensors.from_file (",
                        "Safetensors.from_stream (", " save_to_file (", " save_to_stream (" };
        var glib_lines = new StringBuilder ();
        int n_io = 0;
        foreach (unowned string line in vapi.split ("\n")) {
            if (!("throws GLib.Error" in line))
                continue;
            bool is_io = false;
            foreach (unowned string name in io)
                is_io = is_io || name in line;
            if (is_io)
                n_io++;
            else
                glib_lines.append_printf ("\n  %s", line.strip ());
        }
        check (n_glib == n_io, "%d declarations throw GLib.Error; list them in Piq-1.0.metadata:%s".printf (n_glib - n_io, glib_lines.str));
        /* Tensor and Safetensors each have two constructors and two savers */
        check (n_io == 8, "%d of the 8 file functions throw GLib.Error".printf (n_io));
        check (n_piq + n_io == n_gir, "%d declarations throw Piq.Error, the GIR has %d that throw: a throws= pattern in Piq-1.0.metadata matches a function without a GError".printf (n_piq, n_gir - n_io));
    });

    tests += new TestCase ("vala/quantizer/new-and-default", () => {
        var q = new Piq.Quantizer ();
        check (q is Piq.Quantizer, "new Piq.Quantizer ()");
        unowned Piq.Quantizer d1 = Piq.Quantizer.get_default ();
        unowned Piq.Quantizer d2 = Piq.Quantizer.get_default ();
        check (d1 != null && d1 == d2, "get_default () returned two different objects");
        check (d1 != q, "get_default () returned a fresh quantizer");
    });

    tests += new TestCase ("vala/quantizer/properties", () => {
        var q = new Piq.Quantizer ();
        q.n_threads = 3;
        check (q.get_n_threads () == 3, "n-threads 3 read back as %u".printf (q.get_n_threads ()));
        q.set_n_threads (2);
        check (q.n_threads == 2, "set_n_threads (2)");
        Piq.SimdLevel lvl = q.simd_level;
        var eclass = (EnumClass) typeof (Piq.SimdLevel).class_ref ();
        check (eclass.get_value (lvl) != null, "simd-level %d is not a Piq.SimdLevel".printf (lvl));
        check (q.get_simd_level () == lvl, "get_simd_level () differs from the property");
        q.max_simd_level = Piq.SimdLevel.SCALAR;
        check (q.get_max_simd_level () == Piq.SimdLevel.SCALAR, "max-simd-level");
        check (q.simd_level == Piq.SimdLevel.SCALAR, "capped at SCALAR, simd-level is %s".printf (q.simd_level.to_string ()));
    });

    /* PiqParams is gone: its storage half is a Piq.Format, its derivation half a Piq.Recipe */
    tests += new TestCase ("vala/format-recipe/properties", () => {  /* was params/properties */
        var f = new Piq.Format (Piq.Dtype.UINT8);
        check (f.dtype == Piq.Dtype.UINT8 && f.granularity == Piq.Granularity.TENSOR && f.axis == 0
               && !f.get_symmetric () && f.has_zero_points (), "Format (UINT8): per-tensor affine");
        check (f.scale_dtype == Piq.Dtype.F32 && f.saturate && !f.high_nibble_first && !f.double_quant,
               "Format defaults");
        check (f.get_dtype () == Piq.Dtype.UINT8 && f.get_granularity () == Piq.Granularity.TENSOR, "getters");
        var sym = new Piq.Format.symmetric (Piq.Dtype.INT8);
        check (sym.dtype == Piq.Dtype.INT8 && sym.get_symmetric () && !sym.has_zero_points (), "Format.symmetric");
        var ch = new Piq.Format.per_channel (Piq.Dtype.INT8, -1);
        check (ch.granularity == Piq.Granularity.CHANNEL && ch.axis == -1, "Format.per_channel (INT8, -1)");
        var blk = new Piq.Format.per_block (Piq.Dtype.INT4, 0, Piq.Dtype.F16);
        check (blk.granularity == Piq.Granularity.BLOCK && blk.block_size == 64 && blk.scale_dtype == Piq.Dtype.F16,
               "Format.per_block (INT4, 0, F16): effective block size %u".printf (blk.block_size));
        var blk_mx = new Piq.Format.per_block (Piq.Dtype.FP4_E2M1, 0, Piq.Dtype.E8M0);
        check (blk_mx.get_block_size () == 32, "E8M0 scales: default block 32, got %u".printf (blk_mx.get_block_size ()));
        check (f.validate () && sym.validate () && ch.validate () && blk.validate (), "validate ()");
        check (f.equal (new Piq.Format (Piq.Dtype.UINT8)) && !f.equal (sym), "equal ()");
        check (f.to_string () != null && f.to_string ().length > 0, "to_string ()");

        var r = new Piq.Recipe ();
        check (r.scale_rule == Piq.ScaleRule.DEFAULT && r.include_zero && r.round_mode == Piq.RoundMode.NEAREST
               && r.seed == 0 && !r.has_scale && !r.has_zero_point, "Recipe defaults");
        var p = new Piq.Recipe.affine (0.5, 128);
        check (p.scale == 0.5 && p.zero_point == 128 && p.has_scale && p.has_zero_point, "construction");
        p.seed = 0xFEDCBA9876543210UL;
        check (p.get_seed () == 0xFEDCBA9876543210UL, "64-bit seed");
        var a = new Piq.Recipe.affine (0.25, 7);
        check (a.scale == 0.25 && a.zero_point == 7, "Recipe.affine");
        var fx = new Piq.Recipe.fixed (0.125);
        check (fx.get_scale () == 0.125 && fx.has_scale && !fx.has_zero_point, "Recipe.fixed");
        var c = a.copy ();
        c.set_scale (2.0);
        check (a.scale == 0.25 && c.scale == 2.0 && c.zero_point == 7, "copy () is independent");
        c.clear_scale ();
        check (!c.has_scale && !c.has_zero_point, "clear_scale ()");
        r.scale_rule = Piq.ScaleRule.MIN_MAX;
        r.include_zero = false;
        r.round_mode = Piq.RoundMode.STOCHASTIC;
        check (r.get_scale_rule () == Piq.ScaleRule.MIN_MAX && !r.get_include_zero ()
               && r.get_round_mode () == Piq.RoundMode.STOCHASTIC, "Recipe setters");
        int64 qmin;
        uint64 qmax;
        check (Piq.Dtype.UINT4.get_range (out qmin, out qmax) && qmin == 0 && qmax == 15, "Dtype.get_range (UINT4)");
        check (Piq.Dtype.INT8.get_bits () == 8 && Piq.Dtype.UINT4.is_quantized () && Piq.Dtype.F32.is_float (),
               "Dtype methods");
    });

    tests += new TestCase ("vala/tensor/new-from-data", () => {  /* was tensor/from-data-and-values (1/3) */
        var t = f32_tensor (data);
        check (t.get_dtype () == Piq.Dtype.F32 && t.get_n_elements () == data.length
               && t.get_n_bytes () == data.length * 4, "from_data shape");
        check (t.get_n_dims () == 1 && t.get_dim (0) == data.length && t.get_dim (-1) == data.length
               && t.is_contiguous () && t.get_format () == null, "from_data is 1-D, packed, without a format");
        check_doubles (t.to_values (), as_doubles (data), "from_data to_values ()");
        unowned uint8[] raw = (uint8[]) data;
        raw.length = data.length * 4;
        var bytes = t.get_bytes ();
        check (bytes.compare (new Bytes (raw)) == 0, "get_bytes () differs from the float[] bytes");
    });

    tests += new TestCase ("vala/tensor/new-from-values", () => {  /* (2/3) */
        double[] dv = as_doubles (data);
        var t2 = new Piq.Tensor.from_values (Piq.Dtype.F32, dv);
        check_doubles (t2.to_values (), dv, "from_values to_values ()");
        var t64 = new Piq.Tensor.from_values (Piq.Dtype.F64, { 0.1, -2.5, 1e300 });
        check_doubles (t64.to_values (), { 0.1, -2.5, 1e300 }, "F64 to_values ()");
    });

    /* (3/3) of tensor/from-data-and-values, the first part of this case */
    tests += new TestCase ("vala/shapes/get-shape", () => {
        var m = new Piq.Tensor.shaped (Piq.Dtype.F32, { 3, 5 });
        uint64[] shape = m.get_shape ();
        check (shape.length == 2 && shape[0] == 3 && shape[1] == 5 && m.get_n_elements () == 15,
               ("shaped [3, 5]: %d dims, %" + uint64.FORMAT + " elements").printf (shape.length, m.get_n_elements ()));
        check (m.get_row_stride () == 0 && m.is_contiguous (), "a packed tensor has row stride 0");
        /* rows of 5 floats, 32 bytes apart: a sub-matrix without a copy */
        var st = new Piq.Tensor.strided (Piq.Dtype.F32, { 3, 5 }, new Bytes (new uint8[3 * 32]), 0, 32);
        check (st.get_row_stride () == 32 && !st.is_contiguous () && st.get_n_elements () == 15, "strided [3, 5]");
        m.reshape ({ 5, 3 });
        check (m.get_dim (0) == 5 && m.get_dim (-1) == 3, "reshape [5, 3]");
    });

    tests += new TestCase ("vala/quantize/f32/uint8/nearest", () => {
        var q = new Piq.Quantizer ();
        var src = f32_tensor (data);
        var format = new Piq.Format (Piq.Dtype.UINT8);
        var dst = new Piq.Tensor.quantized (format, { data.length });
        double[] scales = { 0.5, 0.1, 7.0 };
        int64[] zps = { 128, 3, 255 };
        for (int k = 0; k < scales.length; k++) {
            var r = new Piq.Recipe.affine (scales[k], zps[k]);
            check (q.quantize (r, src, dst), "quantize () returned false");
            int64[] want = quantize_nearest (data, scales[k], zps[k], Piq.Dtype.UINT8);
            check_codes (tensor_codes (dst), want, "codes, scale %g zp %d".printf (scales[k], (int) zps[k]));
            check_codes (unpack (dst.get_bytes ().get_data (), data.length, 8), want, "bytes");
        }
        unowned Piq.Format? owned_format = dst.get_format ();
        check (owned_format != null && owned_format.equal (format), "the tensor's format");
        check (dst.get_scale () == 7.0 && dst.get_zero_point () == 255, "scale and zero point on the tensor");
    });

    tests += new TestCase ("vala/dequantize/uint8/f32/set-then-add", () => {
        var q = Piq.Quantizer.get_default ();
        var qt = q.quantize_new (new Piq.Format (Piq.Dtype.UINT8), new Piq.Recipe.affine (0.1, 3), f32_tensor (data));
        double[] y = dequantize_f32 (quantize_nearest (data, 0.1, 3, Piq.Dtype.UINT8), 0.1, 3);
        var out_t = new Piq.Tensor (Piq.Dtype.F32, data.length);
        check (q.dequantize (qt, out_t, Piq.ReduceOp.SET), "dequantize (SET)");
        check_doubles (out_t.to_values (), y, "SET");
        check (q.dequantize (qt, out_t, Piq.ReduceOp.ADD), "dequantize (ADD)");
        var y2 = new double[y.length];
        for (int i = 0; i < y.length; i++) {
            float v = (float) y[i];
            float s = v + v;
            y2[i] = s;
        }
        check_doubles (out_t.to_values (), y2, "SET then ADD");
    });

    tests += new TestCase ("vala/quantize/f32/uint4/nearest", () => {
        var q = new Piq.Quantizer ();
        var qt = q.quantize_new (new Piq.Format (Piq.Dtype.UINT4), new Piq.Recipe.affine (0.3, 6), f32_tensor (data));
        check (qt.get_n_bytes () == 19, "37 uint4 take %u bytes".printf ((uint) qt.get_n_bytes ()));
        int64[] want = quantize_nearest (data, 0.3, 6, Piq.Dtype.UINT4);
        unowned uint8[] raw = qt.get_bytes ().get_data ();
        check ((raw[18] >> 4) == 0, "the unused high nibble is not zero");
        check_codes (unpack (raw, data.length, 4), want, "packed codes");
        check_codes (tensor_codes (qt), want, "get_value ()");
        var y = dequantize_f32 (want, 0.3, 6);
        var out_t = q.dequantize_new (qt, Piq.Dtype.F32);
        check_doubles (out_t.to_values (), y, "dequantize_new ()");
        q.dequantize (qt, out_t, Piq.ReduceOp.ADD);
        for (int i = 0; i < y.length; i++)
            y[i] = (float) (2 * y[i]);
        check_doubles (out_t.to_values (), y, "ADD");
    });

    tests += new TestCase ("vala/address/quantize-into-buffer", () => {  /* was raw/float-array */
        var q = new Piq.Quantizer ();
        var format = new Piq.Format (Piq.Dtype.UINT4);
        var packed = new uint8[(data.length + 1) / 2];
        double used_scale;
        int64 used_zp;
        check (q.quantize_raw (format, new Piq.Recipe.affine (0.5, 7), Piq.Dtype.F32, (void*) data, { data.length },
                               (void*) packed, packed.length, null, 0, null, 0, out used_scale, out used_zp),
               "quantize_raw ()");
        check (used_scale == 0.5 && used_zp == 7, "quantize_raw () reports %g/%d".printf (used_scale, (int) used_zp));
        int64[] want = quantize_nearest (data, 0.5, 7, Piq.Dtype.UINT4);
        check_codes (unpack (packed, data.length, 4), want, "quantize_raw () codes");
        var y = new float[data.length];
        check (q.dequantize_raw (format, 0.5, 7, (void*) packed, packed.length, { data.length }, null, 0, null, 0,
                                 Piq.Dtype.F32, (void*) y, y.length * sizeof (float), Piq.ReduceOp.SET),
               "dequantize_raw ()");
        check_doubles (as_doubles (y), dequantize_f32 (want, 0.5, 7), "dequantize_raw () values");
        var cp = new Piq.Recipe ();
        check (q.compute_params_raw (new Piq.Format (Piq.Dtype.UINT8), cp, Piq.Dtype.F32, (void*) finite, finite.length),
               "compute_params_raw ()");
        double scale;
        int64 zp;
        minmax_params (finite, Piq.Dtype.UINT8, true, out scale, out zp);
        check (cp.has_scale && cp.scale == scale && cp.zero_point == zp,
               "compute_params_raw (): %.9g/%d, expected %.9g/%d".printf (cp.scale, (int) cp.zero_point, scale, (int) zp));
        var small = new uint8[3];
        var before = small;
        try {
            q.quantize_raw (format, new Piq.Recipe.affine (0.5, 7), Piq.Dtype.F32, (void*) data, { data.length },
                            (void*) small, small.length, null, 0, null, 0, out used_scale, out used_zp);
            throw new TestError.FAILED ("quantize_raw () into 3 bytes did not fail");
        } catch (Piq.Error.SIZE e) {
        }
        check (Memory.cmp (small, before, 3) == 0, "a failed quantize_raw () wrote its destination");
    });

    tests += new TestCase ("vala/compute-params/min-max", () => {
        var q = new Piq.Quantizer ();
        var src = f32_tensor (finite);
        foreach (var dtype in new Piq.Dtype[] { Piq.Dtype.UINT8, Piq.Dtype.UINT4, Piq.Dtype.INT8 }) {
            var format = new Piq.Format (dtype);
            var r = new Piq.Recipe ();
            check (q.compute_params (format, r, src), "compute_params ()");
            double scale;
            int64 zp;
            minmax_params (finite, dtype, true, out scale, out zp);
            check (r.has_scale && r.scale == scale && r.zero_point == zp, "%s: %.9g/%d, expected %.9g/%d".printf (
                dtype.to_string (), r.scale, (int) r.zero_point, scale, (int) zp));
            int64[] want = quantize_nearest (finite, scale, zp, dtype);
            check_codes (tensor_codes (q.quantize_new (format, r, src)), want, "%s codes".printf (dtype.to_string ()));
            /* without a given scale quantize derives the same one itself (no silent scale 1) */
            var derived = q.quantize_new (format, null, src);
            check (derived.get_scale () == scale && derived.get_zero_point () == zp,
                   "%s, NULL recipe: %.9g/%d, expected %.9g/%d".printf (dtype.to_string (), derived.get_scale (),
                                                                      (int) derived.get_zero_point (), scale, (int) zp));
            check_codes (tensor_codes (derived), want, "%s codes, NULL recipe".printf (dtype.to_string ()));
        }
    });

    tests += new TestCase ("vala/quantize/stochastic/floor-or-ceil", () => {  /* was quantize/stochastic (1/4) */
        var q = new Piq.Quantizer ();
        var src = f32_tensor (finite);
        var format = new Piq.Format (Piq.Dtype.UINT8);
        var p = new Piq.Recipe.affine (0.37, 100) { round_mode = Piq.RoundMode.STOCHASTIC, seed = 12345 };
        var first = q.quantize_new (format, p, src);
        int64[] got = tensor_codes (first);
        for (int i = 0; i < finite.length; i++) {
            float v = scaled_f32 (finite[i], 0.37);
            int64 lo = clamp_code (Math.floor (v), 100, 0, 255);
            int64 hi = clamp_code (Math.ceil (v), 100, 0, 255);
            check (got[i] == lo || got[i] == hi, "[%d] %d is neither floor nor ceil".printf (i, (int) got[i]));
        }
    });

    tests += new TestCase ("vala/quantize/stochastic/same-seed-identical", () => {  /* (2/4) */
        var q = new Piq.Quantizer ();
        var src = f32_tensor (finite);
        var format = new Piq.Format (Piq.Dtype.UINT8);
        var p = new Piq.Recipe.affine (0.37, 100) { round_mode = Piq.RoundMode.STOCHASTIC, seed = 12345 };
        var first = q.quantize_new (format, p, src);
        int64[] got = tensor_codes (first);
        check (first.get_seed () == 12345, ("the tensor records seed %" + uint64.FORMAT).printf (first.get_seed ()));
        check_codes (tensor_codes (q.quantize_new (format, p, src)), got, "the same seed twice");
    });

    tests += new TestCase ("vala/quantize/stochastic/counter-hash", () => {  /* (3/4) */
        var q = new Piq.Quantizer ();
        var src = f32_tensor (finite);
        var format = new Piq.Format (Piq.Dtype.UINT8);
        var p = new Piq.Recipe.affine (0.37, 100) { round_mode = Piq.RoundMode.STOCHASTIC, seed = 12345 };
        int64[] got = tensor_codes (q.quantize_new (format, p, src));
        check_codes (got, quantize_stochastic (finite, 0.37, 100, Piq.Dtype.UINT8, 12345), "counter hash, seed 12345");
        p.seed = 0xFEDCBA9876543210UL;
        check_codes (tensor_codes (q.quantize_new (format, p, src)),
                     quantize_stochastic (finite, 0.37, 100, Piq.Dtype.UINT8, 0xFEDCBA9876543210UL),
                     "counter hash, 64-bit seed");
    });

    tests += new TestCase ("vala/quantize/stochastic/seed-0-recorded", () => {  /* (4/4) */
        var q = new Piq.Quantizer ();
        var src = f32_tensor (finite);
        var format = new Piq.Format (Piq.Dtype.UINT8);
        var p = new Piq.Recipe.affine (0.37, 100) { round_mode = Piq.RoundMode.STOCHASTIC, seed = 12345 };
        p.seed = 0;
        var r = q.quantize_new (format, p, src);
        uint64 used = r.get_seed ();
        check (used != 0, "seed 0 recorded as 0");
        check (p.seed == 0, "quantize () wrote the drawn seed into the recipe");
        check_codes (tensor_codes (r), quantize_stochastic (finite, 0.37, 100, Piq.Dtype.UINT8, used),
                     "counter hash, recorded seed");
    });

    tests += new TestCase ("vala/error/size", () => {
        var q = new Piq.Quantizer ();
        var src = f32_tensor (data);
        var p = new Piq.Recipe.affine (0.5, 128);
        var small = new Piq.Tensor.quantized (new Piq.Format (Piq.Dtype.UINT8), { data.length - 1 });
        try {
            q.quantize (p, src, small);
            throw new TestError.FAILED ("quantize () into a tensor one element short did not fail");
        } catch (Piq.Error.SIZE e) {
            check (e.domain == Piq.Error.quark () && e.code == Piq.Error.SIZE, "domain/code");
        }
        try {
            new Piq.Tensor.from_data (Piq.Dtype.F32, 10, new uint8[39]);
            throw new TestError.FAILED ("from_data () with 39 bytes for 10 f32 did not fail");
        } catch (Piq.Error.SIZE e) {
        }
    });

    tests += new TestCase ("vala/error/invalid-scale", () => {
        var q = new Piq.Quantizer ();
        var src = f32_tensor (data);
        var dst = new Piq.Tensor.quantized (new Piq.Format (Piq.Dtype.UINT8), { data.length });
        foreach (double bad in new double[] { 0.0, -0.5, double.INFINITY, double.NAN, 1e-50, 1e39 }) {
            /* every route: set_scale (), the GObject property, the constructor */
            Piq.Recipe[] routes = { new Piq.Recipe.affine (1.0, 128), new Piq.Recipe.affine (1.0, 128),
                                    new Piq.Recipe.affine (bad, 128) };
            routes[0].set_scale (bad);
            routes[1].set_property ("scale", bad);
            for (int k = 0; k < routes.length; k++) {
                try {
                    q.quantize (routes[k], src, dst);
                    throw new TestError.FAILED ("scale %g accepted (route %d)".printf (bad, k));
                } catch (Piq.Error.INVALID_SCALE e) {
                }
            }
        }
        /* was: Params.affine (UINT8, 0.0, 128).validate (); a recipe is checked at the call */
        try {
            q.quantize_new (new Piq.Format (Piq.Dtype.UINT8), new Piq.Recipe.affine (0.0, 128), src);
            throw new TestError.FAILED ("quantize_new () accepted scale 0");
        } catch (Piq.Error.INVALID_SCALE e) {
        }
    });

    tests += new TestCase ("vala/error/invalid-zero-point", () => {  /* was error/other-codes (1/6) */
        var q = new Piq.Quantizer ();
        var src = f32_tensor (data);
        var u8 = new Piq.Format (Piq.Dtype.UINT8);
        try {
            q.quantize (new Piq.Recipe.affine (1.0, 256), src, new Piq.Tensor.quantized (u8, { data.length }));
            throw new TestError.FAILED ("zero point 256 accepted");
        } catch (Piq.Error.INVALID_ZERO_POINT e) {
        }
    });

    tests += new TestCase ("vala/error/unsupported", () => {  /* (2/6) */
        var q = new Piq.Quantizer ();
        var src = f32_tensor (data);
        try {
            q.quantize_new (new Piq.Format (Piq.Dtype.F32), new Piq.Recipe.fixed (1.0), src);
            throw new TestError.FAILED ("quantize to F32 accepted");
        } catch (Piq.Error.UNSUPPORTED e) {
        }
    });

    tests += new TestCase ("vala/error/no-format", () => {  /* (3/6) */
        var q = new Piq.Quantizer ();
        try {
            q.dequantize (new Piq.Tensor (Piq.Dtype.UINT8, 4), new Piq.Tensor (Piq.Dtype.F32, 4), Piq.ReduceOp.SET);
            throw new TestError.FAILED ("dequantize without a format accepted");
        } catch (Piq.Error.NO_FORMAT e) {
        }
    });

    tests += new TestCase ("vala/error/non-finite", () => {  /* (4/6) */
        var q = new Piq.Quantizer ();
        var u8 = new Piq.Format (Piq.Dtype.UINT8);
        try {
            q.compute_params (u8, new Piq.Recipe (), f32_tensor ({ 1.0f, float.NAN }));
            throw new TestError.FAILED ("compute_params () accepted NaN");
        } catch (Piq.Error.NON_FINITE e) {
        }
        /* a failed compute_params () leaves its recipe unchanged */
        var kept = new Piq.Recipe ();
        try {
            q.compute_params (u8, kept, f32_tensor ({ 1.0f, float.INFINITY }));
            throw new TestError.FAILED ("compute_params () accepted Inf");
        } catch (Piq.Error.NON_FINITE e) {
        }
        check (!kept.has_scale && !kept.has_zero_point, "a failed compute_params () changed the recipe");
    });

    tests += new TestCase ("vala/error/empty", () => {  /* (5/6) */
        var q = new Piq.Quantizer ();
        var u8 = new Piq.Format (Piq.Dtype.UINT8);
        try {
            q.compute_params (u8, new Piq.Recipe (), new Piq.Tensor (Piq.Dtype.F32, 0));
            throw new TestError.FAILED ("compute_params () accepted an empty tensor");
        } catch (Piq.Error.EMPTY e) {
        }
    });

    tests += new TestCase ("vala/error/read-only", () => {  /* (6/6) */
        var q = new Piq.Quantizer ();
        var src = f32_tensor (data);
        var u8 = new Piq.Format (Piq.Dtype.UINT8);
        var ro_plain = new Piq.Tensor.from_bytes (Piq.Dtype.UINT8, data.length, new Bytes (new uint8[data.length]));
        check (!ro_plain.is_writable (), "a tensor from GBytes is writable");
        var ro = new Piq.Tensor.quantized_from_bytes (u8, { data.length }, new Bytes (new uint8[data.length]),
                                                      null, null, 1.0, 0);
        check (!ro.is_writable (), "a tensor from quantized_from_bytes () is writable");
        try {
            q.quantize (new Piq.Recipe.affine (1.0, 0), src, ro);
            throw new TestError.FAILED ("quantize into a read-only tensor accepted");
        } catch (Piq.Error.READ_ONLY e) {
        }
    });

    tests += new TestCase ("vala/formats/fp8-e4m3/cast-saturate-nan", () => {
        var q = new Piq.Quantizer ();
        float[] xs = { 1.0f, 448.0f, 0.001953125f, 1000.0f, -1000.0f, 464.0f, 465.0f, -0.0f, 0.0f, float.NAN,
                       0.0029296875f, 248.0f, 1e-5f, float.INFINITY, -float.INFINITY, 0.3f, -2.7f };
        foreach (float v in gen_a (40))
            xs += v;
        var src = f32_tensor (xs);
        int[] fixed_i = { 0, 1, 2, 3, 4, 5, 6, 7, 9, 10, 11, 12, 13, 14 };
        uint[] fixed_c = { 0x38, 0x7E, 0x01, 0x7E, 0xFE, 0x7E, 0x7E, 0x80, 0x7F, 0x02, 0x78, 0x00, 0x7E, 0xFE };
        for (int k = 0; k < fixed_i.length; k++)
            check (minifloat_encode (xs[fixed_i[k]], fmt_e4m3 (), true) == fixed_c[k], "oracle code of %g".printf (xs[fixed_i[k]]));
        /* scale 1 is the plain cast; it is given, as quantize would otherwise derive one */
        var cast = new Piq.Recipe.fixed (1.0);
        foreach (bool saturate in new bool[] { true, false }) {
            var p = (Piq.Format) Object.new (typeof (Piq.Format), "dtype", Piq.Dtype.FP8_E4M3, "saturate", saturate);
            check (p.saturate == saturate && p.granularity == Piq.Granularity.TENSOR, "fp8 format");
            var t = q.quantize_new (p, cast, src);
            check (t.get_n_bytes () == xs.length && t.get_scales () == null, "one byte per element, no scales");
            check (t.get_scale () == 1.0, "scale %g on the tensor".printf (t.get_scale ()));
            var want = new int64[xs.length];
            var want_y = new double[xs.length];
            for (int i = 0; i < xs.length; i++) {
                want[i] = minifloat_encode (xs[i], fmt_e4m3 (), saturate);
                want_y[i] = minifloat_decode ((uint) want[i], fmt_e4m3 ());
            }
            check_codes (unpack (t.get_bytes ().get_data (), xs.length, 8), want, "fp8 codes, saturate=%s".printf (saturate.to_string ()));
            check_doubles (q.dequantize_new (t, Piq.Dtype.F32).to_values (), want_y, "decoded values");
        }
        var nonsat = (Piq.Format) Object.new (typeof (Piq.Format), "dtype", Piq.Dtype.FP8_E4M3, "saturate", false);
        unowned uint8[] ns = q.quantize_new (nonsat, cast, src).get_bytes ().get_data ();
        check (ns[3] == 0x7F && ns[4] == 0xFF && ns[5] == 0x7E && ns[6] == 0x7F,
               "non-saturating: 1000, -1000, 464, 465 -> %02x %02x %02x %02x".printf (ns[3], ns[4], ns[5], ns[6]));
        var preset = new Piq.Format.preset ("fp8_e4m3");
        check (preset.dtype == Piq.Dtype.FP8_E4M3 && preset.granularity == Piq.Granularity.TENSOR && preset.saturate,
               "fp8_e4m3 preset");
    });

    tests += new TestCase ("vala/formats/mxfp4/e8m0-scales", () => {
        var q = new Piq.Quantizer ();
        int n = 70; /* blocks of 32, 32 and a ragged 6 */
        float[] xs = gen_a (n);
        var p = new Piq.Format.preset ("mxfp4");
        check (p.dtype == Piq.Dtype.FP4_E2M1 && p.granularity == Piq.Granularity.BLOCK && p.block_size == 32
               && p.scale_dtype == Piq.Dtype.E8M0, "mxfp4 preset");
        var t = q.quantize_new (p, null, f32_tensor (xs));
        check (t.get_n_bytes () == 35, "70 fp4 take %u bytes".printf ((uint) t.get_n_bytes ()));
        uint8[] scales = t.get_scales ().get_data ();
        int64[] codes = nibbles (t.get_bytes ().get_data (), n, false);
        var want_codes = new int64[n];
        var want_y = new double[n];
        check (scales.length == 3, "%d scales".printf (scales.length));
        for (int b0 = 0; b0 < n; b0 += 32) {
            double amax = 0;
            for (int i = b0; i < int.min (b0 + 32, n); i++)
                amax = double.max (amax, Math.fabs (xs[i]));
            int e = floor_log2 (amax) - 2; /* the spec's floor rule, emax_elem(E2M1) = 2 */
            check (scales[b0 / 32] == e + 127, "block %d: E8M0 %u, expected %d".printf (b0 / 32, scales[b0 / 32], e + 127));
            for (int i = b0; i < int.min (b0 + 32, n); i++) {
                uint c = minifloat_encode ((float) Math.ldexp (xs[i], -e), fmt_e2m1 (), true);
                want_codes[i] = c;
                want_y[i] = Math.ldexp (minifloat_decode (c, fmt_e2m1 ()), e);
            }
        }
        check_codes (codes, want_codes, "E2M1 codes, low nibble first");
        double[] y = q.dequantize_new (t, Piq.Dtype.F32).to_values ();
        check_doubles (y, want_y, "dequantized");
        double[] table = { 0, 0.5, 1, 1.5, 2, 3, 4, 6 };
        for (int i = 0; i < n; i++) {
            double v = Math.ldexp (table[codes[i] & 7], scales[i / 32] - 127);
            check (y[i] == ((codes[i] & 8) != 0 ? -v : v), "code %d gave %g".printf ((int) codes[i], y[i]));
        }
    });

    tests += new TestCase ("vala/formats/nf4/bnb-order-and-add", () => {
        var q = new Piq.Quantizer ();
        int n = 201; /* blocks of 64 and a ragged 9; an odd count ends in half a byte */
        float[] xs = gen_a (n);
        var src = f32_tensor (xs);
        var p = new Piq.Format.preset ("nf4");
        check (p.dtype == Piq.Dtype.NF4 && p.block_size == 64 && p.high_nibble_first, "nf4 preset is bitsandbytes' layout");
        var t = q.quantize_new (p, null, src);
        check (t.get_n_bytes () == 101, "201 nf4 take %u bytes".printf ((uint) t.get_n_bytes ()));
        uint8[] sc = t.get_scales ().get_data ();
        for (int b = 0; b < 4; b++) {
            float m = 0;
            for (int i = 64 * b; i < int.min (64 * b + 64, n); i++)
                m = float.max (m, Math.fabsf (xs[i]));
            check (f32_at (sc, 4 * b) == m, "block %d absmax %g, expected %g".printf (b, f32_at (sc, 4 * b), m));
        }
        double[] y = q.dequantize_new (t, Piq.Dtype.F32).to_values ();
        for (int i = 0; i < n; i++) {
            double a = f32_at (sc, 4 * (i / 64));
            check (Math.fabs (y[i] - xs[i]) <= 0.152 * a, "[%d] %g -> %g, more than half of NF4's widest gap".printf (i, xs[i], y[i]));
            if (Math.fabs (xs[i]) == a)
                check (y[i] == xs[i], "[%d] the block's absmax came back as %g".printf (i, y[i]));
        }
        /* formats are immutable: the other nibble order is another format */
        var p_lo = (Piq.Format) Object.new (typeof (Piq.Format), "dtype", Piq.Dtype.NF4,
                                            "granularity", Piq.Granularity.BLOCK, "block-size", 64,
                                            "high-nibble-first", false);
        check (!p_lo.high_nibble_first && !p_lo.equal (p), "nf4, low nibble first");
        uint8[] lo = q.quantize_new (p_lo, null, src).get_bytes ().get_data ();
        uint8[] hi = t.get_bytes ().get_data ();
        for (int k = 0; k < hi.length; k++)
            check (hi[k] == (uint8) (((lo[k] & 0xF) << 4) | (lo[k] >> 4)), "byte %d: bnb %02x, piquant %02x".printf (k, hi[k], lo[k]));
        check_codes (nibbles (hi, n, true), nibbles (lo, n, false), "codes of the two orders");
        var acc = new Piq.Tensor (Piq.Dtype.F32, n);
        acc.fill (0.5);
        q.dequantize (t, acc, Piq.ReduceOp.ADD);
        var once = new double[n];
        var twice = new double[n];
        for (int i = 0; i < n; i++) {
            float o = 0.5f + (float) y[i];
            once[i] = o;
            float w = o + (float) y[i];
            twice[i] = w;
        }
        check_doubles (acc.to_values (), once, "0.5 + dequantized");
        q.dequantize (t, acc, Piq.ReduceOp.ADD);
        check_doubles (acc.to_values (), twice, "ADD twice");
    });

    tests += new TestCase ("vala/formats/int8-block/wrap-scales-and-zero-points", () => {  /* was formats/int8-block/raw-and-wrapped */
        var q = new Piq.Quantizer ();
        int n = 70, block = 16;
        float[] xs = gen_a (n);
        var p = int8_blocks (block);
        var recipe = new Piq.Recipe () { scale_rule = Piq.ScaleRule.MIN_MAX };
        size_t codes_size, scales_size, zps_size;
        p.get_sizes ({ n }, out codes_size, out scales_size, out zps_size);
        check (codes_size == 70 && scales_size == 20 && zps_size == 20,
               "sizes %u %u %u".printf ((uint) codes_size, (uint) scales_size, (uint) zps_size));
        /* the raw form, into Vala arrays */
        var codes = new int8[n];
        var scales = new float[5];
        var zps = new int32[5];
        double unused_scale;
        int64 unused_zp;
        q.quantize_raw (p, recipe, Piq.Dtype.F32, (void*) xs, { n }, (void*) codes, n, (void*) scales, scales_size,
                        (void*) zps, zps_size, out unused_scale, out unused_zp);
        var want_y = new double[n];
        for (int b = 0; b < 5; b++) {
            float[] blk = xs[b * block:int.min ((b + 1) * block, n)];
            double s;
            int64 zp;
            minmax_params (blk, Piq.Dtype.INT8, true, out s, out zp);
            check (scales[b] == s && zps[b] == zp, "block %d: scale %g zp %d, expected %g %d".printf (b, scales[b], zps[b], s, (int) zp));
            int64[] want = quantize_nearest (blk, s, zp, Piq.Dtype.INT8);
            var got = new int64[blk.length];
            for (int i = 0; i < blk.length; i++)
                got[i] = codes[b * block + i];
            check_codes (got, want, "block %d codes".printf (b));
            double[] y = dequantize_f32 (want, s, zp);
            for (int i = 0; i < blk.length; i++)
                want_y[b * block + i] = y[i];
        }
        /* the same bytes through quantize_new (), DEFAULT rule: min/max for affine integers */
        var t = q.quantize_new (p, null, f32_tensor (xs));
        check (t.get_bytes ().compare (array_bytes (codes, n)) == 0
               && t.get_scales ().compare (array_bytes (scales, 20)) == 0
               && t.get_zero_points ().compare (array_bytes (zps, 20)) == 0, "quantize_new () bytes differ from quantize_raw ()");
        var y_raw = new float[n];
        q.dequantize_raw (p, 0.0, 0, (void*) codes, n, { n }, (void*) scales, scales_size, (void*) zps, zps_size,
                          Piq.Dtype.F32, (void*) y_raw, n * sizeof (float), Piq.ReduceOp.SET);
        check_doubles (as_doubles (y_raw), want_y, "dequantize_raw ()");
        /* the same bytes wrapped in a tensor, as data quantized elsewhere */
        var w = new Piq.Tensor.quantized_from_bytes (p, { n }, array_bytes (codes, n), array_bytes (scales, 20),
                                                     array_bytes (zps, 20), 0.0, 0);
        check (w.get_scales ().compare (array_bytes (scales, 20)) == 0, "get_scales () of wrapped bytes");
        check (w.get_zero_points ().compare (array_bytes (zps, 20)) == 0, "get_zero_points () of wrapped bytes");
        check_doubles (q.dequantize_new (w, Piq.Dtype.F32).to_values (), want_y, "dequantized from wrapped bytes");
        /* codes without their scales: refused when wrapped (or, at the latest, at dequantize) */
        try {
            var bare = new Piq.Tensor.quantized_from_bytes (p, { n }, array_bytes (codes, n), null, null, 0.0, 0);
            q.dequantize_new (bare, Piq.Dtype.F32);
            throw new TestError.FAILED ("dequantize without scales did not fail");
        } catch (Piq.Error.SIZE e) {
        }
    });

    tests += new TestCase ("vala/formats/binary/dot", () => {
        var q = new Piq.Quantizer ();
        int n = 300; /* blocks of 128, 128 and 44 */
        var p = new Piq.Format.preset ("binary");
        check (p.dtype == Piq.Dtype.BINARY && p.block_size == 128, "binary preset");
        Piq.Tensor[] ts = {};
        double[] ya = {}, yb = {};
        for (int k = 0; k < 2; k++) {
            float[] xs = k == 0 ? gen_a (n) : gen_b (n);
            var t = q.quantize_new (p, null, f32_tensor (xs));
            check (t.get_n_bytes () == 38, "300 bits take %u bytes".printf ((uint) t.get_n_bytes ()));
            uint8[] bits = t.get_bytes ().get_data ();
            uint8[] sc = t.get_scales ().get_data ();
            var want_y = new double[n];
            for (int b0 = 0; b0 < n; b0 += 128) {
                /* binary32, element i into partial sum i mod 16, combined pairwise */
                float lanes[16];
                for (int l = 0; l < 16; l++)
                    lanes[l] = 0;
                int m = int.min (128, n - b0);
                for (int i = b0; i < b0 + m; i++)
                    lanes[(i - b0) % 16] = lanes[(i - b0) % 16] + Math.fabsf (xs[i]);
                for (int h = 8; h > 0; h /= 2)
                    for (int l = 0; l < h; l++)
                        lanes[l] = lanes[l] + lanes[l + h];
                float s = lanes[0] / (float) m;
                check (f32_at (sc, 4 * (b0 / 128)) == s, "block %d: scale %g, mean |x| %g".printf (b0 / 128, f32_at (sc, 4 * (b0 / 128)), s));
                for (int i = b0; i < b0 + m; i++) {
                    int bit = (bits[i / 8] >> (i % 8)) & 1;
                    check (bit == (is_negative (xs[i]) ? 0 : 1), "[%d] sign bit %d for %g".printf (i, bit, xs[i]));
                    want_y[i] = bit == 1 ? s : -s;
                }
            }
            double[] y = q.dequantize_new (t, Piq.Dtype.F32).to_values ();
            check_doubles (y, want_y, "dequantized +-scale");
            ts += t;
            if (k == 0)
                ya = y;
            else
                yb = y;
        }
        double dot;
        check (q.binary_dot (ts[0], ts[1], out dot), "binary_dot ()");
        double want = 0;
        for (int i = 0; i < n; i++)
            want += ya[i] * yb[i];
        check (Math.fabs (dot - want) <= 1e-9 * double.max (1, Math.fabs (want)), "binary_dot %.17g, dequantized dot %.17g".printf (dot, want));
    });

    tests += new TestCase ("vala/formats/q8_0/ggml-bytes", () => {
        var q = new Piq.Quantizer ();
        int n = 70; /* 3 blocks, the last holds 6 values and 26 zeros */
        float[] xs = gen_a (n);
        var t = q.quantize_new (new Piq.Format.preset ("q8_0"), null, f32_tensor (xs));
        uint8[] raw = t.get_bytes ().get_data ();
        check (raw.length == 3 * 34 && t.get_scales () == null, "3 blocks of 34 bytes, scales inside");
        var want_y = new double[n];
        for (int b = 0; b < 3; b++) {
            var vals = new float[32];
            float amax = 0;
            for (int j = 0; j < 32; j++) {
                vals[j] = 32 * b + j < n ? xs[32 * b + j] : 0.0f;
                amax = float.max (amax, Math.fabsf (vals[j]));
            }
            float d = amax / 127.0f;
            double dh = f16_at (raw, 34 * b);
            check (Math.fabs (dh - d) <= Math.ldexp (1.0, floor_log2 (d) - 11), "block %d: f16 scale %g, f32 d %g".printf (b, dh, d));
            float id = 1.0f / d;
            var want = new int64[32];
            var got = new int64[32];
            for (int j = 0; j < 32; j++) {
                float r = vals[j] * id;
                double k = Math.floor (Math.fabs (r) + 0.5); /* roundf: ties away from zero */
                want[j] = (int64) (r < 0 ? -k : k);
                got[j] = (int8) raw[34 * b + 2 + j];
                if (32 * b + j < n) {
                    float v = (float) want[j] * (float) dh;
                    want_y[32 * b + j] = v;
                }
            }
            check_codes (got, want, "block %d qs".printf (b));
        }
        check_doubles (q.dequantize_new (t, Piq.Dtype.F32).to_values (), want_y, "dequantized qs*d");
    });

    tests += new TestCase ("vala/formats/errors", () => {
        var q = new Piq.Quantizer ();
        var src = f32_tensor (gen_a (70));
        /* was: CHANNEL with rows of block-size 16 over 70 elements; rows are now a shape */
        try {
            f32_tensor (gen_a (70)).reshape ({ 5, 16 });
            throw new TestError.FAILED ("70 elements as rows of 16 accepted");
        } catch (Piq.Error.SIZE e) {
        }
        var ch16 = (Piq.Format) Object.new (typeof (Piq.Format), "dtype", Piq.Dtype.INT8,
                                            "granularity", Piq.Granularity.CHANNEL, "block-size", 16);
        try {
            q.quantize_new (ch16, null, f32_matrix (gen_a (70), 5, 14));
            throw new TestError.FAILED ("a block size on a per-channel format accepted");
        } catch (Piq.Error.UNSUPPORTED e) {
        }
        var nf4 = (Piq.Format) Object.new (typeof (Piq.Format), "dtype", Piq.Dtype.NF4,
                                           "granularity", Piq.Granularity.BLOCK, "scale-dtype", Piq.Dtype.E8M0);
        try {
            nf4.validate ();
            throw new TestError.FAILED ("validate () accepted NF4 with E8M0 scales");
        } catch (Piq.Error.UNSUPPORTED e) {
        }
        try {
            q.quantize_new (nf4, null, src);
            throw new TestError.FAILED ("NF4 with E8M0 scales accepted");
        } catch (Piq.Error.UNSUPPORTED e) {
        }
        try {
            new Piq.Format.preset ("no-such-format");
            throw new TestError.FAILED ("an unknown preset accepted");
        } catch (Piq.Error.UNSUPPORTED e) {
        }
        bool found = false;
        foreach (unowned string name in Piq.Format.list_presets ())
            found = found || name == "mxfp4";
        check (found, "list_presets () lacks mxfp4");
    });

    /* ------------------------------------------------- new in the data model -- */

    tests += new TestCase ("vala/shapes/per-channel/axis-0", () => {
        var q = new Piq.Quantizer ();
        int rows = 5, cols = 14;
        float[] xs = gen_a (rows * cols);
        var f = new Piq.Format.per_channel (Piq.Dtype.INT8, 0);
        check (f.granularity == Piq.Granularity.CHANNEL && f.axis == 0 && !f.get_symmetric () && f.has_zero_points (),
               "per_channel (INT8, 0) is affine");
        var t = q.quantize_new (f, null, f32_matrix (xs, rows, cols));
        uint64[] shape = t.get_shape ();
        check (shape.length == 2 && shape[0] == rows && shape[1] == cols, "the quantized tensor keeps [5, 14]");
        uint8[] sc = t.get_scales ().get_data ();
        uint8[] zp = t.get_zero_points ().get_data ();
        check (sc.length == 4 * rows && zp.length == 4 * rows, "one f32 scale and one int32 zero point per row");
        uint8[] codes = t.get_bytes ().get_data ();
        var want_y = new double[rows * cols];
        for (int r = 0; r < rows; r++) {
            float[] row = xs[r * cols:(r + 1) * cols];
            double s;
            int64 z;
            minmax_params (row, Piq.Dtype.INT8, true, out s, out z);
            check (f32_at (sc, 4 * r) == s && int32_at (zp, 4 * r) == z,
                   "row %d: %g/%d, expected %g/%d".printf (r, f32_at (sc, 4 * r), int32_at (zp, 4 * r), s, (int) z));
            int64[] want = quantize_nearest (row, s, z, Piq.Dtype.INT8);
            var got = new int64[cols];
            for (int c = 0; c < cols; c++)
                got[c] = (int8) codes[r * cols + c];
            check_codes (got, want, "row %d codes".printf (r));
            double[] y = dequantize_f32 (want, s, z);
            for (int c = 0; c < cols; c++)
                want_y[r * cols + c] = y[c];
        }
        var y_t = q.dequantize_new (t, Piq.Dtype.F32);
        check (y_t.get_n_dims () == 2 && y_t.get_dim (0) == rows && y_t.get_dim (1) == cols, "dequantized shape");
        check_doubles (y_t.to_values (), want_y, "dequantized");
        /* the old CHANNEL layout: blocks of one row over the flat data, the same bytes */
        var flat = q.quantize_new (int8_blocks (cols), null, f32_tensor (xs));
        check (flat.get_bytes ().compare (t.get_bytes ()) == 0 && flat.get_scales ().compare (t.get_scales ()) == 0
               && flat.get_zero_points ().compare (t.get_zero_points ()) == 0, "rows as blocks of 14 differ");
        /* axis -2 is axis 0 of a matrix */
        var neg = q.quantize_new (new Piq.Format.per_channel (Piq.Dtype.INT8, -2), null, f32_matrix (xs, rows, cols));
        check (neg.get_bytes ().compare (t.get_bytes ()) == 0 && neg.get_scales ().compare (t.get_scales ()) == 0,
               "axis -2 differs from axis 0");
    });

    tests += new TestCase ("vala/shapes/per-channel/axis-1", () => {
        var q = new Piq.Quantizer ();
        int rows = 5, cols = 14;
        float[] xs = gen_b (rows * cols);
        var f = new Piq.Format.per_channel (Piq.Dtype.INT8, 1);
        var t = q.quantize_new (f, null, f32_matrix (xs, rows, cols));
        uint8[] sc = t.get_scales ().get_data ();
        uint8[] zp = t.get_zero_points ().get_data ();
        check (sc.length == 4 * cols && zp.length == 4 * cols, "one scale and zero point per column: %d, %d bytes".printf (sc.length, zp.length));
        size_t codes_size, scales_size, zps_size;
        f.get_sizes ({ rows, cols }, out codes_size, out scales_size, out zps_size);
        check (codes_size == rows * cols && scales_size == 4 * cols && zps_size == 4 * cols, "get_sizes ()");
        uint8[] codes = t.get_bytes ().get_data ();
        var want_y = new double[rows * cols];
        for (int c = 0; c < cols; c++) {
            var col = new float[rows];
            for (int r = 0; r < rows; r++)
                col[r] = xs[r * cols + c];
            double s;
            int64 z;
            minmax_params (col, Piq.Dtype.INT8, true, out s, out z);
            check (f32_at (sc, 4 * c) == s && int32_at (zp, 4 * c) == z,
                   "column %d: %g/%d, expected %g/%d".printf (c, f32_at (sc, 4 * c), int32_at (zp, 4 * c), s, (int) z));
            int64[] want = quantize_nearest (col, s, z, Piq.Dtype.INT8);
            var got = new int64[rows];
            for (int r = 0; r < rows; r++)
                got[r] = (int8) codes[r * cols + c];
            check_codes (got, want, "column %d codes (row-major storage)".printf (c));
            double[] y = dequantize_f32 (want, s, z);
            for (int r = 0; r < rows; r++)
                want_y[r * cols + c] = y[r];
        }
        check_doubles (q.dequantize_new (t, Piq.Dtype.F32).to_values (), want_y, "dequantized");
        var neg = q.quantize_new (new Piq.Format.per_channel (Piq.Dtype.INT8, -1), null, f32_matrix (xs, rows, cols));
        check (neg.get_bytes ().compare (t.get_bytes ()) == 0 && neg.get_scales ().compare (t.get_scales ()) == 0,
               "axis -1 differs from axis 1");
    });

    tests += new TestCase ("vala/shapes/per-block/ragged-rows", () => {
        var q = new Piq.Quantizer ();
        int rows = 3, cols = 70, block = 32; /* each row: blocks of 32, 32 and 6, never spanning rows */
        float[] xs = gen_a (rows * cols);
        var f = int8_blocks (block);
        size_t codes_size, scales_size, zps_size;
        f.get_sizes ({ rows, cols }, out codes_size, out scales_size, out zps_size);
        check (codes_size == 210 && scales_size == 4 * 9 && zps_size == 4 * 9,
               "[3, 70] in blocks of 32: %u %u %u".printf ((uint) codes_size, (uint) scales_size, (uint) zps_size));
        f.get_sizes ({ rows * cols }, out codes_size, out scales_size, out zps_size);
        check (scales_size == 4 * 7, "[210] in blocks of 32: %u scale bytes".printf ((uint) scales_size));
        var t = q.quantize_new (f, null, f32_matrix (xs, rows, cols));
        uint8[] sc = t.get_scales ().get_data ();
        uint8[] zp = t.get_zero_points ().get_data ();
        uint8[] codes = t.get_bytes ().get_data ();
        check (sc.length == 36 && zp.length == 36, "9 blocks");
        var want_y = new double[rows * cols];
        int k = 0;
        for (int r = 0; r < rows; r++) {
            for (int b0 = 0; b0 < cols; b0 += block, k++) {
                int lo = r * cols + b0, hi = r * cols + int.min (b0 + block, cols);
                float[] blk = xs[lo:hi];
                double s;
                int64 z;
                minmax_params (blk, Piq.Dtype.INT8, true, out s, out z);
                check (f32_at (sc, 4 * k) == s && int32_at (zp, 4 * k) == z,
                       "row %d block %d: %g/%d, expected %g/%d".printf (r, b0 / block, f32_at (sc, 4 * k),
                                                                       int32_at (zp, 4 * k), s, (int) z));
                int64[] want = quantize_nearest (blk, s, z, Piq.Dtype.INT8);
                var got = new int64[blk.length];
                for (int i = 0; i < blk.length; i++)
                    got[i] = (int8) codes[lo + i];
                check_codes (got, want, "row %d block %d codes".printf (r, b0 / block));
                double[] y = dequantize_f32 (want, s, z);
                for (int i = 0; i < blk.length; i++)
                    want_y[lo + i] = y[i];
            }
        }
        check_doubles (q.dequantize_new (t, Piq.Dtype.F32).to_values (), want_y, "dequantized");
        /* a reusable destination of the same format and shape gives the same bytes */
        var dst = new Piq.Tensor.quantized (f, { rows, cols });
        q.quantize (null, f32_matrix (xs, rows, cols), dst);
        check (dst.get_bytes ().compare (t.get_bytes ()) == 0 && dst.get_scales ().compare (t.get_scales ()) == 0,
               "quantize () into new_quantized () differs from quantize_new ()");
    });

    tests += new TestCase ("vala/immutability/format-construct-only", () => {  /* was format/immutable */
        var q = new Piq.Quantizer ();
        var f = new Piq.Format (Piq.Dtype.UINT8);
        /* every property is set at construction only */
        int n_construct_only = 0;
        foreach (unowned ParamSpec ps in f.get_class ().list_properties ()) {
            if ((ps.flags & ParamFlags.WRITABLE) != 0)
                check ((ps.flags & ParamFlags.CONSTRUCT_ONLY) != 0, "Piq.Format:%s is writable after construction".printf (ps.name));
            if ((ps.flags & ParamFlags.CONSTRUCT_ONLY) != 0)
                n_construct_only++;
        }
        /* dtype, granularity, axis, block-size, scale-dtype, symmetric, saturate, high-nibble-first, double-quant */
        check (n_construct_only >= 9, "%d construct-only properties".printf (n_construct_only));
        var src = f32_tensor (finite);
        var r = new Piq.Recipe ();
        q.compute_params (f, r, src);
        double s0 = r.scale;
        int64 z0 = r.zero_point;
        var t = q.quantize_new (f, r, src);
        double[] y0 = q.dequantize_new (t, Piq.Dtype.F32).to_values ();
        unowned Piq.Format? tf = t.get_format ();
        check (tf != null && tf.equal (f) && tf.dtype == Piq.Dtype.UINT8, "the tensor's format");
        /* nothing done to the recipe afterwards changes the tensor */
        r.scale = 3.0;
        r.zero_point = 1;
        r.round_mode = Piq.RoundMode.STOCHASTIC;
        check (t.get_scale () == s0 && t.get_zero_point () == z0, "the tensor's scale followed its recipe");
        check_doubles (q.dequantize_new (t, Piq.Dtype.F32).to_values (), y0, "decoding after the recipe changed");
        r.clear_scale ();
        check (t.get_scale () == s0 && t.get_zero_point () == z0, "clear_scale () reached the tensor");
        /* reusing the recipe for another tensor leaves the first alone */
        var t2 = q.quantize_new (f, new Piq.Recipe.affine (0.5, 7), src);
        check (t2.get_scale () == 0.5 && t.get_scale () == s0, "scales of two tensors");
        check_doubles (q.dequantize_new (t, Piq.Dtype.F32).to_values (), y0, "decoding after another quantize");
        /* a quantized tensor's shape is part of its meaning */
        try {
            t.reshape ({ 7, 43 });
            throw new TestError.FAILED ("reshape () of a quantized tensor accepted");
        } catch (Piq.Error e) {
        }
        check (t.get_n_dims () == 1 && t.get_dim (0) == finite.length, "reshape () changed a quantized tensor");
    });

    tests += new TestCase ("vala/error/no-silent-default", () => {
        var q = new Piq.Quantizer ();
        float[] xs = gen_a (64);
        var src = f32_tensor (xs);
        var u8 = new Piq.Format (Piq.Dtype.UINT8);
        var i8s = new Piq.Format.symmetric (Piq.Dtype.INT8);
        var nf4 = new Piq.Format.preset ("nf4");
        var fp8 = new Piq.Format (Piq.Dtype.FP8_E4M3);

        /* each: what once had a silent meaning, and the error it is now */
        var rule_minmax = new Piq.Recipe () { scale_rule = Piq.ScaleRule.MIN_MAX };
        var seed_nearest = new Piq.Recipe () { seed = 7 };
        var no_zero = new Piq.Recipe () { include_zero = false };
        var scale_and_rule = new Piq.Recipe.affine (0.5, 128) { scale_rule = Piq.ScaleRule.MIN_MAX };
        expect_refused (q, "MIN_MAX on a code format (was mapped to its rule)", nf4, rule_minmax, src,
                        Piq.Error.UNSUPPORTED);
        expect_refused (q, "a seed with nearest rounding (was ignored)", u8, seed_nearest, src, Piq.Error.UNSUPPORTED);
        expect_refused (q, "include-zero FALSE with the abs-max rule (was ignored)", i8s, no_zero, src,
                        Piq.Error.UNSUPPORTED);
        expect_refused (q, "a zero point on a symmetric format", i8s, new Piq.Recipe.affine (0.5, 0), src,
                        Piq.Error.INVALID_ZERO_POINT);
        expect_refused (q, "a zero point on a code format", fp8, new Piq.Recipe.affine (1.0, 0), src,
                        Piq.Error.INVALID_ZERO_POINT);
        expect_refused (q, "an affine scale without a zero point (was zero point 0)", u8, new Piq.Recipe.fixed (0.5),
                        src, Piq.Error.INVALID_ZERO_POINT);
        expect_refused (q, "a given scale on a per-channel format", new Piq.Format.per_channel (Piq.Dtype.INT8, 0),
                        new Piq.Recipe.affine (0.5, 0), src, Piq.Error.UNSUPPORTED);
        expect_refused (q, "a given scale on a per-block format", nf4, new Piq.Recipe.fixed (0.5), src,
                        Piq.Error.UNSUPPORTED);
        expect_refused (q, "a given scale with a non-DEFAULT rule", u8, scale_and_rule, src, Piq.Error.UNSUPPORTED);
        /* reading closest to overview.md: quantize derives as compute_params does, which refuses NaN/Inf */
        expect_refused (q, "NaN/Inf data with no given scale (was scale 1)", fp8, null,
                        f32_tensor ({ 1.0f, float.INFINITY, 2.0f, float.NAN }), Piq.Error.NON_FINITE);
        /* options that do not apply: refused at the first call, and by validate () before it */
        Piq.Format[] inapplicable = {
            (Piq.Format) Object.new (typeof (Piq.Format), "dtype", Piq.Dtype.UINT8, "block-size", 64),
            (Piq.Format) Object.new (typeof (Piq.Format), "dtype", Piq.Dtype.UINT8, "high-nibble-first", true),
            (Piq.Format) Object.new (typeof (Piq.Format), "dtype", Piq.Dtype.INT8, "axis", 1),
            (Piq.Format) Object.new (typeof (Piq.Format), "dtype", Piq.Dtype.INT8, "saturate", false),
        };
        string[] inapplicable_what = {
            "a block size on a per-tensor format (was ignored)", "high-nibble-first on 8-bit codes (was ignored)",
            "an axis without per-channel granularity", "saturate FALSE on an integer format (was ignored)"
        };
        for (int k = 0; k < inapplicable.length; k++) {
            expect_refused (q, inapplicable_what[k], inapplicable[k], null, src, Piq.Error.UNSUPPORTED);
            try {
                inapplicable[k].validate ();
                throw new TestError.FAILED ("validate () accepted %s".printf (inapplicable_what[k]));
            } catch (Piq.Error.UNSUPPORTED e) {
            }
        }
        /* and no silent scale 1: a NULL recipe derives the scale from the data */
        double s;
        int64 z;
        minmax_params (xs, Piq.Dtype.UINT8, true, out s, out z);
        var t = q.quantize_new (u8, null, src);
        check (t.get_scale () == s && t.get_zero_point () == z,
               "NULL recipe: %g/%d, expected %g/%d".printf (t.get_scale (), (int) t.get_zero_point (), s, (int) z));
    });

    tests += new TestCase ("vala/aliasing/requantize/in-place", () => {  /* was requantize/in-place */
        var q = new Piq.Quantizer ();
        int n = finite.length;
        var f = new Piq.Format (Piq.Dtype.UINT8);
        var r = new Piq.Recipe.affine (0.37, 100);
        double[] want = dequantize_f32 (quantize_nearest (finite, 0.37, 100, Piq.Dtype.UINT8), 0.37, 100);
        var out_t = new Piq.Tensor (Piq.Dtype.F32, n);
        q.requantize (f, r, f32_tensor (finite), out_t, Piq.ReduceOp.SET);
        check_doubles (out_t.to_values (), want, "requantize () out of place");
        /* exact in place, SET then ADD: element-wise, allowed */
        var t = f32_tensor (finite);
        check (q.requantize (f, r, t, t, Piq.ReduceOp.SET), "in-place requantize (SET)");
        check_doubles (t.to_values (), want, "requantize () in place");
        var t_add = f32_tensor (finite);
        q.requantize (f, r, t_add, t_add, Piq.ReduceOp.ADD);
        var want_add = new double[n];
        for (int i = 0; i < n; i++) {
            float v = finite[i] + (float) want[i];
            want_add[i] = v;
        }
        check_doubles (t_add.to_values (), want_add, "requantize () in place, ADD");
        /* the raw form, in place on a Vala array */
        float[] buf = finite[0:n];
        check (q.requantize_raw (f, r, Piq.Dtype.F32, (void*) buf, { n }, (void*) buf, n * sizeof (float),
                                 Piq.ReduceOp.SET), "requantize_raw () in place");
        check_doubles (as_doubles (buf), want, "requantize_raw () in place");
        /* a partial overlap is refused and writes nothing */
        float[] mem = new float[n + 1];
        for (int i = 0; i < n; i++)
            mem[i] = finite[i];
        float[] before = mem[0:n + 1];
        var a = new Piq.Tensor.for_address (Piq.Dtype.F32, { n }, (uintptr) mem, n * sizeof (float), 0, true);
        var b = new Piq.Tensor.for_address (Piq.Dtype.F32, { n }, (uintptr) mem + sizeof (float), n * sizeof (float), 0, true);
        try {
            q.requantize (f, r, a, b, Piq.ReduceOp.SET);
            throw new TestError.FAILED ("requantize () into a shifted overlap accepted");
        } catch (Piq.Error.OVERLAP e) {
        }
        try {
            q.requantize_raw (f, r, Piq.Dtype.F32, (void*) mem, { n }, (void*) ((float*) mem + 1), n * sizeof (float),
                              Piq.ReduceOp.SET);
            throw new TestError.FAILED ("requantize_raw () into a shifted overlap accepted");
        } catch (Piq.Error.OVERLAP e) {
        }
        /* quantized codes over their own source */
        double us;
        int64 uz;
        try {
            q.quantize_raw (f, r, Piq.Dtype.F32, (void*) mem, { n }, (void*) mem, n, null, 0, null, 0, out us, out uz);
            throw new TestError.FAILED ("quantize_raw () over its source accepted");
        } catch (Piq.Error.OVERLAP e) {
        }
        check (Memory.cmp (mem, before, (n + 1) * sizeof (float)) == 0, "a refused overlap wrote memory");
    });

    /* ---------------------------------- ported from the Python and GJS suites -- */

    tests += new TestCase ("vala/quantize/f32/uint8/params-attached", () => {
        var u8 = new Piq.Format (Piq.Dtype.UINT8);
        var src = f32_tensor (data);
        var dst = new Piq.Tensor.quantized (u8, { data.length });
        Piq.Quantizer.get_default ().quantize (new Piq.Recipe.affine (0.5, 100), src, dst);
        unowned Piq.Format? f = dst.get_format ();
        check (f != null, "the quantized tensor carries no format");
        check (f.dtype == Piq.Dtype.UINT8 && f.equal (u8), "attached format %s".printf (f.to_string ()));
        check (dst.get_scale () == 0.5 && dst.get_zero_point () == 100, "the tensor's scale and zero point");
        check (dst.get_scales () == null && dst.get_zero_points () == null, "a per-tensor format has scale arrays");
    });

    tests += new TestCase ("vala/dequantize/uint4/f32/set-then-add", () => {
        var q = new Piq.Quantizer ();
        var qt = q.quantize_new (new Piq.Format (Piq.Dtype.UINT4), new Piq.Recipe.affine (0.3, 6), f32_tensor (data));
        check (qt.get_dtype () == Piq.Dtype.UINT4 && qt.get_n_elements () == data.length, "quantize_new () tensor");
        int64[] codes = quantize_nearest (data, 0.3, 6, Piq.Dtype.UINT4);
        check_codes (unpack (qt.get_bytes ().get_data (), data.length, 4), codes, "quantize_new () bytes");
        double[] y = dequantize_f32 (codes, 0.3, 6);
        var out_t = new Piq.Tensor (Piq.Dtype.F32, data.length);
        q.dequantize (qt, out_t, Piq.ReduceOp.SET);
        check_doubles (out_t.to_values (), y, "SET");
        q.dequantize (qt, out_t, Piq.ReduceOp.ADD);
        var y2 = new double[y.length];
        for (int i = 0; i < y.length; i++) {
            float v = (float) y[i] * 2;
            y2[i] = v;
        }
        check_doubles (out_t.to_values (), y2, "SET then ADD");
        var made = q.dequantize_new (qt, Piq.Dtype.F32);
        check (made.get_dtype () == Piq.Dtype.F32, "dequantize_new () dtype");
        check_doubles (made.to_values (), y, "dequantize_new ()");
    });

    tests += new TestCase ("vala/quantize/int8/nearest", () => {
        var q = new Piq.Quantizer ();
        var qt = q.quantize_new (new Piq.Format (Piq.Dtype.INT8), new Piq.Recipe.affine (0.5, -3), f32_tensor (data));
        int64[] codes = quantize_nearest (data, 0.5, -3, Piq.Dtype.INT8);
        unowned uint8[] raw = qt.get_bytes ().get_data ();
        var got = new int64[raw.length];
        for (int i = 0; i < raw.length; i++)
            got[i] = (int8) raw[i];
        check_codes (got, codes, "int8 codes");
        check_doubles (q.dequantize_new (qt, Piq.Dtype.F32).to_values (), dequantize_f32 (codes, 0.5, -3),
                       "int8 dequantized");
    });

    tests += new TestCase ("vala/quantize/f64/uint8/nearest", () => {
        /* an f64 source is computed in binary64: inv = 1.0 / scale */
        var q = new Piq.Quantizer ();
        double[] dv = as_doubles (data);
        var src = new Piq.Tensor.from_values (Piq.Dtype.F64, dv);
        var qt = q.quantize_new (new Piq.Format (Piq.Dtype.UINT8), new Piq.Recipe.affine (0.1, 3), src);
        var codes = new int64[dv.length];
        var y = new double[dv.length];
        for (int i = 0; i < dv.length; i++) {
            codes[i] = clamp_code (round_half_even (dv[i] * (1.0 / 0.1)), 3, 0, 255);
            y[i] = (double) (codes[i] - 3) * 0.1;
        }
        check_codes (unpack (qt.get_bytes ().get_data (), dv.length, 8), codes, "codes");
        var out_t = new Piq.Tensor (Piq.Dtype.F64, dv.length);
        q.dequantize (qt, out_t, Piq.ReduceOp.SET);
        check_doubles (out_t.to_values (), y, "dequantized to f64");
        unowned uint8[] raw = out_t.get_bytes ().get_data ();
        var from_bytes = new double[dv.length];
        Memory.copy (from_bytes, raw, dv.length * sizeof (double));
        check_doubles (from_bytes, y, "f64 bytes");
    });

    tests += new TestCase ("vala/requantize/f32", () => {
        var q = new Piq.Quantizer ();
        var src = f32_tensor (data);
        var f4 = new Piq.Format (Piq.Dtype.UINT4);
        var p = new Piq.Recipe.affine (0.3, 6);
        double[] y = dequantize_f32 (quantize_nearest (data, 0.3, 6, Piq.Dtype.UINT4), 0.3, 6);
        var out_t = new Piq.Tensor (Piq.Dtype.F32, data.length);
        check (q.requantize (f4, p, src, out_t, Piq.ReduceOp.SET), "requantize (SET) returned false");
        check_doubles (out_t.to_values (), y, "SET");
        q.requantize (f4, p, src, out_t, Piq.ReduceOp.ADD);
        var y2 = new double[y.length];
        for (int i = 0; i < y.length; i++) {
            float v = (float) y[i] * 2;
            y2[i] = v;
        }
        check_doubles (out_t.to_values (), y2, "SET then ADD");
        var inplace = f32_tensor (data);
        q.requantize (f4, p, inplace, inplace, Piq.ReduceOp.SET);
        check_doubles (inplace.to_values (), y, "in place");
        /* ADD in place (the GJS suite's assertion) */
        var inplace_add = f32_tensor (data);
        q.requantize (f4, p, inplace_add, inplace_add, Piq.ReduceOp.ADD);
        var y3 = new double[y.length];
        for (int i = 0; i < y.length; i++) {
            float v = data[i] + (float) y[i];
            y3[i] = v;
        }
        check_doubles (inplace_add.to_values (), y3, "ADD in place");
        /* stochastic: the same grid points as quantize + dequantize with the seed */
        var sp = new Piq.Recipe.affine (0.37, 100) { round_mode = Piq.RoundMode.STOCHASTIC, seed = 31337 };
        var fout = new Piq.Tensor (Piq.Dtype.F32, finite.length);
        q.requantize (new Piq.Format (Piq.Dtype.UINT8), sp, f32_tensor (finite), fout, Piq.ReduceOp.SET);
        check_doubles (fout.to_values (),
                       dequantize_f32 (quantize_stochastic (finite, 0.37, 100, Piq.Dtype.UINT8, 31337), 0.37, 100),
                       "stochastic requantize vs the counter hash");
    });

    tests += new TestCase ("vala/reuse/output-tensors", () => {
        /* output tensors allocated once and reused */
        var q = new Piq.Quantizer ();
        var src = f32_tensor (finite);
        var qt = new Piq.Tensor.quantized (new Piq.Format (Piq.Dtype.UINT8), { finite.length });
        var acc = new Piq.Tensor (Piq.Dtype.F32, finite.length);
        acc.fill (0);
        var p = new Piq.Recipe.affine (0.05, 90);
        for (int k = 0; k < 50; k++) {
            q.quantize (p, src, qt);
            q.dequantize (qt, acc, Piq.ReduceOp.ADD);
        }
        double[] y = dequantize_f32 (quantize_nearest (finite, 0.05, 90, Piq.Dtype.UINT8), 0.05, 90);
        var want = new double[y.length];
        for (int i = 0; i < y.length; i++) {
            float sum = 0;
            for (int k = 0; k < 50; k++)
                sum = sum + (float) y[i];
            want[i] = sum;
        }
        check_doubles (acc.to_values (), want, "50 accumulations");
    });

    /* ----------------------------------- ported from the Python suite (2) -- */

    tests += new TestCase ("vala/dtype/enum-values", () => {
        /* the numeric values are ABI (piq-types.h) */
        Piq.Dtype[] dts = { Piq.Dtype.F32, Piq.Dtype.F64, Piq.Dtype.BF16, Piq.Dtype.F16, Piq.Dtype.UINT2,
                            Piq.Dtype.INT2, Piq.Dtype.UINT4, Piq.Dtype.INT4, Piq.Dtype.UINT8, Piq.Dtype.INT8,
                            Piq.Dtype.INT64 };
        int[] values = { 0, 1, 2, 3, 16, 17, 18, 19, 20, 21, 27 };
        for (int k = 0; k < dts.length; k++)
            check ((int) dts[k] == values[k], "%s = %d".printf (dts[k].to_string (), (int) dts[k]));
        check ((int) Piq.ReduceOp.SET == 0 && (int) Piq.ReduceOp.ADD == 1, "ReduceOp values");
        check ((int) Piq.Error.SIZE == 1 && (int) Piq.Error.INVALID_SCALE == 3, "Error values");
        check ((int) Piq.Error.NO_FORMAT == 8 && (int) Piq.Error.OVERLAP == 11, "NO_FORMAT and OVERLAP values");
        check ((int) Piq.ScaleRule.MIN_MAX == 0 && (int) Piq.ScaleRule.DEFAULT == 7, "ScaleRule values");
        check ((int) Piq.Granularity.TENSOR == 0 && (int) Piq.Granularity.CHANNEL == 1
               && (int) Piq.Granularity.BLOCK == 2, "Granularity values");
    });

    tests += new TestCase ("vala/dtype/functions", () => {
        var eclass = (EnumClass) typeof (Piq.Dtype).class_ref ();
        Piq.Dtype[] dts = { Piq.Dtype.UINT2, Piq.Dtype.INT2, Piq.Dtype.UINT4, Piq.Dtype.INT4, Piq.Dtype.UINT8,
                            Piq.Dtype.INT8, Piq.Dtype.UINT16, Piq.Dtype.INT16, Piq.Dtype.UINT32, Piq.Dtype.INT32,
                            Piq.Dtype.UINT64, Piq.Dtype.INT64, Piq.Dtype.F32, Piq.Dtype.F64, Piq.Dtype.BF16,
                            Piq.Dtype.F16 };
        uint[] bits = { 2, 2, 4, 4, 8, 8, 16, 16, 32, 32, 64, 64, 32, 64, 16, 16 };
        for (int k = 0; k < dts.length; k++) {
            Piq.Dtype dtype = dts[k];
            uint b = bits[k];
            string name = eclass.get_value (dtype).value_nick;
            check (dtype.get_bits () == b, "%s: %u bits".printf (name, dtype.get_bits ()));
            check (dtype.get_name () == name.replace ("-", ""), "get_name (%s) = %s".printf (name, dtype.get_name ()));
            Piq.Dtype found;
            check (Piq.Dtype.from_name (dtype.get_name (), out found) && found == dtype,
                   "from_name (%s)".printf (dtype.get_name ()));
            bool is_float = dtype == Piq.Dtype.F32 || dtype == Piq.Dtype.F64 || dtype == Piq.Dtype.BF16
                            || dtype == Piq.Dtype.F16;
            check (dtype.is_float () == is_float && dtype.is_quantized () != is_float,
                   "%s: is_float/is_quantized".printf (name));
            int64 lo;
            uint64 hi;
            bool ok = dtype.get_range (out lo, out hi);
            if (is_float) {
                check (!ok, "get_range (%s) succeeded".printf (name));
            } else {
                int64 want_lo = 0;
                uint64 want_hi = b == 64 ? uint64.MAX : ((uint64) 1 << b) - 1;
                if (name.has_prefix ("int")) {
                    want_lo = b == 64 ? int64.MIN : -((int64) 1 << (b - 1));
                    want_hi = ((uint64) 1 << (b - 1)) - 1;
                }
                check (ok && lo == want_lo && hi == want_hi,
                       ("get_range (%s) = %" + int64.FORMAT + ", %" + uint64.FORMAT + ", expected %" + int64.FORMAT
                        + ", %" + uint64.FORMAT).printf (name, lo, hi, want_lo, want_hi));
            }
            foreach (uint64 n in new uint64[] { 0, 1, 37, 1000003 }) {
                size_t size;
                check (dtype.get_size_for_n (n, out size) && size == (n * b + 7) / 8,
                       ("get_size_for_n (%s, %" + uint64.FORMAT + ") = %" + size_t.FORMAT).printf (name, n, size));
            }
        }
        Piq.Dtype unused;
        check (!Piq.Dtype.from_name ("uint3", out unused), "from_name ('uint3') succeeded");
        expect_error (Piq.Error.OVERFLOW, "get_size_for_n (F64, 2^63)", () => {
            size_t size;
            Piq.Dtype.F64.get_size_for_n ((uint64) 1 << 63, out size);
        });
    });

    tests += new TestCase ("vala/compute-params/abs-max", () => {
        /* the old ABS_MAX rule on integers is a symmetric format with its default rule */
        var q = new Piq.Quantizer ();
        var src = f32_tensor (finite);
        foreach (var dtype in new Piq.Dtype[] { Piq.Dtype.INT8, Piq.Dtype.UINT8, Piq.Dtype.INT4, Piq.Dtype.UINT4 }) {
            var fmt = (Piq.Format) Object.new (typeof (Piq.Format), "dtype", dtype, "symmetric", true);
            double want_scale;
            int64 want_zp;
            absmax_params (finite, dtype, out want_scale, out want_zp);
            Piq.Recipe p = null;
            foreach (var rule in new Piq.ScaleRule[] { Piq.ScaleRule.ABS_MAX, Piq.ScaleRule.DEFAULT }) {
                p = new Piq.Recipe () { scale_rule = rule };
                q.compute_params (fmt, p, src);
                check (p.scale == want_scale, "%s %s: scale %.9g, expected %.9g".printf (
                    dtype.to_string (), rule.to_string (), p.scale, want_scale));
                /* a symmetric format has no zero point to give: its zero point is implied */
                check (!p.has_zero_point, "%s: compute_params () gave a symmetric format a zero point".printf (dtype.to_string ()));
            }
            /* quantize with the calibrated DEFAULT recipe (p); a given scale with a named rule is refused */
            var qt = q.quantize_new (fmt, p, src);
            check (qt.get_zero_point () == want_zp, "%s: the tensor's zero point %d, expected %d".printf (
                dtype.to_string (), (int) qt.get_zero_point (), (int) want_zp));
            int64[] codes = quantize_nearest (finite, want_scale, want_zp, dtype);
            check_codes (signed_codes (qt.get_bytes ().get_data (), finite.length, dtype), codes,
                         "%s codes".printf (dtype.to_string ()));
            check_doubles (q.dequantize_new (qt, Piq.Dtype.F32).to_values (), dequantize_f32 (codes, want_scale, want_zp),
                           "%s dequantized".printf (dtype.to_string ()));
        }
    });

    tests += new TestCase ("vala/compute-params/mean-std", () => {
        /* dyadic data: every partial sum is exact, so the summation order cannot matter */
        var xs = new float[203];
        for (int i = 0; i < xs.length; i++)
            xs[i] = (float) (((i * 37) % 61 - 20) / 4.0);
        var q = new Piq.Quantizer ();
        var src = f32_tensor (xs);
        foreach (var dtype in new Piq.Dtype[] { Piq.Dtype.UINT8, Piq.Dtype.INT8, Piq.Dtype.UINT4 }) {
            var p = new Piq.Recipe () { scale_rule = Piq.ScaleRule.MEAN_STD };
            q.compute_params (new Piq.Format (dtype), p, src);
            double scale;
            int64 zp;
            meanstd_params (as_doubles (xs), dtype, out scale, out zp);
            check (Math.fabs (p.scale - scale) <= 4e-16 * scale,
                   "%s: scale %.17g, expected %.17g".printf (dtype.to_string (), p.scale, scale));
            check (p.zero_point == zp, "%s: zero point %d, expected %d".printf (dtype.to_string (), (int) p.zero_point, (int) zp));
        }
    });

    tests += new TestCase ("vala/quantize/stochastic/probability", () => {
        int n = 20000;
        var q = new Piq.Quantizer ();
        var xs = new float[n];
        for (int i = 0; i < n; i++)
            xs[i] = 2.3f;  /* v = 2.3 / 1 in binary32: frac ≈ 0.3 */
        var src = f32_tensor (xs);
        var p = new Piq.Recipe () { scale = 1.0, zero_point = 0, round_mode = Piq.RoundMode.STOCHASTIC, seed = 7 };
        unowned uint8[] codes = q.quantize_new (new Piq.Format (Piq.Dtype.UINT8), p, src).get_bytes ().get_data ();
        int up = 0;
        for (int i = 0; i < n; i++) {
            check (codes[i] == 2 || codes[i] == 3, "code %u outside {2, 3}".printf (codes[i]));
            if (codes[i] == 3)
                up++;
        }
        double frac = (double) 2.3f - 2.0;
        double rate = (double) up / n;
        double sigma = Math.sqrt (frac * (1 - frac) / n);
        check (Math.fabs (rate - frac) < 5 * sigma,
               "rounded up %.4f of the time, expected %.4f ± %.4f".printf (rate, frac, 5 * sigma));
    });

    tests += new TestCase ("vala/address/dequantize-into-buffer", () => {  /* was numpy/zero-copy/dequantize-into-array */
        var q = new Piq.Quantizer ();
        var src = f32_tensor (data);
        int n = data.length;
        var qt = q.quantize_new (new Piq.Format (Piq.Dtype.UINT8), new Piq.Recipe.affine (0.1, 3), src);
        double[] yd = dequantize_f32 (quantize_nearest (data, 0.1, 3, Piq.Dtype.UINT8), 0.1, 3);
        var y = new float[n];
        for (int i = 0; i < n; i++)
            y[i] = (float) yd[i];
        var out_a = new float[n];
        for (int i = 0; i < n; i++)
            out_a[i] = 1.5f;
        var t = new Piq.Tensor.for_address (Piq.Dtype.F32, { n }, (uintptr) out_a, n * sizeof (float), 0, true);
        uint64[] shape = t.get_shape ();
        check (t.is_writable () && shape.length == 1 && shape[0] == n, "wrapped tensor");
        var want = new float[n];
        q.dequantize (qt, t, Piq.ReduceOp.ADD);
        for (int i = 0; i < n; i++)
            want[i] = 1.5f + y[i];
        check_doubles (as_doubles (out_a), as_doubles (want), "ADD into 1.5");
        q.dequantize (qt, t, Piq.ReduceOp.SET);
        check_doubles (as_doubles (out_a), as_doubles (y), "SET");
        q.dequantize (qt, t, Piq.ReduceOp.ADD);
        for (int i = 0; i < n; i++)
            want[i] = y[i] + y[i];
        check_doubles (as_doubles (out_a), as_doubles (want), "SET then ADD");
        var got = new float[n];
        Memory.copy (got, t.get_bytes ().get_data (), n * sizeof (float));
        check_doubles (as_doubles (got), as_doubles (want), "get_bytes ()");
        /* the raw form, into a Vala array */
        var raw_out = new float[n];
        unowned uint8[] codes = qt.get_bytes ().get_data ();
        check (q.dequantize_raw (new Piq.Format (Piq.Dtype.UINT8), 0.1, 3, (void*) codes, n, { n }, null, 0, null, 0,
                                 Piq.Dtype.F32, (void*) raw_out, n * sizeof (float), Piq.ReduceOp.SET),
               "dequantize_raw ()");
        check_doubles (as_doubles (raw_out), as_doubles (y), "dequantize_raw ()");
    });

    tests += new TestCase ("vala/address/wrap-source", () => {  /* was numpy/zero-copy/source-address */
        var q = new Piq.Quantizer ();
        float[] x = data[0:data.length];
        var src = new Piq.Tensor.for_address (Piq.Dtype.F32, { x.length }, (uintptr) x, x.length * sizeof (float), 0, false);
        check (!src.is_writable (), "read-only source is writable");
        var qt = q.quantize_new (new Piq.Format (Piq.Dtype.UINT8), new Piq.Recipe.affine (0.5, 128), src);
        check_codes (unpack (qt.get_bytes ().get_data (), x.length, 8), quantize_nearest (data, 0.5, 128, Piq.Dtype.UINT8),
                     "codes");
        x[0] = 10.0f;  /* the tensor sees the array: no copy was made */
        check (src.get_value (0) == 10.0, "the wrapped tensor reads %g after the array changed".printf (src.get_value (0)));
    });

    tests += new TestCase ("vala/observer/min-max/merge-and-state", () => {
        int half = finite.length / 2;
        var a = new Piq.Observer (Piq.ObserverKind.MIN_MAX);
        var b = new Piq.Observer (Piq.ObserverKind.MIN_MAX);
        var whole = new Piq.Observer (Piq.ObserverKind.MIN_MAX);
        a.observe (f32_tensor (finite[0:half]));
        b.observe (f32_tensor (finite[half:finite.length]));
        whole.observe (f32_tensor (finite));
        a.merge (b);
        check (a.get_min ().compare (whole.get_min ()) == 0 && a.get_max ().compare (whole.get_max ()) == 0,
               "merged halves differ from one observer");
        var back = new Piq.Observer.deserialize (a.serialize ());
        check (back.get_min ().compare (a.get_min ()) == 0 && back.get_max ().compare (a.get_max ()) == 0
               && back.get_n_batches () == 2, "state round trip");
        var r = back.compute_recipe (new Piq.Format (Piq.Dtype.UINT8));
        double scale;
        int64 zp;
        minmax_params (finite, Piq.Dtype.UINT8, true, out scale, out zp);
        check (r.scale == scale && r.zero_point == zp, "recipe %.9g/%d, expected %.9g/%d".printf (
            r.scale, (int) r.zero_point, scale, (int) zp));
    });

    tests += new TestCase ("vala/qat/per-tensor/ste-and-lsq", () => {
        var q = new Piq.Quantizer ();
        var u8 = new Piq.Format (Piq.Dtype.UINT8);
        float[] xs = { -6.0f, -1.25f, 0.0f, 0.75f, 3.0f, 200.0f };
        var src = f32_tensor (xs);
        var out_t = new Piq.Tensor (Piq.Dtype.F32, xs.length);
        var mask = new Piq.Tensor (Piq.Dtype.UINT8, xs.length);
        check (q.fake_quantize_per_tensor (u8, src, 0.5, 10, out_t, mask), "fake_quantize_per_tensor");
        check_doubles (out_t.to_values (), { -5.0, -1.0, 0.0, 1.0, 3.0, 122.5 }, "values");
        check_codes (unpack (mask.get_bytes ().get_data (), xs.length, 8), { 0, 1, 1, 1, 1, 0 }, "mask");
        var grad_src = new Piq.Tensor (Piq.Dtype.F32, xs.length);
        double g_scale, g_zp;
        check (q.fake_quantize_per_tensor_backward (u8, src, 0.5, 10, f32_tensor ({ 1, 2, 3, 4, 5, 6 }), 1.0,
                                                    grad_src, out g_scale, out g_zp),
               "fake_quantize_per_tensor_backward");
        check_doubles (grad_src.to_values (), { 0, 2, 3, 4, 5, 0 }, "STE gradient");
        /* −10 (clamped below) + 1 + 0 + 2 + 0 + 1470 (clamped above); −0.5 − 3 */
        check (g_scale == 1463 && g_zp == -3.5, "gradients %.17g, %.17g".printf (g_scale, g_zp));
    });

    tests += new TestCase ("vala/matmul/int8-weights/both-policies", () => {
        var q = new Piq.Quantizer ();
        /* W = [[1, 2, 3], [-4, 5, -6]] as int8 codes with scale 1: every product is exact */
        uint8[] codes = { 1, 2, 3, 0xfc, 5, 0xfa };
        var w = new Piq.Tensor.quantized_from_bytes (new Piq.Format (Piq.Dtype.INT8), { 2, 3 },
                                                     new GLib.Bytes (codes), null, null, 1.0, 0);
        var x = f32_tensor ({ 127, -2, 5 });   /* amax 127: the int8 activations are x itself */
        var bias = f32_tensor ({ 0.5f, -1 });
        Piq.Activation[] acts = { Piq.Activation.FLOAT, Piq.Activation.DYNAMIC_INT8 };
        foreach (var act in acts) {
            var pw = new Piq.PackedWeights (w, act);
            check (pw.get_n_out () == 2 && pw.get_n_in () == 3 && pw.get_activation () == act, "packed shape");
            check (pw.get_weights () == w, "the packed weights keep their tensor");
            check ((pw.get_n_bytes () == 0) == (act == Piq.Activation.FLOAT), "bytes held: %zu".printf (pw.get_n_bytes ()));
            var y = q.matmul_new (x, pw, bias, Piq.Dtype.F32);
            check (y.get_n_dims () == 1 && y.get_dim (0) == 2, "output shape");
            check_doubles (y.to_values (), { 138.5, -549 }, "X·Wᵀ + bias");
            check (q.matmul (x, pw, bias, y, Piq.ReduceOp.ADD), "matmul ADD");
            check_doubles (y.to_values (), { 277, -1098 }, "ADD");
        }
        expect_error (Piq.Error.UNSUPPORTED, "supports (nf4, dynamic int8)", () => {
            Piq.PackedWeights.supports (new Piq.Format.preset ("nf4"), Piq.Activation.DYNAMIC_INT8);
        });
    });

    tests += new TestCase ("vala/matmul/binary/xnor-popcount", () => {
        var q = new Piq.Quantizer ();
        var fmt = new Piq.Format.preset ("binary");   /* blocks of 128 > 40: one block per row */
        /* W [3, 40]: row 0 all +, row 1 all −, row 2 + for its first 20; scales 2, 0.5, 1 */
        uint8[] codes = { 0xff, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0, 0, 0xff, 0xff, 0x0f, 0, 0 };
        float[] scales = { 2, 0.5f, 1 };
        var w = new Piq.Tensor.quantized_from_bytes (fmt, { 3, 40 }, new GLib.Bytes (codes),
                                                     array_bytes (scales, 3 * sizeof (float)), null, 1.0, 0);
        var pw = new Piq.PackedWeights (w, Piq.Activation.BINARY);
        check (pw.get_activation () == Piq.Activation.BINARY, "packed for the binary policy");
        /* X [2, 40]: row 0 −2 ×10 then 1 ×30 (mean |x| 1.25), row 1 0.5 ×30 then −0.5 ×10 (mean 0.5) */
        float[] xs = new float[80];
        for (int i = 0; i < 40; i++) {
            xs[i] = i < 10 ? -2.0f : 1.0f;
            xs[40 + i] = i < 30 ? 0.5f : -0.5f;
        }
        var x = f32_matrix (xs, 2, 40);
        var bias = f32_tensor ({ 0.5f, -1, 0.25f });
        /* sx · sw · (agreeing − disagreeing bits) + bias */
        double[] want = { 1.25 * 2 * 20 + 0.5, 1.25 * 0.5 * -20 - 1, 1.25 * -20 + 0.25,
                          0.5 * 2 * 20 + 0.5, 0.5 * 0.5 * -20 - 1, 0.5 * 20 + 0.25 };
        var y = q.matmul_new (x, pw, bias, Piq.Dtype.F32);
        check (y.get_n_dims () == 2 && y.get_dim (0) == 2 && y.get_dim (1) == 3, "output shape");
        check_doubles (y.to_values (), want, "XNOR-popcount product");
        check (q.matmul (x, pw, bias, y, Piq.ReduceOp.ADD), "matmul ADD");
        double[] twice = new double[6];
        for (int i = 0; i < 6; i++)
            twice[i] = 2 * want[i];
        check_doubles (y.to_values (), twice, "ADD");
        var a = q.quantize_new (fmt, null, x);
        var y2 = new Piq.Tensor.shaped (Piq.Dtype.F32, { 2, 3 });
        check (q.matmul_quantized (a, pw, bias, null, y2, Piq.ReduceOp.SET), "matmul_quantized, binary A");
        check_doubles (y2.to_values (), want, "binary A × binary W");
        expect_error (Piq.Error.UNSUPPORTED, "supports (nf4, binary)", () => {
            Piq.PackedWeights.supports (new Piq.Format.preset ("nf4"), Piq.Activation.BINARY);
        });
    });

    tests += new TestCase ("vala/tensor/addresses", () => {
        var q = new Piq.Quantizer ();
        float[] xv = new float[128];
        for (int i = 0; i < 128; i++)
            xv[i] = (float) (Math.sin (i) * 3);
        var x = f32_tensor (xv);
        check (x.reshape ({ 2, 64 }), "reshape");
        Piq.Format[] formats = { new Piq.Format.preset ("nf4"), new Piq.Format.per_channel (Piq.Dtype.UINT8, 0) };
        foreach (var fmt in formats) {
            var t = q.quantize_new (fmt, null, x);
            for (int which = 0; which < 3; which++) {
                size_t size;
                uintptr address = which == 0 ? t.get_address (out size)
                                : which == 1 ? t.get_scales_address (out size)
                                             : t.get_zero_points_address (out size);
                GLib.Bytes? b = which == 0 ? t.get_bytes () : which == 1 ? t.get_scales () : t.get_zero_points ();
                if (b == null) {
                    check (address == 0 && size == 0, "no buffer: address 0, size 0");
                } else {
                    check (address != 0 && size == b.get_size (), "address and size");
                    check (Memory.cmp ((void*) address, b.get_data (), size) == 0, "the bytes at the address");
                }
            }
        }
        size_t n;
        check (new Piq.Tensor (Piq.Dtype.F32, 0).get_address (out n) == 0 && n == 0, "an empty tensor");
    });

    tests += new TestCase ("vala/io/npy-piqt/round-trip", () => {
        var q = new Piq.Quantizer ();
        string dir = DirUtils.make_tmp ("piq-io-XXXXXX");
        string npy_path = Path.build_filename (dir, "x.npy"), piqt_path = Path.build_filename (dir, "w.piqt");
        var npy = File.new_for_path (npy_path);
        var piqt = File.new_for_path (piqt_path);
        float[] vals = { 0.5f, -1.25f, 3, 7.5f, -0.0f, 2 };
        var x = f32_tensor (vals);
        check (x.reshape ({ 2, 3 }), "reshape");
        check (x.save_to_file (npy, Piq.FileFormat.NPY), "save .npy");
        /* numpy.save's header for a (2, 3) float32 array (NEP 1): magic, version 1.0,
         * length 118, the dict padded with spaces to byte 127, '\n' */
        var want = new StringBuilder ();
        want.append_c ((char) 0x93).append ("NUMPY").append_c ((char) 1).append_c ((char) 0)
            .append_c ((char) 118).append_c ((char) 0)
            .append ("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }");
        while (want.len < 127)
            want.append_c (' ');
        want.append_c ('\n');
        uint8[] raw;
        FileUtils.get_data (npy_path, out raw);
        check (raw.length == 128 + 24 && Memory.cmp (raw, want.data, 128) == 0, "numpy's header");
        check (Memory.cmp ((uint8*) raw + 128, (uint8*) vals, 24) == 0, "numpy's data");
        var back = new Piq.Tensor.from_file (npy);
        check (back.get_n_dims () == 2 && back.get_dim (0) == 2 && back.get_dim (1) == 3, "shape read back");
        double[] want_vals = {};
        foreach (var v in vals)
            want_vals += v;
        check_doubles (back.to_values (), want_vals, "values read back");
        /* a quantized tensor keeps its format, scales and codes in a container */
        float[] wv = new float[128];
        for (int i = 0; i < 128; i++)
            wv[i] = (float) (Math.sin (i) * 3);
        var nf4 = q.quantize_new (new Piq.Format.preset ("nf4"), null, f32_tensor (wv));
        check (nf4.save_to_file (piqt, Piq.FileFormat.PIQT), "save .piqt");
        var wb = new Piq.Tensor.from_file (piqt);
        check (wb.get_format ().equal (nf4.get_format ()), "the format comes back");
        check (wb.get_bytes ().compare (nf4.get_bytes ()) == 0, "the codes come back");
        check (wb.get_scales ().compare (nf4.get_scales ()) == 0, "the scales come back");
        check_doubles (q.dequantize_new (wb, Piq.Dtype.F32).to_values (),
                       q.dequantize_new (nf4, Piq.Dtype.F32).to_values (), "it decodes the same");
        expect_error (Piq.Error.UNSUPPORTED, "save a quantized tensor as .npy", () => {
            nf4.save_to_file (npy, Piq.FileFormat.NPY);
        });
        uint8[] whole;
        FileUtils.get_data (piqt_path, out whole);
        FileUtils.set_data (piqt_path, whole[0:100]);
        expect_error (Piq.Error.FILE_FORMAT, "load a truncated container", () => {
            new Piq.Tensor.from_file (piqt);
        });
        string[] names = {};
        var d = Dir.open (dir);
        for (unowned string? n = d.read_name (); n != null; n = d.read_name ())
            names += n;
        check (names.length == 2 && ((names[0] == "w.piqt" && names[1] == "x.npy") ||
                                     (names[0] == "x.npy" && names[1] == "w.piqt")), "no temporary files left");
        FileUtils.remove (npy_path);
        FileUtils.remove (piqt_path);
        DirUtils.remove (dir);
    });

    tests += new TestCase ("vala/io/safetensors/round-trip", () => {
        var q = new Piq.Quantizer ();
        var st = new Piq.Safetensors ();
        var a = f32_tensor ({ 0.5f, 1.5f, -2, 4 });
        check (a.reshape ({ 2, 2 }), "reshape");
        float[] wv = new float[128];
        for (int i = 0; i < 128; i++)
            wv[i] = (float) (Math.cos (i) * 2);
        var nf4 = q.quantize_new (new Piq.Format.preset ("nf4"), null, f32_tensor (wv));
        st.set_tensor ("a", a);
        st.set_tensor ("w", nf4);
        st.set_metadata ("model", "test");
        string dir = DirUtils.make_tmp ("piq-st-XXXXXX");
        string path = Path.build_filename (dir, "m.safetensors");
        var file = File.new_for_path (path);
        check (st.save_to_file (file), "save");
        /* the file as the published format defines it: length, JSON, data */
        uint8[] raw;
        FileUtils.get_data (path, out raw);
        uint64 n = 0;
        for (int i = 7; i >= 0; i--)
            n = n << 8 | raw[i];
        string head = ((string) raw[8:8 + (int) n]).dup ();
        check (n % 8 == 0 && head[0] == '{', "header length and JSON");
        check ("\"a\":{\"dtype\":\"F32\",\"shape\":[2,2],\"data_offsets\":[0,16]}" in head, "a's entry: " + head);
        check ("\"w.piq_scales\"" in head, "the scales entry");
        var back = new Piq.Safetensors.from_file (file);
        var names = back.get_names ();
        check (names.length == 2 && names[0] == "a" && names[1] == "w", "names read back");
        check_doubles (back.get_tensor ("a").to_values (), { 0.5, 1.5, -2, 4 }, "values read back");
        check (back.get_metadata ("model") == "test", "metadata read back");
        var wb = back.get_tensor ("w");
        check (wb.get_format ().equal (nf4.get_format ()) && wb.get_bytes ().compare (nf4.get_bytes ()) == 0, "NF4 read back");
        st.set_tensor ("w.piq_scales", a);
        expect_error (Piq.Error.UNSUPPORTED, "a name the scales would take", () => {
            st.save_to_file (file);
        });
        FileUtils.remove (path);
        DirUtils.remove (dir);
    });

    tests += new TestCase ("vala/matmul/int8-gemm/zero-points", () => {
        var q = new Piq.Quantizer ();
        /* A = [[130, 126, 128]] with zero point 128 and scale 0.5: a − za = [2, −2, 0] */
        uint8[] a_codes = { 130, 126, 128 };
        uint8[] w_codes = { 1, 2, 3, 0xfc, 5, 0xfa };
        var a = new Piq.Tensor.quantized_from_bytes (new Piq.Format (Piq.Dtype.UINT8), { 1, 3 },
                                                     new GLib.Bytes (a_codes), null, null, 0.5, 128);
        var w = new Piq.Tensor.quantized_from_bytes (new Piq.Format (Piq.Dtype.INT8), { 2, 3 },
                                                     new GLib.Bytes (w_codes), null, null, 1.0, 0);
        var pw = new Piq.PackedWeights (w, Piq.Activation.DYNAMIC_INT8);
        var sums = new Piq.Tensor.shaped (Piq.Dtype.INT32, { 1, 2 });
        check (q.matmul_quantized (a, pw, null, null, sums, Piq.ReduceOp.SET), "int32 output");
        unowned uint8[] raw = sums.get_bytes ().get_data ();
        int32 s0 = (int32) ((uint32) raw[0] | (uint32) raw[1] << 8 | (uint32) raw[2] << 16 | (uint32) raw[3] << 24);
        int32 s1 = (int32) ((uint32) raw[4] | (uint32) raw[5] << 8 | (uint32) raw[6] << 16 | (uint32) raw[7] << 24);
        check (s0 == -2 && s1 == -18, "exact sums %d, %d".printf (s0, s1));
        var bias = f32_tensor ({ 0.5f, -1 });
        var y = new Piq.Tensor.shaped (Piq.Dtype.F32, { 1, 2 });
        check (q.matmul_quantized (a, pw, bias, null, y, Piq.ReduceOp.SET), "float output");
        check_doubles (y.to_values (), { -0.5, -10 }, "sa · sw · sum + bias");
        var codes = new Piq.Tensor.quantized (new Piq.Format (Piq.Dtype.UINT8), { 1, 2 });
        check (q.matmul_quantized (a, pw, bias, new Piq.Recipe.affine (0.25, 128), codes, Piq.ReduceOp.SET), "requantized");
        unowned uint8[] c = codes.get_bytes ().get_data ();
        check (c[0] == 126 && c[1] == 88, "codes %u, %u".printf (c[0], c[1]));
        check (codes.get_scale () == 0.25 && codes.get_zero_point () == 128, "output scale and zero point");
    });

    tests += new TestCase ("vala/matmul/fp8/both-quantized", () => {
        var q = new Piq.Quantizer ();
        var fp8 = new Piq.Format.preset ("fp8_e4m3");
        var x = f32_matrix ({ 1, -2, 0.5f, 3, 0.25f, -1 }, 2, 3);
        var wx = f32_matrix ({ 1, 2, 3, -4, 5, -6 }, 2, 3);
        var a = q.quantize_new (fp8, new Piq.Recipe.fixed (1.0), x);   /* every value is an E4M3 value */
        var w = q.quantize_new (fp8, new Piq.Recipe.fixed (1.0), wx);
        var pw = new Piq.PackedWeights (w, Piq.Activation.FLOAT);
        var bias = f32_tensor ({ 0.5f, -1 });
        var y = new Piq.Tensor.shaped (Piq.Dtype.F32, { 2, 2 });
        check (q.matmul_quantized (a, pw, bias, null, y, Piq.ReduceOp.SET), "matmul_quantized");
        check_doubles (y.to_values (), { -1, -18, 1, -5.75 }, "A·Wᵀ + bias");
        var reference = q.matmul_new (q.dequantize_new (a, Piq.Dtype.F32), pw, bias, Piq.Dtype.F32);
        check (y.get_bytes ().compare (reference.get_bytes ()) == 0, "the bytes of matmul(dequantize(A), W)");
        check (q.matmul_quantized (a, pw, bias, null, y, Piq.ReduceOp.ADD), "matmul_quantized ADD");
        check_doubles (y.to_values (), { -2, -36, 2, -11.5 }, "ADD");
        var w8 = q.quantize_new (new Piq.Format.preset ("int8_block"), null, wx);
        var pw8 = new Piq.PackedWeights (w8, Piq.Activation.DYNAMIC_INT8);
        try {
            q.matmul_quantized (a, pw8, null, null, y, Piq.ReduceOp.SET);
            throw new TestError.FAILED ("FP8 A with weights packed for dynamic int8 accepted");
        } catch (Piq.Error.UNSUPPORTED e) {
        }
        check_doubles (y.to_values (), { -2, -36, 2, -11.5 }, "nothing written on error");
    });

    tests += new TestCase ("vala/large/threads-and-simd", () => {
        int n = 262147;
        double[] g = normals (n, 20240611);
        var x = new float[n];
        for (int i = 0; i < n; i++)
            x[i] = (float) (g[i] * 40);
        for (int i = 0; i < n; i += 97)
            x[i] = (float) (round_half_even (x[i]) + 0.25);  /* ties for scale 0.5: v = 2k + 0.5 */
        for (int i = 1; i < n; i += 89)
            x[i] = (float) (round_half_even (x[i]) + 0.75);  /* v = 2k + 1.5 */
        var u8 = new Piq.Format (Piq.Dtype.UINT8);
        var src = new Piq.Tensor.for_address (Piq.Dtype.F32, { n }, (uintptr) x, n * sizeof (float), 0, false);
        int64[] want = quantize_nearest (x, 0.5, 128, Piq.Dtype.UINT8);
        var wy = new float[n];
        for (int i = 0; i < n; i++)
            wy[i] = (float) (want[i] - 128) * 0.5f;
        string[] labels = { "1 thread", "4 threads", "all cores", "scalar" };
        Piq.Quantizer[] qs = {
            new Piq.Quantizer () { n_threads = 1 }, new Piq.Quantizer () { n_threads = 4 },
            new Piq.Quantizer () { n_threads = 0 },
            new Piq.Quantizer () { n_threads = 3, max_simd_level = Piq.SimdLevel.SCALAR }
        };
        Bytes[] results = {};
        for (int k = 0; k < qs.length; k++) {
            var q = qs[k];
            var dst = new Piq.Tensor.quantized (u8, { n });
            q.quantize (new Piq.Recipe.affine (0.5, 128), src, dst);
            unowned uint8[] codes = dst.get_bytes ().get_data ();
            int bad = 0, first = -1;
            for (int i = 0; i < n; i++) {
                if (codes[i] != want[i]) {
                    if (bad++ == 0)
                        first = i;
                }
            }
            check (bad == 0, "%s: %d codes differ, first at %d".printf (labels[k], bad, first));
            var raw = new uint8[n];
            double s;
            int64 z;
            q.quantize_raw (u8, new Piq.Recipe.affine (0.5, 128), Piq.Dtype.F32, (void*) x, { n }, (void*) raw, n,
                            null, 0, null, 0, out s, out z);
            check (Memory.cmp (raw, codes, n) == 0, "%s: quantize_raw () differs from quantize ()".printf (labels[k]));
            var y = new float[n];
            var out_t = new Piq.Tensor.for_address (Piq.Dtype.F32, { n }, (uintptr) y, n * sizeof (float), 0, true);
            q.dequantize (dst, out_t, Piq.ReduceOp.SET);
            check (floats_equal (y, wy), "%s: dequantized values differ".printf (labels[k]));
            var p = new Piq.Recipe () { round_mode = Piq.RoundMode.STOCHASTIC, seed = 99, scale = 9.0, zero_point = 8 };
            results += q.quantize_new (new Piq.Format (Piq.Dtype.UINT4), p, src).get_bytes ();
        }
        for (int k = 1; k < results.length; k++)
            check (results[k].compare (results[0]) == 0,
                   "stochastic uint4 bytes of %s differ from %s".printf (labels[k], labels[0]));
    });

    tests += new TestCase ("vala/formats/msfp16/shared-exponent", () => {
        /* MSFP16: sign + 7-bit magnitude per element, one exponent byte per box of 16:
         * E = the box maximum's binary32 exponent + 1 (+1 when rounding it carries),
         * value = (-1)^s * mag * 2^(E - 127 - 7); computed here from the definition */
        var q = new Piq.Quantizer ();
        float[] xs = gen_a (40);  /* boxes of 16, 16 and a ragged 8 */
        var src = f32_tensor (xs);
        var p = new Piq.Format.preset ("msfp16");
        check (p.dtype == Piq.Dtype.BFP7 && p.get_block_size () == 16, "msfp16 preset");
        var t = q.quantize_new (p, null, src);
        check (t.get_n_bytes () == 40, "40 bfp7 elements take %u bytes".printf ((uint) t.get_n_bytes ()));
        uint8[] exps = t.get_scales ().get_data ();
        uint8[] codes = t.get_bytes ().get_data ();
        double[] y = q.dequantize_new (t, Piq.Dtype.F32).to_values ();
        for (int b0 = 0; b0 < 40; b0 += 16) {
            int end = int.min (b0 + 16, 40);
            double amax = 0;
            for (int i = b0; i < end; i++)
                amax = double.max (amax, Math.fabs (xs[i]));
            int e = -127;
            if (amax != 0) {
                Math.frexp (amax, out e);  /* amax < 2^e */
                if (round_half_even (Math.ldexp (amax, 7 - e)) >= 128)
                    e += 1;
            }
            int want_e = amax != 0 ? e + 127 : 0;
            check (exps[b0 / 16] == want_e, "box %d: exponent %u, want %d".printf (b0 / 16, exps[b0 / 16], want_e));
            for (int i = b0; i < end; i++) {
                double v = xs[i];
                int mag = int.min ((int) round_half_even (Math.ldexp (Math.fabs (v), 127 + 7 - want_e)), 127);
                int want = (is_negative (v) ? 128 : 0) | mag;
                check (codes[i] == want, "element %d: code %u, want %d".printf (i, codes[i], want));
                double val = Math.copysign (Math.ldexp (mag, want_e - 127 - 7), v);
                check (y[i] == val, "element %d: %.9g, want %.9g".printf (i, y[i], val));
            }
        }
    });

    tests += new TestCase ("vala/formats/nf4/double-quant", () => {
        /* bitsandbytes' compress_statistics: the same codes as plain nf4, the scales
         * stored as an f32 offset, one f32 per 256 blocks and a byte per block */
        var q = new Piq.Quantizer ();
        int n = 64 * 300 + 5;
        float[] xs = gen_a (n);
        var src = f32_tensor (xs);
        var plain = q.quantize_new (new Piq.Format.preset ("nf4"), null, src);
        var p = new Piq.Format.preset ("nf4_dq");
        check (p.double_quant, "nf4_dq preset");
        var t = q.quantize_new (p, null, src);
        check (t.get_bytes ().compare (plain.get_bytes ()) == 0, "double quantization changed the codes");
        int blocks = (n + 63) / 64;
        size_t size = t.get_scales ().get_size ();
        check (size == 4 + 4 * 2 + blocks, "scales take %u bytes".printf ((uint) size));
        size_t codes_size, want_size, zps_size;
        p.get_sizes ({ n }, out codes_size, out want_size, out zps_size);
        check (want_size == size, "get_sizes () gives %u scale bytes".printf ((uint) want_size));
        uint8[] absmax = plain.get_scales ().get_data ();
        double sum = 0;  /* binary64: exact for 301 binary32 values of one binade */
        for (int b = 0; b < blocks; b++)
            sum += f32_at (absmax, 4 * b);
        float offset = f32_at (t.get_scales ().get_data (), 0);
        check (offset == (float) (sum / blocks), "offset %.9g is not the mean absmax %.9g".printf (offset, (float) (sum / blocks)));
        double[] y = q.dequantize_new (t, Piq.Dtype.F32).to_values ();
        double[] y0 = q.dequantize_new (plain, Piq.Dtype.F32).to_values ();
        double err = 0, err0 = 0;
        for (int i = 0; i < n; i++) {
            err += Math.fabs (y[i] - xs[i]);
            err0 += Math.fabs (y0[i] - xs[i]);
        }
        err /= n;
        err0 /= n;
        check (err < err0 * 1.02, "double quantization MAE %g against %g".printf (err, err0));
        var bad = (Piq.Format) Object.new (typeof (Piq.Format), "dtype", Piq.Dtype.NF4,
                                           "granularity", Piq.Granularity.BLOCK, "block-size", 64,
                                           "high-nibble-first", true, "double-quant", true,
                                           "scale-dtype", Piq.Dtype.F16);
        expect_error (Piq.Error.UNSUPPORTED, "validate ()", () => { bad.validate (); });
        expect_error (Piq.Error.UNSUPPORTED, "quantize_new ()", () => { q.quantize_new (bad, null, src); });
    });

    tests += new TestCase ("vala/immutability/recipe-after-quantize", () => {
        var q = new Piq.Quantizer ();
        var src = f32_tensor (finite);
        var u8 = new Piq.Format (Piq.Dtype.UINT8);
        Piq.Format[] fmts = { u8, new Piq.Format.preset ("fp8_e4m3"), new Piq.Format.preset ("nf4"),
                              new Piq.Format (Piq.Dtype.UINT4) };
        Piq.Recipe[] recipes = { new Piq.Recipe.affine (0.05, 90), new Piq.Recipe.fixed (0.02), new Piq.Recipe (),
                                 new Piq.Recipe () { round_mode = Piq.RoundMode.STOCHASTIC, seed = 5 } };
        for (int k = 0; k < fmts.length; k++) {
            var fmt = fmts[k];
            var recipe = recipes[k];
            var qt = q.quantize_new (fmt, recipe, src);
            var y0 = q.dequantize_new (qt, Piq.Dtype.F32).get_bytes ();
            double scale0 = qt.get_scale ();
            int64 zp0 = qt.get_zero_point ();
            uint64 seed0 = qt.get_seed ();
            Bytes? s = qt.get_scales ();
            Bytes? scales0 = s != null ? new Bytes (s.get_data ()) : null;  /* a copy */
            string what = fmt.to_string ();
            /* everything a recipe holds, changed after the fact */
            recipe.set_scale (3.0);
            if (fmt.has_zero_points ())
                recipe.set_zero_point (7);
            recipe.set_round_mode (Piq.RoundMode.STOCHASTIC);
            recipe.set_seed (1234);
            recipe.set_scale_rule (Piq.ScaleRule.ABS_MAX);
            recipe.set_include_zero (false);
            recipe.clear_scale ();
            check (q.dequantize_new (qt, Piq.Dtype.F32).get_bytes ().compare (y0) == 0, "%s: decode changed".printf (what));
            check (qt.get_scale () == scale0 && qt.get_zero_point () == zp0 && qt.get_seed () == seed0,
                   "%s: the tensor's scale, zero point or seed changed".printf (what));
            Bytes? s1 = qt.get_scales ();
            check ((s1 == null) == (scales0 == null) && (s1 == null || s1.compare (scales0) == 0),
                   "%s: the tensor's scales changed".printf (what));
            check (qt.get_format ().equal (fmt), "%s: the tensor's format changed".printf (what));
        }
        /* a recipe filled by compute_params, then cleared */
        var r = new Piq.Recipe ();
        q.compute_params (u8, r, src);
        var qt = q.quantize_new (u8, r, src);
        var want = q.dequantize_new (qt, Piq.Dtype.F32).get_bytes ();
        r.clear_scale ();
        r.set_scale (100.0);
        check (q.dequantize_new (qt, Piq.Dtype.F32).get_bytes ().compare (want) == 0,
               "compute_params recipe: decode changed");
    });

    tests += new TestCase ("vala/aliasing/quantize/overlap", () => {
        int n = 4096;
        var u8 = new Piq.Format (Piq.Dtype.UINT8);
        foreach (uint threads in new uint[] { 1, 4 }) {
            var q = new Piq.Quantizer () { n_threads = threads };
            float[] buf = gen_a (n + 64);
            float[] keep = buf[0:buf.length];
            uint8* base_p = (uint8*) buf;
            var src = new Piq.Tensor.for_address (Piq.Dtype.F32, { n }, (uintptr) buf, 4 * n, 0, false);
            /* codes over the source's memory (the raw form is how quantize reaches caller memory) */
            void*[] s_addr = { base_p, base_p, base_p + 8 };
            void*[] d_addr = { base_p, base_p + 400, base_p };
            string[] what = { "codes at the source", "codes inside the source", "codes ending inside the source" };
            for (int k = 0; k < what.length; k++) {
                void* s = s_addr[k];
                void* d = d_addr[k];
                expect_error (Piq.Error.OVERLAP, what[k], () => {
                    double us;
                    int64 uz;
                    q.quantize_raw (u8, new Piq.Recipe.affine (0.5, 128), Piq.Dtype.F32, s, { n - 2 }, d, n,
                                    null, 0, null, 0, out us, out uz);
                });
                check (floats_equal (buf, keep), "%s (%u threads): memory written".printf (what[k], threads));
            }
            /* the scales of a block format over the source */
            var blk = new Piq.Format.preset ("int8_block");
            size_t codes_size, scales_size, zps_size;
            blk.get_sizes ({ n }, out codes_size, out scales_size, out zps_size);
            var codes = new int8[n];
            expect_error (Piq.Error.OVERLAP, "scales over the source", () => {
                double us;
                int64 uz;
                q.quantize_raw (blk, null, Piq.Dtype.F32, base_p, { n }, (void*) codes, codes.length,
                                base_p + 4 * 10, scales_size, null, 0, out us, out uz);
            });
            bool zero = true;
            foreach (int8 c in codes)
                zero = zero && c == 0;
            check (floats_equal (buf, keep) && zero, "scales over the source: memory written");
            /* a tensor over the same memory as a quantize source is fine when it is only read */
            var qt = q.quantize_new (u8, new Piq.Recipe.affine (0.5, 128), src);
            check_codes (unpack (qt.get_bytes ().get_data (), n, 8), quantize_nearest (keep[0:n], 0.5, 128, Piq.Dtype.UINT8),
                         "codes");
        }
    });

    tests += new TestCase ("vala/aliasing/dequantize/overlap", () => {
        int n = 4096;
        var u8 = new Piq.Format (Piq.Dtype.UINT8);
        foreach (uint threads in new uint[] { 1, 4 }) {
            var q = new Piq.Quantizer () { n_threads = threads };
            float[] x = gen_a (n);
            uint8[] codes = new Piq.Quantizer ().quantize_new (u8, new Piq.Recipe.affine (0.05, 90), f32_tensor (x))
                                                .get_bytes ().get_data ();
            var buf = new uint8[n * 5 + 64];
            Memory.copy (buf, codes, n);
            uint8[] keep = buf[0:buf.length];
            uint8* base_p = (uint8*) buf;
            foreach (int off in new int[] { 0, n / 2, n - 4 }) {
                string what = "floats %d bytes after the codes".printf (off);
                expect_error (Piq.Error.OVERLAP, what, () => {
                    q.dequantize_raw (u8, 0.05, 90, base_p, n, { n }, null, 0, null, 0, Piq.Dtype.F32, base_p + off,
                                      4 * n, Piq.ReduceOp.SET);
                });
                check (Memory.cmp (buf, keep, buf.length) == 0, "%s (%u threads): memory written".printf (what, threads));
            }
            /* next to each other is not overlap */
            check (q.dequantize_raw (u8, 0.05, 90, base_p, n, { n }, null, 0, null, 0, Piq.Dtype.F32, base_p + n,
                                     4 * n, Piq.ReduceOp.SET), "adjacent buffers refused");
            var y = new double[n];
            for (int i = 0; i < n; i++)
                y[i] = f32_at (buf, n + 4 * i);
            var c64 = new int64[n];
            for (int i = 0; i < n; i++)
                c64[i] = codes[i];
            check_doubles (y, dequantize_f32 (c64, 0.05, 90), "adjacent dequantize");
            /* floats over a block format's scales */
            var blk = new Piq.Format.preset ("int8_block");
            var qt = q.quantize_new (blk, null, f32_tensor (x));
            uint8[] scales = qt.get_scales ().get_data ();
            var sbuf = new uint8[4 * n + 64];
            Memory.copy (sbuf, scales, scales.length);
            uint8[] skeep = sbuf[0:sbuf.length];
            uint8[] cbuf = qt.get_bytes ().get_data ();
            uint8* sbase = (uint8*) sbuf;
            expect_error (Piq.Error.OVERLAP, "floats over the scales", () => {
                q.dequantize_raw (blk, 1.0, 0, (void*) cbuf, cbuf.length, { n }, sbase, scales.length, null, 0,
                                  Piq.Dtype.F32, sbase + 8, 4 * n, Piq.ReduceOp.SET);
            });
            check (Memory.cmp (sbuf, skeep, sbuf.length) == 0, "floats over the scales: memory written");
        }
    });

    tests += new TestCase ("vala/aliasing/requantize/overlap", () => {
        int n = 70001;
        var u8 = new Piq.Format (Piq.Dtype.UINT8);
        foreach (uint threads in new uint[] { 1, 4 }) {
            var q = new Piq.Quantizer () { n_threads = threads };
            var buf = new float[n + 16];
            for (int i = 0; i < n; i++)
                buf[i] = finite[i % finite.length];
            float[] keep = buf[0:buf.length];
            uintptr base_a = (uintptr) buf;
            var a = new Piq.Tensor.for_address (Piq.Dtype.F32, { n }, base_a, 4 * n, 0, true);
            var b = new Piq.Tensor.for_address (Piq.Dtype.F32, { n }, base_a + 40, 4 * n, 0, true);
            expect_error (Piq.Error.OVERLAP, "requantize (a, b)", () => {
                q.requantize (u8, new Piq.Recipe.affine (0.05, 90), a, b, Piq.ReduceOp.SET);
            });
            expect_error (Piq.Error.OVERLAP, "requantize (b, a)", () => {
                q.requantize (u8, new Piq.Recipe.affine (0.05, 90), b, a, Piq.ReduceOp.ADD);
            });
            /* the same memory with another row stride is not the exact in-place case */
            int half = n / 2 * 2;
            var r1 = new Piq.Tensor.for_address (Piq.Dtype.F32, { 2, half / 2 }, base_a, 4 * half, 0, true);
            var r2 = new Piq.Tensor.for_address (Piq.Dtype.F32, { 2, half / 2 }, base_a, 4 * half + 16,
                                                 4 * (half / 2) + 16, true);
            expect_error (Piq.Error.OVERLAP, "requantize (r1, r2)", () => {
                q.requantize (u8, new Piq.Recipe.affine (0.05, 90), r1, r2, Piq.ReduceOp.SET);
            });
            expect_error (Piq.Error.OVERLAP, "requantize_raw () shifted by one float", () => {
                q.requantize_raw (u8, new Piq.Recipe.affine (0.05, 90), Piq.Dtype.F32, (void*) buf, { n },
                                  (void*) ((uint8*) buf + 4), 4 * n, Piq.ReduceOp.SET);
            });
            check (floats_equal (buf, keep), "%u threads: an overlapping requantize wrote".printf (threads));
        }
    });

    return tests;
}

int main (string[] args) {
    TestCase[] tests = make_tests ();
    print ("1..%d\n", tests.length);
    int failed = 0;
    for (int i = 0; i < tests.length; i++) {
        try {
            tests[i].func ();
            print ("ok %d - %s\n", i + 1, tests[i].name);
        } catch (TestError.SKIPPED e) {
            print ("ok %d - %s # SKIP %s\n", i + 1, tests[i].name, e.message);
        } catch (TestError.TODO e) {
            print ("not ok %d - %s # TODO %s\n", i + 1, tests[i].name, e.message);
        } catch (GLib.Error e) {
            failed++;
            print ("not ok %d - %s\n", i + 1, tests[i].name);
            string what = e.message;
            if (!(e is TestError))
                what = "unexpected GError %s:%d: %s".printf (e.domain.to_string (), e.code, e.message);
            foreach (unowned string line in what.split ("\n"))
                print ("# %s\n", line);
        }
    }
    return failed > 0 ? 1 : 0;
}
