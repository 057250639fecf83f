/* piq-engine-matmul-int.c compiled into fuzz-api with the fuzzer's coverage flags (Makefile.am).
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "piq-engine-matmul-int.c"
