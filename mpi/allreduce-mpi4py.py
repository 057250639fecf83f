#!/usr/bin/env python3
# allreduce-mpi4py.py: a quantized ring all-reduce from Python, with mpi4py for
# the transport and piquant's typelib for the codecs (the C library
# libpiquant-mpi-1.0 does the same in C; an MPI_Comm is not introspectable, so
# Python takes this route). Run it under MPI:
#   mpiexec -np 4 python3 allreduce-mpi4py.py
# (against a build tree, with GI_TYPELIB_PATH=$builddir/piquant and
# LD_LIBRARY_PATH=$builddir/piquant/.libs). Prints the error against the exact
# sum and the bytes each rank sent, on rank 0.
#
# SPDX-License-Identifier: LGPL-2.1-or-later

import hashlib

import numpy as np
from mpi4py import MPI
import gi

gi.require_version("GLib", "2.0")
gi.require_version("Piq", "1.0")
from gi.repository import GLib, Piq  # noqa: E402

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
N = 100_003                      # neither a multiple of the ranks nor of the block
FMT = Piq.Format.new_preset("nf4")
BLOCK = FMT.props.block_size
q = Piq.Quantizer.get_default()


def tensor_over(arr, writable=False):
    """A tensor over a float32 numpy array's memory, without a copy."""
    t = Piq.Tensor.new_for_address(Piq.Dtype.F32, [arr.size], arr.ctypes.data, arr.nbytes,
                                   0, writable)
    t.numpy_owner = arr          # keeps the array alive as long as the tensor
    return t


def chunk(c):
    """Chunk c of the vector, cut on block boundaries (as piq_mpi_reducer_get_chunk)."""
    blocks = -(-N // BLOCK)
    return (min(blocks * c // size * BLOCK, N), min(blocks * (c + 1) // size * BLOCK, N))


def encode(values):
    """The message for one chunk: codes and block scales, as bytes."""
    packed = q.quantize_new(FMT, None, tensor_over(values))
    return (packed.get_bytes().get_data(), packed.get_scales().get_data())


def decode_into(msg, out, op):
    codes, scales = msg
    packed = Piq.Tensor.new_quantized_from_bytes(FMT, [out.size], GLib.Bytes.new(codes),
                                                 GLib.Bytes.new(scales), None, 1.0, 0)
    q.dequantize(packed, tensor_over(out, writable=True), op)


x = np.random.default_rng(rank).standard_normal(N, dtype=np.float32)
acc = x.copy()
right, left = (rank + 1) % size, (rank - 1) % size
sent = 0

# Reduce-scatter: at step s send chunk (rank − s − 1), receive (rank − s − 2)
# and add it, dequantized, to this rank's values of that chunk.
for s in range(size - 1):
    a, b = chunk((rank - s - 1) % size)
    msg = encode(acc[a:b])
    sent += sum(len(m) for m in msg)
    got = comm.sendrecv(msg, dest=right, source=left)
    a, b = chunk((rank - s - 2) % size)
    decode_into(got, acc[a:b], Piq.ReduceOp.ADD)

# All-gather: the complete chunk is quantized once by its owner, who decodes
# the same bytes, and forwarded unchanged.
a, b = chunk(rank)
msg = encode(acc[a:b].copy())
decode_into(msg, acc[a:b], Piq.ReduceOp.SET)
for s in range(size - 1):
    sent += sum(len(m) for m in msg)
    msg = comm.sendrecv(msg, dest=right, source=left)
    a, b = chunk((rank - s - 1) % size)
    decode_into(msg, acc[a:b], Piq.ReduceOp.SET)

exact = np.empty(N, dtype=np.float64)
comm.Allreduce(x.astype(np.float64), exact, op=MPI.SUM)
err = np.abs(acc - exact)
rel = np.sqrt(np.mean(err ** 2)) / np.sqrt(np.mean(exact ** 2))
same = comm.allgather(hashlib.sha256(acc.tobytes()).hexdigest())
if rank == 0:
    print(f"{size} ranks, {N} elements, nf4: rms error {rel:.4f} of the sum's rms, "
          f"max {err.max():.3g}; rank 0 sent {sent / N:.3f} bytes per element "
          f"(f32 ring: {2 * (size - 1) / size * 4:.3f}); same bytes on every rank: "
          f"{len(set(same)) == 1}")
# NF4's grid is coarse (16 levels per block): after 2 ranks its rms error is
# about 10 % of the sum's; anything far above means the ring is wrong.
assert rel < 0.2 and len(set(same)) == 1, rel
