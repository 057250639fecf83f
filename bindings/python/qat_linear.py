#!/usr/bin/env python3
# qat_linear.py: quantization-aware training in a numpy loop. A linear
# regression's weights are stored as int4 (one scale for the tensor). Post-
# training quantization (PTQ) rounds the float solution onto the int4 grid;
# quantization-aware training (QAT) trains through piquant's fake quantization,
# with the straight-through estimator for the weights and LSQ's gradient for
# the scale, and ends with a lower loss on the same grid.
#
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Against a build tree run
#   GI_TYPELIB_PATH=$builddir/piquant LD_LIBRARY_PATH=$builddir/piquant/.libs python3 qat_linear.py

import numpy as np
import gi

gi.require_version("Piq", "1.0")
from gi.repository import Piq  # noqa: E402

rng = np.random.default_rng(3)
q = Piq.Quantizer.get_default()
INT4 = Piq.Format.new_symmetric(Piq.Dtype.INT4)
D, N = 32, 2048

# correlated features: rounding errors of one weight can be made up by others,
# which QAT finds and rounding each weight on its own (PTQ) cannot
mix = np.eye(D) + 0.6 * rng.standard_normal((D, D)) / np.sqrt(D)
X = (rng.standard_normal((N, D)) @ mix).astype(np.float32)
w_true = (rng.standard_normal(D) * np.linspace(0.05, 1.0, D)).astype(np.float32)
y = X @ w_true + 0.01 * rng.standard_normal(N).astype(np.float32)


def tensor(a):
    return Piq.Tensor.new_from_data(Piq.Dtype.F32, a.size, np.ascontiguousarray(a).tobytes())


def values(t):
    return np.frombuffer(t.get_bytes().get_data(), dtype=np.float32).copy()


def fake_quant(w, scale):
    out = Piq.Tensor.new(Piq.Dtype.F32, w.size)
    q.fake_quantize_per_tensor(INT4, tensor(w), scale, 0, out, None)
    return values(out)


def loss(w):
    r = X @ w - y
    return float(np.mean(r * r))


# Float training (least squares), then PTQ: int4 with the abs-max scale.
w_float = np.linalg.lstsq(X, y, rcond=None)[0].astype(np.float32)
scale_ptq = float(np.abs(w_float).max()) / 7.5        # the abs-max rule: range / 2
loss_ptq = loss(fake_quant(w_float, scale_ptq))

# QAT from the float solution: gradient descent through fake quantization,
# the learning rates decaying to 0; the quantized weights of the lowest
# training loss are kept (STE training hops between grid points).
w, scale = w_float.copy(), scale_ptq
best = (loss_ptq, w.copy(), scale)
steps, lr_w, lr_s = 400, 0.001, 0.002
grad_factor = 1.0 / np.sqrt(D * 7)                     # LSQ's g = 1/sqrt(N · qmax)
for step in range(steps):
    decay = 1.0 - step / steps
    wq = fake_quant(w, scale)
    current = loss(wq)
    if current < best[0]:
        best = (current, w.copy(), scale)
    grad_out = (2.0 / N) * (X.T @ (X @ wq - y)).astype(np.float32)
    grad_w = Piq.Tensor.new(Piq.Dtype.F32, D)
    ok, g_scale, _ = q.fake_quantize_per_tensor_backward(INT4, tensor(w), scale, 0,
                                                         tensor(grad_out), grad_factor, grad_w)
    w -= decay * lr_w * values(grad_w)
    scale = max(scale - decay * lr_s * g_scale, 1e-6)
    if step % 100 == 0:
        print(f"step {step:3d}: loss {current:.5f} (lowest so far {best[0]:.5f}), scale {scale:.5f}")
loss_qat, w, scale = best

print(f"float weights:         loss {loss(w_float):.5f}")
print(f"PTQ (int4, abs-max):   loss {loss_ptq:.5f}")
print(f"QAT (int4, LSQ scale): loss {loss_qat:.5f}")
assert loss_qat < loss_ptq, (loss_qat, loss_ptq)
