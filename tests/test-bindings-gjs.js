// test-bindings-gjs.js: piquant through GJS and the typelib
//
// SPDX-License-Identifier: LGPL-2.1-or-later
//
// Every expected value is computed here in JavaScript, in binary32 through
// Math.fround and with a round-half-even written out, from docs/numerics.md.
// Prints TAP.

imports.gi.versions.GLib = '2.0';
imports.gi.versions.Gio = '2.0';
imports.gi.versions.GObject = '2.0';
imports.gi.versions.Piq = '1.0';
const {GLib, Gio, GObject, Piq} = imports.gi;
const System = imports.system;

const EPS32 = 2 ** -23;
const RANGES = new Map([
    [Piq.Dtype.UINT2, [0, 3]], [Piq.Dtype.INT2, [-2, 1]],
    [Piq.Dtype.UINT4, [0, 15]], [Piq.Dtype.INT4, [-8, 7]],
    [Piq.Dtype.UINT8, [0, 255]], [Piq.Dtype.INT8, [-128, 127]],
]);

// 37 elements (odd: a uint4 tensor ends in half a byte): ties for scale 0.5,
// values beyond the range, ±Infinity, NaN and −0.
const DATA = [0.0, 0.25, 0.75, 1.25, 1.75, -0.25, -0.75, -1.25, 2.5, -2.5, 1.0,
    -1.0, 3.3, -7.1, 0.1, 2.2, 63.25, 63.75, -63.75, -64.25, 100.0, -100.0,
    1e30, -1e30, Infinity, -Infinity, NaN, -0.0];
for (let i = 0; i < 9; i++)
    DATA.push(((i * 7919) % 211 - 105) / 7.0);

const FINITE = [];
for (let i = 0; i < 301; i++)
    FINITE.push((i * 2654435761) % 1000003 / 1000003.0 * 13.0 - 4.5);

// ---------------------------------------------------------------- TAP ----

class Failure extends Error {}
// the case does not apply to GJS (TAP SKIP)
class Skip extends Error {}
// the case is not written in GJS yet (TAP TODO: an expected failure)
class Todo extends Error {}
const TESTS = [];
// a case of binding-cases.txt; a name registered twice is one case run in parts
function test(name, fn) {
    const full = `gjs/${name}`;
    const i = TESTS.findIndex(([n]) => n === full);
    if (i < 0) {
        TESTS.push([full, fn]);
    } else {
        const prev = TESTS[i][1];
        TESTS[i][1] = () => {
            prev();
            fn();
        };
    }
}

function skip(name, why) {
    test(name, () => {
        throw new Skip(why);
    });
}

function todo(name, why) {
    test(name, () => {
        throw new Todo(why);
    });
}

function check(cond, msg) {
    if (!cond)
        throw new Failure(msg);
}

function floatEq(a, b) {
    return (Number.isNaN(a) && Number.isNaN(b)) || a === b;
}

function checkList(got, want, what, cmp = (a, b) => a === b) {
    got = Array.from(got);
    want = Array.from(want);
    if (got.length !== want.length)
        throw new Failure(`${what}: ${got.length} elements, expected ${want.length}`);
    const bad = [];
    for (let i = 0; i < want.length; i++) {
        if (!cmp(got[i], want[i]))
            bad.push(i);
    }
    if (bad.length > 0) {
        const lines = [`${what}: ${bad.length} of ${want.length} differ`];
        for (const i of bad.slice(0, 8))
            lines.push(`  [${i}] got ${got[i]}, expected ${want[i]}`);
        throw new Failure(lines.join('\n'));
    }
}

function codeName(code) {
    for (const [k, v] of Object.entries(Piq.Error)) {
        if (v === code && /^[A-Z_]+$/.test(k))
            return k;
    }
    return String(code);
}

// fn() must throw a GLib.Error of the piquant domain with `code`
function expectError(code, fn) {
    try {
        fn();
    } catch (e) {
        if (!(e instanceof GLib.Error))
            throw new Failure(`threw ${e} (not a GLib.Error), expected Piq.Error.${codeName(code)}`);
        if (!e.matches(Piq.Error, code)) {
            throw new Failure(`threw domain ${GLib.quark_to_string(e.domain)} code ${e.code} ` +
                `(${e.message}), expected Piq.Error.${codeName(code)}`);
        }
        check(e.domain === GLib.quark_from_string('piq-error-quark'), `domain ${e.domain}`);
        check(e.code === code, `code ${e.code}`);
        check(e.message.length > 0, 'empty message');
        return e;
    }
    throw new Failure(`nothing thrown, expected Piq.Error.${codeName(code)}`);
}

function main() {
    print(`1..${TESTS.length}`);
    let failed = 0;
    TESTS.forEach(([name, fn], idx) => {
        try {
            fn();
            print(`ok ${idx + 1} - ${name}`);
        } catch (e) {
            if (e instanceof Skip) {
                print(`ok ${idx + 1} - ${name} # SKIP ${e.message}`);
                return;
            }
            if (e instanceof Todo) {
                print(`not ok ${idx + 1} - ${name} # TODO ${e.message}`);
                return;
            }
            failed++;
            print(`not ok ${idx + 1} - ${name}`);
            const text = `${e instanceof GLib.Error ? 'GLib.Error: ' : ''}${e.message || e}\n${e.stack || ''}`;
            for (const line of text.trimEnd().split('\n'))
                print(`# ${line}`);
        }
    });
    System.exit(failed ? 1 : 0);
}

// ------------------------------------------------------------- oracle ----

const f32 = Math.fround;

function roundHalfEven(v) {
    if (!Number.isFinite(v))
        return v;
    const f = Math.floor(v);
    const d = v - f;
    if (d > 0.5)
        return f + 1;
    if (d < 0.5)
        return f;
    return f % 2 === 0 ? f : f + 1;
}

function clampCode(r, zp, qmin, qmax) {
    if (Number.isNaN(r))
        return zp;
    const t = r + zp;
    return t > qmax ? qmax : t < qmin ? qmin : t;
}

// v = x · inv in binary32, inv = 1.0f / (float) scale
function scaledF32(x, scale) {
    const inv = f32(1 / f32(scale));
    return f32(f32(x) * inv);
}

function quantizeNearest(xs, scale, zp, dtype, f64 = false) {
    const [qmin, qmax] = RANGES.get(dtype);
    return xs.map(x => clampCode(roundHalfEven(f64 ? x * (1 / scale) : scaledF32(x, scale)), zp, qmin, qmax));
}

function dequantizeF32(codes, scale, zp) {
    return codes.map(q => f32(f32(q - zp) * f32(scale)));
}

function pack(codes, bits) {
    const per = 8 / bits;
    const out = new Uint8Array(Math.ceil(codes.length / per));
    codes.forEach((c, i) => {
        out[Math.floor(i / per)] |= (c & ((1 << bits) - 1)) << (bits * (i % per));
    });
    return out;
}

function unpack(data, n, bits) {
    const per = 8 / bits;
    const out = [];
    for (let i = 0; i < n; i++)
        out.push((data[Math.floor(i / per)] >> (bits * (i % per))) & ((1 << bits) - 1));
    return out;
}

const M64 = (1n << 64n) - 1n;
function splitmixKeys(seed) {
    let z = (BigInt(seed) + 0x9E3779B97F4A7C15n) & M64;
    z = ((z ^ (z >> 30n)) * 0xBF58476D1CE4E5B9n) & M64;
    z = ((z ^ (z >> 27n)) * 0x94D049BB133111EBn) & M64;
    z ^= z >> 31n;
    return [Number(z & 0xFFFFFFFFn), Number(z >> 32n)];
}

function mix32(x) {
    x >>>= 0;
    x = (x ^ (x >>> 16)) >>> 0;
    x = Math.imul(x, 0x7FEB352D) >>> 0;
    x = (x ^ (x >>> 15)) >>> 0;
    x = Math.imul(x, 0x846CA68B) >>> 0;
    x = (x ^ (x >>> 16)) >>> 0;
    return x;
}

function quantizeStochastic(xs, scale, zp, dtype, seed) {
    const [qmin, qmax] = RANGES.get(dtype);
    const [k0, k1] = splitmixKeys(seed);
    return xs.map((x, i) => {
        const v = scaledF32(x, scale);
        const f = Math.floor(v);
        const frac = f32(v - f);
        const h = mix32((i ^ k0 ^ mix32((0 /* hi32(i) */ ^ k1) >>> 0)) >>> 0);
        const u = (h >>> 8) * 2 ** -24;
        return clampCode(f + (u < frac ? 1 : 0), zp, qmin, qmax);
    });
}

function minmaxParams(xs, dtype, includeZero = true) {
    const [qmin, qmax] = RANGES.get(dtype);
    let lo = Infinity, hi = -Infinity;
    for (const x of xs) {
        lo = Math.min(lo, f32(x));
        hi = Math.max(hi, f32(x));
    }
    if (includeZero || lo === hi) {
        lo = Math.min(lo, 0);
        hi = Math.max(hi, 0);
    }
    const scale = Math.max(f32(f32(hi - lo) / f32(qmax - qmin)), EPS32);
    const zp = qmin - roundHalfEven(f32(lo / scale));
    return [scale, Math.min(Math.max(zp, qmin), qmax)];
}

function absmaxParams(xs, dtype) {
    const [qmin, qmax] = RANGES.get(dtype);
    const a = Math.max(...xs.map(x => Math.abs(f32(x))));
    const scale = Math.max(f32(a / f32(f32(qmax - qmin) / 2)), EPS32);
    return [scale, qmin < 0 ? 0 : (qmin + qmax + 1) >> 1];
}

// ------------------------------------------------------------ helpers ----

function f32Tensor(values) {
    const arr = new Float32Array(values);
    const bytes = new Uint8Array(arr.buffer, arr.byteOffset, arr.byteLength);
    return Piq.Tensor.new_from_data(Piq.Dtype.F32, arr.length, bytes);
}

// a row-major f32 tensor of `shape` holding `values`
function f32Shaped(values, shape) {
    const t = Piq.Tensor.new_shaped(Piq.Dtype.F32, shape);
    const arr = new Float32Array(values);
    t.set_data(new Uint8Array(arr.buffer, arr.byteOffset, arr.byteLength));
    return t;
}

// per-tensor affine integers (the old PiqParams default)
function affineFormat(dtype) {
    return Piq.Format.new(dtype);
}

function uint8Recipe(scale = 0.5, zp = 128) {
    return Piq.Recipe.new_affine(scale, zp);
}

// a reusable destination of a format, 1-D unless a shape is given
function quantizedFor(format, n) {
    return Piq.Tensor.new_quantized(format, Array.isArray(n) ? n : [n]);
}

function tensorBytes(t) {
    return t.get_bytes().toArray();
}

function tensorF32(t) {
    const copy = tensorBytes(t).slice();  // own, aligned ArrayBuffer
    return Array.from(new Float32Array(copy.buffer, 0, copy.length / 4));
}

function stochasticRecipe(dtype, seed, scale = 0.37) {
    return new Piq.Recipe({
        scale, zero_point: dtype === Piq.Dtype.UINT8 ? 100 : 7,
        round_mode: Piq.RoundMode.STOCHASTIC, seed,
    });
}

function bytesEqual(a, b) {
    return a.length === b.length && a.every((v, i) => v === b[i]);
}

// -------------------------------------------------------------- tests ----

test('quantizer/new-and-default', () => {
    const q = new Piq.Quantizer();
    check(q instanceof Piq.Quantizer && q instanceof GObject.Object, 'new Piq.Quantizer() is not a GObject');
    const q2 = Piq.Quantizer.new();
    check(q2 instanceof Piq.Quantizer && q2 !== q, 'Piq.Quantizer.new()');
    const d1 = Piq.Quantizer.get_default();
    const d2 = Piq.Quantizer.get_default();
    check(d1 instanceof Piq.Quantizer, 'get_default() is not a Piq.Quantizer');
    check(d1 === d2, 'get_default() returned two different objects');
    check(d1 !== q, 'get_default() returned a fresh quantizer');
});

test('quantizer/properties', () => {  // was quantizer/n-threads
    const q = new Piq.Quantizer();
    for (const n of [1, 3, 8]) {
        q.n_threads = n;
        check(q.get_n_threads() === n, `n-threads ${n} read back as ${q.get_n_threads()}`);
    }
    q.set_n_threads(2);
    check(q.nThreads === 2, `set_n_threads(2) read back as ${q.nThreads}`);
    const q3 = new Piq.Quantizer({n_threads: 5});
    check(q3.n_threads === 5, `construct property n-threads: ${q3.n_threads}`);
});

test('quantizer/properties', () => {  // was quantizer/simd-level
    const q = new Piq.Quantizer();
    const lvl = q.simd_level;
    const known = Object.entries(Piq.SimdLevel).filter(([k]) => /^[A-Z0-9_]+$/.test(k)).map(([, v]) => v);
    check(known.includes(lvl), `simd-level ${lvl} is not one of ${known}`);
    check(q.get_simd_level() === lvl, `get_simd_level() ${q.get_simd_level()} != property ${lvl}`);
    const pspec = Piq.Quantizer.find_property('simd-level');
    check(pspec !== null, 'no simd-level pspec');
    check(pspec.flags & GObject.ParamFlags.READABLE, 'simd-level is not readable');
    check(!(pspec.flags & GObject.ParamFlags.WRITABLE), 'simd-level is writable');
    q.max_simd_level = Piq.SimdLevel.SCALAR;
    check(q.get_max_simd_level() === Piq.SimdLevel.SCALAR, `max-simd-level read back as ${q.get_max_simd_level()}`);
    check(q.simd_level === Piq.SimdLevel.SCALAR, `capped at SCALAR, simd-level is ${q.simd_level}`);
});

