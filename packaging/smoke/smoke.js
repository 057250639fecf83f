// smoke.js: the smallest round trip through the installed typelib (GJS).
//
// SPDX-License-Identifier: LGPL-2.1-or-later
//
// Prints the paths of the libpiquant and Piq typelib this process mapped, so
// packaging/test-installed.sh can check they are the installed ones.

imports.gi.versions.Piq = '1.0';
const { GLib, Piq } = imports.gi;

const values = [0.5, -1.25, 3.0];
const expected = [138, 103, 188]; // round(x / 0.05) + 128

const q = Piq.Quantizer.get_default();
const src = Piq.Tensor.new_from_values(Piq.Dtype.F32, values);
const format = new Piq.Format({ dtype: Piq.Dtype.UINT8 });
const recipe = new Piq.Recipe({ scale: 0.05, zero_point: 128 });
const packed = q.quantize_new(format, recipe, src);
const got = Array.from(packed.get_bytes().toArray());
if (got.join(',') !== expected.join(','))
    throw new Error(`quantized ${got}, expected ${expected}`);
const back = q.dequantize_new(packed, Piq.Dtype.F32).to_values();
back.forEach((v, i) => {
    if (Math.abs(v - values[i]) > 1e-6)
        throw new Error(`dequantized ${back}`);
});
print(`gjs: quantized ${got}, dequantized ${back}`);

const [, maps] = GLib.file_get_contents('/proc/self/maps');
const paths = new Set();
for (const line of new TextDecoder().decode(maps).split('\n')) {
    if (line.includes('libpiquant-1.0.so') || line.includes('Piq-1.0.typelib'))
        paths.add(line.trim().split(/\s+/).pop());
}
for (const path of [...paths].sort())
    print(`mapped: ${path}`);
