#!/usr/bin/env python3
# smoke.py: the smallest round trip through the installed typelib (PyGObject).
#
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Prints the paths of the libpiquant and Piq typelib this process mapped, so
# packaging/test-installed.sh can check they are the installed ones.

import gi

gi.require_version("Piq", "1.0")
from gi.repository import Piq  # noqa: E402

VALUES = [0.5, -1.25, 3.0]
EXPECTED_BYTES = bytes([138, 103, 188])  # round(x / 0.05) + 128

q = Piq.Quantizer.get_default()
src = Piq.Tensor.new_from_values(Piq.Dtype.F32, VALUES)
fmt = Piq.Format(dtype=Piq.Dtype.UINT8)
recipe = Piq.Recipe(scale=0.05, zero_point=128)
packed = q.quantize_new(fmt, recipe, src)
got = bytes(packed.get_bytes().get_data())
assert got == EXPECTED_BYTES, "quantized %r, expected %r" % (got, EXPECTED_BYTES)
back = q.dequantize_new(packed, Piq.Dtype.F32).to_values()
assert all(abs(a - b) < 1e-6 for a, b in zip(back, VALUES)), back
print("python: quantized %s, dequantized %s, simd level %s"
      % (list(got), [round(v, 6) for v in back], q.props.simd_level.value_nick))

with open("/proc/self/maps") as maps:
    paths = sorted({line.split()[-1] for line in maps
                    if "libpiquant-1.0.so" in line or "Piq-1.0.typelib" in line})
for path in paths:
    print("mapped:", path)
