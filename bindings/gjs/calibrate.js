// calibrate.js: static quantization from GJS. Observers of several kinds are
// fed a stream of activation batches (typed arrays), and each one's recipe
// quantizes the stream to uint8; the error of each is printed. The rare
// outliers stretch min/max, and the MSE search, which minimizes exactly this
// error over clipping ranges, does better.
//
// SPDX-License-Identifier: LGPL-2.1-or-later
//
// Run with `gjs -m calibrate.js`; against a build tree set
// GI_TYPELIB_PATH=$builddir/piquant LD_LIBRARY_PATH=$builddir/piquant/.libs

import Piq from 'gi://Piq?version=1.0';

// A seeded mulberry32 generator: N(0, 1) values by Box–Muller, one in a
// thousand made 20x larger.
let seed = 7;
function uniform() {
    seed = (seed + 0x6D2B79F5) >>> 0;
    let t = Math.imul(seed ^ (seed >>> 15), seed | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return (((t ^ (t >>> 14)) >>> 0) + 0.5) / 4294967296;
}
function batch(n = 4096) {
    const x = new Float32Array(n);
    for (let i = 0; i < n; i++) {
        const g = Math.sqrt(-2 * Math.log(uniform())) * Math.cos(2 * Math.PI * uniform());
        x[i] = uniform() < 0.001 ? 20 * g : g;
    }
    return x;
}
const tensor = x => Piq.Tensor.new_from_data(Piq.Dtype.F32, x.length,
    new Uint8Array(x.buffer, x.byteOffset, x.byteLength));

const q = Piq.Quantizer.get_default();
const fmt = Piq.Format.new(Piq.Dtype.UINT8);
const kinds = {
    'min/max': Piq.ObserverKind.MIN_MAX,
    'histogram': Piq.ObserverKind.HISTOGRAM,
    'MSE search': Piq.ObserverKind.MSE,
    'entropy (KL)': Piq.ObserverKind.ENTROPY,
};

const observers = Object.fromEntries(Object.entries(kinds).map(([name, kind]) => [name, Piq.Observer.new(kind)]));
const seen = new Float32Array(32 * 4096);
for (let b = 0; b < 32; b++) {
    const x = batch();
    seen.set(x, b * 4096);
    const t = tensor(x);
    for (const obs of Object.values(observers))
        obs.observe(t);
}
const data = seen;     // what the observers saw, all at once
const src = tensor(data);
const errors = {};
print('observer        scale       zero point  RMSE');
for (const [name, obs] of Object.entries(observers)) {
    // the state survives a checkpoint: serialize to a GVariant and back
    const resumed = Piq.Observer.new_deserialize(obs.serialize());
    const recipe = resumed.compute_recipe(fmt);
    const back = q.dequantize_new(q.quantize_new(fmt, recipe, src), Piq.Dtype.F32).get_bytes().toArray();
    const y = new Float32Array(back.buffer, back.byteOffset, data.length);
    let e2 = 0;
    for (let i = 0; i < y.length; i++)
        e2 += (y[i] - data[i]) ** 2;
    errors[name] = Math.sqrt(e2 / y.length);
    print(`${name.padEnd(15)} ${recipe.scale.toFixed(5).padStart(8)} ${String(recipe.zero_point).padStart(12)}  ${errors[name].toFixed(5)}`);
}
if (!(errors['MSE search'] <= errors['min/max']))
    throw new Error(`the MSE search did worse than min/max: ${JSON.stringify(errors)}`);
