"""fake_cuda_session.py: the Python package's CUDA path on the pretend driver
of tests/fakecuda, run by test_shardc.py in a process of its own whose
LD_LIBRARY_PATH finds that driver first. Its device memory is host memory
and its copies move the bytes (no kernel runs), so a model that hands its
inputs back as outputs shows where each byte went:

- a DLPack tensor in CUDA memory (device type 2), transposed, bound on 2x2
  ranks: bind returns its own address (read in place, no copy), and after
  a run output() gives it back whole on the host;
- output(name, out=...) into a CUDA DLPack tensor with padded rows writes
  the output there, the padding untouched;
- over three runs whose bound values change, by CUDA graphs too.

Prints each failed check and exits 1; exits 77 where the libcuda.so.1 found
is not the pretend one."""
import ctypes
import sys

import numpy as np

import shardc

drv = ctypes.CDLL("libcuda.so.1")
if not hasattr(drv, "fakecuda_live_allocations"):
    print("skipped: the libcuda.so.1 found is not tests/fakecuda's")
    sys.exit(77)
drv.cuMemAlloc_v2.argtypes = [ctypes.POINTER(ctypes.c_ulonglong), ctypes.c_size_t]
drv.cuMemFree_v2.argtypes = [ctypes.c_ulonglong]
assert drv.cuInit(0) == 0

from shardc import _dlpack  # noqa: E402

_new = ctypes.pythonapi.PyCapsule_New
_new.restype = ctypes.py_object
_new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]


class DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", _dlpack.DLTensor), ("manager_ctx", ctypes.c_void_p),
                ("deleter", ctypes.c_void_p)]


class CudaTensor:
    """A tensor in the pretend driver's device memory, spoken as DLPack
    (f32 or i32; shape and strides in elements)."""

    def __init__(self, shape, strides, code, span):
        self.ptr = ctypes.c_ulonglong()
        assert drv.cuMemAlloc_v2(ctypes.byref(self.ptr), span * 4) == 0
        self.span, self.shape, self.strides, self.code = span, shape, strides, code
        n = len(shape)
        self._shape = (ctypes.c_int64 * n)(*shape)
        self._strides = (ctypes.c_int64 * n)(*strides)
        self._m = DLManagedTensor()
        t = self._m.dl_tensor
        t.data, t.ndim, t.byte_offset = self.ptr.value, n, 0
        t.device.device_type, t.device.device_id = 2, 0
        t.dtype.code, t.dtype.bits, t.dtype.lanes = code, 32, 1
        t.shape, t.strides = self._shape, self._strides

    def __dlpack_device__(self):
        return (2, 0)

    def __dlpack__(self, stream=None):
        return _new(ctypes.addressof(self._m), b"dltensor", None)

    def memory(self):
        """Its bytes, through the pretend driver's memory (host memory)."""
        kind = np.float32 if self.code == 2 else np.int32
        buf = (ctypes.c_char * (self.span * 4)).from_address(self.ptr.value)
        return np.frombuffer(buf, dtype=kind)

    def free(self):
        assert drv.cuMemFree_v2(self.ptr.value) == 0


MODEL = """mesh dp, tp
input x : f32[8, 6] shard(dp, _)
input ids : i32[4, 6] shard(_, tp)
output x, ids
"""

failures = 0


def check(ok, what):
    global failures
    if not ok:
        failures += 1
        print("failed:", what)


def session(graph):
    plan = shardc.compile(source=MODEL, mesh="2x2", arch="sm_90").plan()
    s = shardc.Session(plan, backend="cuda", graph=graph)
    xt = CudaTensor((8, 6), (1, 8), 2, 48)          # x transposed in memory
    ids = CudaTensor((4, 6), (6, 1), 0, 24)
    out = CudaTensor((8, 6), (8, 1), 2, 64)         # rows padded to 8
    check(s.bind("x", xt) == xt.ptr.value, "bind reads the CUDA tensor in place")
    check(s.bind("ids", ids) == ids.ptr.value, "bind reads the i32 CUDA tensor in place")
    for run in range(3):
        x = (100 * run + 10 * np.arange(8)[:, None] + np.arange(6)[None, :]).astype(np.float32)
        xt.memory()[:] = x.T.reshape(-1)
        ids.memory()[:] = 1000 * run + np.arange(24)
        out.memory()[:] = -7.0
        s.run()
        check(np.array_equal(s.output("x"), x), f"run {run}: output('x') on the host")
        check(np.array_equal(s.output("ids").reshape(-1), ids.memory()),
              f"run {run}: output('ids') on the host")
        check(s.output("x", out=out) is out, "output(out=) returns out")
        got = out.memory().reshape(8, 8)
        check(np.array_equal(got[:, :6], x), f"run {run}: output into CUDA memory")
        check(np.all(got[:, 6:] == -7.0), f"run {run}: the padding untouched")
    s.close()
    for t in (xt, ids, out):
        t.free()


before = drv.fakecuda_live_allocations()
session(False)
session(True)
check(drv.fakecuda_live_allocations() == before, "every allocation freed")
sys.exit(1 if failures else 0)