test('format-recipe/properties', () => {  // was params/properties
    // PiqParams is split: the format (what the bytes mean, immutable) and the
    // recipe (how the scale is chosen, mutable)
    const f = new Piq.Format({dtype: Piq.Dtype.UINT8});
    check(f.dtype === Piq.Dtype.UINT8 && f.get_dtype() === Piq.Dtype.UINT8, `dtype ${f.dtype}`);
    check(f.granularity === Piq.Granularity.TENSOR && f.get_granularity() === Piq.Granularity.TENSOR,
        `default granularity ${f.granularity}`);
    check(f.symmetric === false && f.get_symmetric() === false, 'integers are affine by default');
    check(f.scale_dtype === Piq.Dtype.F32 && f.saturate === true && f.high_nibble_first === false &&
        f.double_quant === false && f.axis === 0, 'format defaults');
    const p = new Piq.Recipe({scale: 0.5, zero_point: 128});
    // has-scale and has-zero-point are read-only properties; in GJS they hide
    // the methods piq_recipe_has_scale()/has_zero_point() of the same name
    check(p.scale === 0.5 && p.get_scale() === 0.5 && p.has_scale === true, `scale ${p.scale}`);
    check(p.zero_point === 128 && p.zeroPoint === 128 && p.get_zero_point() === 128 && p.has_zero_point === true,
        `zero-point ${p.zero_point}`);
    check(p.round_mode === Piq.RoundMode.NEAREST, `default round-mode ${p.round_mode}`);
    check(p.seed === 0, `default seed ${p.seed}`);
    // the default rule is now the format's own (min/max for affine integers)
    check(p.scale_rule === Piq.ScaleRule.DEFAULT && p.get_scale_rule() === Piq.ScaleRule.DEFAULT,
        `default scale-rule ${p.scale_rule}`);
    check(p.include_zero === true, `default include-zero ${p.include_zero}`);
    p.seed = 123456789012;
    check(p.get_seed() === 123456789012, `seed read back as ${p.get_seed()}`);
    p.zero_point = -5;
    check(p.get_zero_point() === -5, 'negative zero point');
    const fresh = new Piq.Recipe();
    check(fresh.has_scale === false && fresh.has_zero_point === false, 'a new recipe gives a scale or a zero point');
    p.clear_scale();
    check(p.has_scale === false, 'clear_scale()');
    const a = Piq.Recipe.new_affine(0.25, 7);
    check(a.scale === 0.25 && a.zero_point === 7 && a.has_scale === true && a.has_zero_point === true, 'new_affine()');
    const fixed = Piq.Recipe.new_fixed(0.25);
    check(fixed.scale === 0.25 && fixed.has_scale === true && fixed.has_zero_point === false, 'new_fixed()');
    const u4 = Piq.Format.new(Piq.Dtype.UINT4);
    check(u4.dtype === Piq.Dtype.UINT4 && u4.validate() === true, 'validate() of a valid format');
    check(Piq.Format.new_symmetric(Piq.Dtype.INT8).symmetric === true, 'new_symmetric()');
    const ch = Piq.Format.new_per_channel(Piq.Dtype.INT8, -1);
    check(ch.granularity === Piq.Granularity.CHANNEL && ch.axis === -1 && ch.get_axis() === -1, 'new_per_channel()');
    const blk = Piq.Format.new_per_block(Piq.Dtype.INT8, 16, Piq.Dtype.F16);
    check(blk.granularity === Piq.Granularity.BLOCK && blk.get_block_size() === 16 &&
        blk.scale_dtype === Piq.Dtype.F16, 'new_per_block()');
    // block size 0: the effective default, 64, or 32 with E8M0 scales
    check(Piq.Format.new_per_block(Piq.Dtype.INT8, 0, Piq.Dtype.F32).get_block_size() === 64, 'default block size');
    check(Piq.Format.new_per_block(Piq.Dtype.FP4_E2M1, 0, Piq.Dtype.E8M0).get_block_size() === 32,
        'default block size with E8M0 scales');
    check(f.equal(Piq.Format.new(Piq.Dtype.UINT8)) && !f.equal(u4), 'equal()');
    check(f.to_string().length > 0, 'to_string()');
    // a format cannot change after construction
    for (const name of ['dtype', 'granularity', 'axis', 'block-size', 'scale-dtype', 'symmetric', 'saturate',
        'high-nibble-first', 'double-quant']) {
        const pspec = Piq.Format.find_property(name);
        check(pspec !== null, `no ${name} pspec`);
        check(pspec.flags & GObject.ParamFlags.CONSTRUCT_ONLY, `format property ${name} is not construct-only`);
    }
});

test('tensor/new-from-data', () => {  // was tensor/new-from-data/Float32Array
    const t = f32Tensor(DATA);
    check(t.get_dtype() === Piq.Dtype.F32, `dtype ${t.get_dtype()}`);
    check(t.get_n_elements() === DATA.length, `n-elements ${t.get_n_elements()}`);
    check(t.get_n_bytes() === 4 * DATA.length, `n-bytes ${t.get_n_bytes()}`);
    check(t.is_writable(), 'not writable');
    const want = new Float32Array(DATA);
    check(bytesEqual(tensorBytes(t), new Uint8Array(want.buffer)), 'get_bytes() differs from the Float32Array');
    checkList(t.to_values(), Array.from(want), 'to_values()', floatEq);
    checkList(tensorF32(t), Array.from(want), 'bytes as Float32Array', floatEq);
    check(t.get_value(13) === f32(-7.1), `get_value(13) = ${t.get_value(13)}`);
});

test('tensor/new-from-values', () => {
    const t = Piq.Tensor.new_from_values(Piq.Dtype.F32, DATA);
    checkList(t.to_values(), DATA.map(f32), 'F32 to_values()', floatEq);
    const t64 = Piq.Tensor.new_from_values(Piq.Dtype.F64, DATA);
    check(t64.get_n_bytes() === 8 * DATA.length, `F64 n-bytes ${t64.get_n_bytes()}`);
    checkList(t64.to_values(), DATA, 'F64 to_values()', floatEq);
    const copy = tensorBytes(t64).slice();
    checkList(Array.from(new Float64Array(copy.buffer)), DATA, 'F64 bytes', floatEq);
});

test('quantize/f32/uint8/nearest', () => {
    const want = quantizeNearest(DATA, 0.5, 128, Piq.Dtype.UINT8);
    check(want.slice(1, 8).join() === '128,130,130,132,128,126,126', `oracle ties ${want.slice(0, 8)}`);
    check(want.slice(24, 27).join() === '255,0,128', `oracle Inf/NaN ${want.slice(24, 27)}`);
    const q = new Piq.Quantizer();
    const src = f32Tensor(DATA);
    const format = affineFormat(Piq.Dtype.UINT8);
    const dst = quantizedFor(format, DATA.length);  // reused for every case
    for (const [scale, zp] of [[0.5, 128], [0.1, 3], [7.0, 255]]) {
        check(q.quantize(uint8Recipe(scale, zp), src, dst) === true, 'quantize() did not return true');
        checkList(tensorBytes(dst), quantizeNearest(DATA, scale, zp, Piq.Dtype.UINT8), `codes, scale ${scale} zp ${zp}`);
    }
    const f = dst.get_format();
    check(f !== null && f.dtype === Piq.Dtype.UINT8 && f.equal(format) && dst.get_scale() === 7.0 &&
        dst.get_zero_point() === 255, 'parameters attached to the output');
});

test('dequantize/uint8/f32/set-then-add', () => {
    const q = new Piq.Quantizer();
    const qt = q.quantize_new(affineFormat(Piq.Dtype.UINT8), uint8Recipe(0.1, 3), f32Tensor(DATA));
    const y = dequantizeF32(quantizeNearest(DATA, 0.1, 3, Piq.Dtype.UINT8), 0.1, 3);
    const out = Piq.Tensor.new(Piq.Dtype.F32, DATA.length);
    check(q.dequantize(qt, out, Piq.ReduceOp.SET) === true, 'dequantize(SET)');
    checkList(tensorF32(out), y, 'SET');
    q.dequantize(qt, out, Piq.ReduceOp.ADD);
    checkList(tensorF32(out), y.map(v => f32(v + v)), 'SET then ADD');
    out.fill(0.1);
    q.dequantize(qt, out, Piq.ReduceOp.ADD);
    checkList(out.to_values(), y.map(v => f32(f32(0.1) + v)), 'fill(0.1) then ADD');
});

test('quantize/f32/uint4/nearest', () => {
    const q = Piq.Quantizer.get_default();
    const src = f32Tensor(DATA);
    const dst = quantizedFor(affineFormat(Piq.Dtype.UINT4), DATA.length);
    check(dst.get_n_bytes() === 19, `37 uint4 take ${dst.get_n_bytes()} bytes`);
    for (const [scale, zp] of [[0.5, 7], [9.0, 8], [0.3, 0], [0.25, 15]]) {
        q.quantize(new Piq.Recipe({scale, zero_point: zp}), src, dst);
        const codes = quantizeNearest(DATA, scale, zp, Piq.Dtype.UINT4);
        const data = tensorBytes(dst);
        check(data[18] >> 4 === 0, `unused high nibble is ${data[18] >> 4}`);
        checkList(unpack(data, DATA.length, 4), codes, `uint4 codes, scale ${scale} zp ${zp}`);
        checkList(data, pack(codes, 4), 'packed bytes');
    }
});

test('dequantize/uint4/f32/set-then-add', () => {
    const q = new Piq.Quantizer();
    const qt = q.quantize_new(affineFormat(Piq.Dtype.UINT4), new Piq.Recipe({scale: 0.3, zero_point: 6}), f32Tensor(DATA));
    check(qt.get_dtype() === Piq.Dtype.UINT4 && qt.get_n_elements() === DATA.length, 'quantize_new() tensor');
    const codes = quantizeNearest(DATA, 0.3, 6, Piq.Dtype.UINT4);
    checkList(tensorBytes(qt), pack(codes, 4), 'quantize_new() bytes');
    const y = dequantizeF32(codes, 0.3, 6);
    const out = Piq.Tensor.new(Piq.Dtype.F32, DATA.length);
    q.dequantize(qt, out, Piq.ReduceOp.SET);
    checkList(out.to_values(), y, 'SET');
    q.dequantize(qt, out, Piq.ReduceOp.ADD);
    checkList(out.to_values(), y.map(v => f32(2 * v)), 'SET then ADD');
    checkList(q.dequantize_new(qt, Piq.Dtype.F32).to_values(), y, 'dequantize_new()');
});

test('quantize/f64/uint8/nearest', () => {
    const q = new Piq.Quantizer();
    const qt = q.quantize_new(affineFormat(Piq.Dtype.UINT8), uint8Recipe(0.1, 3), Piq.Tensor.new_from_values(Piq.Dtype.F64, DATA));
    const codes = quantizeNearest(DATA, 0.1, 3, Piq.Dtype.UINT8, true);
    checkList(tensorBytes(qt), codes, 'codes (binary64)');
    const out = Piq.Tensor.new(Piq.Dtype.F64, DATA.length);
    q.dequantize(qt, out, Piq.ReduceOp.SET);
    checkList(out.to_values(), codes.map(c => (c - 3) * 0.1), 'dequantized to f64');
});

test('requantize/f32', () => {
    const q = new Piq.Quantizer();
    const f = affineFormat(Piq.Dtype.UINT4);
    const p = Piq.Recipe.new_affine(0.3, 6);
    const y = dequantizeF32(quantizeNearest(DATA, 0.3, 6, Piq.Dtype.UINT4), 0.3, 6);
    const out = Piq.Tensor.new(Piq.Dtype.F32, DATA.length);
    check(q.requantize(f, p, f32Tensor(DATA), out, Piq.ReduceOp.SET) === true, 'requantize(SET)');
    checkList(out.to_values(), y, 'SET');
    const inplace = f32Tensor(DATA);
    q.requantize(f, p, inplace, inplace, Piq.ReduceOp.ADD);
    checkList(inplace.to_values(), DATA.map((x, i) => f32(f32(x) + y[i])), 'ADD in place', floatEq);
});

test('error/read-only', () => {
    const q = new Piq.Quantizer();
    const bytes = new GLib.Bytes(new Uint8Array(DATA.length).fill(7));
    const plain = Piq.Tensor.new_from_bytes(Piq.Dtype.UINT8, DATA.length, bytes);
    check(!plain.is_writable(), 'a tensor wrapping GBytes is writable');
    expectError(Piq.Error.READ_ONLY, () => plain.set_data(new Uint8Array(DATA.length)));
    // a quantized destination wrapping GBytes: codes quantized elsewhere
    const wrapped = Piq.Tensor.new_quantized_from_bytes(affineFormat(Piq.Dtype.UINT8), [DATA.length], bytes,
        null, null, 0.5, 128);
    check(!wrapped.is_writable(), 'a quantized tensor wrapping GBytes is writable');
    expectError(Piq.Error.READ_ONLY, () => q.quantize(uint8Recipe(), f32Tensor(DATA), wrapped));
    check(tensorBytes(wrapped).every(b => b === 7), 'the GBytes tensor changed');
    check(tensorBytes(plain).every(b => b === 7), 'the GBytes changed');
    const f = new Float32Array(DATA);
    const fsrc = Piq.Tensor.new_from_bytes(Piq.Dtype.F32, f.length, new GLib.Bytes(new Uint8Array(f.buffer)));
    checkList(tensorBytes(q.quantize_new(affineFormat(Piq.Dtype.UINT8), uint8Recipe(), fsrc)),
        quantizeNearest(DATA, 0.5, 128, Piq.Dtype.UINT8), 'a GBytes tensor as a source');
});

test('compute-params/min-max', () => {
    const q = new Piq.Quantizer();
    const src = f32Tensor(FINITE);
    for (const dtype of [Piq.Dtype.UINT8, Piq.Dtype.UINT4, Piq.Dtype.INT8]) {
        const f = affineFormat(dtype);
        const p = new Piq.Recipe();
        check(q.compute_params(f, p, src) === true, 'compute_params()');
        const [scale, zp] = minmaxParams(FINITE, dtype);
        check(p.has_scale === true && p.has_zero_point === true, `dtype ${dtype}: compute_params() stored nothing`);
        check(p.scale === scale, `dtype ${dtype}: scale ${p.scale}, expected ${scale}`);
        check(p.zero_point === zp, `dtype ${dtype}: zero point ${p.zero_point}, expected ${zp}`);
        const qt = q.quantize_new(f, p, src);
        check(qt.get_scale() === scale && qt.get_zero_point() === zp, `dtype ${dtype}: the output's parameters`);
        const codes = unpack(tensorBytes(qt), FINITE.length, dtype === Piq.Dtype.UINT4 ? 4 : 8)
            .map(c => dtype === Piq.Dtype.INT8 && c > 127 ? c - 256 : c);
        checkList(codes, quantizeNearest(FINITE, scale, zp, dtype), `dtype ${dtype}: codes`);
    }
    const pos = FINITE.map(x => Math.abs(x) + 0.75);
    const psrc = f32Tensor(pos);
    for (const includeZero of [true, false]) {
        const p = new Piq.Recipe({scale_rule: Piq.ScaleRule.MIN_MAX, include_zero: includeZero});
        q.compute_params(affineFormat(Piq.Dtype.UINT4), p, psrc);
        const want = minmaxParams(pos, Piq.Dtype.UINT4, includeZero);
        check(p.scale === want[0] && p.zero_point === want[1],
            `include-zero ${includeZero}: ${p.scale}/${p.zero_point}, expected ${want}`);
    }
    const p = new Piq.Recipe({scale_rule: Piq.ScaleRule.MIN_MAX, include_zero: false});
    q.compute_params(affineFormat(Piq.Dtype.UINT4), p, f32Tensor([3, 3, 3]));
    const want = minmaxParams([3, 3, 3], Piq.Dtype.UINT4, false);
    check(p.scale === want[0] && p.zero_point === want[1], `constant tensor: ${p.scale}/${p.zero_point}, expected ${want}`);
});

