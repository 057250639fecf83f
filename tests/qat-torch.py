#!/usr/bin/env python3
# qat-torch.py: fake quantization and its gradients against PyTorch's own functions
#
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Through the typelib, as an application would call it. For every case the
# forward pass (values and straight-through mask) must equal
# aten.fake_quantize_per_{tensor,channel}_affine_cachemask bit for bit, and the
# source gradient aten._fake_quantize_learnable_per_{tensor,channel}_affine_backward's.
# The scale and zero-point gradients are sums: torch adds its float32 terms in an
# order of its own, piquant in binary64 in 16 lanes in a fixed order (docs/qat.md). So torch's
# per-element terms are taken from the per-channel backward with one channel per
# element, summed here in binary64 in piquant's order, rounded to float32, and must
# equal piquant's bit for bit; torch's own sums must agree within its float32
# rounding. Per-block gradients are compared with torch's per-channel ones over the
# tensor reshaped to one block per row.
#
# The data hold values at the clamp edges and exact .5 ties (power-of-two scales),
# where the forward pass (zero point added after rounding) and the learnable
# backward (before rounding) differ for odd zero points.
#
# Prints TAP; skips (a "1..0 # SKIP" plan, as the other binding tests under the
# TAP driver) when torch, numpy or PyGObject is missing.

import os
import sys
import traceback

# torch's AVX2 and AVX-512 builds of these kernels let the compiler fuse
# (q − zp)·s − x into one FMA, so their last bits depend on the CPU; the scalar
# build (and piquant, on every CPU) rounds each operation on its own.
os.environ["ATEN_CPU_CAPABILITY"] = "default"


if os.environ.get("PIQ_SANITIZED") == "1":
    # build-aux/sanitizer.am: torch's native code under a preloaded sanitizer
    print("1..0 # SKIP the comparison with torch runs in unsanitized builds only")
    sys.exit(0)

try:
    import numpy as np
    import torch
    import gi
    gi.require_version("Piq", "1.0")
    from gi.repository import GLib, Piq  # noqa: E402
except (ImportError, ValueError) as e:
    print("1..0 # SKIP torch, numpy or the Piq typelib is missing for %s: %s" % (sys.executable, e))
    sys.exit(0)

torch.set_num_threads(1)
aten = torch.ops.aten

RANGES = {
    Piq.Dtype.UINT8: (0, 255),
    Piq.Dtype.INT8: (-128, 127),
    Piq.Dtype.UINT4: (0, 15),
    Piq.Dtype.INT4: (-8, 7),
    Piq.Dtype.INT16: (-32768, 32767),
}
PIQ_FLOAT = {"f32": Piq.Dtype.F32, "bf16": Piq.Dtype.BF16, "f16": Piq.Dtype.F16}
TORCH_FLOAT = {"f32": torch.float32, "bf16": torch.bfloat16, "f16": torch.float16}
CHUNK = 16384   # piquant's work item (piq-qat.c): sums are sequential within one

results = []


def check(name, ok, detail=""):
    results.append((ok, name, detail))


def to_piq(t, dtype_name):
    """A piquant tensor holding the bytes of torch tensor t (already of the dtype)."""
    t = t.contiguous()
    raw = t.view(torch.int16).numpy().tobytes() if t.dtype in (torch.bfloat16, torch.float16) \
        else t.numpy().tobytes()
    pt = Piq.Tensor.new_from_data(PIQ_FLOAT[dtype_name], t.numel(), raw)
    pt.reshape(list(t.shape))
    return pt


def piq_bytes(pt):
    return bytes(pt.get_bytes().get_data())


def torch_bytes(t):
    t = t.contiguous()
    if t.dtype in (torch.bfloat16, torch.float16):
        return t.view(torch.int16).numpy().tobytes()
    if t.dtype == torch.bool:
        return t.to(torch.uint8).numpy().tobytes()
    return t.numpy().tobytes()


