// cost.js: what moving 27,264,000 float32 values in and out of piquant costs
// from GJS, copy by copy (docs/bindings.md, GJS). Not a test: it prints times.
//
// Run from a build tree:
//   GI_TYPELIB_PATH=piquant LD_LIBRARY_PATH=piquant/.libs gjs bindings/gjs/cost.js
//
// SPDX-License-Identifier: LGPL-2.1-or-later

imports.gi.versions.Piq = '1.0';
const {GLib, Piq} = imports.gi;
const N = 27264000;
function med(f, reps = 7) { const t = []; for (let i = 0; i < reps; i++) { const t0 = GLib.get_monotonic_time(); f(); t.push(GLib.get_monotonic_time() - t0); } t.sort((a, b) => a - b); return t[reps >> 1] / 1000; }
const x = new Float32Array(N); for (let i = 0; i < N; i++) x[i] = Math.sin(i);
const bytes = new Uint8Array(x.buffer);
const q = new Piq.Quantizer();
let t;
const tIn = med(() => { t = Piq.Tensor.new_from_data(Piq.Dtype.F32, N, bytes); });
const src = t;
const dst = q.quantize_new(Piq.Format.new_preset('nf4'), null, src);
const tBytesOut = med(() => { src.get_bytes().toArray(); });
// does toArray() share memory with the tensor?
const arr = src.get_bytes().toArray();
const before = src.get_value(0);
arr[0] ^= 0xff; arr[1] ^= 0xff; arr[2] ^= 0xff;
const shared = src.get_value(0) !== before;
// does new_from_data keep a view of the typed array?
const small = new Float32Array([1, 2, 3]);
const ts = Piq.Tensor.new_from_data(Piq.Dtype.F32, 3, new Uint8Array(small.buffer));
small[0] = 42;
const inShared = ts.get_value(0) === 42;
const tMemcpy = med(() => { bytes.slice(); });
print(`N=${N} f32 (${(N*4/1e6).toFixed(0)} MB)`);
print(`Tensor.new_from_data(Uint8Array): ${tIn.toFixed(1)} ms, keeps a view of the array: ${inShared}`);
print(`get_bytes().toArray(): ${tBytesOut.toFixed(1)} ms, shares the tensor's memory: ${shared}`);
print(`TypedArray.slice() (a JS copy) for reference: ${tMemcpy.toFixed(1)} ms`);
let gb;
const tGBytes = med(() => { gb = new GLib.Bytes(bytes); });
const tFromBytes = med(() => { Piq.Tensor.new_from_bytes(Piq.Dtype.F32, N, gb); });
// library memory viewed from JS: fill a tensor in place
const lib = Piq.Tensor.new_shaped(Piq.Dtype.F32, [N]);
const view = new Float32Array(lib.get_bytes().toArray().buffer, 0, N);
const tFill = med(() => view.set(x));
view[5] = 7.25;
print(`new GLib.Bytes(Uint8Array): ${tGBytes.toFixed(1)} ms; Tensor.new_from_bytes(GBytes): ${tFromBytes.toFixed(3)} ms`);
print(`view of a library tensor as Float32Array, filled with set(): ${tFill.toFixed(1)} ms; tensor sees it: ${lib.get_value(5) === 7.25}`);
const out = q.dequantize_new(dst, Piq.Dtype.F32);
const tOut = med(() => new Float32Array(out.get_bytes().toArray().buffer, 0, N));
print(`dequantized result viewed as Float32Array: ${tOut.toFixed(3)} ms`);
