# Piq.py: PyGObject overrides for piquant: numpy arrays in and out of the
# library without copies, and the one-line calls of bitsandbytes and torchao.
#
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# PyGObject loads this module when a program does `from gi.repository import
# Piq`, if it lies in a gi/overrides directory on sys.path (it is installed
# beside PyGObject's own overrides). Everything of the C API stays as it is;
# this adds:
#
#   Piq.Tensor.from_array(a, dtype=None, writable=None)   numpy -> tensor, no copy
#   numpy.asarray(t), t.__array_interface__                tensor -> numpy, no copy
#   t.shape, t.scales_array(), t.zero_points_array()
#   Piq.quantize(x, "nf4", block_size=64)                  -> Piq.Tensor
#   Piq.dequantize(t, out=None, add=False, dtype=None)     -> numpy.ndarray
#   Piq.matmul(x, weights, bias=None, out=None, activation=None, add=False)
#   t.save(path), Piq.save(path, {name: tensor}), Piq.load(path)   files
#
# Lifetimes: a tensor made from an array keeps the array alive (the array is
# an attribute of the tensor's Python wrapper, and PyGObject keeps a wrapper
# that has attributes alive for as long as C holds the tensor); an array made
# from a tensor keeps the tensor alive (numpy keeps the exporting object as the
# array's `base`). numpy is needed only by the functions that take or return
# arrays: without it the module loads and those raise ImportError.
#
# Element types: float32, float64 and float16 arrays are Piq.Dtype.F32, F64 and
# F16; bfloat16 has no numpy dtype: ml_dtypes.bfloat16 arrays are BF16 when
# ml_dtypes is installed, and uint16 arrays are read as BF16 only when
# dtype=Piq.Dtype.BF16 says so. Integer arrays are the integer dtype of the same
# width and signedness. Any other combination raises TypeError: nothing is
# silently reinterpreted or converted. Arrays must be C-contiguous, in native
# byte order (ValueError otherwise; np.ascontiguousarray(a) makes a copy that
# is).

from ..module import get_introspection_module
from ..overrides import override

Piq = get_introspection_module("Piq")

try:
    import numpy as _np
except ImportError:     # the overrides load; the numpy helpers raise ImportError
    _np = None

try:
    import ml_dtypes as _ml_dtypes
except ImportError:
    _ml_dtypes = None

__all__ = []


def _numpy():
    if _np is None:
        raise ImportError("this piquant helper needs numpy, which is not installed")
    return _np


def _bf16_dtype():
    if _np is None or _ml_dtypes is None:
        return None
    return _np.dtype(_ml_dtypes.bfloat16)


# Piq dtype <-> numpy type string (native byte order). BF16 is handled apart.
_TYPESTR = {
    Piq.Dtype.F32: "f4", Piq.Dtype.F64: "f8", Piq.Dtype.F16: "f2",
    Piq.Dtype.UINT8: "u1", Piq.Dtype.INT8: "i1",
    Piq.Dtype.UINT16: "u2", Piq.Dtype.INT16: "i2",
    Piq.Dtype.UINT32: "u4", Piq.Dtype.INT32: "i4",
    Piq.Dtype.UINT64: "u8", Piq.Dtype.INT64: "i8",
}
_FLOAT_DTYPES = (Piq.Dtype.F32, Piq.Dtype.F64, Piq.Dtype.F16, Piq.Dtype.BF16)


def _numpy_dtype_of(dtype):
    """The numpy dtype of a Piq.Dtype, or None where numpy has none."""
    np = _numpy()
    if dtype == Piq.Dtype.BF16:
        return _bf16_dtype()
    ts = _TYPESTR.get(dtype)
    return np.dtype(ts) if ts is not None else None


def _view_dtype(dtype):
    """The numpy dtype of views of `dtype` data: BF16 as its uint16 bits."""
    if dtype == Piq.Dtype.BF16:
        return _numpy().dtype("u2")
    return _numpy_dtype_of(dtype)


