/* piq-engine-matmul-quant.c compiled into fuzz-api with the fuzzer's coverage flags (Makefile.am).
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "piq-engine-matmul-quant.c"
