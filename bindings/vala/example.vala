/* example.vala: quantize a million normal samples to several formats with
 * piquant from Vala, wrapping float[] arrays without copying.
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Build: valac --pkg piquant-1.0 example.vala -X -lm
 */

const int N = 1000000;

struct Format {
    string label;
    Piq.Dtype dtype;
    Piq.RoundMode round_mode;
}

/* N(0, 1) samples by the Box-Muller transform */
float[] normal_samples (int n, uint32 seed) {
    var rng = new Rand.with_seed (seed);
    var x = new float[n];
    for (int i = 0; i < n; i += 2) {
        double r = Math.sqrt (-2.0 * Math.log (1.0 - rng.next_double ()));
        double a = 2.0 * Math.PI * rng.next_double ();
        x[i] = (float) (r * Math.cos (a));
        if (i + 1 < n)
            x[i + 1] = (float) (r * Math.sin (a));
    }
    return x;
}

int main () {
    /* Min/max parameters are computed from the data for every format; the
     * last one rounds stochastically, with a fixed seed. */
    Format[] formats = {
        { "uint8", Piq.Dtype.UINT8, Piq.RoundMode.NEAREST },
        { "int8", Piq.Dtype.INT8, Piq.RoundMode.NEAREST },
        { "uint4", Piq.Dtype.UINT4, Piq.RoundMode.NEAREST },
        { "uint2", Piq.Dtype.UINT2, Piq.RoundMode.NEAREST },
        { "uint4 stochastic", Piq.Dtype.UINT4, Piq.RoundMode.STOCHASTIC },
    };
    var q = Piq.Quantizer.get_default ();
    var levels = (EnumClass) typeof (Piq.SimdLevel).class_ref ();
    print ("piquant %s, %s kernels, %d normal samples\n",
           Piq.VERSION_STRING, levels.get_value (q.simd_level).value_nick, N);

    try {
        // [snippet:setup]
        float[] x = normal_samples (N, 42);
        float[] y = new float[N];
        // both tensors use the arrays' memory: x and y must outlive them
        var src = new Piq.Tensor.for_address (Piq.Dtype.F32, x.length, (uintptr) x,
                                              x.length * sizeof (float), false);
        var acc = new Piq.Tensor.for_address (Piq.Dtype.F32, y.length, (uintptr) y,
                                              y.length * sizeof (float), true);
        // [/snippet]

        print ("%-17s %9s %10s %10s %9s\n", "format", "bytes", "scale", "zero point", "RMSE");
        foreach (var f in formats) {
            // [snippet:quantize]
            var params = new Piq.Params (f.dtype);
            params.round_mode = f.round_mode;
            params.seed = 7;                       // used by stochastic rounding only
            q.compute_params (params, src);
            var packed = q.quantize_new (params, src);
            // [/snippet]
            // [snippet:accumulate]
            acc.fill (0.0);                               // reset the reused accumulator
            q.dequantize (packed, acc, Piq.ReduceOp.ADD); // y[i] += dequantized value
            // [/snippet]
            double sum = 0.0;
            for (int i = 0; i < N; i++)
                sum += (y[i] - x[i]) * (double) (y[i] - x[i]);
            print ("%-17s %9" + uint64.FORMAT + " %10.6f %10" + int64.FORMAT + " %9.6f\n",
                   f.label, packed.n_bytes, params.scale, params.zero_point, Math.sqrt (sum / N));
        }

        // [snippet:errors]
        try {
            q.quantize (new Piq.Params (Piq.Dtype.UINT8), src, new Piq.Tensor (Piq.Dtype.UINT8, 10));
        } catch (Piq.Error.SIZE e) {
            print ("\nrefused, Piq.Error.SIZE: %s\n", e.message);
        }
        // [/snippet]
    } catch (Error e) {
        printerr ("%s\n", e.message);
        return 1;
    }
    return 0;
}
