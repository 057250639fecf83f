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
        const p = new Piq.Params({dtype: Piq.Dtype.FP8_E4M3, scale: 1.0, saturate});
        const t = q.quantize_new(p, src);
        check(t.get_n_bytes() === xs.length && t.get_scales() === null, 'one byte per element, no scales');
        const want = xs.map(x => minifloatEncode(x, E4M3, saturate));
        checkList(tensorBytes(t), want, `fp8 codes, saturate=${saturate}`);
        checkList(q.dequantize_new(t, Piq.Dtype.F32).to_values(), want.map(c => minifloatDecode(c, E4M3)),
            'decoded values', floatEq);
    }
    const nonsat = tensorBytes(q.quantize_new(new Piq.Params({dtype: Piq.Dtype.FP8_E4M3, saturate: false}), src));
    checkList(nonsat.slice(3, 7), [0x7F, 0xFF, 0x7E, 0x7F], 'non-saturating: 1000, -1000, 464, 465');
});

test('formats/mxfp4/e8m0-scales', () => {
    const q = new Piq.Quantizer();
    const xs = genA(70).map(f32);  // blocks of 32, 32 and a ragged 6
    const p = Piq.Params.new_preset('mxfp4');
    check(p.dtype === Piq.Dtype.FP4_E2M1 && p.block_size === 32 && p.scale_dtype === Piq.Dtype.E8M0, 'mxfp4 preset');
    const t = q.quantize_new(p, f32Tensor(xs));
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
    const p = Piq.Params.new_preset('nf4');
    check(p.dtype === Piq.Dtype.NF4 && p.block_size === 64 && p.high_nibble_first, "nf4 preset is bitsandbytes' layout");
    const t = q.quantize_new(p, src);
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
    const pLo = Piq.Params.new_preset('nf4');
    pLo.high_nibble_first = false;
    const lo = tensorBytes(q.quantize_new(pLo, src));
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
    const mk = () => new Piq.Params({dtype: Piq.Dtype.INT8, granularity: Piq.Granularity.BLOCK, block_size: block,
        scale_rule: Piq.ScaleRule.MIN_MAX});
    const p = mk();
    const [ok, scalesSize, zpsSize] = p.get_scales_size(n);
    check(ok && scalesSize === 20 && zpsSize === 20, `sizes ${scalesSize} ${zpsSize}`);
    const t = q.quantize_new(p, f32Tensor(xs));
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
    const w = Piq.Tensor.new_from_data(Piq.Dtype.INT8, n, raw);
    w.set_params(mk());
    w.set_scales(new GLib.Bytes(new Uint8Array(new Float32Array(scales).buffer)));
    w.set_zero_points(new GLib.Bytes(new Uint8Array(new Int32Array(zps).buffer)));
    checkList(bytesAs(w.get_scales(), Float32Array), scales, 'get_scales() after set_scales()');
    checkList(q.dequantize_new(w, Piq.Dtype.F32).to_values(), wantY, 'dequantized from wrapped bytes');
    const bare = Piq.Tensor.new_from_data(Piq.Dtype.INT8, n, raw);
    bare.set_params(p);
    expectError(Piq.Error.SIZE, () => q.dequantize_new(bare, Piq.Dtype.F32));
});

test('formats/binary/dot', () => {
    const q = new Piq.Quantizer();
    const n = 300;  // blocks of 128, 128 and 44
    const p = Piq.Params.new_preset('binary');
    check(p.dtype === Piq.Dtype.BINARY && p.block_size === 128, 'binary preset');
    const ts = [], ys = [];
    for (const xs of [genA(n).map(f32), genB(n).map(f32)]) {
        const t = q.quantize_new(p, f32Tensor(xs));
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
    const t = q.quantize_new(Piq.Params.new_preset('q8_0'), f32Tensor(xs));
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
    const perRow = new Piq.Params({dtype: Piq.Dtype.INT8, granularity: Piq.Granularity.CHANNEL, block_size: 16});
    expectError(Piq.Error.SIZE, () => q.quantize_new(perRow, src));
    const nf4 = Piq.Params.new_preset('nf4');
    nf4.scale_dtype = Piq.Dtype.E8M0;
    expectError(Piq.Error.UNSUPPORTED, () => q.quantize_new(nf4, src));
    expectError(Piq.Error.UNSUPPORTED, () => Piq.Params.new_preset('no-such-format'));
    const names = Piq.Params.list_presets();
    check(names.includes('mxfp4') && names.includes('q4_0'), `list_presets() ${names}`);
});

main();