test('compute-params/abs-max', () => {
    // the old ABS_MAX rule on integers is now a symmetric format: its zero point
    // is implied (0, or the middle of an unsigned range), never stored in the recipe
    const q = new Piq.Quantizer();
    const src = f32Tensor(FINITE);
    for (const dtype of [Piq.Dtype.INT8, Piq.Dtype.UINT8, Piq.Dtype.INT4, Piq.Dtype.UINT4]) {
        const [scale, zp] = absmaxParams(FINITE, dtype);
        const f = Piq.Format.new_symmetric(dtype);
        for (const rule of [Piq.ScaleRule.DEFAULT, Piq.ScaleRule.ABS_MAX]) {
            const p = new Piq.Recipe({scale_rule: rule});
            q.compute_params(f, p, src);
            check(p.scale === scale && p.has_zero_point === false,
                `dtype ${dtype} rule ${rule}: ${p.scale} (zero point given: ${p.has_zero_point}), expected ${scale}`);
            // a scale given with a rule other than DEFAULT is an error (overview.md,
            // Recipes), so the scale calibrated by ABS_MAX is given on its own
            const given = rule === Piq.ScaleRule.DEFAULT ? p : Piq.Recipe.new_fixed(p.scale);
            const qt = q.quantize_new(f, given, src);
            check(qt.get_scale() === scale && qt.get_zero_point() === zp,
                `dtype ${dtype}: output ${qt.get_scale()}/${qt.get_zero_point()}, expected ${scale}/${zp}`);
            const bits = dtype === Piq.Dtype.INT4 || dtype === Piq.Dtype.UINT4 ? 4 : 8;
            const signed = dtype === Piq.Dtype.INT4 || dtype === Piq.Dtype.INT8;
            const codes = unpack(tensorBytes(qt), FINITE.length, bits)
                .map(c => signed && c >= 1 << (bits - 1) ? c - (1 << bits) : c);
            checkList(codes, quantizeNearest(FINITE, scale, zp, dtype), `dtype ${dtype}: codes`);
        }
    }
});

test('quantize/stochastic/floor-or-ceil', () => {
    const q = new Piq.Quantizer();
    const src = f32Tensor(FINITE);
    for (const [dtype, bits] of [[Piq.Dtype.UINT8, 8], [Piq.Dtype.UINT4, 4]]) {
        const p = stochasticRecipe(dtype, 12345);
        const got = unpack(tensorBytes(q.quantize_new(affineFormat(dtype), p, src)), FINITE.length, bits);
        const [qmin, qmax] = RANGES.get(dtype);
        const bad = [];
        FINITE.forEach((x, i) => {
            const v = scaledF32(x, 0.37);
            const lo = clampCode(Math.floor(v), p.zero_point, qmin, qmax);
            const hi = clampCode(Math.ceil(v), p.zero_point, qmin, qmax);
            if (got[i] !== lo && got[i] !== hi)
                bad.push(`[${i}] ${got[i]} not in {${lo}, ${hi}}`);
        });
        check(bad.length === 0, `${bits} bits: ${bad.slice(0, 6).join('; ')}`);
    }
});

test('quantize/stochastic/same-seed-identical', () => {
    const q = new Piq.Quantizer();
    const xs = [].concat(...Array(8).fill(FINITE));
    const src = f32Tensor(xs);
    const f = affineFormat(Piq.Dtype.UINT8);
    const p = stochasticRecipe(Piq.Dtype.UINT8, 987654321);
    const dst = quantizedFor(f, xs.length);
    q.quantize(p, src, dst);
    const a = tensorBytes(dst).slice();
    q.quantize(p, src, dst);
    check(bytesEqual(tensorBytes(dst), a), 'two calls with the same seed differ');
    const q4 = new Piq.Quantizer({n_threads: 4});
    check(bytesEqual(tensorBytes(q4.quantize_new(f, p, src)), a), '4 threads differ');
    const other = tensorBytes(q.quantize_new(f, stochasticRecipe(Piq.Dtype.UINT8, 987654322), src));
    check(!bytesEqual(other, a), 'seeds 987654321 and 987654322 gave the same bytes');
});

test('quantize/stochastic/counter-hash', () => {
    const q = new Piq.Quantizer();
    const src = f32Tensor(FINITE);
    for (const [dtype, bits, seed] of [[Piq.Dtype.UINT8, 8, 1], [Piq.Dtype.UINT8, 8, 2 ** 52 + 3], [Piq.Dtype.UINT4, 4, 42]]) {
        const p = stochasticRecipe(dtype, seed);
        const qt = q.quantize_new(affineFormat(dtype), p, src);
        check(qt.get_seed() === seed, `the output records seed ${qt.get_seed()}, expected ${seed}`);
        const got = unpack(tensorBytes(qt), FINITE.length, bits);
        checkList(got, quantizeStochastic(FINITE, 0.37, p.zero_point, dtype, seed), `${bits} bits, seed ${seed}`);
    }
});

test('quantize/stochastic/seed-0-recorded', () => {
    const q = new Piq.Quantizer();
    const src = f32Tensor(FINITE);
    const f = affineFormat(Piq.Dtype.UINT8);
    const qt = q.quantize_new(f, stochasticRecipe(Piq.Dtype.UINT8, 0), src);
    const used = qt.get_seed();
    check(used !== 0, 'seed 0: the output records seed 0');
    // GJS reads a guint64 into a Number: only seeds below 2^53 can be given back exactly
    if (used <= Number.MAX_SAFE_INTEGER) {
        const again = q.quantize_new(f, stochasticRecipe(Piq.Dtype.UINT8, used), src);
        check(bytesEqual(tensorBytes(again), tensorBytes(qt)), `re-running with the recorded seed ${used} differs`);
    }
});

test('error/size', () => {
    const q = new Piq.Quantizer();
    const src = f32Tensor(DATA);
    const u8 = affineFormat(Piq.Dtype.UINT8);
    const small = quantizedFor(u8, DATA.length - 1);
    small.set_data(new Uint8Array(DATA.length - 1).fill(0xAA));
    expectError(Piq.Error.SIZE, () => q.quantize(uint8Recipe(), src, small));
    check(tensorBytes(small).every(b => b === 0xAA), 'the destination was written before the error');
    expectError(Piq.Error.SIZE, () => q.quantize(Piq.Recipe.new_affine(1, 0), src,
        quantizedFor(affineFormat(Piq.Dtype.UINT4), 8)));
    const qt = q.quantize_new(u8, uint8Recipe(), src);
    expectError(Piq.Error.SIZE, () => q.dequantize(qt, Piq.Tensor.new(Piq.Dtype.F32, 3), Piq.ReduceOp.SET));
    expectError(Piq.Error.SIZE, () => Piq.Tensor.new_from_data(Piq.Dtype.F32, 10, new Uint8Array(39)));
});

test('error/invalid-scale', () => {
    const q = new Piq.Quantizer();
    const src = f32Tensor(DATA);
    const dst = quantizedFor(affineFormat(Piq.Dtype.UINT8), DATA.length);
    for (const bad of [0, -0.5, Infinity, -Infinity, NaN, 1e-50, 1e39]) {
        // the setter
        const p = new Piq.Recipe({zero_point: 128});
        p.set_scale(bad);
        expectError(Piq.Error.INVALID_SCALE, () => q.quantize(p, src, dst));
        // the property, NaN and ±Inf included: no route refuses a value and goes on with another
        const pp = new Piq.Recipe({zero_point: 128});
        pp.scale = bad;
        expectError(Piq.Error.INVALID_SCALE, () => q.quantize(pp, src, dst));
    }
    for (const bad of [0, -0.5, Infinity, -Infinity, NaN, 1e-50, 1e39]) {  // a construct property
        const p = new Piq.Recipe({zero_point: 128, scale: bad});
        expectError(Piq.Error.INVALID_SCALE, () => q.quantize(p, src, dst));
    }
    // (PiqParams.validate() is gone: the recipe is checked by the call that uses it)
    expectError(Piq.Error.INVALID_SCALE, () => q.quantize_new(affineFormat(Piq.Dtype.UINT8), uint8Recipe(0, 128), src));
});

test('error/invalid-zero-point', () => {
    const q = new Piq.Quantizer();
    const src = f32Tensor(DATA);
    for (const [dtype, zp] of [[Piq.Dtype.UINT8, 256], [Piq.Dtype.UINT8, -1], [Piq.Dtype.UINT4, 16], [Piq.Dtype.INT8, 128]]) {
        const p = Piq.Recipe.new_affine(1, zp);
        const f = affineFormat(dtype);
        expectError(Piq.Error.INVALID_ZERO_POINT, () => q.quantize(p, src, quantizedFor(f, DATA.length)));
    }
});

test('error/unsupported', () => {
    const q = new Piq.Quantizer();
    const src = f32Tensor(DATA);
    // a float dtype as quantized type: refused by new_quantized() or by quantize()
    expectError(Piq.Error.UNSUPPORTED, () => q.quantize(Piq.Recipe.new_fixed(1), src,
        quantizedFor(affineFormat(Piq.Dtype.F32), DATA.length)));
    expectError(Piq.Error.UNSUPPORTED, () => q.quantize_new(affineFormat(Piq.Dtype.F32), Piq.Recipe.new_fixed(1), src));
    const qt = q.quantize_new(affineFormat(Piq.Dtype.UINT8), uint8Recipe(), src);
    expectError(Piq.Error.UNSUPPORTED, () => q.dequantize_new(qt, Piq.Dtype.UINT8));
});

test('error/non-finite', () => {  // was error/non-finite-and-empty, first half
    const q = new Piq.Quantizer();
    for (const bad of [NaN, Infinity, -Infinity]) {
        const p = Piq.Recipe.new_affine(0.125, 9);
        expectError(Piq.Error.NON_FINITE, () => q.compute_params(affineFormat(Piq.Dtype.UINT8), p, f32Tensor([1, 2, bad, 3])));
        check(p.scale === 0.125 && p.zero_point === 9, 'recipe changed by a failed compute_params()');
        const fresh = new Piq.Recipe();
        expectError(Piq.Error.NON_FINITE, () => q.compute_params(affineFormat(Piq.Dtype.UINT8), fresh, f32Tensor([1, 2, bad, 3])));
        check(fresh.has_scale === false && fresh.has_zero_point === false, 'a failed compute_params() stored parameters');
    }
});

test('error/empty', () => {  // was error/non-finite-and-empty, second half
    const q = new Piq.Quantizer();
    expectError(Piq.Error.EMPTY, () => q.compute_params(affineFormat(Piq.Dtype.UINT8), new Piq.Recipe(),
        Piq.Tensor.new(Piq.Dtype.F32, 0)));
});

test('error/no-format', () => {  // was error/no-params
    // a tensor of a quantized dtype without a format (PIQ_ERROR_NO_PARAMS is now NO_FORMAT)
    const q = new Piq.Quantizer();
    const bare = Piq.Tensor.new(Piq.Dtype.UINT8, 4);
    check(bare.get_format() === null, 'a plain uint8 tensor has a format');
    expectError(Piq.Error.NO_FORMAT, () => q.dequantize(bare, Piq.Tensor.new(Piq.Dtype.F32, 4), Piq.ReduceOp.SET));
});

test('reuse/output-tensors', () => {
    // the pattern the design recommends in GJS: output tensors allocated once
    const q = new Piq.Quantizer();
    const src = f32Tensor(FINITE);
    const qt = quantizedFor(affineFormat(Piq.Dtype.UINT8), FINITE.length);
    const acc = Piq.Tensor.new(Piq.Dtype.F32, FINITE.length);
    acc.fill(0);
    const p = uint8Recipe(0.05, 90);
    for (let i = 0; i < 50; i++) {
        q.quantize(p, src, qt);
        q.dequantize(qt, acc, Piq.ReduceOp.ADD);
    }
    const y = dequantizeF32(quantizeNearest(FINITE, 0.05, 90, Piq.Dtype.UINT8), 0.05, 90);
    const want = y.map(v => {
        let s = 0;
        for (let i = 0; i < 50; i++)
            s = f32(s + v);
        return s;
    });
    checkList(acc.to_values(), want, '50 accumulations');
});

// ------------------------------------------------------------ formats ----
// The block formats of docs/formats.md, one test per family; every expectation
// is computed here from the format definitions, never read back from piquant.

function genA(n) {
    const out = [];
    for (let i = 0; i < n; i++)
        out.push(((i * 7919) % 1009 - 504) / 168.0);
    return out;
}

function genB(n) {
    const out = [];
    for (let i = 0; i < n; i++)
        out.push(((i * 104729) % 1013 - 506) / 200.0);
    return out;
}

// floor(log2(a)) of a positive finite number, exactly
function floorLog2(a) {
    let e = Math.floor(Math.log2(a));
    while (2 ** e > a)
        e--;
    while (2 ** (e + 1) <= a)
        e++;
    return e;
}

function isNegative(x) {
    return x < 0 || Object.is(x, -0);
}

// {ebits, mbits, bias, max, maxCode, infCode, nanCode} of docs/formats.md
const E4M3 = {ebits: 4, mbits: 3, bias: 7, max: 448, maxCode: 0x7E, infCode: 0, nanCode: 0x7F};
const E2M1 = {ebits: 2, mbits: 1, bias: 1, max: 6, maxCode: 0x07, infCode: 0, nanCode: 0};

// round to nearest, ties to even; overflow saturates or gives NaN/Inf
function minifloatEncode(x, f, saturate) {
    const width = 1 + f.ebits + f.mbits;
    x = f32(x);
    const sign = isNegative(x) ? 1 << (width - 1) : 0;
    if (Number.isNaN(x))
        return f.nanCode ? sign | f.nanCode : 0;
    const a = Math.abs(x);
    const emin = 1 - f.bias;
    let mag;
    if (a === Infinity) {
        mag = Infinity;
    } else {
        const qe = (a >= 2 ** emin ? floorLog2(a) : emin) - f.mbits;
        mag = roundHalfEven(a / 2 ** qe) * 2 ** qe;
    }
    if (mag > f.max) {
        if (saturate || !f.nanCode)
            return sign | f.maxCode;
        return sign | (f.infCode || f.nanCode);
    }
    if (mag < 2 ** emin)
        return sign | mag / 2 ** (emin - f.mbits);
    const e = floorLog2(mag);
    const m = mag / 2 ** (e - f.mbits) - (1 << f.mbits);
    return sign | (e + f.bias) << f.mbits | m;
}

function minifloatDecode(code, f) {
    const width = 1 + f.ebits + f.mbits;
    const mag = code & ((1 << (width - 1)) - 1);
    if (f.nanCode && mag === f.nanCode)
        return NaN;
    const e = mag >> f.mbits, m = mag & ((1 << f.mbits) - 1);
    const v = e === 0 ? m * 2 ** (1 - f.bias - f.mbits) : ((1 << f.mbits) | m) * 2 ** (e - f.bias - f.mbits);
    return code >> (width - 1) ? -v : v;
}

function nibbles(data, n, highFirst = false) {
    const out = [];
    for (let i = 0; i < n; i++) {
        const b = data[i >> 1];
        const low = highFirst ? i % 2 === 1 : i % 2 === 0;
        out.push(low ? b & 0xF : b >> 4);
    }
    return out;
}

// a GBytes as numbers of a typed-array type (copied: aligned)
function bytesAs(bytes, Type) {
    const copy = bytes.toArray().slice();
    return Array.from(new Type(copy.buffer, 0, copy.length / Type.BYTES_PER_ELEMENT));
}

function f16ToNumber(h) {
    const e = (h >> 10) & 0x1F, m = h & 0x3FF;
    const v = e === 0 ? m * 2 ** -24 : e === 31 ? (m ? NaN : Infinity) : (1024 + m) * 2 ** (e - 25);
    return h & 0x8000 ? -v : v;
}

