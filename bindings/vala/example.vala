/* example.vala: quantize a million normal samples to several formats with
 * piquant from Vala, wrapping float[] arrays without copying.
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Build: valac --pkg piquant-1.0 example.vala -X -lm
 */

const int N = 1000000;

struct Row {
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
    /* Per-tensor affine formats: quantize derives the scale and zero point
     * from the data by min/max; the last one rounds stochastically, with a
     * fixed seed. */
    Row[] rows = {
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
        var src = new Piq.Tensor.for_address (Piq.Dtype.F32, { x.length }, (uintptr) x,
                                              x.length * sizeof (float), 0, false);
        var acc = new Piq.Tensor.for_address (Piq.Dtype.F32, { y.length }, (uintptr) y,
                                              y.length * sizeof (float), 0, true);
        // [/snippet]

        print ("%-17s %9s %10s %10s %9s\n", "format", "bytes", "scale", "zero point", "RMSE");
        foreach (var row in rows) {
            // [snippet:quantize]
            var format = new Piq.Format (row.dtype);       // per tensor, affine
            var recipe = new Piq.Recipe () { round_mode = row.round_mode };
            if (row.round_mode == Piq.RoundMode.STOCHASTIC)
                recipe.seed = 7;                           // 0 would draw a fresh seed per call
            q.compute_params (format, recipe, src);        // min/max, stored in the recipe
            var packed = q.quantize_new (format, recipe, src);
            // [/snippet]
            // [snippet:accumulate]
            acc.fill (0.0);                               // reset the reused accumulator
            q.dequantize (packed, acc, Piq.ReduceOp.ADD); // y[i] += dequantized value
            // [/snippet]
            double sum = 0.0;
            for (int i = 0; i < N; i++)
                sum += (y[i] - x[i]) * (double) (y[i] - x[i]);
            print ("%-17s %9" + uint64.FORMAT + " %10.6f %10" + int64.FORMAT + " %9.6f\n",
                   row.label, (uint64) packed.get_n_bytes (), packed.get_scale (), packed.get_zero_point (),
                   Math.sqrt (sum / N));
        }

        // [snippet:blocks]
        // Per-block formats carry their scales in the quantized tensor; a weight
        // matrix is quantized along its rows (blocks never span two rows).
        var w = new Piq.Tensor.for_address (Piq.Dtype.F32, { 1000, 1000 }, (uintptr) x,
                                            x.length * sizeof (float), 0, false);
        var nf4 = new Piq.Format.preset ("nf4");           // blocks of 64, f32 absmax scales
        var w4 = q.quantize_new (nf4, null, w);            // a null recipe: the format's rule
        var w_back = q.dequantize_new (w4, Piq.Dtype.F32); // shape [1000, 1000]
        // [/snippet]
        // [snippet:format]
        // Formats are immutable; a combination that no constructor covers is
        // built with Object.new and its construct-only properties.
        var int8_f16 = (Piq.Format) Object.new (typeof (Piq.Format), "dtype", Piq.Dtype.INT8,
                                                "granularity", Piq.Granularity.BLOCK, "block-size", 128,
                                                "scale-dtype", Piq.Dtype.F16, "symmetric", true);
        var w8 = q.quantize_new (int8_f16, null, w);
        // [/snippet]
        print ("\nnf4: %" + uint64.FORMAT + " bytes of codes, %" + uint64.FORMAT + " of scales, "
               + "back to [%" + uint64.FORMAT + ", %" + uint64.FORMAT + "]\n",
               (uint64) w4.get_n_bytes (), (uint64) w4.get_scales ().length, w_back.get_dim (0), w_back.get_dim (1));
        print ("int8, blocks of %u with f16 scales: %" + uint64.FORMAT + " bytes of codes, %"
               + uint64.FORMAT + " of scales\n", int8_f16.block_size, (uint64) w8.get_n_bytes (),
               (uint64) w8.get_scales ().length);

        // [snippet:errors]
        try {
            var too_small = new Piq.Tensor.quantized (new Piq.Format (Piq.Dtype.UINT8), { 10 });
            q.quantize (null, src, too_small);
        } catch (Piq.Error.SIZE e) {
            print ("\nrefused, Piq.Error.SIZE: %s\n", e.message);
        }
        // [/snippet]
    } catch (Piq.Error e) {
        printerr ("%s\n", e.message);
        return 1;
    }
    return 0;
}
