// test-bindings-gjs.js: piquant through GJS and the typelib
//
// SPDX-License-Identifier: LGPL-2.1-or-later
//
// Every expected value is computed here in JavaScript, in binary32 through
// Math.fround and with a round-half-even written out, from docs/numerics.md.
// Prints TAP.

imports.gi.versions.GLib = '2.0';
imports.gi.versions.GObject = '2.0';
imports.gi.versions.Piq = '1.0';
const {GLib, GObject, Piq} = imports.gi;
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
const TESTS = [];
function test(name, fn) {
    TESTS.push(['gjs/' + name, fn]);
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

function uint8Params(scale = 0.5, zp = 128) {
    return new Piq.Params({dtype: Piq.Dtype.UINT8, scale, zero_point: zp});
}

function tensorBytes(t) {
    return t.get_bytes().toArray();
}

function tensorF32(t) {
    const copy = tensorBytes(t).slice();  // own, aligned ArrayBuffer
    return Array.from(new Float32Array(copy.buffer, 0, copy.length / 4));
}

function stochasticParams(dtype, seed, scale = 0.37) {
    return new Piq.Params({
        dtype, scale, zero_point: dtype === Piq.Dtype.UINT8 ? 100 : 7,
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

test('quantizer/n-threads', () => {
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

test('quantizer/simd-level', () => {
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

test('params/properties', () => {
    const p = new Piq.Params({dtype: Piq.Dtype.UINT8, scale: 0.5, zero_point: 128});
    check(p.dtype === Piq.Dtype.UINT8 && p.get_dtype() === Piq.Dtype.UINT8, `dtype ${p.dtype}`);
    check(p.scale === 0.5 && p.get_scale() === 0.5, `scale ${p.scale}`);
    check(p.zero_point === 128 && p.zeroPoint === 128 && p.get_zero_point() === 128, `zero-point ${p.zero_point}`);
    check(p.round_mode === Piq.RoundMode.NEAREST, `default round-mode ${p.round_mode}`);
    check(p.seed === 0, `default seed ${p.seed}`);
    check(p.scale_rule === Piq.ScaleRule.MIN_MAX, `default scale-rule ${p.scale_rule}`);
    check(p.include_zero === true, `default include-zero ${p.include_zero}`);
    p.seed = 123456789012;
    check(p.get_seed() === 123456789012, `seed read back as ${p.get_seed()}`);
    p.zero_point = -5;
    check(p.get_zero_point() === -5, 'negative zero point');
    const a = Piq.Params.new_affine(Piq.Dtype.UINT4, 0.25, 7);
    check(a.dtype === Piq.Dtype.UINT4 && a.scale === 0.25 && a.zero_point === 7, 'new_affine()');
    check(a.validate() === true, 'validate() of valid parameters');
});

test('tensor/new-from-data/Float32Array', () => {
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
    const dst = Piq.Tensor.new(Piq.Dtype.UINT8, DATA.length);  // reused for every case
    for (const [scale, zp] of [[0.5, 128], [0.1, 3], [7.0, 255]]) {
        check(q.quantize(uint8Params(scale, zp), src, dst) === true, 'quantize() did not return true');
        checkList(tensorBytes(dst), quantizeNearest(DATA, scale, zp, Piq.Dtype.UINT8), `codes, scale ${scale} zp ${zp}`);
    }
    const p = dst.get_params();
    check(p !== null && p.scale === 7.0 && p.zero_point === 255 && p.dtype === Piq.Dtype.UINT8,
        'params attached to the output');
});

test('dequantize/uint8/f32/set-then-add', () => {
    const q = new Piq.Quantizer();
    const qt = q.quantize_new(uint8Params(0.1, 3), f32Tensor(DATA));
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
    const dst = Piq.Tensor.new(Piq.Dtype.UINT4, DATA.length);
    check(dst.get_n_bytes() === 19, `37 uint4 take ${dst.get_n_bytes()} bytes`);
    for (const [scale, zp] of [[0.5, 7], [9.0, 8], [0.3, 0], [0.25, 15]]) {
        q.quantize(new Piq.Params({dtype: Piq.Dtype.UINT4, scale, zero_point: zp}), src, dst);
        const codes = quantizeNearest(DATA, scale, zp, Piq.Dtype.UINT4);
        const data = tensorBytes(dst);
        check(data[18] >> 4 === 0, `unused high nibble is ${data[18] >> 4}`);
        checkList(unpack(data, DATA.length, 4), codes, `uint4 codes, scale ${scale} zp ${zp}`);
        checkList(data, pack(codes, 4), 'packed bytes');
    }
});

test('dequantize/uint4/f32/set-then-add', () => {
    const q = new Piq.Quantizer();
    const qt = q.quantize_new(new Piq.Params({dtype: Piq.Dtype.UINT4, scale: 0.3, zero_point: 6}), f32Tensor(DATA));
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
    const qt = q.quantize_new(uint8Params(0.1, 3), Piq.Tensor.new_from_values(Piq.Dtype.F64, DATA));
    const codes = quantizeNearest(DATA, 0.1, 3, Piq.Dtype.UINT8, true);
    checkList(tensorBytes(qt), codes, 'codes (binary64)');
    const out = Piq.Tensor.new(Piq.Dtype.F64, DATA.length);
    q.dequantize(qt, out, Piq.ReduceOp.SET);
    checkList(out.to_values(), codes.map(c => (c - 3) * 0.1), 'dequantized to f64');
});

test('requantize/f32', () => {
    const q = new Piq.Quantizer();
    const p = new Piq.Params({dtype: Piq.Dtype.UINT4, scale: 0.3, zero_point: 6});
    const y = dequantizeF32(quantizeNearest(DATA, 0.3, 6, Piq.Dtype.UINT4), 0.3, 6);
    const out = Piq.Tensor.new(Piq.Dtype.F32, DATA.length);
    check(q.requantize(p, f32Tensor(DATA), out, Piq.ReduceOp.SET) === true, 'requantize(SET)');
    checkList(out.to_values(), y, 'SET');
    const inplace = f32Tensor(DATA);
    q.requantize(p, inplace, inplace, Piq.ReduceOp.ADD);
    checkList(inplace.to_values(), DATA.map((x, i) => f32(f32(x) + y[i])), 'ADD in place', floatEq);
});

test('error/read-only', () => {
    const q = new Piq.Quantizer();
    const wrapped = Piq.Tensor.new_from_bytes(Piq.Dtype.UINT8, DATA.length, new GLib.Bytes(new Uint8Array(DATA.length).fill(7)));
    check(!wrapped.is_writable(), 'a tensor wrapping GBytes is writable');
    expectError(Piq.Error.READ_ONLY, () => q.quantize(uint8Params(), f32Tensor(DATA), wrapped));
    check(tensorBytes(wrapped).every(b => b === 7), 'the GBytes tensor changed');
    const f = new Float32Array(DATA);
    const fsrc = Piq.Tensor.new_from_bytes(Piq.Dtype.F32, f.length, new GLib.Bytes(new Uint8Array(f.buffer)));
    checkList(tensorBytes(q.quantize_new(uint8Params(), fsrc)), quantizeNearest(DATA, 0.5, 128, Piq.Dtype.UINT8),
        'a GBytes tensor as a source');
});

test('compute-params/min-max', () => {
    const q = new Piq.Quantizer();
    const src = f32Tensor(FINITE);
    for (const dtype of [Piq.Dtype.UINT8, Piq.Dtype.UINT4, Piq.Dtype.INT8]) {
        const p = new Piq.Params({dtype});
        check(q.compute_params(p, src) === true, 'compute_params()');
        const [scale, zp] = minmaxParams(FINITE, dtype);
        check(p.scale === scale, `dtype ${dtype}: scale ${p.scale}, expected ${scale}`);
        check(p.zero_point === zp, `dtype ${dtype}: zero point ${p.zero_point}, expected ${zp}`);
        const codes = unpack(tensorBytes(q.quantize_new(p, src)), FINITE.length, dtype === Piq.Dtype.UINT4 ? 4 : 8)
            .map(c => dtype === Piq.Dtype.INT8 && c > 127 ? c - 256 : c);
        checkList(codes, quantizeNearest(FINITE, scale, zp, dtype), `dtype ${dtype}: codes`);
    }
    const pos = FINITE.map(x => Math.abs(x) + 0.75);
    const psrc = f32Tensor(pos);
    for (const includeZero of [true, false]) {
        const p = new Piq.Params({dtype: Piq.Dtype.UINT4, include_zero: includeZero});
        q.compute_params(p, psrc);
        const want = minmaxParams(pos, Piq.Dtype.UINT4, includeZero);
        check(p.scale === want[0] && p.zero_point === want[1],
            `include-zero ${includeZero}: ${p.scale}/${p.zero_point}, expected ${want}`);
    }
    const p = new Piq.Params({dtype: Piq.Dtype.UINT4, include_zero: false});
    q.compute_params(p, f32Tensor([3, 3, 3]));
    const want = minmaxParams([3, 3, 3], Piq.Dtype.UINT4, false);
    check(p.scale === want[0] && p.zero_point === want[1], `constant tensor: ${p.scale}/${p.zero_point}, expected ${want}`);
});

test('compute-params/abs-max', () => {
    const q = new Piq.Quantizer();
    const src = f32Tensor(FINITE);
    for (const dtype of [Piq.Dtype.INT8, Piq.Dtype.UINT8, Piq.Dtype.INT4, Piq.Dtype.UINT4]) {
        const p = new Piq.Params({dtype, scale_rule: Piq.ScaleRule.ABS_MAX});
        q.compute_params(p, src);
        const [scale, zp] = absmaxParams(FINITE, dtype);
        check(p.scale === scale && p.zero_point === zp, `dtype ${dtype}: ${p.scale}/${p.zero_point}, expected ${scale}/${zp}`);
    }
});

test('quantize/stochastic/floor-or-ceil', () => {
    const q = new Piq.Quantizer();
    const src = f32Tensor(FINITE);
    for (const [dtype, bits] of [[Piq.Dtype.UINT8, 8], [Piq.Dtype.UINT4, 4]]) {
        const p = stochasticParams(dtype, 12345);
        const got = unpack(tensorBytes(q.quantize_new(p, src)), FINITE.length, bits);
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
    const p = stochasticParams(Piq.Dtype.UINT8, 987654321);
    const dst = Piq.Tensor.new(Piq.Dtype.UINT8, xs.length);
    q.quantize(p, src, dst);
    const a = tensorBytes(dst).slice();
    q.quantize(p, src, dst);
    check(bytesEqual(tensorBytes(dst), a), 'two calls with the same seed differ');
    const q4 = new Piq.Quantizer({n_threads: 4});
    check(bytesEqual(tensorBytes(q4.quantize_new(p, src)), a), '4 threads differ');
    const other = tensorBytes(q.quantize_new(stochasticParams(Piq.Dtype.UINT8, 987654322), src));
    check(!bytesEqual(other, a), 'seeds 987654321 and 987654322 gave the same bytes');
});

test('quantize/stochastic/counter-hash', () => {
    const q = new Piq.Quantizer();
    const src = f32Tensor(FINITE);
    for (const [dtype, bits, seed] of [[Piq.Dtype.UINT8, 8, 1], [Piq.Dtype.UINT8, 8, 2 ** 52 + 3], [Piq.Dtype.UINT4, 4, 42]]) {
        const p = stochasticParams(dtype, seed);
        const got = unpack(tensorBytes(q.quantize_new(p, src)), FINITE.length, bits);
        checkList(got, quantizeStochastic(FINITE, 0.37, p.zero_point, dtype, seed), `${bits} bits, seed ${seed}`);
    }
});

test('quantize/stochastic/seed-0-recorded', () => {
    const q = new Piq.Quantizer();
    const src = f32Tensor(FINITE);
    const qt = q.quantize_new(stochasticParams(Piq.Dtype.UINT8, 0), src);
    const used = qt.get_params().seed;
    check(used !== 0, 'seed 0: the output records seed 0');
    // GJS reads a guint64 into a Number: only seeds below 2^53 can be given back exactly
    if (used <= Number.MAX_SAFE_INTEGER) {
        const again = q.quantize_new(stochasticParams(Piq.Dtype.UINT8, used), src);
        check(bytesEqual(tensorBytes(again), tensorBytes(qt)), `re-running with the recorded seed ${used} differs`);
    }
});

test('error/size', () => {
    const q = new Piq.Quantizer();
    const src = f32Tensor(DATA);
    const small = Piq.Tensor.new(Piq.Dtype.UINT8, DATA.length - 1);
    small.set_data(new Uint8Array(DATA.length - 1).fill(0xAA));
    expectError(Piq.Error.SIZE, () => q.quantize(uint8Params(), src, small));
    check(tensorBytes(small).every(b => b === 0xAA), 'the destination was written before the error');
    expectError(Piq.Error.SIZE, () => q.quantize(new Piq.Params({dtype: Piq.Dtype.UINT4, scale: 1}), src,
        Piq.Tensor.new(Piq.Dtype.UINT4, 8)));
    const qt = q.quantize_new(uint8Params(), src);
    expectError(Piq.Error.SIZE, () => q.dequantize(qt, Piq.Tensor.new(Piq.Dtype.F32, 3), Piq.ReduceOp.SET));
    expectError(Piq.Error.SIZE, () => Piq.Tensor.new_from_data(Piq.Dtype.F32, 10, new Uint8Array(39)));
});

test('error/invalid-scale', () => {
    const q = new Piq.Quantizer();
    const src = f32Tensor(DATA);
    const dst = Piq.Tensor.new(Piq.Dtype.UINT8, DATA.length);
    for (const bad of [0, -0.5, Infinity, -Infinity, NaN, 1e-50, 1e39]) {
        const p = new Piq.Params({dtype: Piq.Dtype.UINT8, zero_point: 128});
        // the setter: GObject refuses NaN and ±Inf as the "scale" property (its pspec spans ±G_MAXDOUBLE)
        p.set_scale(bad);
        expectError(Piq.Error.INVALID_SCALE, () => q.quantize(p, src, dst));
    }
    for (const bad of [0, -0.5, 1e-50, 1e39]) {  // GObject refuses NaN as a property value too
        const p = new Piq.Params({dtype: Piq.Dtype.UINT8, zero_point: 128, scale: bad});
        expectError(Piq.Error.INVALID_SCALE, () => q.quantize(p, src, dst));
    }
    expectError(Piq.Error.INVALID_SCALE, () => uint8Params(0, 128).validate());
});

test('error/invalid-zero-point', () => {
    const q = new Piq.Quantizer();
    const src = f32Tensor(DATA);
    for (const [dtype, zp] of [[Piq.Dtype.UINT8, 256], [Piq.Dtype.UINT8, -1], [Piq.Dtype.UINT4, 16], [Piq.Dtype.INT8, 128]]) {
        const p = new Piq.Params({dtype, scale: 1, zero_point: zp});
        expectError(Piq.Error.INVALID_ZERO_POINT, () => q.quantize(p, src, Piq.Tensor.new(dtype, DATA.length)));
    }
});

test('error/unsupported', () => {
    const q = new Piq.Quantizer();
    const src = f32Tensor(DATA);
    expectError(Piq.Error.UNSUPPORTED, () => q.quantize(new Piq.Params({dtype: Piq.Dtype.F32, scale: 1}), src,
        Piq.Tensor.new(Piq.Dtype.F32, DATA.length)));
    const qt = q.quantize_new(uint8Params(), src);
    expectError(Piq.Error.UNSUPPORTED, () => q.dequantize_new(qt, Piq.Dtype.UINT8));
});

test('error/non-finite-and-empty', () => {
    const q = new Piq.Quantizer();
    for (const bad of [NaN, Infinity, -Infinity]) {
        const p = new Piq.Params({dtype: Piq.Dtype.UINT8, scale: 0.125, zero_point: 9});
        expectError(Piq.Error.NON_FINITE, () => q.compute_params(p, f32Tensor([1, 2, bad, 3])));
        check(p.scale === 0.125 && p.zero_point === 9, 'params changed by a failed compute_params()');
    }
    expectError(Piq.Error.EMPTY, () => q.compute_params(new Piq.Params({dtype: Piq.Dtype.UINT8}),
        Piq.Tensor.new(Piq.Dtype.F32, 0)));
});

test('error/no-params', () => {
    const q = new Piq.Quantizer();
    expectError(Piq.Error.NO_PARAMS, () => q.dequantize(Piq.Tensor.new(Piq.Dtype.UINT8, 4),
        Piq.Tensor.new(Piq.Dtype.F32, 4), Piq.ReduceOp.SET));
});

test('reuse/output-tensors', () => {
    // the pattern the design recommends in GJS: output tensors allocated once
    const q = new Piq.Quantizer();
    const src = f32Tensor(FINITE);
    const qt = Piq.Tensor.new(Piq.Dtype.UINT8, FINITE.length);
    const acc = Piq.Tensor.new(Piq.Dtype.F32, FINITE.length);
    acc.fill(0);
    const p = uint8Params(0.05, 90);
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

main();