def _piq_dtype_of(array_dtype, dtype=None):
    """The Piq.Dtype of a numpy dtype; `dtype` may name BF16 for uint16 data."""
    np = _numpy()
    array_dtype = np.dtype(array_dtype)
    natural = None
    bf16 = _bf16_dtype()
    if bf16 is not None and array_dtype == bf16:
        natural = Piq.Dtype.BF16
    else:
        for piq_dtype, ts in _TYPESTR.items():
            if array_dtype == np.dtype(ts):
                natural = piq_dtype
                break
    if dtype is None:
        if natural is None:
            raise TypeError("numpy %s has no piquant dtype (float32, float64, float16, "
                            "ml_dtypes.bfloat16 or an integer type)" % array_dtype)
        return natural
    dtype = Piq.Dtype(dtype)
    if dtype == natural:
        return dtype
    if dtype == Piq.Dtype.BF16 and array_dtype == np.dtype("u2"):
        return dtype        # the explicit way to hand over bf16 bit patterns
    raise TypeError("numpy %s data cannot be read as %s: convert it first (e.g. "
                    "a.astype(...)); only dtype=Piq.Dtype.BF16 over uint16 reads bits as they are"
                    % (array_dtype, dtype.value_nick))


def _check_array(a, name, writable=False):
    np = _numpy()
    if not isinstance(a, np.ndarray):
        raise TypeError("%s must be a numpy.ndarray, not %s" % (name, type(a).__name__))
    if a.ndim == 0:
        raise ValueError("%s is a 0-d array; piquant tensors have 1 to %d dimensions "
                         "(use a.reshape(1))" % (name, Piq.MAX_DIMS))
    if not a.flags.c_contiguous:
        raise ValueError("%s is not C-contiguous; np.ascontiguousarray(%s) makes a contiguous copy"
                         % (name, name))
    if not a.dtype.isnative:
        raise ValueError("%s is not in native byte order; %s.astype(%s.dtype.newbyteorder('='))"
                         " converts it" % (name, name, name))
    if writable and not a.flags.writeable:
        raise ValueError("%s is read-only" % name)


def _wrap(a, dtype, writable):
    t = Piq.Tensor.new_for_address(dtype, list(a.shape), a.ctypes.data, a.nbytes, 0, writable)
    # new_for_address keeps no reference: the wrapper's attribute does, and
    # PyGObject keeps a wrapper with attributes alive while C holds the tensor
    t._piq_array = a
    return t


class _ArrayView(object):
    """What numpy wraps: an __array_interface__ and the objects that keep its memory."""

    __slots__ = ("__array_interface__", "_keep")

    def __init__(self, interface, keep):
        self.__array_interface__ = interface
        self._keep = keep


