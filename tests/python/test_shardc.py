"""The Python package (python/shardc) over this build's libshardc: run by
ctest as python/pytest (tests/python/run.sh), with SHARDC_LIBRARY,
SHARDC and SHARDRUN set to the build's library and programs."""
import json
import ctypes
import os
import subprocess
import sys

import numpy as np
import pytest

import shardc

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
MLP = os.path.join(ROOT, "examples", "mlp.sh")
TRANSFORMER = os.path.join(ROOT, "examples", "transformer.sh")
SHARDC = os.environ.get("SHARDC", os.path.join(ROOT, "build", "shardc"))
SHARDRUN = os.environ.get("SHARDRUN", os.path.join(ROOT, "build", "shardrun"))
sys.path.insert(0, os.path.join(ROOT, "tests", "tools"))
from st_io import st_write  # noqa: E402


def run(*cmd):
    return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout


def test_compile_error_is_located():
    with pytest.raises(shardc.InputError) as e:
        shardc.compile(source="input x : f32[4]\ny = x + z\noutput y\n", filename="m.sh")
    lines = str(e.value).splitlines()
    assert lines[0] == "m.sh:2:9: error: unknown name 'z'"
    assert lines[1] == "y = x + z" and lines[2] == "        ^"
    assert e.value.status == "ERR_INPUT" and isinstance(e.value, shardc.Error)


def test_bad_option_and_source():
    with pytest.raises(shardc.UsageError):
        shardc.compile(path=MLP, nonsense=1)
    with pytest.raises(shardc.InputError, match="--mesh gives 3 sizes"):
        shardc.compile(path=MLP, mesh="2x2x2")
    with pytest.raises(shardc.IOError):
        shardc.compile(path="/nonexistent/model.sh")
    with pytest.raises(shardc.UsageError):
        shardc.compile()


def test_report_is_the_cli_json():
    prog = shardc.compile(path=TRANSFORMER, mesh=(2, 2), defines={"L": 2, "S": 32},
                          arch="none", zero=1, hw="a100")
    cli = json.loads(run(SHARDC, TRANSFORMER, "--mesh", "2x2", "-D", "L=2", "-D", "S=32",
                         "--arch", "none", "--zero", "1", "--hw", "a100", "--report", "json"))
    assert prog.report() == cli
    assert "all_gather" in prog.explain() or "reduce_scatter" in prog.explain()
    assert prog.emit("ir").startswith("mesh dp = 2, tp = 2")


def test_times_are_the_passes_that_ran():
    prog = shardc.compile(path=MLP, mesh="2x2", arch="none")
    times = prog.times()
    passes = ["frontend", "autodiff", "simplify", "input-init", "propagate", "partition",
              "pipeline-split", "bucket", "verify", "memplan"]  # no kernels: no fuse
    assert list(times) == passes
    assert all(t >= 0 for t in times.values())
    prog.plan()  # then the plan's steps too
    times = prog.times()
    assert list(times) == passes + ["plan/report", "plan/kernels", "plan/lowering",
                                    "plan/validation", "plan/loop-form", "plan/bytes"]
    assert all(t >= 0 for t in times.values())


def test_plan_save_load(tmp_path):
    prog = shardc.compile(path=MLP, mesh="2x2", arch="none")
    plan = prog.plan()
    assert plan.mesh == {"dp": 2, "tp": 2} and plan.ranks == 4
    t = plan.tensors()
    assert t["x"] == {"kind": "input", "dtype": "f32", "shape": (64, 1024), "bytes": 262144}
    path = tmp_path / "mlp.plan"
    plan.save(path)
    back = shardc.load_plan(path)
    assert back.report() == plan.report() and back.tensors() == t
    back.save(tmp_path / "copy.plan")
    assert (tmp_path / "copy.plan").read_bytes() == path.read_bytes()
    path.write_bytes(path.read_bytes()[:100])
    with pytest.raises(shardc.InputError, match="truncated"):
        shardc.load_plan(path)