LANES = 16     # piquant's lanes (docs/qat.md): position i of a chunk into lane i mod 16


def seq_sum(a):
    """Binary64 sum in piquant's order (docs/qat.md): within each chunk of CHUNK
    positions, lane k (from +0) adds the positions i with i mod 16 = k in order; the
    lanes fold as lane k += lane k + h for h = 8, 4, 2, 1; the chunks' sums are
    added in order, from +0."""
    a = np.asarray(a, dtype=np.float64).ravel()
    total = 0.0
    for k in range(0, max(a.size, 1), CHUNK):
        part = a[k:k + CHUNK]
        lanes = [0.0 + float(np.cumsum(part[j::LANES])[-1]) if part[j::LANES].size else 0.0
                 for j in range(LANES)]
        h = LANES // 2
        while h >= 1:
            for j in range(h):
                lanes[j] = lanes[j] + lanes[j + h]
            h //= 2
        total += lanes[0]
    return total


def make_data(rng, shape, scales_full, zps_full, qmin, qmax):
    """Random values around the grid plus edges and ties, per element scale/zp given."""
    n = int(np.prod(shape))
    s = scales_full.reshape(-1).astype(np.float64)
    z = zps_full.reshape(-1).astype(np.float64)
    u = rng.integers(qmin - 3, qmax + 4, size=n).astype(np.float64)
    kind = rng.integers(0, 6, size=n)
    frac = np.where(kind == 0, 0.5, np.where(kind == 1, -0.5, np.where(kind == 2, 0.0,
                    rng.uniform(-0.5, 0.5, size=n))))
    x = (u - z + frac) * s
    # exactly at the clamp edges and half a step outside
    edges = np.array([qmin, qmax, qmin - 0.5, qmax + 0.5, qmin + 0.5, qmax - 0.5])
    m = min(n, 12)
    idx = rng.choice(n, size=m, replace=False)
    x[idx] = (edges[np.arange(m) % edges.size] - z[idx]) * s[idx]
    return x.astype(np.float32).reshape(shape)


