"""DLPack (dmlc/dlpack, v0.8 and v1.x capsules) read through ctypes: a
tensor's data pointer, device, dtype, shape and strides, without copying,
so that torch, JAX, CuPy and numpy arrays can be bound in place."""
import ctypes

KDL_CPU, KDL_CUDA, KDL_CUDA_HOST = 1, 2, 3
# DLDataTypeCode: int, uint, float, opaque handle, bfloat, complex, bool
_CODES = {(0, 32): "i32", (2, 32): "f32", (2, 16): "f16", (4, 16): "bf16", (6, 8): "bool",
          (1, 16): "u16"}


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


class DLPackVersion(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


class DLManagedTensorVersioned(ctypes.Structure):
    _fields_ = [("version", DLPackVersion), ("manager_ctx", ctypes.c_void_p),
                ("deleter", ctypes.c_void_p), ("flags", ctypes.c_uint64),
                ("dl_tensor", DLTensor)]


_get = ctypes.pythonapi.PyCapsule_GetPointer
_get.restype = ctypes.c_void_p
_get.argtypes = [ctypes.py_object, ctypes.c_char_p]
_valid = ctypes.pythonapi.PyCapsule_IsValid
_valid.restype = ctypes.c_int
_valid.argtypes = [ctypes.py_object, ctypes.c_char_p]


class View:
    """What a DLPack capsule describes. The capsule is kept: while it is not
    consumed (renamed), its destructor frees the producer's context when
    this view, the last reference, goes."""

    def __init__(self, obj):
        try:
            cap = obj.__dlpack__()
        except TypeError:  # producers of DLPack before 2023 take no keywords either way
            cap = obj.__dlpack__(stream=None)
        if _valid(cap, b"dltensor_versioned"):
            t = DLManagedTensorVersioned.from_address(_get(cap, b"dltensor_versioned")).dl_tensor
        elif _valid(cap, b"dltensor"):
            t = DLTensor.from_address(_get(cap, b"dltensor"))  # DLManagedTensor starts with it
        else:
            raise TypeError("__dlpack__ gave no DLPack capsule")
        self.capsule = cap
        self.device = (t.device.device_type, t.device.device_id)
        self.shape = tuple(t.shape[i] for i in range(t.ndim))
        if t.dtype.lanes != 1 or (t.dtype.code, t.dtype.bits) not in _CODES:
            raise TypeError(f"DLPack dtype code {t.dtype.code}, {t.dtype.bits} bits, "
                            f"{t.dtype.lanes} lanes: shardc holds f32, f16, bf16, i32 and bool")
        self.dtype = _CODES[(t.dtype.code, t.dtype.bits)]
        self.itemsize = t.dtype.bits // 8
        self.data = (t.data or 0) + t.byte_offset
        # strides in elements, row-major when the producer gives none
        if t.strides:
            self.strides = tuple(t.strides[i] for i in range(t.ndim))
        else:
            self.strides, want = [0] * t.ndim, 1
            for i in reversed(range(t.ndim)):
                self.strides[i] = want
                want *= self.shape[i]
            self.strides = tuple(self.strides)
        self.contiguous = True
        want = 1
        for i in reversed(range(t.ndim)):
            if self.shape[i] != 1 and self.strides[i] != want:
                self.contiguous = False
            want *= self.shape[i]
        self.nbytes = self.itemsize
        for n in self.shape:
            self.nbytes *= n