def test_check_writable_before_a_run(tmp_path):
    """Where a run's results will go, checked before it: a missing
    folder, through a chain of symlinks too, and a file in a checkpoint
    folder's way raise shardc.IOError saying why; nothing is made."""
    shardc.check_writable(tmp_path / "p.st")
    shardc.check_writable(tmp_path / "a" / "b", folder=True)
    (tmp_path / "one").symlink_to(tmp_path / "none" / "p.st")
    (tmp_path / "two").symlink_to("one")
    with pytest.raises(shardc.IOError, match=r"two cannot be written: the folder .*none does not exist"):
        shardc.check_writable(tmp_path / "two")
    (tmp_path / "f").write_text("x")
    with pytest.raises(shardc.IOError, match=r"f/ckpt cannot be written: .*f is not a folder"):
        shardc.check_writable(tmp_path / "f" / "ckpt", folder=True)
    with pytest.raises(shardc.IOError, match="is a folder"):
        shardc.check_writable(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f", "one", "two"]


def test_training_from_numpy_matches_the_cli_to_the_bit(tmp_path):
    """mlp.sh on 2x2, three steps from the same inputs (numpy bound here,
    a safetensors file for shardrun) and params from the seed: every
    param after the steps, byte for byte."""
    rng = np.random.default_rng(7)
    x = rng.standard_normal((64, 1024), dtype=np.float32)
    y = rng.standard_normal((64, 1024), dtype=np.float32)
    st_write(str(tmp_path / "in.st"), [("x", "F32", [64, 1024], x.ravel().tolist()),
                                       ("y", "F32", [64, 1024], y.ravel().tolist())])
    prog = shardc.compile(path=MLP, mesh="2x2", arch="none")
    prog.save_plan(tmp_path / "mlp.plan")
    run(SHARDRUN, str(tmp_path / "mlp.plan"), "--quiet", "--steps", "3", "--seed", "5",
        "--inputs", str(tmp_path / "in.st"), "--save-params", str(tmp_path / "cli.st"))
    with shardc.Session(prog.plan(), seed=5) as s:
        s.bind("x", x)
        s.bind("y", y)
        losses = [s.step() for _ in range(3)]
        assert s.steps == 3 and losses[2] < losses[0]
        s.save_params(tmp_path / "py.st")
    assert (tmp_path / "py.st").read_bytes() == (tmp_path / "cli.st").read_bytes()


def test_bind_checks_shape_dtype_and_layout():
    s = shardc.Session(shardc.compile(path=MLP, mesh="1x1", arch="none").plan())
    with pytest.raises(shardc.UsageError, match=r"shape \[64, 10\], the plan's is \[64, 1024\]"):
        s.bind("x", np.zeros((64, 10), np.float32))
    with pytest.raises(shardc.UsageError, match="is f16, the plan's is f32"):
        s.bind("x", np.zeros((64, 1024), np.float16))
    with pytest.raises(shardc.UsageError, match="no input, param or state called 'nope'"):
        s.bind("nope", np.zeros(3, np.float32))
    with pytest.raises(shardc.UsageError, match="numpy array or a DLPack tensor"):
        s.bind("x", [[0.0] * 1024] * 64)


def test_torch_tensors_by_dlpack_without_a_copy():
    torch = pytest.importorskip("torch")
    prog = shardc.compile(path=MLP, mesh="2x1", arch="none")
    s = shardc.Session(prog.plan(), seed=1)
    x = torch.randn(64, 1024)
    y = torch.randn(64, 1024)
    assert s.bind("x", x) == x.data_ptr()     # the tensor's own memory, no copy
    assert s.bind("y", y) == y.data_ptr()
    s.run()
    out = torch.from_dlpack(s.output("out"))
    assert out.shape == (64, 1024) and out.dtype == torch.float32
    # the same run from numpy copies of the same values: the same output
    s2 = shardc.Session(prog.plan(), seed=1)
    s2.bind("x", x.numpy().copy())
    s2.bind("y", y.numpy().copy())
    s2.run()
    assert np.array_equal(s2.output("out"), out.numpy())
    # into a torch tensor given: written in place, at its own address
    into = torch.empty(64, 1024)
    assert s.output("out", out=into) is into and torch.equal(into, out)


def test_strided_tensors_bound_and_written_in_place():
    """Views that are not row-major (a transpose, every other column, a
    reversed numpy axis) are read where they are, each rank its block of
    them, on 2x2 (x split by rows over dp): the same output, to the bit,
    as their row-major copies; outputs are written into strided views."""
    torch = pytest.importorskip("torch")
    plan = shardc.compile(path=MLP, mesh="2x2", arch="none").plan()
    x = torch.randn(1024, 64).t()                  # strides (1, 64)
    y = torch.randn(64, 2048)[:, ::2]              # strides (2048, 2)
    assert not x.is_contiguous() and not y.is_contiguous()
    s = shardc.Session(plan, seed=2)
    assert s.bind("x", x) == x.data_ptr() and s.bind("y", y) == y.data_ptr()
    s.run()
    ref = shardc.Session(plan, seed=2)
    ref.bind("x", x.contiguous())
    ref.bind("y", y.contiguous())
    ref.run()
    want = ref.output("out")
    assert np.array_equal(s.output("out"), want) and s.loss() == ref.loss()
    # a reversed numpy axis (negative strides) reads the same values: the
    # second step (from the trained params) as the reference's
    xr = np.ascontiguousarray(x.numpy()[::-1])[::-1]
    assert xr.strides[0] < 0
    s.bind("x", xr)
    s.run()
    ref.run()
    want = ref.output("out")
    assert np.array_equal(s.output("out"), want)
    # written into a transposed torch tensor and into every other column
    t = torch.empty(1024, 64).t()
    cols = torch.zeros(64, 2048)
    s.output("out", out=t)
    s.output("out", out=cols[:, 1::2])
    assert np.array_equal(t.numpy(), want) and np.array_equal(cols[:, 1::2].numpy(), want)
    assert not cols[:, 0::2].any()                 # nothing written beside the view
    # a view that repeats elements cannot be written
    rep = np.lib.stride_tricks.as_strided(np.zeros(1024, np.float32), (64, 1024), (0, 4))
    with pytest.raises(shardc.UsageError, match="overlapping elements"):
        s.output("out", out=rep)
    with pytest.raises(shardc.UsageError, match="'out' is f16, the plan's is f32"):
        s.output("out", out=np.zeros((64, 1024), np.float16))


def test_cuda_memory_needs_the_cuda_backend():
    """A CUDA view bound to a cpu session is refused before anything reads
    it (the address is never touched), through the C API as a host
    application would call it."""
    from shardc import _capi
    s = shardc.Session(shardc.compile(path=MLP, mesh="1x1", arch="none").plan())
    dims = (ctypes.c_longlong * 2)(64, 1024)
    v = _capi.TensorView(device=2, device_id=0, data=0x1000, dtype=b"f32", rank=2, dim=dims,
                         strides=None)
    err = ctypes.c_void_p()
    rc = shardc._lib.shardc_session_bind_view(s._h, b"x", ctypes.byref(v), ctypes.byref(err))
    msg = ctypes.string_at(err.value).decode()
    shardc._lib.shardc_free(err)
    assert rc == 2 and "bound in CUDA memory (device 0)" in msg and "cpu backend" in msg
    with pytest.raises(shardc.UsageError, match="no step has run"):
        s.output("out")


def test_an_output_named_as_an_input():
    """`output x` hands back the value x names at the end, where an input
    is also called x (LANGUAGE.md §12: separate namespaces): the input is
    bound and the output read under the one name."""
    src = "mesh dp\ninput x : f32[4, 2] shard(dp, _)\nx = x * 2.0 + 1.0\noutput x\n"
    plan = shardc.compile(source=src, mesh="2", arch="none").plan()
    assert plan.tensors()["x"]["kind"] == "input"
    assert plan.tensors("output") == {"x": {"kind": "output", "dtype": "f32", "shape": (4, 2),
                                            "bytes": 32}}
    assert list(plan.tensors("input")) == ["x"] and plan.tensors("param") == {}
    s = shardc.Session(plan)
    x = np.arange(8, dtype=np.float32).reshape(4, 2)
    s.bind("x", x)
    s.run()
    assert np.array_equal(s.output("x"), x * 2 + 1)


@pytest.mark.skipif(not os.environ.get("SHARDC_FAKECUDA"),
                    reason="no pretend CUDA driver (SHARDC_FAKECUDA: tests/fakecuda's build folder)")
def test_cuda_tensors_on_the_pretend_driver():
    """The CUDA path (DLPack tensors in CUDA memory bound in place, outputs
    written into CUDA memory, eagerly and by graphs) on tests/fakecuda's
    driver, in a process of its own that finds it first
    (fake_cuda_session.py says what it checks)."""
    env = dict(os.environ, LD_LIBRARY_PATH=os.environ["SHARDC_FAKECUDA"],
               PYTHONPATH=os.path.join(ROOT, "python"))
    p = subprocess.run([sys.executable, os.path.join(ROOT, "tests", "python", "fake_cuda_session.py")], env=env,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert p.returncode == 0, p.stdout


def test_checkpoint_resume_continues_the_run(tmp_path):
    prog = shardc.compile(path=MLP, mesh="2x2", arch="none")
    plan = prog.plan()
    straight = shardc.Session(plan, seed=3)
    want = straight.step(3)
    first = shardc.Session(plan, seed=3)
    first.step(2)
    first.save_checkpoint(tmp_path / "ckpt")
    again = shardc.Session(plan, seed=3)
    again.resume(tmp_path / "ckpt")
    assert again.step(1) == want and again.steps == 3


def test_the_strategy_comparison_example(tmp_path):
    """examples/compare_strategies.py: three strategies' reports in a table
    and an SVG, each row the figures of its compile's report."""
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"))
    out = subprocess.run([sys.executable, os.path.join(ROOT, "examples", "compare_strategies.py"),
                          str(tmp_path / "s.svg")], check=True, capture_output=True, text=True,
                         cwd=ROOT, env=env).stdout.splitlines()
    assert out[0].split() == ["strategy", "step", "ms", "peak", "GiB", "sent", "GB", "tokens/s"]
    assert [l.split("  ")[0] for l in out[1:4]] == ["data parallel (8x1)",
                                                    "tensor parallel (1x8)", "2x4, ZeRO-1"]
    svg = (tmp_path / "s.svg").read_text()
    assert svg.startswith("<svg") and svg.count("<rect") == 3
    rep = shardc.compile(path=os.path.join(ROOT, "examples", "transformer.sh"), mesh="8x1",
                         arch="none", hw="h100",
                         defines={"B": 32, "S": 512, "D": 1024, "NH": 16, "V": 32768,
                                  "L": 8}).report()
    assert float(out[1].split()[-4]) == round(rep["estimate"]["step_ms"], 1)


def test_bf16_params_by_dlpack_or_their_bits():
    """A bf16 param bound as a torch bfloat16 tensor (DLPack's bfloat code,
    at its own address) or as numpy uint16 holding the same bits: the same
    step, to the bit."""
    torch = pytest.importorskip("torch")
    plan = shardc.compile(path=os.path.join(ROOT, "tests", "models", "mlp_bf16.sh"), mesh="2x2",
                          arch="none").plan()
    assert plan.tensors()["w1"]["dtype"] == "bf16"
    w = (0.1 * torch.randn(32, 64)).to(torch.bfloat16)
    a = shardc.Session(plan, seed=0)
    assert a.bind("w1", w) == w.data_ptr()
    b = shardc.Session(plan, seed=0)
    b.bind("w1", w.view(torch.int16).numpy().view(np.uint16))
    with pytest.raises(shardc.UsageError, match="is f32, the plan's is bf16"):
        b.bind("w1", np.zeros((32, 64), np.float32))
    assert a.step() == b.step()


def test_keep_gathered_is_the_cli_flag():
    sp = os.path.join(ROOT, "tests", "lit", "partition",
                      "sequence-parallel-weight-grads-reduce-scatter.sh")
    keep = shardc.compile(path=sp, mesh="1x4", arch="none", keep_gathered=True).report()
    cli = json.loads(run(SHARDC, sp, "--mesh", "1x4", "--arch", "none", "--keep-gathered",
                         "--report", "json"))
    assert keep == cli
    again = shardc.compile(path=sp, mesh="1x4", arch="none").report()
    # the backward reads the forward's gathered input: 18438 bytes, not 27654
    assert keep["stages"][0]["bytes_sent"] == 18438
    assert again["stages"][0]["bytes_sent"] == 27654


def test_unroll_is_the_cli_flag(tmp_path):
    # a pipeline's plan in loop form, and unrolled: the same step, bit for
    # bit, from a plan less than half the size
    pp = os.path.join(ROOT, "examples", "pipeline.sh")
    small = {"L": 4, "B": 16, "S": 16, "D": 32, "NH": 2, "V": 64}
    plans = []
    for unroll in (False, True):
        prog = shardc.compile(path=pp, mesh="1x2x1", defines=small, arch="none",
                              microbatches=8, unroll=unroll)
        path = str(tmp_path / ("u.plan" if unroll else "l.plan"))
        prog.save_plan(path)
        plans.append(path)
    assert os.path.getsize(plans[0]) * 2 < os.path.getsize(plans[1])
    losses = [shardc.Session(shardc.load_plan(p), seed=1).step() for p in plans]
    assert losses[0] == losses[1]


def test_f32_matmul_is_the_cli_flag():
    # f32 matmuls as bf16 parts: the CLI's report, the f32 product's FLOPs
    # and a larger peak (the parts); a mode of neither is a usage error
    mlp = os.path.join(ROOT, "examples", "mlp.sh")
    parts = shardc.compile(path=mlp, mesh="2x2", arch="none", f32_matmul="bf16x3").report()
    cli = json.loads(run(SHARDC, mlp, "--mesh", "2x2", "--arch", "none", "--f32-matmul",
                         "bf16x3", "--report", "json"))
    assert parts == cli
    f32 = shardc.compile(path=mlp, mesh="2x2", arch="none", f32_matmul="f32").report()
    assert parts["stages"][0]["flops"] == f32["stages"][0]["flops"]
    assert parts["stages"][0]["peak_bytes"] > f32["stages"][0]["peak_bytes"]
    with pytest.raises(shardc.UsageError, match="the modes are f32"):
        shardc.compile(path=mlp, mesh="2x2", arch="none", f32_matmul="tf32")


MPI_SCRIPT = """
import sys
import shardc
rank, size = shardc.mpi_init()
plan = shardc.load_plan(sys.argv[1])
s = shardc.Session(plan, comm="mpi", seed=3)
s.run()
s.run()
s.save_params(sys.argv[2])  # every rank calls it; one writes
with open(sys.argv[3] + str(rank), "w") as f:  # stdout would interleave the ranks' lines
    f.write("%d %d %r" % (rank, size, s.loss()))
"""


def test_mpi_ranks_are_python_processes(tmp_path):
    mpirun = os.environ.get("SHARDC_MPIRUN")
    if not mpirun:
        pytest.skip("no mpirun in this build (SHARDC_MPIRUN)")
    plan = tmp_path / "mlp.plan"
    shardc.compile(path=MLP, mesh="2x2", arch="none").plan().save(plan)
    script = tmp_path / "rank.py"
    script.write_text(MPI_SCRIPT)
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"))
    flags = os.environ.get("SHARDC_MPIRUN_FLAGS", "").split()
    out = subprocess.run([mpirun, *flags, "-np", "4", sys.executable, str(script), str(plan),
                          str(tmp_path / "mpi.st"), str(tmp_path / "rank")], env=env,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    lines = [(tmp_path / f"rank{r}").read_text() for r in range(4)]
    assert [l.split()[:2] for l in lines] == [[str(r), "4"] for r in range(4)]
    # the same loss on every rank, and the local session's to the bit
    local = shardc.Session(shardc.load_plan(plan), seed=3)
    local.run()
    local.run()
    local.save_params(tmp_path / "local.st")
    assert {l.split()[2] for l in lines} == {repr(local.loss())}
    assert (tmp_path / "mpi.st").read_bytes() == (tmp_path / "local.st").read_bytes()


def test_explain_off_changes_nothing_else():
    # without the reasons (the passes' text), every example on every mesh
    # compiles to the same stage programs and report; only explain() is gone
    models = sorted(f for f in os.listdir(os.path.join(ROOT, "examples")) if f.endswith(".sh"))
    assert len(models) >= 6
    for name in models:
        path = os.path.join(ROOT, "examples", name)
        axes = shardc.compile(path=path, arch="none").emit("ir").split("\n")[0].count("=")
        compiled = 0
        for mesh in ((2, 2, 1), (1, 2, 2), (1, 4, 1), (4, 1, 1)):
            if compiled == 2:
                break
            m = mesh[:axes]
            try:
                on = shardc.compile(path=path, mesh=m, arch="none")
            except shardc.InputError:  # a batch these sizes do not divide
                continue
            compiled += 1
            off = shardc.compile(path=path, mesh=m, arch="none", explain=False)
            assert off.emit("stage-ir") == on.emit("stage-ir"), (name, m)
            assert off.report() == on.report(), (name, m)
            assert "collectives" in on.explain()
            with pytest.raises(shardc.UsageError, match="without its explanation"):
                off.explain()
        assert compiled >= 2, name


def test_report_only_is_the_report_alone():
    pipe = os.path.join(ROOT, "examples", "pipeline.sh")
    opts = dict(mesh="1x2x1", defines={"L": 4, "B": 48}, microbatches=6, arch="none")
    whole = shardc.compile(path=pipe, **opts)
    alone = shardc.compile(path=pipe, report_only=True, **opts)
    assert alone.emit("report-json") == whole.emit("report-json")
    assert alone.emit("report") == whole.emit("report")
    with pytest.raises(shardc.UsageError, match="compilation was for its report alone"):
        alone.emit("stage-ir")


def test_plan_only_is_the_plan_alone(tmp_path):
    pipe = os.path.join(ROOT, "examples", "pipeline.sh")
    opts = dict(mesh="1x2x1", defines={"L": 4, "B": 48}, microbatches=6, arch="none")
    whole = shardc.compile(path=pipe, **opts)
    alone = shardc.compile(path=pipe, plan_only=True, **opts)
    whole.save_plan(tmp_path / "whole.plan")
    alone.save_plan(tmp_path / "alone.plan")
    assert (tmp_path / "alone.plan").read_bytes() == (tmp_path / "whole.plan").read_bytes()
    assert alone.times()["plan"] > 0 and "plan" not in whole.times()
    assert alone.emit("report-json") == whole.emit("report-json")
    with pytest.raises(shardc.UsageError, match="compilation was for its plan alone"):
        alone.emit("stage-ir")