test('formats/fp8-e4m3/cast-saturate-nan', () => {
    const q = new Piq.Quantizer();
    const xs = [1.0, 448.0, 0.001953125, 1000.0, -1000.0, 464.0, 465.0, -0.0, 0.0, NaN,
        0.0029296875, 248.0, 1e-5, Infinity, -Infinity, 0.3, -2.7].concat(genA(40));
    const src = f32Tensor(xs);
    const fixed = [[0, 0x38], [1, 0x7E], [2, 0x01], [3, 0x7E], [4, 0xFE], [5, 0x7E], [6, 0x7E], [7, 0x80],
        [9, 0x7F], [10, 0x02], [11, 0x78], [12, 0x00], [13, 0x7E], [14, 0xFE]];
    for (const [i, c] of fixed)
        check(minifloatEncode(xs[i], E4M3, true) === c, `oracle code of ${xs[i]}`);
    for (const saturate of [true, false]) {
        const f = new Piq.Format({dtype: Piq.Dtype.FP8_E4M3, saturate});
        const t = q.quantize_new(f, Piq.Recipe.new_fixed(1.0), src);
        check(t.get_n_bytes() === xs.length && t.get_scales() === null, 'one byte per element, no scales');
        const want = xs.map(x => minifloatEncode(x, E4M3, saturate));
        checkList(tensorBytes(t), want, `fp8 codes, saturate=${saturate}`);
        checkList(q.dequantize_new(t, Piq.Dtype.F32).to_values(), want.map(c => minifloatDecode(c, E4M3)),
            'decoded values', floatEq);
    }
    const nonsatFormat = new Piq.Format({dtype: Piq.Dtype.FP8_E4M3, saturate: false});
    const nonsat = tensorBytes(q.quantize_new(nonsatFormat, Piq.Recipe.new_fixed(1.0), src));
    checkList(nonsat.slice(3, 7), [0x7F, 0xFF, 0x7E, 0x7F], 'non-saturating: 1000, -1000, 464, 465');
    // no silent scale 1.0: without a given scale, quantize derives one from the
    // data (abs-max, the format's rule), which ±Inf and NaN make impossible
    expectError(Piq.Error.NON_FINITE, () => q.quantize_new(nonsatFormat, null, src));
    const finite = genA(40).map(v => f32(v / 64));
    const amax = Math.max(...finite.map(Math.abs));
    const t = q.quantize_new(nonsatFormat, null, f32Tensor(finite));
    const scale = t.get_scale();
    check(Number.isFinite(scale) && scale > 0 && scale !== 1.0, `derived scale ${scale}`);
    check(minifloatEncode(amax / scale, E4M3, false) <= E4M3.maxCode, `the derived scale ${scale} overflows ${amax}`);
    check(amax / scale >= 448 / 2, `the derived scale ${scale} leaves half of the range unused for ${amax}`);
    const codes = finite.map(x => minifloatEncode(scaledF32(x, scale), E4M3, false));
    checkList(tensorBytes(t), codes, `fp8 codes with the derived scale ${scale}`);
    checkList(q.dequantize_new(t, Piq.Dtype.F32).to_values(), codes.map(c => f32(minifloatDecode(c, E4M3) * f32(scale))),
        'decoded with the derived scale');
});

test('formats/mxfp4/e8m0-scales', () => {
    const q = new Piq.Quantizer();
    const xs = genA(70).map(f32);  // blocks of 32, 32 and a ragged 6
    const p = Piq.Format.new_preset('mxfp4');
    check(p.dtype === Piq.Dtype.FP4_E2M1 && p.granularity === Piq.Granularity.BLOCK && p.get_block_size() === 32 &&
        p.scale_dtype === Piq.Dtype.E8M0, 'mxfp4 preset');
    const t = q.quantize_new(p, null, f32Tensor(xs));
    check(t.get_n_bytes() === 35, `70 fp4 take ${t.get_n_bytes()} bytes`);
    const scales = Array.from(t.get_scales().toArray());
    const codes = nibbles(tensorBytes(t), 70);
    const wantScales = [], wantCodes = [], wantY = [];
    for (let b0 = 0; b0 < 70; b0 += 32) {
        const blk = xs.slice(b0, b0 + 32);
        const amax = Math.max(...blk.map(Math.abs));
        const e = floorLog2(amax) - 2;  // the spec's floor rule, emax_elem(E2M1) = 2
        wantScales.push(e + 127);
        for (const v of blk) {
            const c = minifloatEncode(v * 2 ** -e, E2M1, true);
            wantCodes.push(c);
            wantY.push(minifloatDecode(c, E2M1) * 2 ** e);
        }
    }
    checkList(scales, wantScales, 'E8M0 scales');
    checkList(codes, wantCodes, 'E2M1 codes, low nibble first');
    const y = q.dequantize_new(t, Piq.Dtype.F32).to_values();
    checkList(y, wantY, 'dequantized');
    const table = [0, 0.5, 1, 1.5, 2, 3, 4, 6];
    codes.forEach((c, i) => {
        const v = (c & 8 ? -1 : 1) * table[c & 7] * 2 ** (scales[i >> 5] - 127);
        check(y[i] === v, `code ${c} scale ${scales[i >> 5]} gave ${y[i]}`);
    });
});

test('formats/nf4/bnb-order-and-add', () => {
    const q = new Piq.Quantizer();
    const n = 201;  // blocks of 64 and a ragged 9; an odd count ends in half a byte
    const xs = genA(n).map(f32);
    const src = f32Tensor(xs);
    const p = Piq.Format.new_preset('nf4');
    check(p.dtype === Piq.Dtype.NF4 && p.get_block_size() === 64 && p.high_nibble_first && !p.has_zero_points(),
        "nf4 preset is bitsandbytes' layout");
    const t = q.quantize_new(p, null, src);
    check(t.get_n_bytes() === 101, `201 nf4 take ${t.get_n_bytes()} bytes`);
    const absmax = bytesAs(t.get_scales(), Float32Array);
    const want = [];
    for (let b0 = 0; b0 < n; b0 += 64)
        want.push(Math.max(...xs.slice(b0, b0 + 64).map(Math.abs)));
    checkList(absmax, want, 'f32 absmax per block');
    const y = q.dequantize_new(t, Piq.Dtype.F32).to_values();
    for (let i = 0; i < n; i++) {
        const a = absmax[i >> 6];
        check(Math.abs(y[i] - xs[i]) <= 0.152 * a, `[${i}] ${xs[i]} -> ${y[i]}, more than half of NF4's widest gap`);
        if (Math.abs(xs[i]) === a)
            check(y[i] === xs[i], `[${i}] the block's absmax ${a} came back as ${y[i]}`);
    }
    // formats are immutable: the other nibble order is another format
    const pLo = new Piq.Format({dtype: Piq.Dtype.NF4, granularity: Piq.Granularity.BLOCK, block_size: 64,
        high_nibble_first: false});
    check(!pLo.equal(p), 'the nibble order is part of the format');
    const lo = tensorBytes(q.quantize_new(pLo, null, src));
    const hi = tensorBytes(t);
    checkList(hi, Array.from(lo).map(b => ((b & 0xF) << 4) | (b >> 4)), 'bnb bytes = piquant bytes, nibbles swapped');
    checkList(nibbles(hi, n, true), nibbles(lo, n, false), 'codes of the two orders');
    const acc = Piq.Tensor.new(Piq.Dtype.F32, n);
    acc.fill(0.5);
    q.dequantize(t, acc, Piq.ReduceOp.ADD);
    const once = y.map(v => f32(0.5 + v));
    checkList(acc.to_values(), once, '0.5 + dequantized');
    q.dequantize(t, acc, Piq.ReduceOp.ADD);
    checkList(acc.to_values(), once.map((v, i) => f32(v + y[i])), 'ADD twice');
});

test('formats/int8-block/wrap-scales-and-zero-points', () => {
    const q = new Piq.Quantizer();
    const n = 70, block = 16;
    const xs = genA(n).map(f32);
    const mk = () => new Piq.Format({dtype: Piq.Dtype.INT8, granularity: Piq.Granularity.BLOCK, block_size: block});
    const p = mk();
    check(p.has_zero_points(), 'affine int8 blocks have zero points');
    const [ok, codesSize, scalesSize, zpsSize] = p.get_sizes([n]);
    check(ok && codesSize === 70 && scalesSize === 20 && zpsSize === 20, `sizes ${codesSize} ${scalesSize} ${zpsSize}`);
    const t = q.quantize_new(p, new Piq.Recipe({scale_rule: Piq.ScaleRule.MIN_MAX}), f32Tensor(xs));
    const scales = bytesAs(t.get_scales(), Float32Array);
    const zps = bytesAs(t.get_zero_points(), Int32Array);
    const raw = tensorBytes(t).slice();
    const codes = Array.from(new Int8Array(raw.buffer));
    let wantY = [];
    for (let b = 0; b < 5; b++) {
        const blk = xs.slice(b * block, (b + 1) * block);
        const [s, zp] = minmaxParams(blk, Piq.Dtype.INT8);
        check(scales[b] === s && zps[b] === zp, `block ${b}: scale ${scales[b]} zp ${zps[b]}, expected ${s} ${zp}`);
        const want = quantizeNearest(blk, s, zp, Piq.Dtype.INT8);
        checkList(codes.slice(b * block, (b + 1) * block), want, `block ${b} codes`);
        wantY = wantY.concat(dequantizeF32(want, s, zp));
    }
    // data quantized "elsewhere": codes, scales and zero points as plain bytes
    const w = Piq.Tensor.new_quantized_from_bytes(mk(), [n], new GLib.Bytes(raw),
        new GLib.Bytes(new Uint8Array(new Float32Array(scales).buffer)),
        new GLib.Bytes(new Uint8Array(new Int32Array(zps).buffer)), 1, 0);
    checkList(bytesAs(w.get_scales(), Float32Array), scales, 'get_scales() of the wrapped tensor');
    checkList(bytesAs(w.get_zero_points(), Int32Array), zps, 'get_zero_points() of the wrapped tensor');
    checkList(q.dequantize_new(w, Piq.Dtype.F32).to_values(), wantY, 'dequantized from wrapped bytes');
    // codes without their scales: refused when wrapped or when dequantized
    expectError(Piq.Error.SIZE, () => q.dequantize_new(
        Piq.Tensor.new_quantized_from_bytes(p, [n], new GLib.Bytes(raw), null, null, 1, 0), Piq.Dtype.F32));
});

test('formats/binary/dot', () => {
    const q = new Piq.Quantizer();
    const n = 300;  // blocks of 128, 128 and 44
    const p = Piq.Format.new_preset('binary');
    check(p.dtype === Piq.Dtype.BINARY && p.get_block_size() === 128, 'binary preset');
    const ts = [], ys = [];
    for (const xs of [genA(n).map(f32), genB(n).map(f32)]) {
        const t = q.quantize_new(p, null, f32Tensor(xs));
        check(t.get_n_bytes() === 38, `300 bits take ${t.get_n_bytes()} bytes`);
        const bits = tensorBytes(t);
        const bit = i => (bits[i >> 3] >> (i % 8)) & 1;
        checkList(xs.map((_, i) => bit(i)), xs.map(v => isNegative(v) ? 0 : 1), 'sign bits');
        const wantS = [];
        for (let b0 = 0; b0 < n; b0 += 128) {
            const blk = xs.slice(b0, b0 + 128);
            // binary32, element i into partial sum i mod 16, combined pairwise (docs/formats.md)
            const lanes = new Array(16).fill(0);
            blk.forEach((v, i) => { lanes[i % 16] = f32(lanes[i % 16] + Math.abs(v)); });
            for (const h of [8, 4, 2, 1])
                for (let k = 0; k < h; k++)
                    lanes[k] = f32(lanes[k] + lanes[k + h]);
            wantS.push(f32(lanes[0] / blk.length));
        }
        checkList(bytesAs(t.get_scales(), Float32Array), wantS, 'scales = mean |x| per block');
        const y = q.dequantize_new(t, Piq.Dtype.F32).to_values();
        checkList(y, xs.map((_, i) => bit(i) ? wantS[i >> 7] : -wantS[i >> 7]), 'dequantized ±scale');
        ts.push(t);
        ys.push(y);
    }
    const [ok, dot] = q.binary_dot(ts[0], ts[1]);
    let want = 0;
    for (let i = 0; i < n; i++)
        want += ys[0][i] * ys[1][i];
    check(ok && Math.abs(dot - want) <= 1e-9 * Math.max(1, Math.abs(want)), `binary_dot ${dot}, dequantized dot ${want}`);
});

test('formats/q8_0/ggml-bytes', () => {
    const q = new Piq.Quantizer();
    const n = 70;  // 3 blocks, the last holds 6 values and 26 zeros
    const xs = genA(n).map(f32);
    const t = q.quantize_new(Piq.Format.new_preset('q8_0'), null, f32Tensor(xs));
    const raw = tensorBytes(t);
    check(raw.length === 3 * 34 && t.get_scales() === null, '3 blocks of 34 bytes, scales inside');
    const wantY = [];
    for (let b = 0; b < 3; b++) {
        const vals = [];
        for (let j = 0; j < 32; j++)
            vals.push(32 * b + j < n ? xs[32 * b + j] : 0);
        const amax = Math.max(...vals.map(Math.abs));
        const d = f32(amax / 127);
        const dh = f16ToNumber(raw[34 * b] | raw[34 * b + 1] << 8);
        // f16 RNE of d: within half an f16 ulp (these d are normal f16 numbers)
        check(Math.abs(dh - d) <= 2 ** (floorLog2(d) - 11), `block ${b}: f16 scale ${dh}, f32 d ${d}`);
        const id = f32(1 / d);
        const want = vals.map(v => {
            const r = f32(v * id);
            const k = Math.floor(Math.abs(r) + 0.5);  // roundf: ties away from zero
            return r < 0 ? -k : k;
        });
        const qs = Array.from(new Int8Array(raw.slice(34 * b + 2, 34 * b + 34).buffer));
        checkList(qs, want, `block ${b} qs`);
        for (const c of want)
            wantY.push(f32(c * dh));
    }
    checkList(q.dequantize_new(t, Piq.Dtype.F32).to_values(), wantY.slice(0, n), 'dequantized qs·d');
});

test('formats/errors', () => {
    const q = new Piq.Quantizer();
    const src = f32Tensor(genA(70));
    // the old per-row spelling (CHANNEL + a block size as the row length) is
    // an option that does not apply; channels are an axis of the shape
    const perRow = new Piq.Format({dtype: Piq.Dtype.INT8, granularity: Piq.Granularity.CHANNEL, block_size: 16});
    expectError(Piq.Error.UNSUPPORTED, () => perRow.validate());
    expectError(Piq.Error.UNSUPPORTED, () => q.quantize_new(perRow, null, src));
    // CHANNEL on an axis that the shape lacks
    expectError(Piq.Error.SIZE, () => q.quantize_new(Piq.Format.new_per_channel(Piq.Dtype.INT8, 1), null, src));
    const nf4 = new Piq.Format({dtype: Piq.Dtype.NF4, granularity: Piq.Granularity.BLOCK, scale_dtype: Piq.Dtype.E8M0});
    expectError(Piq.Error.UNSUPPORTED, () => nf4.validate());
    expectError(Piq.Error.UNSUPPORTED, () => q.quantize_new(nf4, null, src));
    expectError(Piq.Error.UNSUPPORTED, () => Piq.Format.new_preset('no-such-format'));
    const names = Piq.Format.list_presets();
    check(names.includes('mxfp4') && names.includes('q4_0'), `list_presets() ${names}`);
});

