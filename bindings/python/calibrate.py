#!/usr/bin/env python3
# calibrate.py: static quantization from Python. Observers are fed a stream of
# activation batches, their state is saved and resumed, two workers' observers
# are merged, and the recipe each observer computes quantizes held-out data to
# uint8.
# The histogram observer ignores the rare outliers that stretch min/max, and its
# error is lower for it.
#
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Against a build tree run
#   GI_TYPELIB_PATH=$builddir/piquant LD_LIBRARY_PATH=$builddir/piquant/.libs python3 calibrate.py

import numpy as np
import gi

gi.require_version("Piq", "1.0")
from gi.repository import Piq  # noqa: E402

rng = np.random.default_rng(7)
q = Piq.Quantizer.get_default()
fmt = Piq.Format.new(Piq.Dtype.UINT8)


def batch(n=4096):
    """Activations: mostly N(0, 1), and one value in a thousand 20x larger."""
    x = rng.standard_normal(n).astype(np.float32)
    spikes = rng.random(n) < 0.001
    x[spikes] *= 20
    return x


def tensor(x):
    # one copy into library storage (bindings.md measures the zero-copy routes)
    return Piq.Tensor.new_from_data(Piq.Dtype.F32, x.size, x.tobytes())


kinds = {
    "min/max": Piq.ObserverKind.MIN_MAX,
    "moving average": Piq.ObserverKind.MOVING_AVERAGE,
    "histogram": Piq.ObserverKind.HISTOGRAM,
    "percentile": Piq.ObserverKind.PERCENTILE,
    "MSE search": Piq.ObserverKind.MSE,
    "entropy (KL)": Piq.ObserverKind.ENTROPY,
}

stream = [batch() for _ in range(32)]
observers = {}
for name, kind in kinds.items():
    obs = Piq.Observer.new(kind)
    for x in stream:
        obs.observe(tensor(x))
    # checkpoint and resume: the state is a GVariant
    observers[name] = Piq.Observer.new_deserialize(obs.serialize())

# Two workers that each saw half of the stream merge into exactly the state of
# one observer that saw all of it (min/max here; docs/observers.md gives each
# kind's merge rule).
halves = [Piq.Observer.new(Piq.ObserverKind.MIN_MAX) for _ in range(2)]
for i, x in enumerate(stream):
    halves[i % 2].observe(tensor(x))
halves[0].merge(halves[1])


def lo_hi(obs):
    """The running min and max (per channel: one each for a per-tensor observer)."""
    return (np.frombuffer(obs.get_min().get_data(), dtype=np.float64)[0],
            np.frombuffer(obs.get_max().get_data(), dtype=np.float64)[0])


assert lo_hi(halves[0]) == lo_hi(observers["min/max"])
print("merged min/max of two workers: [%.4f, %.4f]" % lo_hi(halves[0]))

held_out = np.concatenate([batch() for _ in range(8)])
src = tensor(held_out)
print(f"{'observer':<16} {'scale':>10} {'zero point':>10} {'RMSE':>9}")
errors = {}
for name, obs in observers.items():
    recipe = obs.compute_recipe(fmt)
    packed = q.quantize_new(fmt, recipe, src)
    back = np.frombuffer(q.dequantize_new(packed, Piq.Dtype.F32).get_bytes().get_data(),
                         dtype=np.float32)
    errors[name] = float(np.sqrt(np.mean((back - held_out) ** 2)))
    print(f"{name:<16} {recipe.props.scale:>10.5f} {recipe.props.zero_point:>10d} "
          f"{errors[name]:>9.5f}")

# The outliers stretch min/max; the histogram's L2 search and the MSE search
# clip them where that lowers the error.
assert errors["histogram"] < errors["min/max"], errors
assert errors["MSE search"] <= errors["min/max"], errors
