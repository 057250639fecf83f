#!/usr/bin/env python3
# observer-torch.py: Piq.Observer against PyTorch's observers, through the typelib
#
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# For the same batches (f32, f64, bf16 and f16; packed and strided rows), the
# running min/max and the scale and zero point of Piq.Observer must equal those of
# torch.ao.quantization's MinMaxObserver, MovingAverageMinMaxObserver,
# PerChannelMinMaxObserver, MovingAveragePerChannelMinMaxObserver and
# HistogramObserver, for qint8 and quint8, affine and symmetric, bit for bit; the
# histogram observer's histogram and range too. torch has no per-channel histogram
# observer: a per-channel Piq.Observer's channel c must equal a HistogramObserver fed
# channel c of every batch (x.select(axis, c)). TAP, the plan comes last; the whole
# script is skipped when PyGObject or torch is missing.
#
# Environment (tests/Makefile.am sets it): GI_TYPELIB_PATH, LD_LIBRARY_PATH.

import struct
import os
import sys
import traceback

try:
    import gi
    gi.require_version("GLib", "2.0")
    gi.require_version("Piq", "1.0")
    from gi.repository import GLib, Piq  # noqa: E402
except (ImportError, ValueError) as e:
    print("1..0 # SKIP PyGObject or the Piq typelib is missing: %s" % e)
    sys.exit(0)

if os.environ.get("PIQ_SANITIZED") == "1":
    # build-aux/sanitizer.am: torch's native code under a preloaded sanitizer
    print("1..0 # SKIP the comparison with torch runs in unsanitized builds only")
    sys.exit(0)

try:
    import torch
    from torch.ao.quantization import observer as tobs
except ImportError as e:
    print("1..0 # SKIP torch is not installed for %s: %s" % (sys.executable, e))
    sys.exit(0)

DTYPES = {
    "f32": (Piq.Dtype.F32, torch.float32),
    "f64": (Piq.Dtype.F64, torch.float64),
    "bf16": (Piq.Dtype.BF16, torch.bfloat16),
    "f16": (Piq.Dtype.F16, torch.float16),
}
TARGETS = [
    ("qint8", Piq.Dtype.INT8, torch.qint8),
    ("quint8", Piq.Dtype.UINT8, torch.quint8),
]


def raw_bytes(t):
    """The tensor's elements as bytes, host order (bf16/f16 through int16)."""
    t = t.contiguous()
    if t.dtype in (torch.bfloat16, torch.float16):
        t = t.view(torch.int16)
    return t.numpy().tobytes()


def to_piq(t, pdtype, pad):
    """A Piq tensor of t's shape; pad > 0: rows `pad` elements longer, the padding NaN."""
    shape = list(t.shape)
    if pad == 0:
        pt = Piq.Tensor.new_shaped(pdtype, shape)
        pt.set_data(raw_bytes(t))
        return pt
    cols = shape[-1]
    rows = t.reshape(-1, cols)
    padded = torch.cat([rows, torch.full((rows.shape[0], pad), float("nan"), dtype=t.dtype)], 1)
    esize = t.element_size()
    return Piq.Tensor.new_strided(pdtype, shape, GLib.Bytes.new(raw_bytes(padded)), 0,
                                  (cols + pad) * esize)