// ------------------------------------------------------------- shapes ----
// Tensors with shapes: channels along an axis, blocks along the last axis that
// never span two rows.

// quantize a tensor of `shape` per channel along `axis` and check every byte
// against the oracle; returns the quantized tensor
function checkPerChannel(q, xs, shape, axis, dtype, symmetric) {
    const nd = shape.length;
    const ax = axis < 0 ? axis + nd : axis;
    let inner = 1;
    for (let d = ax + 1; d < nd; d++)
        inner *= shape[d];
    const chan = i => Math.floor(i / inner) % shape[ax];
    const groups = Array.from({length: shape[ax]}, () => []);
    xs.forEach((x, i) => groups[chan(i)].push(x));
    const what = `[${shape}] axis ${axis} dtype ${dtype}${symmetric ? ' symmetric' : ''}`;

    const f = new Piq.Format({dtype, granularity: Piq.Granularity.CHANNEL, axis, symmetric});
    check(f.validate(), `${what}: validate()`);
    const [ok, codesSize, scalesSize, zpsSize] = f.get_sizes(shape);
    check(ok && codesSize === xs.length && scalesSize === 4 * shape[ax] && zpsSize === (symmetric ? 0 : 4 * shape[ax]),
        `${what}: sizes ${codesSize} ${scalesSize} ${zpsSize}`);
    const t = q.quantize_new(f, null, f32Shaped(xs, shape));
    checkList(t.get_shape(), shape, `${what}: shape of the quantized tensor`);
    check(t.get_format().equal(f), `${what}: the tensor's format`);
    const params = groups.map(g => symmetric ? absmaxParams(g, dtype) : minmaxParams(g, dtype));
    checkList(bytesAs(t.get_scales(), Float32Array), params.map(p => p[0]), `${what}: one f32 scale per channel`);
    const zps = t.get_zero_points();
    if (symmetric)
        check(zps === null || zps.get_size() === 0, `${what}: a symmetric format has zero points`);
    else
        checkList(bytesAs(zps, Int32Array), params.map(p => p[1]), `${what}: one int32 zero point per channel`);
    const raw = tensorBytes(t).slice();
    const codes = dtype === Piq.Dtype.INT8 ? Array.from(new Int8Array(raw.buffer)) : Array.from(raw);
    const want = xs.map((x, i) => quantizeNearest([x], params[chan(i)][0], params[chan(i)][1], dtype)[0]);
    checkList(codes, want, `${what}: codes`);
    const y = q.dequantize_new(t, Piq.Dtype.F32);
    checkList(y.get_shape(), shape, `${what}: shape of the dequantized tensor`);
    checkList(y.to_values(), want.map((c, i) => dequantizeF32([c], params[chan(i)][0], params[chan(i)][1])[0]),
        `${what}: dequantized`);
    return t;
}

test('shapes/per-channel/axis-0', () => {
    // the output channels of an [out, in] weight: one scale per row
    const q = new Piq.Quantizer();
    const rows = 5, cols = 37;
    const xs = genA(rows * cols).map(f32);
    for (const [dtype, symmetric] of [[Piq.Dtype.UINT8, false], [Piq.Dtype.INT8, true], [Piq.Dtype.INT8, false]]) {
        const t = checkPerChannel(q, xs, [rows, cols], 0, dtype, symmetric);
        const neg = checkPerChannel(q, xs, [rows, cols], -2, dtype, symmetric);
        check(bytesEqual(tensorBytes(neg), tensorBytes(t)), 'axis -2 of a matrix is axis 0');
    }
    // the default axis is 0
    const byDefault = q.quantize_new(Piq.Format.new_per_channel(Piq.Dtype.UINT8, 0), null, f32Shaped(xs, [rows, cols]));
    const props = q.quantize_new(new Piq.Format({dtype: Piq.Dtype.UINT8, granularity: Piq.Granularity.CHANNEL}), null,
        f32Shaped(xs, [rows, cols]));
    check(bytesEqual(tensorBytes(byDefault), tensorBytes(props)) &&
        bytesEqual(byDefault.get_scales().toArray(), props.get_scales().toArray()), 'the default axis is not 0');
    // N×1 and 1×K matrices
    checkPerChannel(q, genB(7).map(f32), [7, 1], 0, Piq.Dtype.INT8, true);
    checkPerChannel(q, genB(9).map(f32), [1, 9], 0, Piq.Dtype.UINT8, false);
});

test('shapes/per-channel/axis-1', () => {
    // one scale per column, and the middle axis of a 3-D tensor
    const q = new Piq.Quantizer();
    const rows = 6, cols = 11;
    const xs = genB(rows * cols).map(f32);
    for (const [dtype, symmetric] of [[Piq.Dtype.UINT8, false], [Piq.Dtype.INT8, true]]) {
        const t = checkPerChannel(q, xs, [rows, cols], 1, dtype, symmetric);
        const neg = checkPerChannel(q, xs, [rows, cols], -1, dtype, symmetric);
        check(bytesEqual(tensorBytes(neg), tensorBytes(t)), 'axis -1 of a matrix is axis 1');
    }
    checkPerChannel(q, genA(2 * 3 * 4).map(f32), [2, 3, 4], 1, Piq.Dtype.INT8, false);
    checkPerChannel(q, genA(2 * 3 * 4).map(f32), [2, 3, 4], 1, Piq.Dtype.UINT8, true);
    // an axis that the shape lacks
    const f = Piq.Format.new_per_channel(Piq.Dtype.INT8, 2);
    expectError(Piq.Error.SIZE, () => q.quantize_new(f, null, f32Shaped(xs, [rows, cols])));
    expectError(Piq.Error.SIZE, () => quantizedFor(f, [rows, cols]));
});

test('shapes/per-block/ragged-rows', () => {  // was shapes/blocks/ragged-per-row
    const q = new Piq.Quantizer();
    const rows = 3, cols = 70, block = 32;  // every row: blocks of 32, 32 and 6
    const xs = genB(rows * cols).map(f32);
    const f = new Piq.Format({dtype: Piq.Dtype.INT8, granularity: Piq.Granularity.BLOCK, block_size: block});
    const [ok, codesSize, scalesSize, zpsSize] = f.get_sizes([rows, cols]);
    check(ok && codesSize === 210 && scalesSize === 36 && zpsSize === 36, `sizes ${codesSize} ${scalesSize} ${zpsSize}`);
    const t = q.quantize_new(f, null, f32Shaped(xs, [rows, cols]));
    checkList(t.get_shape(), [rows, cols], 'shape of the quantized tensor');
    const scales = bytesAs(t.get_scales(), Float32Array);
    const zps = bytesAs(t.get_zero_points(), Int32Array);
    const codes = Array.from(new Int8Array(tensorBytes(t).slice().buffer));
    const wantS = [], wantZ = [], wantC = [], wantY = [];
    for (let r = 0; r < rows; r++) {
        for (let b0 = 0; b0 < cols; b0 += block) {
            const blk = xs.slice(r * cols + b0, r * cols + Math.min(b0 + block, cols));
            const [s, zp] = minmaxParams(blk, Piq.Dtype.INT8);
            const c = quantizeNearest(blk, s, zp, Piq.Dtype.INT8);
            wantS.push(s);
            wantZ.push(zp);
            wantC.push(...c);
            wantY.push(...dequantizeF32(c, s, zp));
        }
    }
    checkList(scales, wantS, 'scales: 3 blocks per row');
    checkList(zps, wantZ, 'zero points: 3 blocks per row');
    checkList(codes, wantC, 'codes');
    const y = q.dequantize_new(t, Piq.Dtype.F32);
    checkList(y.get_shape(), [rows, cols], 'shape of the dequantized tensor');
    checkList(y.to_values(), wantY, 'dequantized');
    // each row quantized alone gives the same bytes
    for (let r = 0; r < rows; r++) {
        const tr = q.quantize_new(f, null, f32Tensor(xs.slice(r * cols, (r + 1) * cols)));
        checkList(tensorBytes(tr), tensorBytes(t).slice(r * cols, (r + 1) * cols), `row ${r} alone: codes`);
        checkList(bytesAs(tr.get_scales(), Float32Array), scales.slice(3 * r, 3 * r + 3), `row ${r} alone: scales`);
    }
    // the same 210 values as one row: blocks of 32 across the old row ends
    const flat = q.quantize_new(f, null, f32Tensor(xs));
    check(flat.get_scales().get_size() === 7 * 4, `a flat tensor of 210 has ${flat.get_scales().get_size() / 4} blocks`);
    // nf4 (4-bit codes, f32 absmax per block): rows of 70 = 64 + 6
    const nf4 = Piq.Format.new_preset('nf4');
    const tn = q.quantize_new(nf4, null, f32Shaped(xs, [rows, cols]));
    check(tn.get_n_bytes() === 105, `3 rows of 70 nf4 take ${tn.get_n_bytes()} bytes`);
    const absmax = [];
    for (let r = 0; r < rows; r++) {
        for (const [b0, b1] of [[0, 64], [64, 70]])
            absmax.push(Math.max(...xs.slice(r * cols + b0, r * cols + b1).map(Math.abs)));
    }
    checkList(bytesAs(tn.get_scales(), Float32Array), absmax, 'nf4 absmax per block of each row');
    const yn = q.dequantize_new(tn, Piq.Dtype.F32).to_values();
    xs.forEach((x, i) => {
        const a = absmax[2 * Math.floor(i / cols) + (i % cols < 64 ? 0 : 1)];
        check(Math.abs(yn[i] - x) <= 0.152 * a, `nf4 [${i}] ${x} -> ${yn[i]}`);
    });
});

test('shapes/get-shape', () => {
    const q = new Piq.Quantizer();
    const t = Piq.Tensor.new_shaped(Piq.Dtype.F32, [2, 3, 4]);
    checkList(t.get_shape(), [2, 3, 4], 'get_shape()');
    check(t.get_n_dims() === 3 && t.get_n_elements() === 24 && t.get_n_bytes() === 96, 'n-dims, n-elements, n-bytes');
    check(t.get_dim(0) === 2 && t.get_dim(1) === 3 && t.get_dim(2) === 4, 'get_dim()');
    check(t.get_dim(-1) === 4 && t.get_dim(-3) === 2, 'get_dim() from the end');
    check(t.is_contiguous() && t.get_row_stride() === 0, `packed rows: stride ${t.get_row_stride()}, expected 0`);
    checkList(Piq.Tensor.new(Piq.Dtype.F32, 37).get_shape(), [37], '1-D tensor');
    checkList(f32Tensor(DATA).get_shape(), [DATA.length], 'new_from_data() is 1-D');
    const xs = genA(24).map(f32);
    t.set_data(new Uint8Array(new Float32Array(xs).buffer));
    check(t.reshape([6, 4]) === true, 'reshape()');
    checkList(t.get_shape(), [6, 4], 'shape after reshape()');
    checkList(t.to_values(), xs, 'reshape() keeps the values');
    expectError(Piq.Error.SIZE, () => t.reshape([5, 5]));
    checkList(t.get_shape(), [6, 4], 'shape after a refused reshape()');
    const nf4 = Piq.Format.new_preset('nf4');
    const qt = q.quantize_new(nf4, null, t);
    checkList(qt.get_shape(), [6, 4], 'quantized shape');
    check(qt.get_n_dims() === 2 && qt.get_dim(-1) === 4 && qt.get_n_elements() === 24, 'quantized dims');
    checkList(q.dequantize_new(qt, Piq.Dtype.F32).get_shape(), [6, 4], 'dequantized shape');
    const dst = quantizedFor(nf4, [6, 4]);
    check(dst.get_format().equal(nf4) && dst.get_n_bytes() === 12, 'new_quantized()');
    q.quantize(null, t, dst);
    check(bytesEqual(tensorBytes(dst), tensorBytes(qt)), 'quantize() into new_quantized() differs from quantize_new()');
    // the destination's shape decides: 24 elements as [4, 6] are other rows
    expectError(Piq.Error.SIZE, () => q.quantize(null, t, quantizedFor(nf4, [4, 6])));
    expectError(Piq.Error.SIZE, () => q.quantize(null, t, quantizedFor(nf4, [24])));
});

// ------------------------------------------------------- immutability ----

test('immutability/recipe-after-quantize', () => {
    const q = new Piq.Quantizer();
    const src = f32Tensor(FINITE);
    const f = affineFormat(Piq.Dtype.UINT8);
    const want = dequantizeF32(quantizeNearest(FINITE, 0.05, 90, Piq.Dtype.UINT8), 0.05, 90);
    const r = Piq.Recipe.new_affine(0.05, 90);
    const made = q.quantize_new(f, r, src);
    const into = quantizedFor(f, FINITE.length);
    q.quantize(r, src, into);
    const codes = tensorBytes(made).slice();
    r.scale = 2.5;
    r.zero_point = 3;
    r.scale_rule = Piq.ScaleRule.MIN_MAX;
    r.include_zero = false;
    r.round_mode = Piq.RoundMode.STOCHASTIC;
    r.seed = 99;
    for (const t of [made, into]) {
        check(t.get_scale() === 0.05 && t.get_zero_point() === 90, 'the tensor followed its recipe');
        check(t.get_format().equal(f), "the tensor's format");
        check(bytesEqual(tensorBytes(t), codes), 'the codes changed');
        checkList(q.dequantize_new(t, Piq.Dtype.F32).to_values(), want, 'decoded after the recipe changed');
    }
    r.clear_scale();
    checkList(q.dequantize_new(made, Piq.Dtype.F32).to_values(), want, 'decoded after clear_scale()');

    // a calibrated recipe, recalibrated on other data
    const rc = new Piq.Recipe();
    q.compute_params(f, rc, src);
    const [s0, z0] = [rc.scale, rc.zero_point];
    const qc = q.quantize_new(f, rc, src);
    const before = q.dequantize_new(qc, Piq.Dtype.F32).to_values();
    q.compute_params(f, rc, f32Tensor(FINITE.map(x => 3 * x)));
    check(rc.scale !== s0, 'recalibration did not change the recipe');
    check(qc.get_scale() === s0 && qc.get_zero_point() === z0, 'the tensor followed the recalibrated recipe');
    checkList(q.dequantize_new(qc, Piq.Dtype.F32).to_values(), before, 'decoded after recalibration');

    // the seed used stays with the tensor
    const rs = stochasticRecipe(Piq.Dtype.UINT8, 4242);
    const qs = q.quantize_new(f, rs, src);
    const ys = q.dequantize_new(qs, Piq.Dtype.F32).to_values();
    rs.seed = 1;
    rs.scale = 1;
    rs.round_mode = Piq.RoundMode.NEAREST;
    check(qs.get_seed() === 4242 && qs.get_scale() === 0.37 && qs.get_zero_point() === 100,
        'the stochastic tensor followed its recipe');
    checkList(q.dequantize_new(qs, Piq.Dtype.F32).to_values(), ys, 'stochastic: decoded after the recipe changed');

    // a block format: scales belong to the tensor
    const nf4 = Piq.Format.new_preset('nf4');
    const rn = new Piq.Recipe();
    const qn = q.quantize_new(nf4, rn, src);
    const yn = q.dequantize_new(qn, Piq.Dtype.F32).to_values();
    const sn = qn.get_scales().toArray().slice();
    rn.scale_rule = Piq.ScaleRule.MIN_MAX;
    rn.scale = 3;
    check(qn.get_format().equal(nf4) && qn.get_format().high_nibble_first, "the nf4 tensor's format");
    check(bytesEqual(qn.get_scales().toArray(), sn), 'the nf4 scales changed');
    checkList(q.dequantize_new(qn, Piq.Dtype.F32).to_values(), yn, 'nf4: decoded after the recipe changed');
});

