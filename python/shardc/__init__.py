"""shardc from Python: compile models in the shard language into sharded
execution plans, read their reports, and run them (the CPU backend, or
CUDA where the library was built with it) in this process.

    import shardc, numpy as np
    prog = shardc.compile(path="examples/mlp.sh", mesh="2x2", arch="none")
    prog.report()["stages"][0]["peak_bytes"]
    s = shardc.Session(prog.plan(), seed=0)
    s.bind("x", np.ones((64, 1024), np.float32))
    s.run()
    s.output("out")

Every failure raises a shardc.Error subclass holding the library's message
(for a model, "file:line:col: error: ...", the source line and a caret).
The binding is ctypes over libshardc's C API (include/shardc.h), whose
calls take the time; see _capi.py for why and how the library is found.
"""
import atexit
import ctypes
import json
import os
import shutil
import weakref
from typing import Any, Dict, Mapping, Optional, Sequence, Union

from . import _capi
from ._capi import lib as _lib

__all__ = ["Error", "InputError", "UsageError", "InternalError", "IOError", "NoGPUError",
           "GPUError", "PeerError", "compile", "load_plan", "check_writable", "Program", "Plan", "Session",
           "version", "mpi_init"]


class Error(Exception):
    """A failure of libshardc; .status is the C API's status name
    ("ERR_INPUT", ...), str() its message."""

    def __init__(self, message, status="ERR_INTERNAL"):
        super().__init__(message)
        self.status = status


class InputError(Error):
    """The model, IR or data given is wrong (a located diagnostic for a model)."""


class UsageError(Error):
    """A call's arguments are wrong."""


class InternalError(Error):
    """A bug in shardc."""


class IOError(Error):  # noqa: A001 (shardc.IOError, as the status names it)
    """A file could not be read or written."""


class NoGPUError(Error):
    """The cuda backend on a machine without a usable CUDA driver or GPU."""


class GPUError(Error):
    """The GPU failed during a run."""


class PeerError(Error):
    """Another rank failed, stopped, or did not answer."""


_ERRORS = {1: InputError, 2: UsageError, 3: InternalError, 4: Error, 5: IOError,
           6: NoGPUError, 7: GPUError, 8: PeerError}


def _check(status, err=None, what=""):
    """Raises the Error of a C API status, with the message in err (a
    char * the library allocated, freed here)."""
    msg = ""
    if err is not None and err.value:
        msg = ctypes.string_at(err.value).decode("utf-8", "replace")
        _lib.shardc_free(err.value)
    if status != 0:
        cls = _ERRORS.get(status, Error)
        raise cls(msg or f"{what}: {_capi.STATUS.get(status, status)}",
                  _capi.STATUS.get(status, str(status)))


def _call(fn, *args, what=""):
    err = ctypes.c_void_p()
    _check(fn(*args, ctypes.byref(err)), err, what)


def _b(s):
    return None if s is None else str(s).encode()


def version() -> str:
    """The library's version, "MAJOR.MINOR.PATCH"."""
    return _lib.shardc_version().decode()


# ---- compiling ----

_OPTIONS = ("arch", "bucket_mb", "zero", "zero_axis", "schedule", "microbatches", "dtype",
            "recompute", "keep_gathered", "unroll", "f32_matmul", "mem_limit", "hw", "cache_dir",
            "explain", "report_only", "plan_only")


