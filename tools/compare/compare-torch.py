#!/usr/bin/env python3
# compare-torch.py: torch.quantize_per_tensor on the data of compare-libs.c
#
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Run by tools/compare-libs.sh (not in CI): reads the raw f32 data and the reference
# uint8 codes that compare-libs.c wrote, quantizes with the same scale and zero
# point at each thread count and prints, as compare-libs.c does,
#   lib <name> threads <t> ms_median <ms> ms_min <ms> agree <fraction>
# Each call allocates its result, as torch.quantize_per_tensor always does.
import argparse
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
ap.add_argument("--data", required=True)
ap.add_argument("--ref", required=True)
ap.add_argument("--scale", type=float, required=True)
ap.add_argument("--zero-point", type=int, required=True)
ap.add_argument("--threads", default="1")
ap.add_argument("--repeat", type=int, default=25)
args = ap.parse_args()

x = torch.from_numpy(np.fromfile(args.data, dtype=np.float32))
ref = torch.from_numpy(np.fromfile(args.ref, dtype=np.uint8))
engine = torch.backends.quantized.engine
backend = [line.split(":", 1)[1].strip() for line in torch.__config__.parallel_info().splitlines()
           if line.startswith("ATen parallel backend")]
print(f"# torch {torch.__version__}, quantized engine {engine}, ATen parallel backend "
      f"{backend[0] if backend else '?'}, default threads {torch.get_num_threads()}")

for t in [int(s) for s in args.threads.split(",") if s]:
    torch.set_num_threads(t)
    for _ in range(2):                                     # warm
        q = torch.quantize_per_tensor(x, args.scale, args.zero_point, torch.quint8)
    times = []
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        q = torch.quantize_per_tensor(x, args.scale, args.zero_point, torch.quint8)
        times.append(time.perf_counter() - t0)
    agree = (q.int_repr() == ref).double().mean().item()
    print(f"lib torch.quantize_per_tensor threads {torch.get_num_threads()} "
          f"ms_median {statistics.median(times) * 1e3:.4f} ms_min {min(times) * 1e3:.4f} "
          f"agree {agree:.9f}")
    sys.stdout.flush()
