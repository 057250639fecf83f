/* piq-io-piqt.c compiled into the harnesses with the fuzzer's coverage flags (Makefile.am).
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "piq-io-piqt.c"