def doubles(b):
    data = b.get_data() or b""
    return list(struct.unpack("=%dd" % (len(data) // 8), data))


def int64s(b):
    data = b.get_data() or b""
    return list(struct.unpack("=%dq" % (len(data) // 8), data))


def batches(shape, tdtype, seed, n=3):
    g = torch.Generator().manual_seed(seed)
    out = []
    for i in range(n):
        x = torch.randn(shape, generator=g, dtype=torch.float64) * (1 + i) + 0.25 * (i - 1)
        # spread the channels of every axis apart
        for d in range(len(shape)):
            view = [1] * len(shape)
            view[d] = shape[d]
            x = x + torch.arange(shape[d], dtype=torch.float64).reshape(view) * (0.1 * (d + 1))
        out.append(x.to(tdtype))
    return out


def torch_observer(moving, axis, c, tq, symmetric):
    if axis is None:
        qs = torch.per_tensor_symmetric if symmetric else torch.per_tensor_affine
        if moving:
            return tobs.MovingAverageMinMaxObserver(averaging_constant=c, dtype=tq, qscheme=qs)
        return tobs.MinMaxObserver(dtype=tq, qscheme=qs)
    qs = torch.per_channel_symmetric if symmetric else torch.per_channel_affine
    if moving:
        return tobs.MovingAveragePerChannelMinMaxObserver(averaging_constant=c, ch_axis=axis,
                                                          dtype=tq, qscheme=qs)
    return tobs.PerChannelMinMaxObserver(ch_axis=axis, dtype=tq, qscheme=qs)


def check_case(moving, dname, shape, axis, pad, c):
    pdtype, tdtype = DTYPES[dname]
    kind = Piq.ObserverKind.MOVING_AVERAGE if moving else Piq.ObserverKind.MIN_MAX
    if axis is None:
        obs = Piq.Observer(kind=kind, averaging_constant=c)
    else:
        obs = Piq.Observer(kind=kind, granularity=Piq.Granularity.CHANNEL, axis=axis,
                           averaging_constant=c)
    xs = batches(shape, tdtype, 1234 + len(shape) * 10 + (axis or 0))
    tos = {}
    for name, _, tq in TARGETS:
        for sym in (False, True):
            tos[(name, sym)] = torch_observer(moving, axis, c, tq, sym)
    for x in xs:
        obs.observe(to_piq(x, pdtype, pad))
        for t in tos.values():
            # torch.ao's observers take float inputs; they convert to float32 themselves
            t(x if tdtype in (torch.float32, torch.float64) else x.float())
    ref = tos[("qint8", False)]
    tmin = ref.min_val.double().reshape(-1).tolist()
    tmax = ref.max_val.double().reshape(-1).tolist()
    assert doubles(obs.get_min()) == [v + 0.0 for v in tmin], (doubles(obs.get_min()), tmin)
    assert doubles(obs.get_max()) == [v + 0.0 for v in tmax], (doubles(obs.get_max()), tmax)
    compared = 0
    for name, pq, _ in TARGETS:
        for sym in (False, True):
            ts, tz = tos[(name, sym)].calculate_qparams()
            ts = ts.double().reshape(-1).tolist()
            tz = tz.reshape(-1).tolist()
            if axis is None:
                fmt = Piq.Format(dtype=pq, symmetric=sym)
                r = obs.compute_recipe(fmt)
                assert [r.get_scale()] == ts, (name, sym, r.get_scale(), ts)
                zp = r.get_zero_point() if not sym else (128 if pq == Piq.Dtype.UINT8 else 0)
                assert [zp] == tz, (name, sym, zp, tz)
                if not sym:
                    assert r.has_zero_point()
                # quantizing with the recipe gives torch's codes
                q = Piq.Quantizer.get_default().quantize_new(fmt, r, to_piq(xs[-1], pdtype, 0))
                tq = torch.quantize_per_tensor(xs[-1].float(), ts[0], tz[0],
                                               torch.qint8 if name == "qint8" else torch.quint8)
                assert q.get_bytes().get_data() == tq.int_repr().numpy().tobytes(), name
            else:
                fmt = Piq.Format(dtype=pq, symmetric=sym, granularity=Piq.Granularity.CHANNEL,
                                 axis=axis)
                ok, s, z = obs.compute_channel_params(fmt)
                assert ok
                assert doubles(s) == ts, (name, sym, doubles(s), ts)
                assert int64s(z) == tz, (name, sym, int64s(z), tz)
            compared += 1
    return compared


def check_histogram(dname, shape, pad, seed, small):
    """HistogramObserver: the histogram, its range and the searched qparams."""
    pdtype, tdtype = DTYPES[dname]
    obs = Piq.Observer(kind=Piq.ObserverKind.HISTOGRAM)
    xs = batches(shape, tdtype, seed, n=1 + seed % 3)
    if small:
        xs = [x * 0.05 for x in xs]   # inside (-1, 1): torch's int() bounds collapse
    tos = {}
    for name, _, tq in TARGETS:
        for sym in (False, True):
            qs = torch.per_tensor_symmetric if sym else torch.per_tensor_affine
            tos[(name, sym)] = tobs.HistogramObserver(dtype=tq, qscheme=qs)
    for x in xs:
        obs.observe(to_piq(x, pdtype, pad))
        for t in tos.values():
            t(x.float())   # the observer reads binary32, as documented
    ref = tos[("qint8", False)]
    assert doubles(obs.get_min()) == [float(ref.min_val) + 0.0]
    assert doubles(obs.get_max()) == [float(ref.max_val) + 0.0]
    assert doubles(obs.get_histogram()) == ref.histogram.double().tolist()
    compared = 0
    for name, pq, _ in TARGETS:
        for sym in (False, True):
            ts, tz = tos[(name, sym)].calculate_qparams()
            r = obs.compute_recipe(Piq.Format(dtype=pq, symmetric=sym))
            assert r.get_scale() == float(ts), (name, sym, r.get_scale(), float(ts))
            zp = r.get_zero_point() if not sym else (128 if pq == Piq.Dtype.UINT8 else 0)
            assert zp == int(tz), (name, sym, zp, int(tz))
            compared += 1
    return compared


def check_histogram_channels(dname, shape, pad, seed, axis):
    """Per channel: each channel's histogram, range and qparams against a
    HistogramObserver of that channel alone."""
    pdtype, tdtype = DTYPES[dname]
    obs = Piq.Observer(kind=Piq.ObserverKind.HISTOGRAM, granularity=Piq.Granularity.CHANNEL,
                       axis=axis)
    xs = batches(shape, tdtype, seed, n=2 + seed % 2)
    n_ch = shape[axis]
    tos = {}
    for c in range(n_ch):
        for name, _, tq in TARGETS:
            for sym in (False, True):
                qs = torch.per_tensor_symmetric if sym else torch.per_tensor_affine
                tos[(c, name, sym)] = tobs.HistogramObserver(dtype=tq, qscheme=qs)
    for x in xs:
        obs.observe(to_piq(x, pdtype, pad))
        for (c, _, _), t in tos.items():
            t(x.select(axis, c).float())
    lo, hi, h = doubles(obs.get_min()), doubles(obs.get_max()), doubles(obs.get_histogram())
    bins = obs.get_n_bins()
    assert len(lo) == n_ch and len(h) == n_ch * bins
    compared = 0
    for c in range(n_ch):
        ref = tos[(c, "qint8", False)]
        assert lo[c] == float(ref.min_val) + 0.0, (c, lo[c], float(ref.min_val))
        assert hi[c] == float(ref.max_val) + 0.0, (c, hi[c], float(ref.max_val))
        assert h[c * bins:(c + 1) * bins] == ref.histogram.double().tolist(), c
    for name, pq, _ in TARGETS:
        for sym in (False, True):
            fmt = Piq.Format(dtype=pq, symmetric=sym, granularity=Piq.Granularity.CHANNEL,
                             axis=axis)
            ok, s, z = obs.compute_channel_params(fmt)
            assert ok
            s, z = doubles(s), int64s(z)
            for c in range(n_ch):
                ts, tz = tos[(c, name, sym)].calculate_qparams()
                assert s[c] == float(ts), (name, sym, c, s[c], float(ts))
                assert z[c] == int(tz), (name, sym, c, z[c], int(tz))
                compared += 1
    return compared


def main():
    cases = []
    for moving in (False, True):
        for c in ((0.01, 0.3) if moving else (0.01,)):
            for dname in DTYPES:
                for shape, axes in (((7, 33), (None, 0, 1, -1)), ((3, 4, 17), (None, 0, 1, 2))):
                    for axis in axes:
                        for pad in (0, 3):
                            cases.append((moving, dname, shape, axis, pad, c))
    for dname in DTYPES:
        for shape in ((40, 33), (3, 4, 170)):
            for pad in (0, 3):
                for small in (False, True):
                    cases.append(("histogram", dname, shape, small, pad, 0))
    for dname in DTYPES:
        for shape, axis in (((6, 33), 0), ((6, 33), 1), ((3, 4, 170), 1)):
            for pad in (0, 3):
                cases.append(("histogram-channels", dname, shape, axis, pad, 0))
    failed = 0
    total = 0
    for i, (moving, dname, shape, axis, pad, c) in enumerate(cases, 1):
        if moving == "histogram":
            name = "histogram/%s/%s/%s/%s" % (dname, "x".join(map(str, shape)),
                                              "small" if axis else "wide",
                                              "strided" if pad else "packed")
        elif moving == "histogram-channels":
            name = "histogram/%s/%s/axis%d/%s" % (dname, "x".join(map(str, shape)), axis,
                                                 "strided" if pad else "packed")
        else:
            name = "%s/c=%g/%s/%s/%s/%s" % ("moving-average" if moving else "min-max", c, dname,
                                            "x".join(map(str, shape)),
                                            "tensor" if axis is None else "axis%d" % axis,
                                            "strided" if pad else "packed")
        try:
            if moving == "histogram":
                total += check_histogram(dname, shape, pad, i, axis)
            elif moving == "histogram-channels":
                total += check_histogram_channels(dname, shape, pad, i, axis)
            else:
                total += check_case(moving, dname, shape, axis, pad, c)
            print("ok %d - %s" % (i, name))
        except Exception:
            failed += 1
            print("not ok %d - %s" % (i, name))
            for line in traceback.format_exc().splitlines():
                print("# " + line)
    print("# %d cases, %d scale/zero-point comparisons with torch %s" %
          (len(cases), total, torch.__version__))
    print("1..%d" % len(cases))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
