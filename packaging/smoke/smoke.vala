// smoke.vala: the smallest round trip through the installed VAPI and library.
//
// SPDX-License-Identifier: LGPL-2.1-or-later
//
// Build: valac --pkg piquant-1.0 smoke.vala. Prints the path of the libpiquant
// this process mapped, so packaging/test-installed.sh can check it.

int main () {
    double[] values = { 0.5, -1.25, 3.0 };
    uint8[] expected = { 138, 103, 188 }; // round(x / 0.05) + 128

    var q = Piq.Quantizer.get_default ();
    var format = new Piq.Format (Piq.Dtype.UINT8);
    var recipe = new Piq.Recipe.affine (0.05, 128);
    try {
        var src = new Piq.Tensor.from_values (Piq.Dtype.F32, values);
        var packed = q.quantize_new (format, recipe, src);
        unowned uint8[] got = packed.get_bytes ().get_data ();
        for (int i = 0; i < expected.length; i++) {
            if (got[i] != expected[i]) {
                stderr.printf ("quantized byte %d is %u, expected %u\n", i, got[i], expected[i]);
                return 1;
            }
        }
        var back = q.dequantize_new (packed, Piq.Dtype.F32).to_values ();
        for (int i = 0; i < values.length; i++) {
            if (Math.fabs (back[i] - values[i]) > 1e-6) {
                stderr.printf ("dequantized element %d is %g, expected %g\n", i, back[i], values[i]);
                return 1;
            }
        }
        print ("vala: quantized %u,%u,%u, dequantized %g,%g,%g\n",
               got[0], got[1], got[2], back[0], back[1], back[2]);
    } catch (Error e) {
        stderr.printf ("%s\n", e.message);
        return 1;
    }

    try {
        string maps;
        FileUtils.get_contents ("/proc/self/maps", out maps);
        var seen = new GenericSet<string> (str_hash, str_equal);
        foreach (unowned string line in maps.split ("\n")) {
            if ("libpiquant-1.0.so" in line) {
                var path = line.strip ().substring (line.strip ().last_index_of (" ") + 1);
                if (!(path in seen)) {
                    seen.add (path);
                    print ("mapped: %s\n", path);
                }
            }
        }
    } catch (FileError e) {
        stderr.printf ("%s\n", e.message);
        return 1;
    }
    return 0;
}