// --------------------------------------------------- no silent default ----

test('error/no-silent-default', () => {  // was errors/no-silent-default
    const q = new Piq.Quantizer();
    const n = FINITE.length;
    const src = f32Tensor(FINITE);
    const u8 = affineFormat(Piq.Dtype.UINT8);
    const sym8 = Piq.Format.new_symmetric(Piq.Dtype.INT8);
    const fp8 = new Piq.Format({dtype: Piq.Dtype.FP8_E4M3});
    const nf4 = Piq.Format.new_preset('nf4');
    const mx = Piq.Format.new_preset('mxfp4');

    // a NaN scale set through the property: the next call fails, whatever the format
    for (const [f, r] of [[u8, uint8Recipe()], [sym8, Piq.Recipe.new_fixed(0.5)], [fp8, Piq.Recipe.new_fixed(1)]]) {
        r.scale = NaN;
        expectError(Piq.Error.INVALID_SCALE, () => q.quantize_new(f, r, src));
        const dst = quantizedFor(f, n);
        dst.set_data(new Uint8Array(n).fill(0x5A));
        expectError(Piq.Error.INVALID_SCALE, () => q.quantize(r, src, dst));
        check(tensorBytes(dst).every(b => b === 0x5A), 'a failed quantize() wrote its destination');
        expectError(Piq.Error.INVALID_SCALE, () => q.requantize(f, r, src, Piq.Tensor.new(Piq.Dtype.F32, n), Piq.ReduceOp.SET));
        r.scale = 0.25;
        check(q.quantize_new(f, r, src) !== null, 'a finite scale set again');
    }

    // rules that do not apply to the format: never replaced by the format's rule
    for (const rule of [Piq.ScaleRule.MIN_MAX, Piq.ScaleRule.ABS_MAX, Piq.ScaleRule.MEAN_STD])
        expectError(Piq.Error.UNSUPPORTED, () => q.quantize_new(mx, new Piq.Recipe({scale_rule: rule}), src));
    const floor = q.quantize_new(mx, new Piq.Recipe({scale_rule: Piq.ScaleRule.POW2_FLOOR}), src);
    const dflt = q.quantize_new(mx, null, src);
    check(bytesEqual(tensorBytes(floor), tensorBytes(dflt)) &&
        bytesEqual(floor.get_scales().toArray(), dflt.get_scales().toArray()), 'E8M0: POW2_FLOOR is the DEFAULT rule');
    expectError(Piq.Error.UNSUPPORTED, () => q.quantize_new(nf4, new Piq.Recipe({scale_rule: Piq.ScaleRule.MIN_MAX}), src));
    expectError(Piq.Error.UNSUPPORTED, () => q.quantize_new(nf4, new Piq.Recipe({scale_rule: Piq.ScaleRule.POW2_FLOOR}), src));
    expectError(Piq.Error.UNSUPPORTED, () => q.quantize_new(sym8, new Piq.Recipe({scale_rule: Piq.ScaleRule.MIN_MAX}), src));
    expectError(Piq.Error.UNSUPPORTED, () => q.quantize_new(u8, new Piq.Recipe({scale_rule: Piq.ScaleRule.ABS_MAX}), src));
    expectError(Piq.Error.UNSUPPORTED, () => q.compute_params(mx, new Piq.Recipe(), src));

    // a zero point on a symmetric format
    expectError(Piq.Error.INVALID_ZERO_POINT, () => q.quantize_new(sym8, Piq.Recipe.new_affine(0.5, 0), src));
    expectError(Piq.Error.INVALID_ZERO_POINT, () => q.quantize_new(Piq.Format.new_symmetric(Piq.Dtype.UINT8),
        Piq.Recipe.new_affine(0.5, 128), src));
    expectError(Piq.Error.INVALID_ZERO_POINT, () => q.quantize_new(fp8, Piq.Recipe.new_affine(1, 0), src));
    // and an affine format given a scale without its zero point
    expectError(Piq.Error.INVALID_ZERO_POINT, () => q.quantize_new(u8, Piq.Recipe.new_fixed(0.5), src));

    // a given scale where scales are derived per channel or block, or with a rule
    expectError(Piq.Error.UNSUPPORTED, () => q.quantize_new(nf4, Piq.Recipe.new_fixed(1), src));
    const symChannels = new Piq.Format({dtype: Piq.Dtype.INT8, granularity: Piq.Granularity.CHANNEL, symmetric: true});
    expectError(Piq.Error.UNSUPPORTED, () => q.quantize_new(symChannels, Piq.Recipe.new_fixed(0.5),
        f32Shaped(FINITE.slice(0, 300), [10, 30])));
    expectError(Piq.Error.UNSUPPORTED, () => q.quantize_new(u8,
        new Piq.Recipe({scale: 0.5, zero_point: 128, scale_rule: Piq.ScaleRule.MIN_MAX}), src));
    // a seed with nearest rounding; include-zero without the min/max rule
    expectError(Piq.Error.UNSUPPORTED, () => q.quantize_new(u8, new Piq.Recipe({seed: 5}), src));
    expectError(Piq.Error.UNSUPPORTED, () => q.quantize_new(sym8, new Piq.Recipe({include_zero: false}), src));
    // format options that do not apply
    for (const props of [{dtype: Piq.Dtype.UINT8, block_size: 32}, {dtype: Piq.Dtype.INT8, high_nibble_first: true},
        {dtype: Piq.Dtype.UINT8, axis: 1}, {dtype: Piq.Dtype.INT8, double_quant: true},
        {dtype: Piq.Dtype.FP8_E4M3, granularity: Piq.Granularity.BLOCK, scale_dtype: Piq.Dtype.E8M0, saturate: false}]) {
        const f = new Piq.Format(props);
        expectError(Piq.Error.UNSUPPORTED, () => f.validate());
        expectError(Piq.Error.UNSUPPORTED, () => q.quantize_new(f, null, src));
    }

    // no scale given: quantize derives it by the format's rule (never 1.0)
    const [s, zp] = minmaxParams(FINITE, Piq.Dtype.UINT8);
    const derived = q.quantize_new(u8, null, src);
    check(derived.get_scale() === s && derived.get_zero_point() === zp,
        `derived ${derived.get_scale()}/${derived.get_zero_point()}, expected ${s}/${zp}`);
    checkList(tensorBytes(derived), quantizeNearest(FINITE, s, zp, Piq.Dtype.UINT8), 'codes with derived parameters');
    const empty = new Piq.Recipe();
    const again = q.quantize_new(u8, empty, src);
    check(bytesEqual(tensorBytes(again), tensorBytes(derived)), 'an empty recipe is the NULL recipe');
});

// ----------------------------------------------------------- aliasing ----

test('aliasing/requantize/in-place', () => {  // was aliasing/requantize-in-place
    const n = 200003;  // large enough to be split over threads
    const xs = genA(n).map((v, i) => f32(v + (i % 7) / 9));
    const y4 = dequantizeF32(quantizeNearest(xs, 0.3, 6, Piq.Dtype.UINT4), 0.3, 6);
    for (const nThreads of [1, 4]) {
        const q = new Piq.Quantizer({n_threads: nThreads});
        const u4 = affineFormat(Piq.Dtype.UINT4);
        const r = Piq.Recipe.new_affine(0.3, 6);
        const t = f32Tensor(xs);
        check(q.requantize(u4, r, t, t, Piq.ReduceOp.SET) === true, 'requantize() in place');
        checkList(t.to_values(), y4, `${nThreads} threads: uint4 SET in place`);
        const ta = f32Tensor(xs);
        q.requantize(u4, r, ta, ta, Piq.ReduceOp.ADD);
        checkList(ta.to_values(), xs.map((x, i) => f32(x + y4[i])), `${nThreads} threads: uint4 ADD in place`);
        // derived scales: in place gives what a separate destination gets
        for (const [name, f] of [['nf4', Piq.Format.new_preset('nf4')], ['mxfp4', Piq.Format.new_preset('mxfp4')],
            ['int8 blocks', new Piq.Format({dtype: Piq.Dtype.INT8, granularity: Piq.Granularity.BLOCK, block_size: 16})],
            ['uint8', affineFormat(Piq.Dtype.UINT8)]]) {
            const out = Piq.Tensor.new(Piq.Dtype.F32, n);
            q.requantize(f, null, f32Tensor(xs), out, Piq.ReduceOp.SET);
            const tt = f32Tensor(xs);
            q.requantize(f, null, tt, tt, Piq.ReduceOp.SET);
            checkList(tt.to_values(), out.to_values(), `${nThreads} threads: ${name} in place`);
        }
        // a matrix, per channel
        const rows = 400, cols = 499;
        const m = f32Shaped(xs.slice(0, rows * cols), [rows, cols]);
        const pc = Piq.Format.new_per_channel(Piq.Dtype.INT8, 1);
        const out = Piq.Tensor.new_shaped(Piq.Dtype.F32, [rows, cols]);
        q.requantize(pc, null, m, out, Piq.ReduceOp.SET);
        q.requantize(pc, null, m, m, Piq.ReduceOp.SET);
        checkList(m.to_values(), out.to_values(), `${nThreads} threads: per-channel matrix in place`);
    }
});

// --------------------------------------------- ported from the Python suite ----

test('quantize/f32/uint8/params-attached', () => {
    const u8 = affineFormat(Piq.Dtype.UINT8);
    const src = f32Tensor(DATA);
    const dst = quantizedFor(u8, DATA.length);
    Piq.Quantizer.get_default().quantize(uint8Recipe(0.5, 100), src, dst);
    const f = dst.get_format();
    check(f !== null, 'the quantized tensor carries no format');
    check(f.dtype === Piq.Dtype.UINT8 && f.equal(u8), `attached format ${f.to_string()}`);
    check(dst.get_scale() === 0.5 && dst.get_zero_point() === 100,
        `the tensor's scale and zero point ${dst.get_scale()}/${dst.get_zero_point()}`);
    check(dst.get_scales() === null && dst.get_zero_points() === null, 'a per-tensor format has scale arrays');
});

test('quantize/int8/nearest', () => {
    const q = new Piq.Quantizer();
    const qt = q.quantize_new(affineFormat(Piq.Dtype.INT8), Piq.Recipe.new_affine(0.5, -3), f32Tensor(DATA));
    const codes = quantizeNearest(DATA, 0.5, -3, Piq.Dtype.INT8);
    checkList(Array.from(new Int8Array(tensorBytes(qt).slice().buffer)), codes, 'int8 codes');
    checkList(q.dequantize_new(qt, Piq.Dtype.F32).to_values(), dequantizeF32(codes, 0.5, -3), 'int8 dequantized');
});

test('dtype/enum-values', () => {
    // the numeric values are ABI (piq-types.h)
    const want = {F32: 0, F64: 1, BF16: 2, F16: 3, UINT2: 16, INT2: 17, UINT4: 18, INT4: 19, UINT8: 20, INT8: 21,
        INT64: 27};
    for (const [name, value] of Object.entries(want))
        check(Piq.Dtype[name] === value, `Piq.Dtype.${name} = ${Piq.Dtype[name]}`);
    check(Piq.ReduceOp.SET === 0 && Piq.ReduceOp.ADD === 1, 'ReduceOp values');
    check(Piq.Error.SIZE === 1 && Piq.Error.INVALID_SCALE === 3, 'Error values');
    check(Piq.Error.NO_FORMAT === 8 && Piq.Error.OVERLAP === 11, 'NO_FORMAT and OVERLAP values');
    check(Piq.ScaleRule.MIN_MAX === 0 && Piq.ScaleRule.DEFAULT === 7, 'ScaleRule values');
    checkList([Piq.Granularity.TENSOR, Piq.Granularity.CHANNEL, Piq.Granularity.BLOCK], [0, 1, 2],
        'Granularity values');
});

test('immutability/format-construct-only', () => {
    const q = new Piq.Quantizer();
    const f = new Piq.Format({dtype: Piq.Dtype.UINT8});
    const before = f.to_string();
    const props = [['dtype', Piq.Dtype.INT4], ['granularity', Piq.Granularity.BLOCK], ['axis', 1],
        ['block_size', 16], ['scale_dtype', Piq.Dtype.F16], ['symmetric', true], ['saturate', false],
        ['high_nibble_first', true], ['double_quant', true]];
    for (const [name, value] of props) {
        const pspec = Piq.Format.find_property(name.replace(/_/g, '-'));
        check(pspec !== null, `Piq.Format has no property ${name}`);
        check(pspec.flags & GObject.ParamFlags.CONSTRUCT_ONLY, `${name} is not construct-only`);
        const old = f[name];
        // GJS throws on a construct-only property set after construction
        let threw = false;
        try {
            f[name] = value;
        } catch (e) {
            threw = true;
        }
        check(threw || f[name] === old, `setting ${name} after construction neither threw nor was refused`);
        check(f[name] === old, `${name} changed to ${f[name]}`);
    }
    check(f.to_string() === before, `the format changed: ${f.to_string()}`);
    // a quantized tensor holds a format that nobody can change
    const qt = q.quantize_new(Piq.Format.new_preset('nf4'), null, f32Tensor(FINITE));
    try {
        qt.get_format().high_nibble_first = false;
    } catch (e) {
        // refused
    }
    check(qt.get_format().high_nibble_first, "the tensor's nibble order changed");
});

// --------------------------------------------- ported from the Python suite ----

// round() of C, written out: ties away from zero
function roundHalfAway(v) {
    const a = Math.abs(v);
    const f = Math.floor(a);
    const r = a - f >= 0.5 ? f + 1 : f;
    return isNegative(v) ? -r : r;
}

function meanstdParams(xs, dtype) {
    const [qmin, qmax] = RANGES.get(dtype);
    const bits = new Map([[Piq.Dtype.UINT8, 8], [Piq.Dtype.INT8, 8], [Piq.Dtype.UINT4, 4], [Piq.Dtype.INT4, 4]]).get(dtype);
    const signed = qmin < 0;
    const n = xs.length;
    let s = 0, s2 = 0;
    for (const x of xs)
        s += x;
    for (const x of xs)
        s2 += x * x;
    const mean = s / n;
    const variance = n > 1 ? (s2 - s * s / n) / (n - 1) : 0.0;
    const sigma = Math.sqrt(Math.max(variance, 0.0));
    const typeMax = 2 ** (bits - (signed ? 1 : 0)) - 1;
    const c = bits === 2 ? 1.4 : bits === 4 ? 2.7 : 12.0;
    let scale = c * sigma / typeMax;
    if (scale === 0)
        scale = 1.0;
    const centre = signed ? 0 : (typeMax + 1) >> 1;
    const zp = centre - roundHalfAway(mean / scale);
    return [scale, Math.min(Math.max(zp, qmin), qmax)];
}

