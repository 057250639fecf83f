/* piq-io-safetensors.c compiled into fuzz-safetensors with the fuzzer's coverage flags (Makefile.am).
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "piq-io-safetensors.c"