class Tensor(Piq.Tensor):
    """Piq.Tensor with numpy interoperation.

    ``numpy.asarray(t)`` is a view of the tensor's storage, without a copy,
    that keeps the tensor alive: float and integer tensors have their shape
    and element type; quantized tensors (and packed types that numpy has no
    type for) are their codes' bytes, a 1-D uint8 array of ``t.props.n_bytes``.
    The view is read-only when the tensor is. A bf16 tensor's view is its
    uint16 bit patterns, whether or not ml_dtypes is installed
    (``np.asarray(t).view(ml_dtypes.bfloat16)`` reads them as bfloat16).
    """

    @classmethod
    def from_array(cls, array, dtype=None, writable=None):
        """A tensor over `array`'s memory, without a copy; it keeps `array` alive.

        `array` must be a C-contiguous numpy array in native byte order;
        `dtype` is needed only to read uint16 data as Piq.Dtype.BF16.
        `writable` defaults to whether the array is writable; the library
        writes into it only through calls that take the tensor as output."""
        _check_array(array, "array")
        piq_dtype = _piq_dtype_of(array.dtype, dtype)
        if writable is None:
            writable = bool(array.flags.writeable)
        elif writable and not array.flags.writeable:
            raise ValueError("array is read-only, and writable=True was asked for")
        return _wrap(array, piq_dtype, bool(writable))

    @property
    def shape(self):
        """The dimensions, outermost first, as a tuple."""
        return tuple(self.get_shape())

    @property
    def __array_interface__(self):
        address, size = self.get_address()
        readonly = not self.is_writable()
        # numpy takes no NULL address; an empty tensor is an empty buffer
        data = (address, readonly) if address else (b"" if readonly else bytearray())
        fmt = self.get_format()
        np_dtype = None if fmt is not None else _view_dtype(self.get_dtype())
        if np_dtype is None:
            return {"version": 3, "shape": (size,), "typestr": "|u1",
                    "data": data}
        interface = {"version": 3, "shape": self.shape, "typestr": np_dtype.str,
                     "data": data}
        stride = self.get_row_stride()
        if stride and len(self.shape) > 1:
            strides = [np_dtype.itemsize, stride]
            for extent in reversed(self.shape[1:-1]):
                strides.append(strides[-1] * extent)
            interface["strides"] = tuple(reversed(strides))
        return interface

    def _side_array(self, get_bytes, get_address, np_dtype):
        np = _numpy()
        held = get_bytes()
        if held is None:
            return None
        address, size = get_address()
        if size != held.get_size():
            raise RuntimeError("piquant's buffer changed while it was read")
        interface = {"version": 3, "shape": (size // np_dtype.itemsize,),
                     "typestr": np_dtype.str, "data": (address, True) if address else b""}
        # `held` is the GBytes: quantizing into the tensor again replaces it,
        # and this view keeps the one it shows
        return np.asarray(_ArrayView(interface, (self, held)))

    def scales_array(self):
        """The per-channel or per-block scales as a read-only numpy view, or None.

        One scale per channel or block, 1-D, in the format's scale dtype:
        float32, float16, uint8 for E8M0 exponents, uint16 bits for bf16;
        double-quantized scales are their bytes (uint8).
        Per-tensor formats have a single scale: ``t.get_scale()``. The view
        keeps these scales alive even after the tensor is quantized again."""
        np = _numpy()
        fmt = self.get_format()
        if fmt is None:
            return None
        np_dtype = _view_dtype(fmt.get_scale_dtype())
        if np_dtype is None or fmt.get_double_quant():
            np_dtype = np.dtype("u1")
        return self._side_array(self.get_scales, self.get_scales_address, np_dtype)

    def zero_points_array(self):
        """The int32 per-channel or per-block zero points as a read-only numpy view, or None."""
        np = _numpy()
        return self._side_array(self.get_zero_points, self.get_zero_points_address, np.dtype("i4"))

    def save(self, path, format=None):
        """Write the tensor to `path` (a str, os.PathLike or Gio.File), atomically.

        The format is `format` (a Piq.FileFormat) or the file name's suffix:
        .npy (a float or integer tensor, as numpy.save writes it) or .piqt (a
        quantized tensor with its format, scales and zero points). Any other
        suffix raises ValueError; for safetensors use Piq.save(path, {name: t}).
        """
        file = _gfile(path)
        if format is None:
            format = _format_of_suffix(file)
        return self.save_to_file(file, format, None)


Tensor = override(Tensor)
__all__.append("Tensor")


def _format_of(format, block_size):
    if isinstance(format, str):
        if format not in Piq.Format.list_presets():
            dtype = getattr(Piq.Dtype, format.upper(), None) if format.isidentifier() else None
            if not isinstance(dtype, Piq.Dtype):
                raise ValueError("%r is neither a preset (%s) nor a dtype name"
                                 % (format, ", ".join(Piq.Format.list_presets())))
            fmt = Piq.Format.new(dtype)
        else:
            fmt = Piq.Format.new_preset(format)
    elif isinstance(format, Piq.Format):
        fmt = format
    elif isinstance(format, Piq.Dtype):
        fmt = Piq.Format.new(format)
    else:
        raise TypeError("format must be a preset name, a Piq.Format or a Piq.Dtype, not %s"
                        % type(format).__name__)
    if block_size is not None and (not isinstance(block_size, int) or block_size <= 0):
        raise ValueError("block_size must be a positive integer, not %r" % (block_size,))
    if block_size is not None and fmt.get_granularity() != Piq.Granularity.BLOCK:
        raise ValueError("block_size=%d given for %s, which is not per block"
                         % (block_size, fmt.to_string()))
    if block_size is not None and block_size != fmt.get_block_size():
        names = ("dtype", "granularity", "axis", "scale_dtype", "symmetric", "saturate",
                 "high_nibble_first", "double_quant")
        props = {name: fmt.get_property(name.replace("_", "-")) for name in names}
        fmt = Piq.Format(block_size=block_size, **props)
        fmt.validate()
    return fmt


def _source(x, what="x"):
    """A tensor over x (an ndarray, no copy) or x itself (a Piq.Tensor)."""
    if isinstance(x, Piq.Tensor):
        return x
    _check_array(x, what)
    return _wrap(x, _piq_dtype_of(x.dtype), False)


def quantize(x, format, *, block_size=None, recipe=None, quantizer=None):
    """Quantize a float array into a new Piq.Tensor of its shape.

    `format` is a preset name ("nf4", "int8_block", "mxfp4", …:
    Piq.Format.list_presets()), a dtype name or Piq.Dtype (per tensor, with
    the format's defaults), or a Piq.Format. `block_size` changes a per-block
    format's block. `recipe` (a Piq.Recipe) says how scales are chosen; by
    default they are derived from the data. `x` is a float32/float64/float16
    (or bfloat16) C-contiguous numpy array, read without a copy, or a
    Piq.Tensor."""
    fmt = _format_of(format, block_size)
    if recipe is not None and not isinstance(recipe, Piq.Recipe):
        raise TypeError("recipe must be a Piq.Recipe, not %s" % type(recipe).__name__)
    src = _source(x)
    if src.get_dtype() not in _FLOAT_DTYPES:
        raise TypeError("x holds %s data; quantize takes float data" % src.get_dtype().value_nick)
    q = quantizer or Piq.Quantizer.get_default()
    return q.quantize_new(fmt, recipe, src)


__all__.append("quantize")


def _destination(out, shape, what="out"):
    _check_array(out, what, writable=True)
    if tuple(out.shape) != tuple(shape):
        raise ValueError("%s has shape %s, %s is needed" % (what, tuple(out.shape), tuple(shape)))
    dtype = _piq_dtype_of(out.dtype)
    if dtype not in _FLOAT_DTYPES:
        raise TypeError("%s is %s; a float array is needed" % (what, out.dtype))
    return _wrap(out, dtype, True)


def dequantize(t, *, out=None, add=False, dtype=None, quantizer=None):
    """Dequantize a quantized Piq.Tensor into a numpy array of its shape.

    Without `out`, a new array of `dtype` (a numpy dtype or a Piq.Dtype;
    default float32; float64, float16, ml_dtypes.bfloat16 too) is allocated and returned. With `out` (a writable
    C-contiguous float array of t.shape), the values are written into it, or
    added to it when `add=True` (accumulating, as a ring reduce does), and
    `out` is returned. The library writes straight into the array."""
    np = _numpy()
    if not isinstance(t, Piq.Tensor):
        raise TypeError("t must be a Piq.Tensor, not %s" % type(t).__name__)
    if t.get_format() is None:
        raise ValueError("t is a %s tensor without a format: nothing to dequantize"
                         % t.get_dtype().value_nick)
    q = quantizer or Piq.Quantizer.get_default()
    if isinstance(dtype, Piq.Dtype):
        piq_dtype, dtype = dtype, _numpy_dtype_of(dtype)
        if dtype is None:
            raise TypeError("numpy has no dtype for %s%s" % (piq_dtype.value_nick, (
                " (install ml_dtypes)" if piq_dtype == Piq.Dtype.BF16 else "")))
    if out is None:
        if add:
            raise ValueError("add=True adds into an existing array: pass it as out=")
        result = np.empty(t.shape, dtype=np.float32 if dtype is None else dtype)
        dst = _destination(result, t.shape, "an array of dtype %s" % result.dtype)
    else:
        if dtype is not None and np.dtype(dtype) != getattr(out, "dtype", None):
            raise TypeError("dtype=%s does not match out's %s" % (np.dtype(dtype), out.dtype))
        result = out
        dst = _destination(out, t.shape)
    q.dequantize(t, dst, Piq.ReduceOp.ADD if add else Piq.ReduceOp.SET)
    return result


__all__.append("dequantize")


def matmul(x, weights, bias=None, out=None, *, activation=None, add=False, quantizer=None):
    """y = x · weightsᵀ + bias, as a numpy array [..., out_features].

    `weights` is a Piq.PackedWeights (packed once, reused) or a quantized
    Piq.Tensor [out, in], packed on each call for `activation`
    (Piq.Activation.FLOAT by default). `x` is a float array [..., in] and
    `bias` a float array [out] (or Piq.Tensors). With `out` the result is
    written into it (added when `add=True`); otherwise a float32 array is
    returned."""
    np = _numpy()
    if isinstance(weights, Piq.PackedWeights):
        if activation is not None and Piq.Activation(activation) != weights.get_activation():
            raise ValueError("weights were packed for %s, activation=%s was asked for"
                             % (weights.get_activation().value_nick,
                                Piq.Activation(activation).value_nick))
        packed = weights
    elif isinstance(weights, Piq.Tensor):
        packed = Piq.PackedWeights.new(weights, Piq.Activation.FLOAT if activation is None
                                       else activation)
    else:
        raise TypeError("weights must be a Piq.PackedWeights or a quantized Piq.Tensor, not %s"
                        % type(weights).__name__)
    src = _source(x)
    if src.get_dtype() not in _FLOAT_DTYPES:
        raise TypeError("x holds %s data; matmul takes float activations" % src.get_dtype().value_nick)
    n_out, n_in = packed.get_n_out(), packed.get_n_in()
    shape = src.shape
    if shape[-1] != n_in:
        raise ValueError("x has %d features in its last dimension, the weights take %d"
                         % (shape[-1], n_in))
    b = None if bias is None else _source(bias, "bias")
    if b is not None and b.shape != (n_out,):
        raise ValueError("bias has shape %s, (%d,) is needed" % (b.shape, n_out))
    y_shape = shape[:-1] + (n_out,)
    q = quantizer or Piq.Quantizer.get_default()
    if out is None:
        if add:
            raise ValueError("add=True adds into an existing array: pass it as out=")
        out = np.empty(y_shape, dtype=np.float32)
    dst = _destination(out, y_shape)
    q.matmul(src, packed, b, dst, Piq.ReduceOp.ADD if add else Piq.ReduceOp.SET)
    return out


__all__.append("matmul")

_SUFFIX_FORMATS = {".npy": Piq.FileFormat.NPY, ".piqt": Piq.FileFormat.PIQT}


def _gfile(path):
    from gi.repository import Gio
    if isinstance(path, Gio.File):
        return path
    import os
    return Gio.File.new_for_path(os.fspath(path))


def _suffix(file):
    name = file.get_basename() or ""
    dot = name.rfind(".")
    return name[dot:].lower() if dot > 0 else ""


def _format_of_suffix(file):
    suffix = _suffix(file)
    if suffix not in _SUFFIX_FORMATS:
        raise ValueError("cannot tell the file format from %r: name it .npy or .piqt, or pass "
                         "format=Piq.FileFormat.NPY/PIQT (safetensors: Piq.save(path, {name: "
                         "tensor}))" % (file.get_basename(),))
    return _SUFFIX_FORMATS[suffix]


def load(path):
    """Read `path` (a str, os.PathLike or Gio.File).

    A .safetensors file gives a dict {name: Piq.Tensor} (quantized tensors
    whole, with their formats); any other file is read as one tensor, .npy or
    .piqt, told apart by its first bytes. Use Piq.Safetensors for the metadata.
    """
    file = _gfile(path)
    if _suffix(file) == ".safetensors":
        st = Piq.Safetensors.new_from_file(file, None)
        return {name: st.get_tensor(name) for name in st.get_names()}
    return Piq.Tensor.new_from_file(file, None)


def save(path, tensors, metadata=None):
    """Write a tensor (as Tensor.save does) or a dict {name: tensor} (as a
    safetensors file, with `metadata` as its string __metadata__) to `path`."""
    if isinstance(tensors, Piq.Tensor):
        return tensors.save(path)
    if not isinstance(tensors, dict):
        raise TypeError("save() takes a Piq.Tensor or a dict of them, not %s"
                        % type(tensors).__name__)
    st = Piq.Safetensors.new()
    for name, t in tensors.items():
        if not isinstance(name, str) or not isinstance(t, Piq.Tensor):
            raise TypeError("save() takes a dict of str -> Piq.Tensor")
        st.set_tensor(name, t)
    for key, value in (metadata or {}).items():
        if not isinstance(key, str) or not isinstance(value, str):
            raise TypeError("metadata is a dict of str -> str")
        st.set_metadata(key, value)
    return st.save_to_file(_gfile(path), None)


__all__ += ["load", "save"]
