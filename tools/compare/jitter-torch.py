#!/usr/bin/env python3
# jitter-torch.py: piquant's f32 -> uint8 quantize against torch.quantize_per_tensor
# in one process, with each side's spread (median / fastest run)
#
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Not run by `make check` or CI (it times torch). Issue 16 asks that at 8 and 16
# threads piquant's median lie within 1.3x of its fastest run, and ahead of
# torch.quantize_per_tensor measured in the same process, at every thread count,
# for a cache-resident and a DRAM-bound size. piquant is called through
# compare/libpiqtime.so (piq-time.c: the engine call of piquant-bench's
# "f32->u8 nearest" row, loaded with ctypes; `make -C tools compare-time`).
#
# For each size, run and thread count it times --repeat calls of piquant, then
# --repeat calls of torch (after two warm calls each), so both see the same
# machine state; torch allocates its result in every call, as it always does.
#
# Usage: jitter-torch.py --lib tools/compare/libpiqtime.so [--elements N[,N...]]
#                        [--threads T[,T...]] [--runs R] [--repeat K]
import argparse
import ctypes
import os
import statistics
import sys
import time

try:
    import numpy as np
    import torch
except ImportError as e:
    print(f"# torch: not available ({e}; Debian package python3-torch)")
    sys.exit(0)

ap = argparse.ArgumentParser()
ap.add_argument("--lib", required=True)
ap.add_argument("--elements", default="27264000,272640000")
ap.add_argument("--threads", default=f"1,{os.cpu_count() // 2},{os.cpu_count()}")
ap.add_argument("--runs", type=int, default=3)
ap.add_argument("--repeat", type=int, default=21)
args = ap.parse_args()

lib = ctypes.CDLL(os.path.abspath(args.lib))
f = lib.piq_time_quantize_u8
f.restype = ctypes.c_int
f.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_ulonglong, ctypes.c_double,
              ctypes.c_longlong, ctypes.c_uint, ctypes.c_uint, ctypes.c_void_p]

threads = [int(s) for s in args.threads.split(",") if s]
print(f"# torch {torch.__version__}, quantized engine {torch.backends.quantized.engine}; "
      f"{os.cpu_count()} CPUs; {args.runs} runs of {args.repeat} calls per row")
print(f"{'n':>11} {'run':>3} {'thr':>3} {'piquant med':>11} {'min':>8} {'med/min':>7} "
      f"{'torch med':>9} {'min':>8} {'med/min':>7} {'torch/piq':>9} {'agree':>9}")

for n in [int(s) for s in args.elements.split(",") if s]:
    x = np.random.default_rng(42).standard_normal(n, dtype=np.float32)
    lo, hi = min(float(x.min()), 0.0), max(float(x.max()), 0.0)
    scale = (hi - lo) / 255.0
    zp = int(min(255, max(0, round(-lo / scale))))
    q = np.empty(n, dtype=np.uint8)
    xt = torch.from_numpy(x)
    ms = (ctypes.c_double * args.repeat)()
    for run in range(1, args.runs + 1):
        for t in threads:
            if f(x.ctypes.data, q.ctypes.data, n, scale, zp, t, 2, ms) != 0:
                sys.exit(1)
            f(x.ctypes.data, q.ctypes.data, n, scale, zp, t, args.repeat, ms)
            piq = list(ms)
            torch.set_num_threads(t)
            for _ in range(2):
                r = torch.quantize_per_tensor(xt, scale, zp, torch.quint8)
            tt = []
            for _ in range(args.repeat):
                t0 = time.perf_counter()
                r = torch.quantize_per_tensor(xt, scale, zp, torch.quint8)
                tt.append((time.perf_counter() - t0) * 1e3)
            agree = float((r.int_repr().numpy() == q).mean())
            pm, tm = statistics.median(piq), statistics.median(tt)
            print(f"{n:>11} {run:>3} {t:>3} {pm:>11.3f} {min(piq):>8.3f} {pm / min(piq):>7.2f} "
                  f"{tm:>9.3f} {min(tt):>8.3f} {tm / min(tt):>7.2f} {tm / pm:>9.2f} {agree:>9.6f}")
            sys.stdout.flush()
