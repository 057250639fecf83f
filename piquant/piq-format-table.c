/* piq-format-table.c: the one format table
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Every fact about a dtype — name, storage bits, range, kernel slot, block geometry
 * and which format options apply — is a row here, indexed by the PiqDtype value
 * with designated initializers (as ggml's type_traits and GTK's memory_formats[]).
 * Validation (piq-engine.c), the dtype API (piq-dtype.c), the tool and the tests
 * read it; adding a code format is a row here, its codec and its kernels.
 * GLib-free, like the engine.
 */
#include "config.h"

#include <stdio.h>

#include "piq-engine-private.h"
#include "simd/piq-formats-private.h"

#define MINIFLOAT_OPTS (PIQ_OPT_FLOAT_SCALES | PIQ_OPT_E8M0 | PIQ_OPT_PER_TENSOR)
#define TABLE_OPTS     (PIQ_OPT_FLOAT_SCALES | PIQ_OPT_PER_TENSOR | PIQ_OPT_DOUBLE_QUANT)
#define BFP_OPTS       (PIQ_OPT_E8M0 | PIQ_OPT_PER_TENSOR)

const PiqDtypeInfo piq_dtype_rows[PIQ_DTYPE_TABLE_ROWS] = {
#define FLOAT_ROW(N, n, i, ctype) \
  [i] = { .name = #n, .bits = sizeof (ctype) * 8, .kind = PIQ_KIND_FLOAT, .is_signed = 1, \
          .kernel_index = PIQ_F_##N, .description = "float" },
  PIQ_FLOAT_TYPES (FLOAT_ROW)
#undef FLOAT_ROW
  /* integers: every granularity with float scales; signed 4- to 16-bit ones are the
   * MX integer elements too (E8M0 scales); 4-bit ones may put element 2k high */
#define INT_ROW(N, n, i, bits_, sgn) \
  [16 + i] = { .name = #n, .bits = bits_, .kind = PIQ_KIND_INT, .is_signed = sgn, \
               .min = sgn ? -(int64_t) (UINT64_MAX >> (65 - bits_)) - 1 : 0, \
               .max = UINT64_MAX >> (64 - bits_ + sgn), .kernel_index = PIQ_I_##N, \
               .options = PIQ_OPT_FLOAT_SCALES | PIQ_OPT_PER_TENSOR \
                          | (sgn && bits_ >= 4 && bits_ <= 16 ? PIQ_OPT_E8M0 : 0) \
                          | (bits_ == 4 ? PIQ_OPT_HIGH_NIBBLE : 0), \
               .description = "integer" },
  PIQ_INT_TYPES (INT_ROW)
#undef INT_ROW

  /* the code formats, one row each (PiqDtype value = 32 + PIQ_C_*) */
  [32 + PIQ_C_FP8_E4M3] = { .name = "fp8_e4m3", .bits = 8, .kind = PIQ_KIND_CODE, .is_signed = 1,
                            .kernel_index = PIQ_C_FP8_E4M3,
                            .options = MINIFLOAT_OPTS | PIQ_OPT_SATURATE,
                            .description = "OCP FP8 E4M3FN" },
  [32 + PIQ_C_FP8_E5M2] = { .name = "fp8_e5m2", .bits = 8, .kind = PIQ_KIND_CODE, .is_signed = 1,
                            .kernel_index = PIQ_C_FP8_E5M2,
                            .options = MINIFLOAT_OPTS | PIQ_OPT_SATURATE,
                            .description = "OCP FP8 E5M2" },
  [32 + PIQ_C_FP6_E2M3] = { .name = "fp6_e2m3", .bits = 6, .kind = PIQ_KIND_CODE, .is_signed = 1,
                            .kernel_index = PIQ_C_FP6_E2M3, .options = MINIFLOAT_OPTS,
                            .description = "OCP MX FP6 E2M3" },
  [32 + PIQ_C_FP6_E3M2] = { .name = "fp6_e3m2", .bits = 6, .kind = PIQ_KIND_CODE, .is_signed = 1,
                            .kernel_index = PIQ_C_FP6_E3M2, .options = MINIFLOAT_OPTS,
                            .description = "OCP MX FP6 E3M2" },
  [32 + PIQ_C_FP4_E2M1] = { .name = "fp4_e2m1", .bits = 4, .kind = PIQ_KIND_CODE, .is_signed = 1,
                            .kernel_index = PIQ_C_FP4_E2M1,
                            .options = MINIFLOAT_OPTS | PIQ_OPT_HIGH_NIBBLE,
                            .description = "OCP MX FP4 E2M1" },
  [32 + PIQ_C_NF4]      = { .name = "nf4", .bits = 4, .kind = PIQ_KIND_CODE, .is_signed = 1,
                            .kernel_index = PIQ_C_NF4, .options = TABLE_OPTS | PIQ_OPT_HIGH_NIBBLE,
                            .description = "bitsandbytes NF4" },
  [32 + PIQ_C_FP4_BNB]  = { .name = "fp4_bnb", .bits = 4, .kind = PIQ_KIND_CODE, .is_signed = 1,
                            .kernel_index = PIQ_C_FP4_BNB, .options = TABLE_OPTS | PIQ_OPT_HIGH_NIBBLE,
                            .description = "bitsandbytes FP4" },
  [32 + PIQ_C_NF8]      = { .name = "nf8", .bits = 8, .kind = PIQ_KIND_CODE, .is_signed = 1,
                            .kernel_index = PIQ_C_NF8, .options = TABLE_OPTS,
                            .description = "piquant NF8" },
  [32 + PIQ_C_BINARY]   = { .name = "binary", .bits = 1, .kind = PIQ_KIND_CODE, .is_signed = 1,
                            .kernel_index = PIQ_C_BINARY,
                            .options = PIQ_OPT_FLOAT_SCALES | PIQ_OPT_PER_TENSOR,
                            .description = "1-bit signs" },
  /* ggml: 32 elements after an f16 scale, blocks only */
  [32 + PIQ_C_Q8_0]     = { .name = "q8_0", .bits = 0, .kind = PIQ_KIND_CODE, .is_signed = 1,
                            .kernel_index = PIQ_C_Q8_0, .block_elems = 32, .block_bytes = 34,
                            .description = "ggml Q8_0" },
  [32 + PIQ_C_Q4_0]     = { .name = "q4_0", .bits = 0, .kind = PIQ_KIND_CODE, .is_signed = 1,
                            .kernel_index = PIQ_C_Q4_0, .block_elems = 32, .block_bytes = 18,
                            .description = "ggml Q4_0" },
#define BFP_ROW(N, n, bits_) \
  [32 + PIQ_C_##N] = { .name = #n, .bits = bits_, .kind = PIQ_KIND_CODE, .is_signed = 1, \
                       .kernel_index = PIQ_C_##N, \
                       .options = BFP_OPTS | (bits_ == 4 ? PIQ_OPT_HIGH_NIBBLE : 0), \
                       .description = "block floating point" },
  BFP_ROW (BFP2, bfp2, 3) BFP_ROW (BFP3, bfp3, 4) BFP_ROW (BFP4, bfp4, 5) BFP_ROW (BFP5, bfp5, 6)
  BFP_ROW (BFP6, bfp6, 7) BFP_ROW (BFP7, bfp7, 8) BFP_ROW (BFP8, bfp8, 9)
#undef BFP_ROW

  [64] = { .name = "e8m0", .bits = 8, .kind = PIQ_KIND_SCALE, .description = "OCP MX scale" },
};

/* The table is indexed by the same numbers as the kernel layer's lists (piq-dtype.c
 * checks them against PiqDtype); tests/test-kernels.c checks that every code of
 * PIQ_CODE_TYPES has its row. */

const PiqDtypeInfo *
piq_dtype_table (size_t *n)
{
  *n = sizeof piq_dtype_rows / sizeof piq_dtype_rows[0];
  return piq_dtype_rows;
}

const char *
piq_dtype_label (int dtype, char buf[32])
{
  const PiqDtypeInfo *info = piq_dtype_info (dtype);

  if (info != NULL)
    return info->name;
  snprintf (buf, 32, "dtype %d", dtype);
  return buf;
}

/* The presets: each a format of the field, by the name its users know. Their recipe is
 * the default one (the format's own rule). Dtype values as in piq-types.h. */
#define PRESET_BLOCK(name_, dt, size, sdt, hf, dq) \
  { name_, { .dtype = dt, .granularity = 2, .block_size = size, .scale_dtype = sdt, \
             .symmetric = 1, .saturate = 1, .high_nibble_first = hf, .double_quant = dq } }
#define PRESET_TENSOR(name_, dt) \
  { name_, { .dtype = dt, .granularity = 0, .scale_dtype = 0, .symmetric = 1, .saturate = 1 } }
#define CODE(N) (32 + PIQ_C_##N)
#define F32 0
#define F16 3
#define E8M0 64
#define INT8 (16 + PIQ_I_INT8)
#define INT4 (16 + PIQ_I_INT4)

static const PiqEnginePreset presets[] = {
  PRESET_BLOCK ("mxfp8_e4m3", CODE (FP8_E4M3), 32, E8M0, 0, 0),
  PRESET_BLOCK ("mxfp8_e5m2", CODE (FP8_E5M2), 32, E8M0, 0, 0),
  PRESET_BLOCK ("mxfp6_e2m3", CODE (FP6_E2M3), 32, E8M0, 0, 0),
  PRESET_BLOCK ("mxfp6_e3m2", CODE (FP6_E3M2), 32, E8M0, 0, 0),
  PRESET_BLOCK ("mxfp4",      CODE (FP4_E2M1), 32, E8M0, 0, 0),
  PRESET_BLOCK ("mxint8",     INT8,            32, E8M0, 0, 0),
  PRESET_BLOCK ("nf4",        CODE (NF4),      64, F32,  1, 0),
  PRESET_BLOCK ("fp4_bnb",    CODE (FP4_BNB),  64, F32,  1, 0),
  PRESET_BLOCK ("nf4_dq",     CODE (NF4),      64, F32,  1, 1),
  PRESET_BLOCK ("nf8",        CODE (NF8),      64, F32,  0, 0),
  PRESET_TENSOR ("fp8_e4m3",  CODE (FP8_E4M3)),
  PRESET_TENSOR ("fp8_e5m2",  CODE (FP8_E5M2)),
  PRESET_BLOCK ("int8_block", INT8,            64, F32,  0, 0),
  PRESET_BLOCK ("int4_block", INT4,            64, F32,  0, 0),
  PRESET_BLOCK ("binary",     CODE (BINARY),  128, F32,  0, 0),
  PRESET_BLOCK ("q8_0",       CODE (Q8_0),     32, F16,  0, 0),
  PRESET_BLOCK ("q4_0",       CODE (Q4_0),     32, F16,  0, 0),
  PRESET_BLOCK ("msfp12",     CODE (BFP3),     16, E8M0, 0, 0),
  PRESET_BLOCK ("msfp16",     CODE (BFP7),     16, E8M0, 0, 0),
};

const PiqEnginePreset *
piq_engine_presets (size_t *n)
{
  *n = sizeof presets / sizeof presets[0];
  return presets;
}