def _options(mesh, defines, opts):
    unknown = set(opts) - set(_OPTIONS)
    if unknown:
        raise UsageError(f"unknown option(s) {', '.join(sorted(unknown))}: shardc.compile takes "
                         f"{', '.join(_OPTIONS)}", "ERR_USAGE")
    o = _lib.shardc_options_new()
    if not o:
        raise Error("out of memory", "ERR_NOMEM")
    try:
        if mesh is not None:
            if not isinstance(mesh, str):
                mesh = "x".join(str(int(n)) for n in mesh)
            _call(_lib.shardc_options_set_mesh, o, _b(mesh), what="mesh")
        for name, value in (defines or {}).items():
            _call(_lib.shardc_options_define, o, _b(name), int(value), what="define")
        if opts.get("arch") is not None:
            _call(_lib.shardc_options_set_archs, o, _b(opts["arch"]), what="arch")
        if opts.get("cache_dir") is not None:
            _call(_lib.shardc_options_set_cache_dir, o, _b(opts["cache_dir"]), what="cache_dir")
        if opts.get("bucket_mb") is not None:
            _call(_lib.shardc_options_set_bucket_mb, o, float(opts["bucket_mb"]), what="bucket_mb")
        if opts.get("zero") is not None:
            _call(_lib.shardc_options_set_zero, o, int(opts["zero"]), _b(opts.get("zero_axis")),
                  what="zero")
        if opts.get("schedule") is not None:
            _call(_lib.shardc_options_set_schedule, o, _b(opts["schedule"]), what="schedule")
        if opts.get("microbatches") is not None:
            _call(_lib.shardc_options_set_microbatches, o, int(opts["microbatches"]),
                  what="microbatches")
        if opts.get("dtype") is not None:
            _call(_lib.shardc_options_set_dtype, o, _b(opts["dtype"]), what="dtype")
        if opts.get("recompute"):
            _lib.shardc_options_set_recompute(o, 1)
        if opts.get("keep_gathered"):
            _lib.shardc_options_set_keep_gathered(o, 1)
        if opts.get("unroll"):
            _lib.shardc_options_set_unroll(o, 1)
        if opts.get("f32_matmul") is not None:
            _call(_lib.shardc_options_set_f32_matmul, o, _b(opts["f32_matmul"]),
                  what="f32_matmul")
        if opts.get("explain") is not None:
            _lib.shardc_options_set_explain(o, int(bool(opts["explain"])))
        if opts.get("report_only") is not None:
            _lib.shardc_options_set_report_only(o, int(bool(opts["report_only"])))
        if opts.get("plan_only") is not None:
            _lib.shardc_options_set_plan_only(o, int(bool(opts["plan_only"])))
        if opts.get("mem_limit") is not None:
            _call(_lib.shardc_options_set_mem_limit, o, _b(opts["mem_limit"]), what="mem_limit")
        if opts.get("hw") is not None:
            _call(_lib.shardc_options_set_hardware, o, _b(opts["hw"]), what="hw")
    except BaseException:
        _lib.shardc_options_free(o)
        raise
    return o


def compile(source: Union[str, bytes, None] = None, path: Union[str, os.PathLike, None] = None,
            mesh: Union[str, Sequence[int], None] = None,
            defines: Optional[Mapping[str, int]] = None, filename: Optional[str] = None,
            **options: Any) -> "Program":
    """Compiles a model in the shard language (or textual IR, for a name
    ending in .ir) into a Program.

    source: the model's text; or path: its file (one of the two).
    mesh: the axis sizes, "2x4" or (2, 4); None: the model's own.
    defines: {"L": 24, ...}, as `shardc -D L=24`.
    filename: the name messages give a source (default "<string>").
    options, as the CLI's flags: arch ("none", "sm_80,sm_90"; default: the
    library's, kernels where NVRTC is found, for the machine's GPUs where
    NVML finds any, else sm_80 and sm_90), bucket_mb, zero (0-3) and
    zero_axis, schedule ("gpipe", "1f1b", "interleaved(2)"), microbatches,
    dtype ("bf16", "f16"), recompute (True), keep_gathered (True), unroll
    (True: a pipeline stage's microbatches written out, not in loop form),
    f32_matmul ("f32", or "bf16x3": f32 matmuls as products of bf16 parts),
    explain (False: about twice as fast, without .explain()), report_only
    (True: only .report() and its JSON, a deep pipeline's stages dropped as
    they are costed), plan_only (True: only .plan(), .save_plan() and the
    reports, a deep pipeline's plan built as its stages are made, which
    takes less time and memory), mem_limit ("12GiB"), hw ("h100", or a profile's .json
    path), cache_dir.

    Raises InputError with the located diagnostic for a wrong model."""
    if (source is None) == (path is None):
        raise UsageError("shardc.compile takes source or path, one of the two", "ERR_USAGE")
    o = _options(mesh, defines, options)
    prog = ctypes.c_void_p()
    err = ctypes.c_void_p()
    try:
        if path is not None:
            st = _lib.shardc_compile_file(o, _b(os.fspath(path)), ctypes.byref(prog),
                                          ctypes.byref(err))
        else:
            text = source.encode() if isinstance(source, str) else bytes(source)
            st = _lib.shardc_compile_string(o, _b(filename or "<string>"), text, len(text),
                                            ctypes.byref(prog), ctypes.byref(err))
        _check(st, err, "compile")
    finally:
        _lib.shardc_options_free(o)
    return Program(prog.value)