// n standard normal deviates, deterministic: the Park–Miller generator (exact
// in binary64) and Box–Muller; the Lua and Vala suites use the same recipe
function normals(n, seed) {
    let s = seed;
    const next = () => {
        s = (s * 16807) % 2147483647;
        return s / 2147483647;
    };
    const out = [];
    while (out.length < n) {
        const u1 = next(), u2 = next();
        const r = Math.sqrt(-2 * Math.log(u1));
        out.push(r * Math.cos(2 * Math.PI * u2));
        if (out.length < n)
            out.push(r * Math.sin(2 * Math.PI * u2));
    }
    return out;
}

test('dtype/functions', () => {
    const D = Piq.Dtype;
    const bits = {UINT2: 2, INT2: 2, UINT4: 4, INT4: 4, UINT8: 8, INT8: 8, UINT16: 16, INT16: 16, UINT32: 32,
        INT32: 32, UINT64: 64, INT64: 64, F32: 32, F64: 64, BF16: 16, F16: 16};
    for (const [key, b] of Object.entries(bits)) {
        const dtype = D[key];
        const name = key.toLowerCase();  // the enum's nick
        check(D.get_bits(dtype) === b, `${name}: ${D.get_bits(dtype)} bits`);
        check(D.get_name(dtype) === name, `get_name(${name}) = ${D.get_name(dtype)}`);
        const found = D.from_name(D.get_name(dtype));
        check(found[0] === true && found[1] === dtype, `from_name(${D.get_name(dtype)}) = ${found}`);
        const isFloat = [D.F32, D.F64, D.BF16, D.F16].includes(dtype);
        check(D.is_float(dtype) === isFloat && D.is_quantized(dtype) !== isFloat, `${name}: is_float/is_quantized`);
        const rng = D.get_range(dtype);
        if (isFloat) {
            check(!rng[0], `get_range(${name}) succeeded`);
        } else {
            // GJS reads a 64-bit integer into a Number: the expected bounds are
            // exact integers (BigInt) rounded the same way
            const B = BigInt(b);
            const want = name.startsWith('int') ? [-(1n << (B - 1n)), (1n << (B - 1n)) - 1n] : [0n, (1n << B) - 1n];
            check(rng[0] === true && rng[1] === Number(want[0]) && rng[2] === Number(want[1]),
                `get_range(${name}) = ${rng}, expected ${want}`);
        }
        for (const n of [0, 1, 37, 1000003]) {
            const size = D.get_size_for_n(dtype, n);
            const want = Number((BigInt(n) * BigInt(b) + 7n) / 8n);
            check(size[0] === true && size[1] === want, `get_size_for_n(${name}, ${n}) = ${size}, expected ${want}`);
        }
    }
    check(!D.from_name('uint3')[0], "from_name('uint3') succeeded");
    expectError(Piq.Error.OVERFLOW, () => D.get_size_for_n(D.F64, 2 ** 63));
});

test('compute-params/mean-std', () => {
    // dyadic data: every partial sum is exact, so the summation order cannot matter
    const xs = [];
    for (let i = 0; i < 203; i++)
        xs.push(((i * 37) % 61 - 20) / 4.0);
    const q = new Piq.Quantizer();
    const src = f32Tensor(xs);
    for (const [dtype, name] of [[Piq.Dtype.UINT8, 'uint8'], [Piq.Dtype.INT8, 'int8'], [Piq.Dtype.UINT4, 'uint4']]) {
        const p = new Piq.Recipe({scale_rule: Piq.ScaleRule.MEAN_STD});
        check(q.compute_params(affineFormat(dtype), p, src) === true, 'compute_params()');
        const [scale, zp] = meanstdParams(xs, dtype);
        check(Math.abs(p.scale - scale) <= 4e-16 * scale, `${name}: scale ${p.scale}, expected ${scale}`);
        check(p.zero_point === zp, `${name}: zero point ${p.zero_point}, expected ${zp}`);
    }
});

test('quantize/stochastic/probability', () => {
    const n = 20000;
    const q = new Piq.Quantizer();
    const src = f32Tensor(new Array(n).fill(2.3));  // v = 2.3 / 1 in binary32: frac ≈ 0.3
    const p = new Piq.Recipe({scale: 1.0, zero_point: 0, round_mode: Piq.RoundMode.STOCHASTIC, seed: 7});
    const codes = tensorBytes(q.quantize_new(affineFormat(Piq.Dtype.UINT8), p, src));
    const seen = [...new Set(codes)].sort((a, b) => a - b);
    check(seen.every(c => c === 2 || c === 3), `codes outside {2, 3}: ${seen}`);
    const frac = f32(2.3) - 2.0;
    const up = codes.filter(c => c === 3).length / n;
    const sigma = Math.sqrt(frac * (1 - frac) / n);
    check(Math.abs(up - frac) < 5 * sigma, `rounded up ${up} of the time, expected ${frac} ± ${5 * sigma}`);
});

test('large/threads-and-simd', () => {
    const n = 262147;
    const x = normals(n, 20240611).map(v => f32(v * 40));
    for (let i = 0; i < n; i += 97)
        x[i] = f32(roundHalfEven(x[i]) + 0.25);  // ties for scale 0.5: v = 2k + 0.5
    for (let i = 1; i < n; i += 89)
        x[i] = f32(roundHalfEven(x[i]) + 0.75);  // v = 2k + 1.5
    const u8 = affineFormat(Piq.Dtype.UINT8);
    // Python wraps the array by address (new_for_address); GJS copies it in
    const src = f32Tensor(x);
    const want = quantizeNearest(x, 0.5, 128, Piq.Dtype.UINT8);
    const wy = want.map(c => f32(f32(c - 128) * 0.5));
    // the quantize_raw() part of this case is not for GJS
    print(`# quantize_raw() part skipped: ${NO_ADDRESS}`);
    const results = [];
    for (const [label, props] of [['1 thread', {n_threads: 1}], ['4 threads', {n_threads: 4}],
        ['all cores', {n_threads: 0}], ['scalar', {n_threads: 3, max_simd_level: Piq.SimdLevel.SCALAR}]]) {
        const q = new Piq.Quantizer(props);
        const dst = quantizedFor(u8, [n]);
        check(q.quantize(uint8Recipe(0.5, 128), src, dst) === true, `${label}: quantize()`);
        const codes = tensorBytes(dst);
        const bad = [];
        for (let i = 0; i < n; i++) {
            if (codes[i] !== want[i])
                bad.push(i);
        }
        check(bad.length === 0, `${label}: ${bad.length} codes differ, first at ${bad.slice(0, 4)}: ` +
            `${bad.slice(0, 4).map(i => codes[i])} vs ${bad.slice(0, 4).map(i => want[i])}`);
        const out = Piq.Tensor.new(Piq.Dtype.F32, n);
        check(q.dequantize(dst, out, Piq.ReduceOp.SET) === true, `${label}: dequantize()`);
        const y = tensorF32(out);
        let ybad = 0;
        for (let i = 0; i < n; i++) {
            if (y[i] !== wy[i])
                ybad++;
        }
        check(ybad === 0, `${label}: ${ybad} dequantized values differ`);
        const p = new Piq.Recipe({round_mode: Piq.RoundMode.STOCHASTIC, seed: 99, scale: 9.0, zero_point: 8});
        results.push([label, tensorBytes(q.quantize_new(affineFormat(Piq.Dtype.UINT4), p, src))]);
    }
    for (const [label, bytes] of results.slice(1))
        check(bytesEqual(bytes, results[0][1]), `stochastic uint4 bytes of ${label} differ from ${results[0][0]}`);
});

test('formats/msfp16/shared-exponent', () => {
    // MSFP16: sign + 7-bit magnitude per element, one exponent byte per box of 16:
    // E = the box maximum's binary32 exponent + 1 (+1 when rounding it carries),
    // value = (-1)^s * mag * 2^(E - 127 - 7); computed here from the definition
    const q = new Piq.Quantizer();
    const arr = genA(40).map(f32);  // boxes of 16, 16 and a ragged 8
    const src = f32Tensor(arr);
    const p = Piq.Format.new_preset('msfp16');
    check(p.dtype === Piq.Dtype.BFP7 && p.get_block_size() === 16, 'msfp16 preset');
    const t = q.quantize_new(p, null, src);
    check(t.get_n_bytes() === 40, `40 bfp7 elements take ${t.get_n_bytes()} bytes`);
    const exps = Array.from(t.get_scales().toArray());
    const codes = tensorBytes(t);
    const y = tensorF32(q.dequantize_new(t, Piq.Dtype.F32));
    for (let b0 = 0; b0 < 40; b0 += 16) {
        const blk = arr.slice(b0, b0 + 16);
        const amax = Math.max(...blk.map(Math.abs));
        let e = amax ? floorLog2(amax) + 1 : -127;  // amax < 2^e
        if (amax && roundHalfEven(amax * 2 ** (7 - e)) >= 128)
            e += 1;
        const wantE = amax ? e + 127 : 0;
        check(exps[b0 / 16] === wantE, `box ${b0 / 16}: exponent ${exps[b0 / 16]}, want ${wantE}`);
        blk.forEach((v, i) => {
            const mag = Math.min(roundHalfEven(Math.abs(v) * 2 ** (127 + 7 - wantE)), 127);
            const want = (isNegative(v) ? 128 : 0) | mag;
            check(codes[b0 + i] === want, `element ${b0 + i}: code ${codes[b0 + i]}, want ${want}`);
            const val = (isNegative(v) ? -1 : 1) * mag * 2 ** (wantE - 127 - 7);
            check(y[b0 + i] === val, `element ${b0 + i}: ${y[b0 + i]}, want ${val}`);
        });
    }
});

test('formats/nf4/double-quant', () => {
    // bitsandbytes' compress_statistics: the same codes as plain nf4, the scales
    // stored as an f32 offset, one f32 per 256 blocks and a byte per block
    const q = new Piq.Quantizer();
    const n = 64 * 300 + 5;
    const arr = genA(n).map(f32);
    const src = f32Tensor(arr);
    const plain = q.quantize_new(Piq.Format.new_preset('nf4'), null, src);
    const p = Piq.Format.new_preset('nf4_dq');
    check(p.double_quant === true, 'nf4_dq preset');
    const t = q.quantize_new(p, null, src);
    check(bytesEqual(tensorBytes(t), tensorBytes(plain)), 'double quantization changed the codes');
    const blocks = Math.ceil(n / 64);
    const size = t.get_scales().get_size();
    check(size === 4 + 4 * 2 + blocks, `scales take ${size} bytes`);
    const [ok, , wantSize] = p.get_sizes([n]);
    check(ok && wantSize === size, `get_sizes() gives ${wantSize} scale bytes`);
    const absmax = bytesAs(plain.get_scales(), Float32Array);
    const offset = new Float32Array(t.get_scales().toArray().slice(0, 4).buffer)[0];
    let sum = 0;  // binary64: exact for 301 binary32 values of one binade
    for (const a of absmax)
        sum += a;
    check(offset === f32(sum / blocks), `offset ${offset} is not the mean absmax ${f32(sum / blocks)}`);
    const y = tensorF32(q.dequantize_new(t, Piq.Dtype.F32));
    const y0 = tensorF32(q.dequantize_new(plain, Piq.Dtype.F32));
    let err = 0, err0 = 0;
    for (let i = 0; i < n; i++) {
        err += Math.abs(y[i] - arr[i]);
        err0 += Math.abs(y0[i] - arr[i]);
    }
    err /= n;
    err0 /= n;
    check(err < err0 * 1.02, `double quantization MAE ${err} against ${err0}`);
    const bad = new Piq.Format({dtype: Piq.Dtype.NF4, granularity: Piq.Granularity.BLOCK, block_size: 64,
        high_nibble_first: true, double_quant: true, scale_dtype: Piq.Dtype.F16});
    expectError(Piq.Error.UNSUPPORTED, () => bad.validate());
    expectError(Piq.Error.UNSUPPORTED, () => q.quantize_new(bad, null, src));
});

test('observer/min-max/merge-and-state', () => {
    const half = FINITE.length >> 1;
    const [a, b, whole] = [0, 1, 2].map(() => Piq.Observer.new(Piq.ObserverKind.MIN_MAX));
    a.observe(f32Tensor(FINITE.slice(0, half)));
    b.observe(f32Tensor(FINITE.slice(half)));
    whole.observe(f32Tensor(FINITE));
    a.merge(b);
    const loHi = o => [...o.get_min().toArray(), ...o.get_max().toArray()];
    checkList(loHi(a), loHi(whole), 'merged halves against one observer');
    const back = Piq.Observer.new_deserialize(a.serialize());
    checkList(loHi(back), loHi(a), 'state round trip');
    check(back.get_n_batches() === 2, 'batches after the round trip');
    const r = back.compute_recipe(affineFormat(Piq.Dtype.UINT8));
    const [scale, zp] = minmaxParams(FINITE, Piq.Dtype.UINT8);
    check(r.scale === scale && r.zero_point === zp, `recipe ${r.scale}/${r.zero_point}, expected ${scale}/${zp}`);
});

test('qat/per-tensor/ste-and-lsq', () => {
    const q = new Piq.Quantizer();
    const u8 = affineFormat(Piq.Dtype.UINT8);
    const xs = [-6.0, -1.25, 0.0, 0.75, 3.0, 200.0];
    const src = f32Tensor(xs);
    const out = Piq.Tensor.new(Piq.Dtype.F32, xs.length);
    const mask = Piq.Tensor.new(Piq.Dtype.UINT8, xs.length);
    check(q.fake_quantize_per_tensor(u8, src, 0.5, 10, out, mask) === true, 'fake_quantize_per_tensor');
    checkList(out.to_values(), [-5.0, -1.0, 0.0, 1.0, 3.0, 122.5], 'values');
    checkList([...tensorBytes(mask)], [0, 1, 1, 1, 1, 0], 'mask');
    const gradSrc = Piq.Tensor.new(Piq.Dtype.F32, xs.length);
    const [ok, gScale, gZp] = q.fake_quantize_per_tensor_backward(u8, src, 0.5, 10,
        f32Tensor([1, 2, 3, 4, 5, 6]), 1.0, gradSrc);
    check(ok === true, 'fake_quantize_per_tensor_backward');
    checkList(gradSrc.to_values(), [0, 2, 3, 4, 5, 0], 'STE gradient');
    // −10 (clamped below) + 1 + 0 + 2 + 0 + 1470 (clamped above); −0.5 − 3
    check(gScale === 1463 && gZp === -3.5, `gradients ${gScale}, ${gZp}`);
});

