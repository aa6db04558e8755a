"""The C API of libshardc (include/shardc.h) through ctypes.

ctypes rather than a compiled extension: the library's API is plain C
with opaque handles, so a binding needs no C of its own, builds nothing
per Python version, and a wheel holds one shared library any CPython 3
loads. The calls that matter for speed (compile, run) spend their time
inside the library; a Python-to-C call costs microseconds.

The library is found, in order: $SHARDC_LIBRARY (a path), libshardc.so
beside this file (an installed wheel), the build folder of a source tree
(build/libshardc.so two levels up), then the system's loader.
"""
import ctypes
import os

STATUS = {
    0: "OK", 1: "ERR_INPUT", 2: "ERR_USAGE", 3: "ERR_INTERNAL", 4: "ERR_NOMEM",
    5: "ERR_IO", 6: "ERR_NO_GPU", 7: "ERR_GPU", 8: "ERR_PEER",
}

MAX_RANK = 8


class TensorInfo(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("kind", ctypes.c_char_p),
                ("dtype", ctypes.c_char_p), ("rank", ctypes.c_int),
                ("dim", ctypes.c_longlong * MAX_RANK), ("bytes", ctypes.c_size_t)]


class SessionConfig(ctypes.Structure):
    _fields_ = [("backend", ctypes.c_char_p), ("comm", ctypes.c_char_p),
                ("params_file", ctypes.c_char_p), ("inputs_file", ctypes.c_char_p),
                ("seed", ctypes.c_ulonglong), ("timeout_ms", ctypes.c_int),
                ("trace", ctypes.c_int), ("graph", ctypes.c_int),
                ("checkpoint_keep", ctypes.c_int), ("init_missing", ctypes.c_int)]


class TensorView(ctypes.Structure):
    """shardc_tensor_view: a tensor in the caller's memory, as DLPack has it."""
    _fields_ = [("device", ctypes.c_int), ("device_id", ctypes.c_int),
                ("data", ctypes.c_void_p), ("dtype", ctypes.c_char_p), ("rank", ctypes.c_int),
                ("dim", ctypes.POINTER(ctypes.c_longlong)),
                ("strides", ctypes.POINTER(ctypes.c_longlong))]


def _find():
    env = os.environ.get("SHARDC_LIBRARY")
    if env:
        return env
    here = os.path.dirname(os.path.abspath(__file__))
    for path in (os.path.join(here, "libshardc.so"),
                 os.path.join(here, "..", "..", "build", "libshardc.so")):
        if os.path.exists(path):
            return path
    return "libshardc.so"


_P = ctypes.c_void_p
_S = ctypes.c_char_p
_E = ctypes.POINTER(ctypes.c_void_p)   # char **error: read, then freed by shardc_free
_I = ctypes.c_int

# name: (result type, argument types)
_SIGS = {
    "shardc_version": (_S, []),
    "shardc_free": (None, [_P]),
    "shardc_options_new": (_P, []),
    "shardc_options_free": (None, [_P]),
    "shardc_options_set_mesh": (_I, [_P, _S, _E]),
    "shardc_options_define": (_I, [_P, _S, ctypes.c_longlong, _E]),
    "shardc_options_set_bucket_mb": (_I, [_P, ctypes.c_double, _E]),
    "shardc_options_set_zero": (_I, [_P, _I, _S, _E]),
    "shardc_options_set_schedule": (_I, [_P, _S, _E]),
    "shardc_options_set_microbatches": (_I, [_P, ctypes.c_longlong, _E]),
    "shardc_options_set_dtype": (_I, [_P, _S, _E]),
    "shardc_options_set_recompute": (None, [_P, _I]),
    "shardc_options_set_keep_gathered": (None, [_P, _I]),
    "shardc_options_set_unroll": (None, [_P, _I]),
    "shardc_options_set_f32_matmul": (_I, [_P, _S, _E]),
    "shardc_options_set_explain": (None, [_P, _I]),
    "shardc_options_set_report_only": (None, [_P, _I]),
    "shardc_options_set_plan_only": (None, [_P, _I]),
    "shardc_options_set_mem_limit": (_I, [_P, _S, _E]),
    "shardc_options_set_archs": (_I, [_P, _S, _E]),
    "shardc_options_set_cache_dir": (_I, [_P, _S, _E]),
    "shardc_options_set_hardware": (_I, [_P, _S, _E]),
    "shardc_compile_string": (_I, [_P, _S, _S, ctypes.c_size_t, ctypes.POINTER(_P), _E]),
    "shardc_compile_file": (_I, [_P, _S, ctypes.POINTER(_P), _E]),
    "shardc_program_free": (None, [_P]),
    "shardc_program_emit": (_I, [_P, _S, ctypes.POINTER(_P), ctypes.POINTER(ctypes.c_size_t),
                                 _E]),
    "shardc_program_plan": (_I, [_P, ctypes.POINTER(_P), _E]),
    "shardc_program_save_plan": (_I, [_P, _S, _E]),
    "shardc_pass_name": (_S, [_I]),
    "shardc_plan_step_name": (_S, [_I]),
    "shardc_program_seconds": (ctypes.c_double, [_P, _S]),
    "shardc_check_writable": (_I, [_S, _I, _E]),
    "shardc_plan_load": (_I, [_S, ctypes.POINTER(_P), _E]),
    "shardc_plan_free": (None, [_P]),
    "shardc_plan_report": (_S, [_P]),
    "shardc_plan_num_axes": (_I, [_P]),
    "shardc_plan_axis": (_S, [_P, _I, ctypes.POINTER(ctypes.c_longlong)]),
    "shardc_plan_ranks": (ctypes.c_longlong, [_P]),
    "shardc_plan_num_tensors": (_I, [_P]),
    "shardc_plan_tensor": (_I, [_P, _I, ctypes.POINTER(TensorInfo)]),
    "shardc_mpi_init": (_I, [ctypes.POINTER(_I), ctypes.POINTER(_I), _E]),
    "shardc_mpi_finalize": (None, []),
    "shardc_session_new": (_I, [_P, ctypes.POINTER(SessionConfig), ctypes.POINTER(_P), _E]),
    "shardc_session_free": (None, [_P]),
    "shardc_session_bind": (_I, [_P, _S, _P, ctypes.c_size_t, _E]),
    "shardc_session_bind_view": (_I, [_P, _S, ctypes.POINTER(TensorView), _E]),
    "shardc_session_output_into": (_I, [_P, _S, ctypes.POINTER(TensorView), _E]),
    "shardc_session_check_params": (_I, [_P, _E]),
    "shardc_session_run": (_I, [_P, _E]),
    "shardc_session_output": (_I, [_P, _S, ctypes.POINTER(_P), ctypes.POINTER(TensorInfo), _E]),
    "shardc_session_save_outputs": (_I, [_P, _S, _E]),
    "shardc_session_loss": (_I, [_P, ctypes.POINTER(ctypes.c_double), _E]),
    "shardc_session_save_params": (_I, [_P, _S, _E]),
    "shardc_session_step": (ctypes.c_longlong, [_P]),
    "shardc_session_save_checkpoint": (_I, [_P, _S, _E]),
    "shardc_session_resume": (_I, [_P, _S, _E]),
}


def load():
    lib = ctypes.CDLL(_find())
    for name, (res, args) in _SIGS.items():
        f = getattr(lib, name)
        f.restype = res
        f.argtypes = args
    return lib


lib = load()