class Program:
    """A compiled program: its renderings, its report and its plan."""

    def __init__(self, handle):
        self._h = handle

    def __del__(self):
        if getattr(self, "_h", None):
            _lib.shardc_program_free(self._h)
            self._h = None

    def emit(self, kind: str) -> str:
        """The program rendered as text: "ir", "train-ir", "sharded-ir",
        "stage-ir", "schedule", "loops", "fused-ir", "cuda", "explain", "report",
        "report-json"."""
        text = ctypes.c_void_p()
        n = ctypes.c_size_t()
        _call(_lib.shardc_program_emit, self._h, _b(kind), ctypes.byref(text), ctypes.byref(n),
              what="emit")
        try:
            return ctypes.string_at(text.value, n.value).decode("utf-8", "replace")
        finally:
            _lib.shardc_free(text.value)

    def report(self) -> Dict[str, Any]:
        """The per-rank report as a dict (`shardc --report json`)."""
        return json.loads(self.emit("report-json"))

    def times(self) -> Dict[str, float]:
        """The wall time in seconds of each step of the compilation, in
        order: "frontend", then each pass that ran by its name
        (`shardc --time-passes`); once a plan was made from the program
        (plan(), save_plan(), emit("schedule") or emit("loops")), the
        steps of the last one: "plan/report", "plan/kernels" (CUDA C and
        NVRTC), "plan/lowering", "plan/validation", "plan/loop-form",
        "plan/bytes"; with plan_only, "plan": the wall time the compile
        spent making a pipeline's plan (those steps among it)."""
        out = {"frontend": _lib.shardc_program_seconds(self._h, b"frontend")}
        for names in (_lib.shardc_pass_name, _lib.shardc_plan_step_name):
            i = 0
            while True:
                name = names(i)
                if name is None:
                    break
                s = _lib.shardc_program_seconds(self._h, name)
                if s >= 0:
                    out[name.decode()] = s
                i += 1
        s = _lib.shardc_program_seconds(self._h, b"plan")
        if s >= 0:
            out["plan"] = s
        return out

    def explain(self) -> str:
        """Why each value has its sharding and why each collective is there
        (`shardc --explain-sharding`)."""
        return self.emit("explain")

    def plan(self) -> "Plan":
        """The program's plan, to run or save."""
        h = ctypes.c_void_p()
        _call(_lib.shardc_program_plan, self._h, ctypes.byref(h), what="plan")
        return Plan(h.value, program=self)

    def save_plan(self, path: Union[str, os.PathLike]) -> None:
        """Writes the plan file (replaced whole, or left as it was on failure)."""
        _call(_lib.shardc_program_save_plan, self._h, _b(os.fspath(path)), what="save_plan")


