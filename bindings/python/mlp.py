#!/usr/bin/env python3
# mlp.py: a two-layer network with quantized weights. The first layer's weights
# are NF4 (bitsandbytes' 4-bit NormalFloat, blocks of 64) multiplied with float
# activations; the second layer's are int8 per output channel, multiplied once
# with float activations and once with dynamic int8 activations (the input of
# the layer quantized per row on the fly, integer dot products). Each output is
# compared with the same network in f32, and the error printed.
#
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Against a build tree run
#   GI_TYPELIB_PATH=$builddir/piquant LD_LIBRARY_PATH=$builddir/piquant/.libs python3 mlp.py

import sys

import numpy as np
import gi

gi.require_version("Piq", "1.0")
from gi.repository import Piq  # noqa: E402

rng = np.random.default_rng(7)
q = Piq.Quantizer.get_default()
BATCH, D_IN, D_HIDDEN, D_OUT = 32, 256, 512, 64


def tensor(a):
    """A piquant f32 tensor with a's shape (a copy of its bytes)."""
    a = np.ascontiguousarray(a, dtype=np.float32)
    t = Piq.Tensor.new_from_data(Piq.Dtype.F32, a.size, a.tobytes())
    t.reshape(list(a.shape))
    return t


def array(t):
    return np.frombuffer(t.get_bytes().get_data(), dtype=np.float32).reshape(t.get_shape())


def packed(w, fmt, activation):
    qw = q.quantize_new(fmt, None, tensor(w))
    return Piq.PackedWeights.new(qw, activation)


# the f32 network: He-initialised weights, a ReLU between the layers
w1 = (rng.standard_normal((D_HIDDEN, D_IN)) * np.sqrt(2.0 / D_IN)).astype(np.float32)
b1 = (0.1 * rng.standard_normal(D_HIDDEN)).astype(np.float32)
w2 = (rng.standard_normal((D_OUT, D_HIDDEN)) * np.sqrt(2.0 / D_HIDDEN)).astype(np.float32)
b2 = (0.1 * rng.standard_normal(D_OUT)).astype(np.float32)
x = rng.standard_normal((BATCH, D_IN)).astype(np.float32)
reference = np.maximum(x @ w1.T + b1, 0.0) @ w2.T + b2

# the quantized network
nf4 = Piq.Format.new_preset("nf4")
int8_rows = Piq.Format.new_per_channel(Piq.Dtype.INT8, 0)
layer1 = packed(w1, nf4, Piq.Activation.FLOAT)
hidden = array(q.matmul_new(tensor(x), layer1, tensor(b1), Piq.Dtype.F32))
hidden = np.maximum(hidden, 0.0)

worst = 0.0
for name, activation in (("float", Piq.Activation.FLOAT),
                         ("dynamic int8", Piq.Activation.DYNAMIC_INT8)):
    layer2 = packed(w2, int8_rows, activation)
    out = array(q.matmul_new(tensor(hidden), layer2, tensor(b2), Piq.Dtype.F32))
    rel = np.linalg.norm(out - reference) / np.linalg.norm(reference)
    worst = max(worst, rel)
    print("NF4 layer (float) + int8 layer (%s): relative error %.4f, max |error| %.4f"
          % (name, rel, np.max(np.abs(out - reference))))


def stored_bytes(t):
    """Codes plus per-block or per-channel scales."""
    scales = t.get_scales()
    return len(t.get_bytes().get_data()) + (len(scales.get_data()) if scales else 0)


print("weights: %d bytes in f32, %d as NF4 + int8"
      % (4 * (w1.size + w2.size), stored_bytes(layer1.get_weights()) + stored_bytes(layer2.get_weights())))
# NF4 keeps about 1.5 decimal digits per weight: a few percent of error is the
# format's, far more would be a fault
sys.exit(0 if worst < 0.15 else 1)