def run_case(rng, name, dt, qdtype, symmetric, gran, shape, axis=0, block=0, pow2=True):
    qmin, qmax = RANGES[qdtype]
    shape = tuple(shape)
    n = int(np.prod(shape))
    if gran == "tensor":
        fmt = Piq.Format.new_symmetric(qdtype) if symmetric else Piq.Format.new(qdtype)
        n_groups = 1
    elif gran == "channel":
        fmt = Piq.Format(dtype=qdtype, granularity=Piq.Granularity.CHANNEL, axis=axis,
                         symmetric=symmetric)
        n_groups = shape[axis]
    else:
        fmt = Piq.Format(dtype=qdtype, granularity=Piq.Granularity.BLOCK, block_size=block,
                         symmetric=symmetric)
        n_groups = n // block
    if pow2:
        scales = (2.0 ** rng.integers(-6, 3, size=n_groups)).astype(np.float32)
    else:
        scales = rng.uniform(0.01, 0.3, size=n_groups).astype(np.float32)
    if symmetric:
        zps = np.full(n_groups, 0 if qmin < 0 else (qmax + 1) // 2, dtype=np.int32)
    else:
        zps = rng.integers(qmin, qmax + 1, size=n_groups).astype(np.int32)

    # per-element scale and zero point, and the torch view of the grouping
    if gran == "tensor":
        s_full = np.full(shape, scales[0], np.float32)
        z_full = np.full(shape, zps[0], np.int32)
    elif gran == "channel":
        bshape = [1] * len(shape)
        bshape[axis] = shape[axis]
        s_full = np.broadcast_to(scales.reshape(bshape), shape)
        z_full = np.broadcast_to(zps.reshape(bshape), shape)
    else:
        s_full = np.repeat(scales, block).reshape(shape)
        z_full = np.repeat(zps, block).reshape(shape)

    x32 = torch.from_numpy(make_data(rng, shape, s_full, z_full, qmin, qmax))
    xt = x32.to(TORCH_FLOAT[dt])
    x = xt.to(torch.float32)                     # the values piquant computes with
    dyt = torch.from_numpy(rng.standard_normal(n).astype(np.float32).reshape(shape)).to(TORCH_FLOAT[dt])
    dy = dyt.to(torch.float32)
    gf = float(rng.choice([1.0, 0.37, 1.0 / np.sqrt(n * qmax)]))

    q = Piq.Quantizer.new()
    q.set_n_threads(int(rng.choice([1, 2, 3])))
    src = to_piq(xt, dt)
    scales_t = Piq.Tensor.new_from_data(Piq.Dtype.F32, n_groups, scales.tobytes())
    zps_t = None if symmetric else Piq.Tensor.new_from_data(Piq.Dtype.INT32, n_groups, zps.tobytes())
    dst = Piq.Tensor.new_shaped(PIQ_FLOAT[dt], list(shape))
    mask = Piq.Tensor.new_shaped(Piq.Dtype.UINT8, list(shape))
    q.fake_quantize(fmt, src, scales_t, zps_t, dst, mask)
    gout = to_piq(dyt, dt)
    gsrc = Piq.Tensor.new_shaped(PIQ_FLOAT[dt], list(shape))
    gs = Piq.Tensor.new(Piq.Dtype.F32, n_groups)
    gz = Piq.Tensor.new(Piq.Dtype.F32, n_groups)
    q.fake_quantize_backward(fmt, src, scales_t, zps_t, gout, gf, gsrc, gs, gz)

    # torch's forward
    if gran == "tensor":
        y_t, m_t = aten.fake_quantize_per_tensor_affine_cachemask(x, float(scales[0]), int(zps[0]),
                                                                 qmin, qmax)
    else:
        if gran == "channel":
            xc, ax = x, axis
        else:
            xc, ax = x.reshape(n_groups, block), 0
        y_t, m_t = aten.fake_quantize_per_channel_affine_cachemask(
            xc, torch.from_numpy(scales), torch.from_numpy(zps), ax, qmin, qmax)
        y_t, m_t = y_t.reshape(shape), m_t.reshape(shape)
    check("%s forward values" % name, piq_bytes(dst) == torch_bytes(y_t.to(TORCH_FLOAT[dt])))
    check("%s forward mask" % name, piq_bytes(mask) == torch_bytes(m_t))

    # torch's per-element backward terms: one channel per element (a 2-D view: over a
    # 1-D tensor torch's reduction over "all but the axis" sums everything)
    flat_s = torch.from_numpy(np.ascontiguousarray(s_full).reshape(-1))
    flat_z = torch.from_numpy(np.ascontiguousarray(z_full).reshape(-1).astype(np.float32))
    dx_e, ds_e, dz_e = aten._fake_quantize_learnable_per_channel_affine_backward(
        dy.reshape(-1, 1), x.reshape(-1, 1), flat_s, flat_z, 0, qmin, qmax, gf)
    check("%s source gradient" % name,
          piq_bytes(gsrc) == torch_bytes(dx_e.reshape(shape).to(TORCH_FLOAT[dt])))

    # the group sums in piquant's order
    ds_e = ds_e.numpy().astype(np.float64).reshape(shape)
    dz_e = dz_e.numpy().astype(np.float64).reshape(shape)
    if gran == "tensor":
        groups_s, groups_z = [ds_e.ravel()], [dz_e.ravel()]
    elif gran == "channel":
        groups_s = list(np.moveaxis(ds_e, axis, 0).reshape(shape[axis], -1))
        groups_z = list(np.moveaxis(dz_e, axis, 0).reshape(shape[axis], -1))
        # moveaxis keeps the other axes in order: each group's positions in flat order
    else:
        groups_s = list(ds_e.reshape(n_groups, block))
        groups_z = list(dz_e.reshape(n_groups, block))
    want_s = np.array([seq_sum(g) for g in groups_s], dtype=np.float32)
    want_z = np.array([seq_sum(g) for g in groups_z], dtype=np.float32)
    got_s = np.frombuffer(piq_bytes(gs), np.float32)
    got_z = np.frombuffer(piq_bytes(gz), np.float32)
    check("%s scale gradients (torch's terms, piquant's order)" % name,
          got_s.tobytes() == want_s.tobytes(), "got %s want %s" % (got_s[:4], want_s[:4]))
    check("%s zero-point gradients (torch's terms, piquant's order)" % name,
          got_z.tobytes() == want_z.tobytes(), "got %s want %s" % (got_z[:4], want_z[:4]))

    # torch's own reductions, within float32 summation error
    if gran == "tensor":
        dx_r, ds_r, dz_r = aten._fake_quantize_learnable_per_tensor_affine_backward(
            dy, x, torch.tensor([float(scales[0])]), torch.tensor([float(zps[0])]), qmin, qmax, gf)
    else:
        xc = x if gran == "channel" else x.reshape(n_groups, block)
        dyc = dy if gran == "channel" else dy.reshape(n_groups, block)
        ax = axis if gran == "channel" else 0
        dx_r, ds_r, dz_r = aten._fake_quantize_learnable_per_channel_affine_backward(
            dyc, xc, torch.from_numpy(scales), torch.from_numpy(zps.astype(np.float32)), ax,
            qmin, qmax, gf)
    if gran == "tensor" and zps[0] < 0:
        # torch 1.13's per-tensor backward reads its zero point as (int64)(zp + 0.5f),
        # truncated towards zero: a negative zero point becomes zp + 1 (the forward
        # pass and the per-channel backward round it). Compare with piquant's
        # gradients at that zero point, to show that this is the only difference.
        zps1 = zps + 1
        zps_t1 = Piq.Tensor.new_from_data(Piq.Dtype.INT32, 1, zps1.tobytes())
        gsrc1 = Piq.Tensor.new_shaped(PIQ_FLOAT[dt], list(shape))
        gs1 = Piq.Tensor.new(Piq.Dtype.F32, 1)
        gz1 = Piq.Tensor.new(Piq.Dtype.F32, 1)
        q.fake_quantize_backward(fmt, src, scales_t, zps_t1, gout, gf, gsrc1, gs1, gz1)
        cmp_src = piq_bytes(gsrc1)
        cmp_s = np.frombuffer(piq_bytes(gs1), np.float32)
        cmp_z = np.frombuffer(piq_bytes(gz1), np.float32)
        name = name + " (torch's zero point zp + 1)"
    else:
        cmp_src, cmp_s, cmp_z = piq_bytes(gsrc), got_s, got_z
    check("%s source gradient (torch's %s backward)" % (name, gran if gran != "block" else "channel"),
          cmp_src == torch_bytes(dx_r.reshape(shape).to(TORCH_FLOAT[dt])))
    mag_s = np.array([np.abs(g).sum() for g in groups_s])
    mag_z = np.array([np.abs(g).sum() for g in groups_z])
    tol_s = 1e-5 * mag_s + 1e-30
    tol_z = 1e-5 * mag_z + 1e-30
    ds_r = ds_r.numpy().astype(np.float64).ravel()
    dz_r = dz_r.numpy().astype(np.float64).ravel()
    check("%s scale gradients ≈ torch's sums" % name,
          bool(np.all(np.abs(cmp_s - ds_r) <= tol_s)), "max diff %g" % np.max(np.abs(cmp_s - ds_r)))
    check("%s zero-point gradients ≈ torch's sums" % name,
          bool(np.all(np.abs(cmp_z - dz_r) <= tol_z)), "max diff %g" % np.max(np.abs(cmp_z - dz_r)))

    # the per-tensor form with numbers
    if gran == "tensor":
        dst2 = Piq.Tensor.new_shaped(PIQ_FLOAT[dt], list(shape))
        q.fake_quantize_per_tensor(fmt, src, float(scales[0]), int(zps[0]), dst2, None)
        _, s64, z64 = q.fake_quantize_per_tensor_backward(fmt, src, float(scales[0]), int(zps[0]),
                                                          gout, gf, None)
        check("%s per-tensor form" % name,
              piq_bytes(dst2) == piq_bytes(dst) and np.float32(s64) == got_s[0]
              and np.float32(z64) == got_z[0] and s64 == seq_sum(groups_s[0]))


def main():
    rng = np.random.default_rng(20261124)
    cases = []
    for dt in ("f32", "bf16", "f16"):
        for qdtype, sym in ((Piq.Dtype.UINT8, False), (Piq.Dtype.INT8, False),
                            (Piq.Dtype.INT8, True), (Piq.Dtype.UINT4, False),
                            (Piq.Dtype.INT4, True)):
            qn = Piq.dtype_get_name(qdtype) if hasattr(Piq, "dtype_get_name") else str(int(qdtype))
            tag = "%s/%s%s" % (dt, qn, "/symmetric" if sym else "")
            for pow2 in (True, False):
                p = "pow2" if pow2 else "random-scale"
                cases.append(("/qat-torch/tensor/%s/%s/1003" % (tag, p),
                              dict(dt=dt, qdtype=qdtype, symmetric=sym, gran="tensor",
                                   shape=(1003,), pow2=pow2)))
                cases.append(("/qat-torch/channel/axis0/%s/%s/7x33" % (tag, p),
                              dict(dt=dt, qdtype=qdtype, symmetric=sym, gran="channel",
                                   shape=(7, 33), axis=0, pow2=pow2)))
                cases.append(("/qat-torch/channel/axis1/%s/%s/5x6x17" % (tag, p),
                              dict(dt=dt, qdtype=qdtype, symmetric=sym, gran="channel",
                                   shape=(5, 6, 17), axis=1, pow2=pow2)))
                cases.append(("/qat-torch/channel/axis2/%s/%s/3x4x9" % (tag, p),
                              dict(dt=dt, qdtype=qdtype, symmetric=sym, gran="channel",
                                   shape=(3, 4, 9), axis=2, pow2=pow2)))
                cases.append(("/qat-torch/block/32/%s/%s/6x96" % (tag, p),
                              dict(dt=dt, qdtype=qdtype, symmetric=sym, gran="block",
                                   shape=(6, 96), block=32, pow2=pow2)))
    # crossing the work item: sums over several chunks, several threads
    cases.append(("/qat-torch/tensor/f32/uint8/large/70001",
                  dict(dt="f32", qdtype=Piq.Dtype.UINT8, symmetric=False, gran="tensor",
                       shape=(70001,), pow2=False)))
    cases.append(("/qat-torch/channel/axis1/f32/int8/large/300x3x70",
                  dict(dt="f32", qdtype=Piq.Dtype.INT8, symmetric=False, gran="channel",
                       shape=(300, 3, 70), axis=1, pow2=False)))
    cases.append(("/qat-torch/tensor/f32/int16/1000",
                  dict(dt="f32", qdtype=Piq.Dtype.INT16, symmetric=False, gran="tensor",
                       shape=(1000,), pow2=True)))

    for name, kw in cases:
        try:
            run_case(rng, name, **kw)
        except Exception:
            check(name, False, traceback.format_exc().replace("\n", "\n# "))

    for i, (ok, name, detail) in enumerate(results, 1):
        print("%s %d - %s" % ("ok" if ok else "not ok", i, name))
        if not ok and detail:
            print("# " + detail)
    print("1..%d" % len(results))
    return 0 if all(ok for ok, _, _ in results) else 1


if __name__ == "__main__":
    sys.exit(main())