class Plan:
    """A validated plan: what a Session runs. From Program.plan() or
    shardc.load_plan(path)."""

    def __init__(self, handle, program=None, path=None):
        self._h = handle
        self._program = program   # kept: a saved plan is written from it
        self._path = path

    def __del__(self):
        if getattr(self, "_h", None):
            _lib.shardc_plan_free(self._h)
            self._h = None

    def save(self, path: Union[str, os.PathLike]) -> None:
        """Writes the plan file."""
        if self._program is not None:
            self._program.save_plan(path)
        elif os.path.abspath(os.fspath(path)) != os.path.abspath(self._path):
            shutil.copyfile(self._path, path)

    def report(self) -> Dict[str, Any]:
        """The report the compiler stored in the plan, as a dict."""
        return json.loads(_lib.shardc_plan_report(self._h).decode())

    @property
    def mesh(self) -> Dict[str, int]:
        """{axis name: size}, in the mesh's order."""
        out = {}
        for i in range(_lib.shardc_plan_num_axes(self._h)):
            size = ctypes.c_longlong()
            name = _lib.shardc_plan_axis(self._h, i, ctypes.byref(size))
            out[name.decode()] = size.value
        return out

    @property
    def ranks(self) -> int:
        return _lib.shardc_plan_ranks(self._h)

    def tensors(self, kind: Optional[str] = None) -> Dict[str, Dict[str, Any]]:
        """Every named tensor: {name: {"kind", "dtype", "shape", "bytes"}}, kind
        one of "input", "param", "output", "state"; with kind, only those.
        Outputs are named apart from the rest (the language lets `output x`
        hand back a value where an input is also called x): where an output
        has another tensor's name, tensors() gives the other one under that
        name, and tensors("output") the output."""
        out: Dict[str, Dict[str, Any]] = {}
        for i in range(_lib.shardc_plan_num_tensors(self._h)):
            t = _capi.TensorInfo()
            _check(_lib.shardc_plan_tensor(self._h, i, ctypes.byref(t)), None, "tensor")
            name, k = t.name.decode(), t.kind.decode()
            if (kind is not None and k != kind) or (kind is None and k == "output" and name in out):
                continue
            out[name] = {"kind": k, "dtype": t.dtype.decode(),
                         "shape": tuple(t.dim[d] for d in range(t.rank)), "bytes": t.bytes}
        return out


def load_plan(path: Union[str, os.PathLike]) -> Plan:
    """Reads and validates a plan file (InputError for a corrupt or foreign one)."""
    h = ctypes.c_void_p()
    _call(_lib.shardc_plan_load, _b(os.fspath(path)), ctypes.byref(h), what="load_plan")
    return Plan(h.value, path=os.fspath(path))


def check_writable(path: Union[str, os.PathLike], folder: bool = False) -> None:
    """Raises shardc.IOError, saying why, when the library could not write
    path later: a file's folder (a symlink's target's) missing or not
    writable, path a folder or a missing name ending in '/'; with folder,
    a file where the folder or a folder on its way should be. For before a
    long run, whose save_params, save_outputs, save_checkpoint (folder) or
    save_plan would fail at its end. Nothing is made."""
    _call(_lib.shardc_check_writable, _b(os.fspath(path)), int(bool(folder)),
          what="check_writable")


# ---- running ----

_NUMPY_DTYPES = {"f32": "float32", "f16": "float16", "i32": "int32", "bool": "bool",
                 "bf16": "uint16"}


_mpi = None  # (rank, size) once MPI is up


def mpi_init() -> tuple:
    """Starts MPI in this process (a no-op when it runs already, or on a
    second call) and returns (rank, size) of MPI_COMM_WORLD: under
    `mpirun -np N python3 script.py`, each process one rank. A Session
    with comm "mpi" or "nccl" calls it; MPI is finalised at exit, after
    every session is freed. UsageError in a library built without MPI."""
    global _mpi
    if _mpi is None:
        rank, size = ctypes.c_int(), ctypes.c_int()
        _call(_lib.shardc_mpi_init, ctypes.byref(rank), ctypes.byref(size), what="mpi_init")
        _mpi = (rank.value, size.value)
        atexit.register(_mpi_finalize)
    return _mpi


def _mpi_finalize():
    for s in list(_live):  # MPI ends after the sessions that use it
        s.close()
    _lib.shardc_mpi_finalize()


_live = weakref.WeakSet()  # the open sessions with comm "mpi" or "nccl", closed at exit