test('matmul/int8-weights/both-policies', () => {
    const q = new Piq.Quantizer();
    // W = [[1, 2, 3], [-4, 5, -6]] as int8 codes with scale 1: every product is exact
    const w = Piq.Tensor.new_quantized_from_bytes(affineFormat(Piq.Dtype.INT8), [2, 3],
        new GLib.Bytes(new Uint8Array([1, 2, 3, 0xfc, 5, 0xfa])), null, null, 1.0, 0);
    const x = f32Tensor([127, -2, 5]);   // amax 127: the int8 activations are x itself
    const bias = f32Tensor([0.5, -1]);
    for (const act of [Piq.Activation.FLOAT, Piq.Activation.DYNAMIC_INT8]) {
        const pw = Piq.PackedWeights.new(w, act);
        check(pw.get_n_out() === 2 && pw.get_n_in() === 3 && pw.get_activation() === act, 'packed shape');
        check(pw.get_weights() === w, 'the packed weights keep their tensor');
        check((pw.get_n_bytes() === 0) === (act === Piq.Activation.FLOAT), `bytes held: ${pw.get_n_bytes()}`);
        const y = q.matmul_new(x, pw, bias, Piq.Dtype.F32);
        checkList(y.get_shape(), [2], 'output shape');
        checkList(y.to_values(), [138.5, -549], 'X·Wᵀ + bias');
        check(q.matmul(x, pw, bias, y, Piq.ReduceOp.ADD) === true, 'matmul ADD');
        checkList(y.to_values(), [277, -1098], 'ADD');
    }
    expectError(Piq.Error.UNSUPPORTED, () => Piq.PackedWeights.supports(Piq.Format.new_preset('nf4'),
        Piq.Activation.DYNAMIC_INT8));
});

test('matmul/binary/xnor-popcount', () => {
    const q = new Piq.Quantizer();
    const fmt = Piq.Format.new_preset('binary');   // blocks of 128 > 40: one block per row
    // W [3, 40]: row 0 all +, row 1 all −, row 2 + for its first 20; scales 2, 0.5, 1
    const codes = new Uint8Array([0xff, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0, 0, 0xff, 0xff, 0x0f, 0, 0]);
    const scales = new Uint8Array(new Float32Array([2, 0.5, 1]).buffer);
    const w = Piq.Tensor.new_quantized_from_bytes(fmt, [3, 40], new GLib.Bytes(codes), new GLib.Bytes(scales),
        null, 1.0, 0);
    const pw = Piq.PackedWeights.new(w, Piq.Activation.BINARY);
    check(pw.get_activation() === Piq.Activation.BINARY, 'packed for the binary policy');
    // X [2, 40]: row 0 −2 ×10 then 1 ×30 (mean |x| 1.25), row 1 0.5 ×30 then −0.5 ×10 (mean 0.5)
    const xs = [];
    for (let i = 0; i < 40; i++) xs.push(i < 10 ? -2 : 1);
    for (let i = 0; i < 40; i++) xs.push(i < 30 ? 0.5 : -0.5);
    const x = f32Tensor(xs);
    check(x.reshape([2, 40]) === true, 'reshape');
    const bias = f32Tensor([0.5, -1, 0.25]);
    // sx · sw · (agreeing − disagreeing bits) + bias
    const want = [1.25 * 2 * 20 + 0.5, 1.25 * 0.5 * -20 - 1, 1.25 * -20 + 0.25,
        0.5 * 2 * 20 + 0.5, 0.5 * 0.5 * -20 - 1, 0.5 * 20 + 0.25];
    const y = q.matmul_new(x, pw, bias, Piq.Dtype.F32);
    checkList(y.get_shape(), [2, 3], 'output shape');
    checkList(y.to_values(), want, 'XNOR-popcount product');
    check(q.matmul(x, pw, bias, y, Piq.ReduceOp.ADD) === true, 'matmul ADD');
    checkList(y.to_values(), want.map(v => 2 * v), 'ADD');
    const a = q.quantize_new(fmt, null, x);
    const y2 = Piq.Tensor.new_shaped(Piq.Dtype.F32, [2, 3]);
    check(q.matmul_quantized(a, pw, bias, null, y2, Piq.ReduceOp.SET) === true, 'matmul_quantized, binary A');
    checkList(y2.to_values(), want, 'binary A × binary W');
    expectError(Piq.Error.UNSUPPORTED, () => Piq.PackedWeights.supports(Piq.Format.new_preset('nf4'),
        Piq.Activation.BINARY));
});

test('matmul/int8-gemm/zero-points', () => {
    const q = new Piq.Quantizer();
    // A = [[130, 126, 128]] with zero point 128 and scale 0.5: a − za = [2, −2, 0]
    const a = Piq.Tensor.new_quantized_from_bytes(affineFormat(Piq.Dtype.UINT8), [1, 3],
        new GLib.Bytes(new Uint8Array([130, 126, 128])), null, null, 0.5, 128);
    const w = Piq.Tensor.new_quantized_from_bytes(affineFormat(Piq.Dtype.INT8), [2, 3],
        new GLib.Bytes(new Uint8Array([1, 2, 3, 0xfc, 5, 0xfa])), null, null, 1.0, 0);
    const pw = Piq.PackedWeights.new(w, Piq.Activation.DYNAMIC_INT8);
    const sums = Piq.Tensor.new_shaped(Piq.Dtype.INT32, [1, 2]);
    check(q.matmul_quantized(a, pw, null, null, sums, Piq.ReduceOp.SET) === true, 'int32 output');
    const raw = tensorBytes(sums);
    checkList([...new Int32Array(raw.buffer, raw.byteOffset, 2)], [-2, -18], 'exact sums');
    const bias = f32Tensor([0.5, -1]);
    const y = Piq.Tensor.new_shaped(Piq.Dtype.F32, [1, 2]);
    check(q.matmul_quantized(a, pw, bias, null, y, Piq.ReduceOp.SET) === true, 'float output');
    checkList(y.to_values(), [-0.5, -10], 'sa · sw · sum + bias');
    const codes = Piq.Tensor.new_quantized(affineFormat(Piq.Dtype.UINT8), [1, 2]);
    check(q.matmul_quantized(a, pw, bias, Piq.Recipe.new_affine(0.25, 128), codes, Piq.ReduceOp.SET) === true,
        'requantized');
    checkList([...tensorBytes(codes)], [126, 88], 'codes');
    check(codes.get_scale() === 0.25 && codes.get_zero_point() === 128, 'output scale and zero point');
});

test('matmul/fp8/both-quantized', () => {
    const q = new Piq.Quantizer();
    const fp8 = Piq.Format.new_preset('fp8_e4m3');
    const x = f32Shaped([1, -2, 0.5, 3, 0.25, -1], [2, 3]);
    const wx = f32Shaped([1, 2, 3, -4, 5, -6], [2, 3]);
    const a = q.quantize_new(fp8, Piq.Recipe.new_fixed(1.0), x);     // every value is an E4M3 value
    const w = q.quantize_new(fp8, Piq.Recipe.new_fixed(1.0), wx);
    const pw = Piq.PackedWeights.new(w, Piq.Activation.FLOAT);
    const bias = f32Tensor([0.5, -1]);
    const y = Piq.Tensor.new_shaped(Piq.Dtype.F32, [2, 2]);
    check(q.matmul_quantized(a, pw, bias, null, y, Piq.ReduceOp.SET) === true, 'matmul_quantized');
    checkList(y.to_values(), [-1, -18, 1, -5.75], 'A·Wᵀ + bias');
    const ref = q.matmul_new(q.dequantize_new(a, Piq.Dtype.F32), pw, bias, Piq.Dtype.F32);
    checkList([...tensorBytes(y)], [...tensorBytes(ref)], 'the bytes of matmul(dequantize(A), W)');
    check(q.matmul_quantized(a, pw, bias, null, y, Piq.ReduceOp.ADD) === true, 'matmul_quantized ADD');
    checkList(y.to_values(), [-2, -36, 2, -11.5], 'ADD');
    const w8 = q.quantize_new(Piq.Format.new_preset('int8_block'), null, wx);
    const pw8 = Piq.PackedWeights.new(w8, Piq.Activation.DYNAMIC_INT8);
    expectError(Piq.Error.UNSUPPORTED, () => q.matmul_quantized(a, pw8, null, null, y, Piq.ReduceOp.SET));
    checkList(y.to_values(), [-2, -36, 2, -11.5], 'nothing written on error');
});

// ----------------------------------------------- not for this language ----

const NO_ADDRESS = 'GJS cannot take the address of a buffer: the raw and new_for_address forms are for C, Vala and Python';
skip('address/quantize-into-buffer', NO_ADDRESS);
skip('address/dequantize-into-buffer', NO_ADDRESS);
skip('address/wrap-source', NO_ADDRESS);
skip('aliasing/quantize/overlap', `${NO_ADDRESS} (no two writable tensors over one buffer)`);
skip('aliasing/dequantize/overlap', `${NO_ADDRESS} (no two writable tensors over one buffer)`);
skip('aliasing/requantize/overlap', `${NO_ADDRESS} (no two writable tensors over one buffer)`);
// numpy.save's header for a (2, 3) float32 array (NEP 1): magic, version 1.0,
// length 118, the dict padded with spaces to byte 127, '\n'
const NPY_23_DICT = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";

test('tensor/addresses', () => {
    // GJS cannot read memory at an address: the addresses are numbers here,
    // with the sizes of the buffers they point to.
    const q = new Piq.Quantizer();
    const x = f32Shaped(Array.from({length: 128}, (_, i) => Math.sin(i) * 3), [2, 64]);
    for (const fmt of [Piq.Format.new_preset('nf4'), Piq.Format.new_per_channel(Piq.Dtype.UINT8, 0)]) {
        const t = q.quantize_new(fmt, null, x);
        const pairs = [[t.get_address(), t.get_bytes()], [t.get_scales_address(), t.get_scales()],
            [t.get_zero_points_address(), t.get_zero_points()]];
        for (const [[address, size], bytes] of pairs) {
            if (bytes === null)
                check(address === 0 && size === 0, 'no buffer: address 0, size 0');
            else
                check(address !== 0 && size === bytes.get_size(), `address ${address}, size ${size}`);
        }
    }
    const [a, n] = Piq.Tensor.new(Piq.Dtype.F32, 0).get_address();
    check(a === 0 && n === 0, 'an empty tensor');
});

test('io/npy-piqt/round-trip', () => {
    const q = new Piq.Quantizer();
    const dir = GLib.dir_make_tmp('piq-io-XXXXXX');
    const npy = Gio.File.new_for_path(GLib.build_filenamev([dir, 'x.npy']));
    const piqt = Gio.File.new_for_path(GLib.build_filenamev([dir, 'w.piqt']));
    const vals = [0.5, -1.25, 3, 7.5, -0, 2];
    const x = f32Tensor(vals);
    check(x.reshape([2, 3]), 'reshape');
    check(x.save_to_file(npy, Piq.FileFormat.NPY, null), 'save .npy');
    const [, raw] = npy.load_contents(null);
    const want = [0x93, ...'NUMPY'].map(c => typeof c === 'string' ? c.charCodeAt(0) : c)
        .concat([1, 0, 118, 0], [...NPY_23_DICT].map(c => c.charCodeAt(0)));
    while (want.length < 127)
        want.push(0x20);
    want.push(0x0a);
    check(bytesEqual(raw.slice(0, 128), new Uint8Array(want)), "numpy's header");
    check(bytesEqual(raw.slice(128), new Uint8Array(new Float32Array(vals).buffer)), "numpy's data");
    const back = Piq.Tensor.new_from_file(npy, null);
    checkList(back.get_shape(), [2, 3], 'shape read back');
    checkList(back.to_values(), vals.map(f32), 'values read back');
    // a quantized tensor keeps its format, scales and codes in a container
    const w = f32Tensor(Array.from({length: 128}, (_, i) => Math.sin(i) * 3));
    const nf4 = q.quantize_new(Piq.Format.new_preset('nf4'), null, w);
    check(nf4.save_to_file(piqt, Piq.FileFormat.PIQT, null), 'save .piqt');
    const wb = Piq.Tensor.new_from_file(piqt, null);
    check(wb.get_format().equal(nf4.get_format()), 'the format comes back');
    check(bytesEqual(tensorBytes(wb), tensorBytes(nf4)), 'the codes come back');
    check(bytesEqual(wb.get_scales().toArray(), nf4.get_scales().toArray()), 'the scales come back');
    checkList(q.dequantize_new(wb, Piq.Dtype.F32).to_values(), q.dequantize_new(nf4, Piq.Dtype.F32).to_values(),
        'it decodes the same');
    expectError(Piq.Error.UNSUPPORTED, () => nf4.save_to_file(npy, Piq.FileFormat.NPY, null));
    const [, whole] = piqt.load_contents(null);
    piqt.replace_contents(whole.slice(0, 100), null, false, Gio.FileCreateFlags.NONE, null);
    expectError(Piq.Error.FILE_FORMAT, () => Piq.Tensor.new_from_file(piqt, null));
    const names = [];
    const e = Gio.File.new_for_path(dir).enumerate_children('standard::name', Gio.FileQueryInfoFlags.NONE, null);
    for (let info = e.next_file(null); info !== null; info = e.next_file(null))
        names.push(info.get_name());
    checkList(names.sort(), ['w.piqt', 'x.npy'], 'no temporary files left');
    npy.delete(null);
    piqt.delete(null);
    Gio.File.new_for_path(dir).delete(null);
});

test('io/safetensors/round-trip', () => {
    const q = new Piq.Quantizer();
    const st = Piq.Safetensors.new();
    const a = f32Shaped([0.5, 1.5, -2, 4], [2, 2]);
    const nf4 = q.quantize_new(Piq.Format.new_preset('nf4'), null,
        f32Tensor(Array.from({length: 128}, (_, i) => Math.cos(i) * 2)));
    st.set_tensor('a', a);
    st.set_tensor('w', nf4);
    st.set_metadata('model', 'test');
    const dir = GLib.dir_make_tmp('piq-st-XXXXXX');
    const file = Gio.File.new_for_path(GLib.build_filenamev([dir, 'm.safetensors']));
    check(st.save_to_file(file, null), 'save');
    // the file as the published format defines it: length, JSON, data
    const [, raw] = file.load_contents(null);
    const view = new DataView(raw.buffer, raw.byteOffset, raw.byteLength);
    const n = Number(view.getBigUint64(0, true));
    const head = JSON.parse(new TextDecoder().decode(raw.slice(8, 8 + n)));
    check(n % 8 === 0, 'header padded to 8 bytes');
    checkList(Object.keys(head).sort(), ['__metadata__', 'a', 'w', 'w.piq_scales'], 'entries');
    checkList(head.a.shape, [2, 2], "a's shape");
    check(head.a.dtype === 'F32' && head.a.data_offsets[0] === 0 && head.a.data_offsets[1] === 16, "a's entry");
    check(head.__metadata__.model === 'test', 'metadata');
    const back = Piq.Safetensors.new_from_file(file, null);
    checkList(back.get_names(), ['a', 'w'], 'names read back');
    checkList(back.get_tensor('a').to_values(), [0.5, 1.5, -2, 4], 'values read back');
    check(back.get_metadata('model') === 'test', 'metadata read back');
    const wb = back.get_tensor('w');
    check(wb.get_format().equal(nf4.get_format()) && bytesEqual(tensorBytes(wb), tensorBytes(nf4)), 'NF4 read back');
    st.set_tensor('w.piq_scales', a);
    expectError(Piq.Error.UNSUPPORTED, () => st.save_to_file(file, null));
    file.delete(null);
    Gio.File.new_for_path(dir).delete(null);
});

skip('binding/throws-piq-error', "GJS throws GLib.Error from the typelib's throws flag itself; the VAPI's throws clauses are Vala's");

main();
