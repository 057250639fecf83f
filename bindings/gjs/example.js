// example.js: quantize a million normal samples to several formats with
// piquant from GJS, with typed arrays and reused output tensors.
//
// SPDX-License-Identifier: LGPL-2.1-or-later
//
// Run with `gjs -m example.js`; against a build tree set
// GI_TYPELIB_PATH=$builddir/piquant LD_LIBRARY_PATH=$builddir/piquant/.libs

import GLib from 'gi://GLib?version=2.0';
import Piq from 'gi://Piq?version=1.0';

const N = 1_000_000;

// Each row: a format (what the bytes mean: per-tensor affine integers here)
// and a recipe (how the scale is chosen: min/max, the default rule of affine
// integers, computed from the data). The last one rounds stochastically, with
// a fixed seed.
const FORMATS = [
    ['uint8', {dtype: Piq.Dtype.UINT8}, {}],
    ['int8', {dtype: Piq.Dtype.INT8}, {}],
    ['uint4', {dtype: Piq.Dtype.UINT4}, {}],
    ['uint2', {dtype: Piq.Dtype.UINT2}, {}],
    ['uint4 stochastic', {dtype: Piq.Dtype.UINT4}, {round_mode: Piq.RoundMode.STOCHASTIC, seed: 7}],
];

// N(0, 1) samples: a seeded mulberry32 generator and the Box–Muller transform
function normalSamples(n, seed) {
    let s = seed >>> 0;
    const uniform = () => {  // in (0, 1)
        s = (s + 0x6D2B79F5) >>> 0;
        let t = Math.imul(s ^ (s >>> 15), s | 1);
        t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
        return (((t ^ (t >>> 14)) >>> 0) + 0.5) / 4294967296;
    };
    const x = new Float32Array(n);
    for (let i = 0; i < n; i += 2) {
        const r = Math.sqrt(-2 * Math.log(uniform()));
        const a = 2 * Math.PI * uniform();
        x[i] = r * Math.cos(a);
        if (i + 1 < n)
            x[i + 1] = r * Math.sin(a);
    }
    return x;
}

const q = Piq.Quantizer.get_default();
const level = Object.keys(Piq.SimdLevel).find(k => Piq.SimdLevel[k] === q.simd_level);
print(`piquant ${Piq.VERSION_STRING}, ${level} kernels, ${N} normal samples`);

// [snippet:setup]
const x = normalSamples(N, 42);
// one copy into library storage: x may be changed or dropped afterwards
const src = Piq.Tensor.new_from_data(Piq.Dtype.F32, x.length,
    new Uint8Array(x.buffer, x.byteOffset, x.byteLength));
// the accumulator stays on the C side; y is a zero-copy view of it, made once
const acc = Piq.Tensor.new(Piq.Dtype.F32, N);
const view = acc.get_bytes().toArray();
const y = new Float32Array(view.buffer, view.byteOffset, N);
// [/snippet]

// [snippet:reuse]
// one output tensor per format, reused: no new native memory per call
// (the destination's format decides how quantize() encodes)
const packedTensors = new Map();
function packedFor(format) {
    const key = format.to_string();
    if (!packedTensors.has(key))
        packedTensors.set(key, Piq.Tensor.new_quantized(format, [N]));
    return packedTensors.get(key);
}
// [/snippet]

print(`${'format'.padEnd(17)} ${'bytes'.padStart(9)} ${'scale'.padStart(10)} ` +
    `${'zero point'.padStart(10)} ${'RMSE'.padStart(9)}`);
for (const [label, formatProps, recipeProps] of FORMATS) {
    // [snippet:quantize]
    const format = new Piq.Format(formatProps);  // immutable: what the bytes mean
    const recipe = new Piq.Recipe(recipeProps);  // mutable: how the scale is chosen
    q.compute_params(format, recipe, src);       // throws a GLib.Error on NaN/Inf or no data
    const packed = packedFor(format);
    q.quantize(recipe, src, packed);   // packed owns its format, scale and zero point
    // [/snippet]
    // [snippet:accumulate]
    acc.fill(0);                                  // reset the reused accumulator
    q.dequantize(packed, acc, Piq.ReduceOp.ADD);  // y sees the sums at once
    // [/snippet]
    let sum = 0;
    for (let i = 0; i < N; i++)
        sum += (y[i] - x[i]) ** 2;
    print(`${label.padEnd(17)} ${String(packed.get_n_bytes()).padStart(9)} ` +
        `${packed.get_scale().toFixed(6).padStart(10)} ${String(packed.get_zero_point()).padStart(10)} ` +
        `${Math.sqrt(sum / N).toFixed(6).padStart(9)}`);
}

// [snippet:errors]
try {
    // 10 codes cannot hold a million elements; the recipe is left at its defaults
    q.quantize(null, src, Piq.Tensor.new_quantized(new Piq.Format({dtype: Piq.Dtype.UINT8}), [10]));
} catch (e) {
    if (!(e instanceof GLib.Error) || !e.matches(Piq.Error, Piq.Error.SIZE))
        throw e;
    print(`\nrefused, Piq.Error.SIZE: ${e.message}`);
}
// [/snippet]