class Session:
    """Runs a plan in this process: every rank a thread (comm "local"), or
    this process one rank of an MPI job ("mpi"; "nccl" with backend
    "cuda"), started as `mpirun -np RANKS python3 script.py`: MPI is
    initialised on the first such session (mpi_init) and finalised at
    exit; outputs, the loss and checkpoints are every process's.

    params, inputs: safetensors files; without them each param and input is
    made by its init from seed. Tensors bound with .bind() win over both."""

    def __init__(self, plan: Plan, backend: str = "cpu", comm: str = "local", seed: int = 0,
                 params: Union[str, os.PathLike, None] = None,
                 inputs: Union[str, os.PathLike, None] = None, init_missing: bool = False,
                 timeout_ms: int = 0, trace: bool = False, graph: bool = False,
                 checkpoint_keep: int = 0) -> None:
        self._plan = plan     # the session borrows it
        self._bound = {}      # name -> the object whose memory is bound, kept alive
        cfg = _capi.SessionConfig(backend=_b(backend), comm=_b(comm),
                                  params_file=_b(params and os.fspath(params)),
                                  inputs_file=_b(inputs and os.fspath(inputs)),
                                  seed=seed, timeout_ms=timeout_ms, trace=int(trace),
                                  graph=int(graph), checkpoint_keep=checkpoint_keep,
                                  init_missing=int(init_missing))
        h = ctypes.c_void_p()
        self._h = None
        if comm in ("mpi", "nccl"):
            mpi_init()
        _call(_lib.shardc_session_new, plan._h, ctypes.byref(cfg), ctypes.byref(h),
              what="Session")
        self._h = h.value
        if comm in ("mpi", "nccl"):
            _live.add(self)
        # bound tensors and outputs by name, each in its own namespace
        self._tensors = {n: t for n, t in plan.tensors().items() if t["kind"] != "output"}
        self._outputs = plan.tensors("output")

    def __del__(self):
        if getattr(self, "_h", None):
            _lib.shardc_session_free(self._h)
            self._h = None
        _live.discard(self)

    def close(self) -> None:
        """Frees the session now (also done when it is collected)."""
        self.__del__()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def bind(self, name: str, tensor: Any) -> int:
        """Binds the full tensor called name (an input, a param or a state)
        to tensor's memory, read in place, without a copy, whatever its
        strides (a transposed or sliced tensor too): a numpy array, or any
        object with __dlpack__ (torch, JAX, CuPy), of the plan's dtype and
        shape (bf16: a DLPack bfloat16, or numpy uint16 holding its bits).
        Host memory on either backend; CUDA memory with backend "cuda",
        where each rank copies its block on the GPU (the tensor never goes
        through the host). CUDA memory is read during run(): work queued
        on other streams that writes it must be finished first (e.g.
        torch.cuda.synchronize()). The object is kept until the name is
        bound again or the session ends. Inputs are read at every run;
        params and states at the next run only. Returns the address bound."""
        info = self._tensors.get(name)
        if info is None or info["kind"] not in ("input", "param", "state"):
            raise UsageError(f"the plan has no input, param or state called '{name}'",
                             "ERR_USAGE")
        view, keep = self._view(name, info, tensor)
        _call(_lib.shardc_session_bind_view, self._h, _b(name), ctypes.byref(view), what="bind")
        self._bound[name] = keep
        return view.data or 0

    def _view(self, name, info, tensor):
        """(shardc_tensor_view of tensor, what to keep alive), its dtype and
        shape checked against the plan's (the library checks them again,
        and the device memory). numpy arrays directly, anything else by
        DLPack."""
        shape, want = tuple(info["shape"]), info["dtype"]
        try:
            import numpy as np
        except ImportError:
            np = None
        if np is not None and isinstance(tensor, np.ndarray):
            names = {"float32": "f32", "float16": "f16", "int32": "i32", "bool": "bool",
                     "uint16": "u16"}
            got, addr = names.get(tensor.dtype.name, tensor.dtype.name), tensor.ctypes.data
            if any(st % tensor.itemsize for st in tensor.strides):
                raise UsageError(f"'{name}' has strides {tensor.strides} bytes, not whole "
                                 f"elements of {tensor.itemsize} bytes", "ERR_USAGE")
            strides = tuple(st // tensor.itemsize for st in tensor.strides)
            device, keep, tshape = (1, 0), tensor, tensor.shape
        elif hasattr(tensor, "__dlpack__"):
            from ._dlpack import View
            try:
                v = View(tensor)
            except (TypeError, BufferError, RuntimeError) as e:
                raise UsageError(f"'{name}': {e}", "ERR_USAGE") from None
            got, addr, strides = v.dtype, v.data, v.strides
            device, keep, tshape = v.device, (tensor, v), v.shape
        else:
            raise UsageError(f"'{name}': bind takes a numpy array or a DLPack tensor, not "
                             f"{type(tensor).__name__}", "ERR_USAGE")
        if device[0] not in (1, 2, 3):
            raise UsageError(f"'{name}' is on a device of DLPack type {device[0]}: shardc "
                             "reads host memory and CUDA memory", "ERR_USAGE")
        if tuple(tshape) != shape:
            raise UsageError(f"'{name}' has shape {list(tshape)}, the plan's is {list(shape)}",
                             "ERR_USAGE")
        if got != want and not (want == "bf16" and got == "u16"):
            raise UsageError(f"'{name}' is {got}, the plan's is {want}", "ERR_USAGE")
        rank = len(shape)
        dims = (ctypes.c_longlong * max(rank, 1))(*shape)
        steps = (ctypes.c_longlong * max(rank, 1))(*strides)
        view = _capi.TensorView(device=device[0], device_id=device[1], data=addr,
                                dtype=_b(want), rank=rank, dim=dims, strides=steps)
        return view, (keep, dims, steps)

    def run(self) -> None:
        """Runs one step (forward, and for a training plan the backward and
        the update)."""
        _call(_lib.shardc_session_run, self._h, what="run")

    def step(self, n: int = 1) -> Optional[float]:
        """Runs n steps; returns the loss of the last one (None without a loss)."""
        for _ in range(n):
            self.run()
        return self.loss()

    @property
    def steps(self) -> int:
        """The steps run, plus those of a resumed checkpoint."""
        return _lib.shardc_session_step(self._h)

    def loss(self) -> Optional[float]:
        """The last step's loss, or None for a plan without one."""
        v = ctypes.c_double()
        err = ctypes.c_void_p()
        st = _lib.shardc_session_loss(self._h, ctypes.byref(v), ctypes.byref(err))
        if st == 2:  # no loss, or no step yet
            _check(0, err)
            return None
        _check(st, err, "loss")
        return v.value

    def output(self, name: str, out: Any = None) -> "Any":
        """The full output called name after a run. Without out, a new numpy
        array holding it (numpy arrays speak DLPack, so torch.from_dlpack
        takes it without another copy; bf16 comes as uint16 holding its
        bits). With out, a numpy array or any DLPack tensor of the output's
        dtype and shape, on the host or a CUDA device, any strides that do
        not overlap: the output is written into it in place, and out is
        returned."""
        info = self._outputs.get(name)
        if info is None:
            raise UsageError(f"the plan has no output called '{name}'", "ERR_USAGE")
        if out is None:
            import numpy as np
            out = np.empty(tuple(info["shape"]), dtype=_NUMPY_DTYPES[info["dtype"]])
        view, keep = self._view(name, info, out)
        _call(_lib.shardc_session_output_into, self._h, _b(name), ctypes.byref(view),
              what="output")
        del keep
        return out

    def save_outputs(self, path: Union[str, os.PathLike]) -> None:
        _call(_lib.shardc_session_save_outputs, self._h, _b(os.fspath(path)), what="save_outputs")

    def save_params(self, path: Union[str, os.PathLike]) -> None:
        """Every param and state, full shape, as one safetensors file."""
        _call(_lib.shardc_session_save_params, self._h, _b(os.fspath(path)), what="save_params")

    def save_checkpoint(self, folder: Union[str, os.PathLike]) -> None:
        """A sharded checkpoint into folder (a new step folder, then the
        pointer `latest`; README's "Checkpoints")."""
        _call(_lib.shardc_session_save_checkpoint, self._h, _b(os.fspath(folder)),
              what="save_checkpoint")

    def resume(self, folder: Union[str, os.PathLike]) -> None:
        """Resumes from the checkpoint folder names (any mesh's)."""
        _call(_lib.shardc_session_resume, self._h, _b(os.fspath(folder)), what="resume")
