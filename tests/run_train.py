#!/usr/bin/env python3
"""run_train.py MODEL MESH COMM DATA STEPS [options]: the semantic test of
training one model on one mesh (DESIGN.md §7). Compiles MODEL (it has a
`train` line) for MESH and for the unsharded mesh (every axis of size 1),
runs STEPS training steps of each on the same batch, the sharded one over
COMM (local: threads; mpi: mpirun, one process per rank), from the params
and inputs in DATA (made by tests/oracle/oracle.py --train STEPS), and
compares
  1. the loss of every step with the unsharded run's and with PyTorch's
     (the "loss" of DATA/train.safetensors);
  2. the params and optimizer states after the last step with the
     unsharded run's, and the params with PyTorch's (DATA/train.safetensors).
Options change the sharded run or the reference:
  --zero K            the sharded run's `train` line ends in `zero K over dp`
                      (the unsharded run, the reference, does not)
  --clip C            both runs' optimizers get the option `clip = C` (DATA
                      made with oracle.py --clip C)
  --schedule-lr W,D,N,M  both runs' optimizers get `warmup = W, decay = D,
                      steps = N, min_lr = M` (DATA made with oracle.py
                      --schedule-lr W,D,N,M)
  --schedule S        the sharded run's `pipeline` line has schedule S
                      (gpipe, 1f1b, interleaved(V))
  --microbatches N    the sharded run's `pipeline` line has N microbatches
  --reference MODEL   the unsharded run is of MODEL instead (a pipelined
                      model against the same model without its pipeline);
                      `unpipelined` makes that model from MODEL: its
                      `repeat ... over AXIS` without `over AXIS`, no
                      `pipeline` line
  --pipelined M,S     the sharded run's model is MODEL pipelined: its mesh
                      gets a last axis, pp (MESH names its size last), its
                      first `repeat` runs `over pp`, and it gets the line
                      `pipeline microbatches M schedule S`; the reference is
                      MODEL as written, on the mesh of ones without pp
  --reference-mesh M  the reference's mesh (default: MESH's mesh of ones)
  --define NAME=VALUE -D NAME=VALUE for both compilations; must match the
                      constants DATA was made with (repeatable)
  --exact             the sharded run is compared with the unsharded one with
                      no tolerance (the comparisons with PyTorch keep theirs)
  --f32-matmul MODE   the sharded run is compiled with --f32-matmul MODE
                      (bf16x3: f32 matmuls as products of bf16 parts), held
                      to f32's tolerances (the reference keeps f32's)
  --against-local     (COMM mpi) the sharded plan runs under --comm local too,
                      and the MPI run's losses, params and states must equal
                      its to the bit
A mismatch prints the step (losses) or the tensor (st_compare), both values
and the error. Tools come from the environment: SHARDC, SHARDRUN,
ST_COMPARE, MPIRUN (with MPIRUN_FLAGS). Exit 0: all agree; 1: a mismatch or
a tool failed; 2: bad usage.

Tolerances, |got - want| <= atol + rtol |want|, per optimizer: about 10x
the worst error measured over all of tests/CMakeLists.txt's train/* (5
steps; meshes 2x2, 4x1, 1x2, local and mpi, ZeRO 1-3 on 4x1; for
pipeline.sh its meshes and schedules). Params and states: atol is 10x the
worst absolute error and rtol a nominal 1e-5, since the worst relative
errors are those of elements near 0. The f32 rows were set at the
examples' own shapes and measured again at the smaller ones the tests now
use (SHARDC_TRAIN_SHAPE_*): each error at least 5x under its tolerance.
  sgd, mlp.sh at B=64, D=128, H=512 (lr 0.01; the loss falls 1.4101 ->
  1.3975, 3e-3 a step; the params move by 6e-5 on average, 6e-4 at most):
    losses: measured rel 7.1e-7 (unsharded: one print quantum, 4x1
      with ZeRO 2), 4.1e-7 (PyTorch); shardrun prints 6 decimals, a
      quantum of 7e-7 rel: rtol 5e-6
    params: measured abs 1.5e-8 (unsharded: f32 sums in another order),
      6e-8 (PyTorch: 2 ulps of w1): atol 1.5e-7 and 6e-7
  adamw, transformer.sh and pipeline.sh at B=8, S=32, D=128, V=256, L=4
  (L=8 for interleaved(2) on 1x4x1) (lr 3e-4; the loss falls 12.14 ->
  7.49, 12.01 -> 6.45 with L=8; the params move by about 1e-3):
    losses: measured rel 1.4e-7 (unsharded), 1.3e-7 (PyTorch): one print
      quantum (1e-6 over the loss, 1.6e-7 at 6.45): rtol 1e-6
    params: measured abs 2.8e-5 (unsharded), 4.2e-5 (PyTorch), both with
      L=8 (layers.*.mlp.w1, w2; 5.5e-6 and 6.6e-6 with L=4): atol 5e-4
      and 8e-4. AdamW's first steps move each weight by about lr * sign(g)
      whatever the size of g, so a weight whose gradient is near 0 (where
      f32 rounding decides its sign) may differ by up to 2 lr = 6e-4 a
      step: the measured errors show a little of that, far from the bound
      2 lr STEPS = 3e-3. These atols miss a missing weight decay (it moves
      the params by 6e-4 at most here); the losses (9.5e-5 rel) and the
      moments (m at least 1.6x, v 10x their atols) see it (tried: the
      model with wd = 0 against this oracle).
    m (|m| 2e-4 .. 2e-2): measured abs 1.9e-7 (unsharded), 1.4e-7
      (PyTorch), but on an AVX2-only machine (AMD EPYC; OpenBLAS's
      Haswell kernels) the unsharded run itself flips one weight of
      layers.0.mlp.w1 with L=8 (2.0e-4 from the pipelined run, which is
      within 3.2e-6 of PyTorch there) and its m of layers.0.mlp.w2
      differs by 1.36e-6 for it: atol 2.5e-6 for both
    v (|v| 2e-7 .. 1e-3): measured abs 2.8e-9 (unsharded), 3.7e-9
      (PyTorch): atol 3e-8 and 1e-7
    opt.step (against the unsharded run; the oracle does not write it):
      measured 0, m's atol
  bf16 params through f32 masters, tests/models/mlp_bf16.sh (adamw, lr
  1e-3, eps 1e-3: each master moves by about 5e-3 in 5 steps) and
  mlp_bf16_momentum.sh (sgd, lr 0.05, momentum 0.9: by 5e-3 on average,
  4e-2 at most), on meshes 1x1, 2x2 and 4x1 with ZeRO 1-3. The forward
  and backward round every op to bf16 (8 significant bits), and a
  sharded contraction sums bf16 partial results, so the unsharded run
  and PyTorch (also bf16 per op) differ from the sharded one by bf16
  rounding noise, as PyTorch's own bf16 loss differs from float64's on
  these params (3.3e-4 rel):
    losses: measured rel 4.2e-4 (unsharded), 4.0e-4 (PyTorch): rtol 2e-3
    masters (f32): adamw measured abs 1.6e-4 (unsharded), 3.6e-4
      (PyTorch): atol 5e-4 and 1e-3; momentum 1.0e-4 and 1.5e-4: atol
      3e-4 and 5e-4. AdamW's masters sit closer to their moves than
      the f32 models' do, as near-zero bf16 gradients flip sign; a
      missing weight decay (3.5e-4 at most here) hides under them.
    params (bf16): the master's noise, plus one bf16 ulp where it
      straddles a rounding boundary (measured 1.95e-3 = 1 ulp at 0.3):
      rtol 7.9e-3 (2^-7, an ulp relative to the value) and the master's
      atol
    m, v: measured abs 6.2e-5, 9.2e-5 (m; |m| up to 1e-2) and 3.1e-6
      (v): atol 3e-4 and 1e-5; momentum buffer measured 6.6e-4
      (unsharded), 8.4e-4 (PyTorch; up to 0.2): atol 3e-3
  bf16 layers in a pipeline, tests/models/mlp_bf16_pp.sh (mlp_bf16.sh's
  adamw on 4 residual layers over pp, 4 microbatches; the loss falls
  5.78 -> 3.29 and each master moves by 4.7e-3), on 1x2x1, 2x2x1,
  2x2x2 and 1x4x1 with 1f1b, gpipe and interleaved(2), and 2x2x1 with
  ZeRO 1-3 (the suite runs some of these), against the unpipelined model
  (--reference unpipelined) and PyTorch. The gradients of the 4
  microbatches are summed in bf16, so the pipelined run's noise is bf16's
  on gradients 4 layers deep (the unpipelined run and PyTorch differ as
  much: masters 1.4e-3), which AdamW turns into moves of lr whatever the
  gradient's size:
    losses: measured rel 1.8e-3 (unpipelined), 2.2e-3 (PyTorch): rtol 5e-3
    masters: measured abs 2.0e-3 and 2.5e-3: atol 4e-3 and 5e-3
    params: as for mlp_bf16.sh, with these atols
    m (|m| up to 0.16), v (up to 0.04): measured abs 8.8e-4 and 3.8e-4:
      atol 2e-3 and 1e-3
  These catch a master made from elsewhere (the seed's are 0.02 in size,
  the params 0.2) or a step not taken, not noise-sized errors: those are
  the --exact tests' (one microbatch, no dp or tp: the unpipelined run's
  arithmetic, so every loss, param and state is equal to the bit).
  f16 params through f32 masters, tests/models/mlp_f16.sh (mlp_bf16.sh's
  adamw, its data rounded to f16), on the same meshes. f16 keeps 11
  significant bits to bf16's 8, so the sharded run's rounding noise is
  about 2^-3 of bf16's; the unsharded run and PyTorch (each op in f32,
  rounded to f16: the same arithmetic) agree to the f16 bit on the params
  and to f32 rounding (3e-8) on the masters, so both references get one
  tolerance:
    losses: measured rel 1.9e-5: rtol 2.5e-4 (bf16's 2e-3 times 2^-3)
    masters (f32): measured abs 2.2e-5: atol 2e-4 (tried: the model
      with wd = 0 is off by 3.6e-4 here, and its losses by 4.6e-4 rel)
    params (f16): measured 2.4e-4 = 1 ulp at 0.3: rtol 9.8e-4 (2^-10, an
      ulp relative to the value) and the master's atol
    m, v: measured abs 6.8e-6 and 3.7e-7: atol 7e-5 and 4e-6
The loss tolerances assume shardrun prints at least 6 decimals.
"""
import argparse
import os
import re
import shlex
import struct
import subprocess
import sys
import tempfile
from collections import namedtuple

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "tools"))
from st_io import st_load, st_split  # noqa: E402  (safetensors, stdlib only)


class Usage(Exception):
    """Bad arguments, or a model this test cannot check: exit 2."""


class Failed(Exception):
    """A tool failed, or a run printed the wrong number of losses: exit 1."""


# ---- tolerances: the table of the docstring ----

# the atols of the params and of each kind of state, against one reference
Atols = namedtuple("Atols", "param m v master")
# loss: the losses' rtol; param_rtol: the params' (the states' is
# STATE_RTOL); ref, torch: Atols against the unsharded run, against PyTorch
Tol = namedtuple("Tol", "loss param_rtol ref torch")
STATE_RTOL = 1e-5
TOLERANCES = {
    "f16": Tol(2.5e-4, 9.8e-4, Atols(2e-4, 7e-5, 4e-6, 2e-4), Atols(2e-4, 7e-5, 4e-6, 2e-4)),
    "bf16 pipeline": Tol(5e-3, 7.9e-3, Atols(4e-3, 2e-3, 1e-3, 4e-3),
                         Atols(5e-3, 2e-3, 1e-3, 5e-3)),
    "bf16 adamw": Tol(2e-3, 7.9e-3, Atols(5e-4, 3e-4, 1e-5, 5e-4), Atols(1e-3, 3e-4, 1e-5, 1e-3)),
    "bf16 momentum": Tol(2e-3, 7.9e-3, Atols(3e-4, 3e-3, 0, 3e-4), Atols(5e-4, 3e-3, 0, 5e-4)),
    "adamw": Tol(1e-6, 1e-5, Atols(5e-4, 2.5e-6, 3e-8, 0), Atols(8e-4, 2.5e-6, 1e-7, 0)),
    "sgd": Tol(5e-6, 1e-5, Atols(1.5e-7, 0, 0, 0), Atols(6e-7, 0, 0, 0)),  # no states
}
EXACT = Atols(0, 0, 0, 0)


def tolerances(text):
    """The row of TOLERANCES for a model's text: its params' dtype, then its
    optimizer (and, for bf16, whether its layers are over an axis)."""
    def has(pattern):
        return re.search(pattern, text, re.M) is not None
    if has(r"^ *param .*: *f16\["):
        return TOLERANCES["f16"]
    if has(r"^ *param .*: *bf16\["):
        if has(r"^repeat .* over "):
            return TOLERANCES["bf16 pipeline"]
        return TOLERANCES["bf16 adamw" if has(r"^train .* adamw\(") else "bf16 momentum"]
    if has(r"^train .* adamw\("):
        return TOLERANCES["adamw"]
    if has(r"^train .* sgd\("):
        return TOLERANCES["sgd"]
    raise Usage("no tolerances measured for its optimizer")


# ---- the two models ----

def edit(text, pattern, make, option):
    """TEXT with every line matching PATTERN made anew by MAKE(match); each
    new line is printed. Usage when no line matches."""
    def one(m):
        line = make(m)
        print(f"{option}: {line}")
        return line
    text, n = re.subn(pattern, one, text, flags=re.M)
    if n == 0:
        raise Usage(f"{option}: no line matches {pattern}")
    return text


def pipelined(text, a):
    """TEXT with a pipeline over a new last mesh axis pp (--pipelined)."""
    m, s = a.pipelined.split(",")
    text = edit(text, r"^mesh (.*)$", lambda g: f"mesh {g[1]}, pp", "--pipelined")
    text = edit(text, r"^(repeat .*?) *\{", lambda g: f"{g[1]} over pp {{", "--pipelined")
    return edit(text, r"^(train .*)$",
                lambda g: f"pipeline microbatches {m} schedule {s}\n{g[1]}", "--pipelined")


def sharded_model(text, a):
    """The sharded run's model: MODEL with --pipelined, --schedule,
    --microbatches and --zero applied, in that order."""
    if a.pipelined:
        text = pipelined(text, a)
    if a.schedule:
        text = edit(text, r"^(pipeline .*)schedule .*$",
                    lambda m: f"{m[1]}schedule {a.schedule}", "--schedule")
    if a.microbatches:
        text = edit(text, r"^pipeline microbatches [0-9]*",
                    lambda m: f"pipeline microbatches {a.microbatches}", "--microbatches")
    if a.zero:
        # the train statement to its optimizer's closing parenthesis, which
        # may be lines further on (llama.sh's)
        text = edit(text, r"^(train \w+ with \w+(?:\([^)]*\))?)",
                    lambda m: f"{m[1]} zero {a.zero} over dp", "--zero")
    return text


def clipped(text, a):
    """TEXT with `clip = C` among its optimizer's options (--clip), and the
    schedule's (--schedule)."""
    if a.clip:
        text = edit(text, r"^(train .*\(.*)\)", lambda m: f"{m[1]}, clip = {a.clip})", "--clip")
    if a.schedule_lr:
        w, d, n, lo = a.schedule_lr.split(",")
        opts = f"warmup = {w}, decay = {d}, steps = {n}, min_lr = {lo}"
        text = edit(text, r"^(train .*\(.*)\)", lambda m: f"{m[1]}, {opts})", "--schedule-lr")
    return text


def unpipelined(text):
    """TEXT's `repeat ... over AXIS {` without `over AXIS`, no `pipeline` line."""
    text = re.sub(r"^(repeat .*) over [A-Za-z_][A-Za-z0-9_]* *\{", r"\1 {", text, flags=re.M)
    return "".join(l for l in text.splitlines(True) if not l.startswith("pipeline "))


def ones_of(mesh):
    """MESH's unsharded mesh: as many axes, each of size 1."""
    return re.sub(r"[0-9]+", "1", mesh)


def ranks_of(mesh):
    r = 1
    for x in mesh.split("x"):
        r *= int(x)
    return r


# ---- running ----

def tool(name):
    if not os.environ.get(name):
        raise Usage(f"{name} is not set (SHARDC, SHARDRUN, ST_COMPARE; MPIRUN for mpi)")
    return os.environ[name]


def run(cmd, echo=True):
    """Runs CMD; returns its stdout's lines, echoed to ours if ECHO."""
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    lines = []
    for line in p.stdout:
        lines.append(line)
        if echo:
            sys.stdout.write(line)
    if p.wait() != 0:
        raise Failed(f"exit {p.returncode}: {shlex.join(cmd)}")
    return lines


def counted(values, what, steps):
    """VALUES, which must be STEPS losses (else Failed)."""
    if len(values) != steps:
        raise Failed(f"{what}: {len(values)} losses, expected {steps}")
    return values


def losses(log):
    """The number after "loss" on each step line of LOG, as printed."""
    out = []
    for line in log:
        f = line.split()
        if f and f[0] == "step":
            out += [f[i + 1] for i in range(1, len(f) - 1) if f[i] == "loss"]
    return out


def torch_losses(path):
    """PyTorch's losses: the F32 tensor "loss" of PATH, printed as %.9g."""
    header, blob = st_load(path)
    t = header.get("loss")
    if t is None or t["dtype"] != "F32":
        raise Usage(f"{path}: no F32 tensor \"loss\"")
    lo, hi = t["data_offsets"]
    return [f"{v:.9g}" for v in struct.unpack(f"<{(hi - lo) // 4}f", blob[lo:hi])]


# ---- comparing ----

NUMBER = re.compile(r"-?[0-9]+(\.[0-9]*)?([eE][-+]?[0-9]+)?")


def compare_losses(want, got, rtol):
    """Per step, |got - want| <= rtol |want|, the losses as printed (a NaN or
    another word fails). Prints each bad step and a summary; True if none."""
    maxa = maxr = 0.0
    bad = 0
    for step, (w, g) in enumerate(zip(want, got), 1):
        num = NUMBER.fullmatch(w) and NUMBER.fullmatch(g)
        d = abs(float(g) - float(w)) if num else float("inf")
        r = d / max(abs(float(w)), 1e-30) if num else float("inf")
        if num:
            maxa, maxr = max(maxa, d), max(maxr, r)
        if not num or d > rtol * abs(float(w)):
            print(f"  step {step}: expected {w}, got {g}: abs err {d:.3g}, rel err {r:.3g}")
            bad += 1
    print(f"loss [{len(want)} steps]: max abs err {maxa:.3g}, max rel err {maxr:.3g} "
          f"(rtol {rtol:g}): {'MISMATCH' if bad else 'ok'}")
    return bad == 0


# Where each tensor of a params file goes, the first pattern its name
# matches, else "params". PyTorch's losses go to "loss", compared above.
SPLIT = [(r"^loss$", "loss"), (r"^opt\..*\.m$", "m"), (r"^opt\..*\.v$", "v"),
         (r"^opt\..*\.master$", "master"), (r"^opt\.", "opt")]


class Checks:
    """The comparisons, each under a line "== LABEL: WHAT"; ok stays True
    while all pass."""

    def __init__(self, tmp, label, got):
        self.tmp, self.label, self.got = tmp, label, got
        self.ok = True

    def head(self, what):
        print(f"== {self.label}: {what}")

    def st_compare(self, want, atol, rtol):
        """st_compare WANT against the sharded run's params and states."""
        cmd = [tool("ST_COMPARE"), want, self.got, "--rtol", repr(rtol), "--atol", repr(atol)]
        self.ok &= subprocess.run(cmd).returncode == 0

    def losses(self, against, want, got, rtol):
        self.head(f"losses against {against}")
        self.ok &= compare_losses(want, got, rtol)

    def states(self, tag, path, against, atols, rtol, param_rtol):
        """The params and states of PATH against the sharded run's, each kind
        with its atol of ATOLS (other states: m's), the params with
        PARAM_RTOL and the states with RTOL."""
        part = {k: os.path.join(self.tmp, f"{tag}-{k}.safetensors")
                for k in ["loss", "m", "v", "master", "opt", "params"]}
        written = st_split(path, [(p, part[k]) for p, k in SPLIT], part["params"])
        for kind, what, atol, r in [("params", "params", atols.param, param_rtol),
                                    ("m", "AdamW m", atols.m, rtol),
                                    ("v", "AdamW v", atols.v, rtol),
                                    ("master", "f32 masters", atols.master, rtol),
                                    ("opt", "other states", atols.m, rtol)]:
            if part[kind] in written:
                self.head(f"{what} against {against}")
                self.st_compare(part[kind], atol, r)

    def against_local(self, local_losses, got_losses, local_params):
        """The MPI run against the same plan under --comm local, to the bit."""
        self.head("losses, params and states against --comm local, to the bit")
        for step, (lo, g) in enumerate(zip(local_losses, got_losses), 1):
            if lo != g:
                print(f"  step {step}: --comm local {lo}, --comm mpi {g}")
                self.ok = False
        self.st_compare(local_params, 0.0, 0.0)


# ---- the test ----

def write(path, text):
    with open(path, "w") as f:
        f.write(text)
    return path


def check(a, tmp):
    """Runs both models and compares; True when every comparison passes."""
    with open(a.model) as f:
        text = f.read()
    if not re.search(r"^train ", text, re.M):
        raise Usage("no train line")
    tol = tolerances(text)
    base = os.path.basename(a.model)
    sharded, reference = a.model, a.reference or a.model
    edited = sharded_model(clipped(text, a), a)
    if edited != text:
        sharded = write(os.path.join(tmp, base), edited)
    if a.reference == "unpipelined":
        if unpipelined(text) == text:
            raise Usage("no pipeline to remove (--reference unpipelined)")
        reference = write(os.path.join(tmp, "unpipelined-" + base), clipped(unpipelined(text), a))
    elif a.clip or a.schedule_lr:
        with open(reference) as f:
            reference = write(os.path.join(tmp, "reference-" + base), clipped(f.read(), a))

    shardc, shardrun = tool("SHARDC"), tool("SHARDRUN")
    defines = [f"-D{d}" for d in a.define]
    ranks = str(ranks_of(a.mesh))
    train = os.path.join(a.data, "train.safetensors")
    run_args = ["--steps", str(a.steps), "--params", os.path.join(a.data, "params.safetensors"),
                "--inputs", os.path.join(a.data, "inputs.safetensors")]
    ref, got, local = (os.path.join(tmp, f"{r}.safetensors") for r in ["ref", "got", "local"])
    ref_plan, plan = os.path.join(tmp, "ref.plan"), os.path.join(tmp, "model.plan")

    ref_mesh = a.reference_mesh or ones_of(a.mesh.rsplit("x", 1)[0] if a.pipelined else a.mesh)
    run([shardc, reference, *defines, "--mesh", ref_mesh, "-o", ref_plan])
    ref_log = run([shardrun, ref_plan, "--comm", "local", *run_args, "--save-params", ref])
    parts = ["--f32-matmul", a.f32_matmul] if a.f32_matmul else []
    run([shardc, sharded, *defines, *parts, "--mesh", a.mesh, "-o", plan])
    if a.comm == "mpi":
        mpirun = [tool("MPIRUN"), *os.environ.get("MPIRUN_FLAGS", "").split(), "-np", ranks]
        got_log = run([*mpirun, shardrun, plan, "--comm", "mpi", *run_args, "--save-params", got])
    else:
        got_log = run([shardrun, plan, "--comm", "local", "--ranks", ranks, *run_args,
                       "--save-params", got])
    ref_losses = counted(losses(ref_log), "the unsharded run", a.steps)
    got_losses = counted(losses(got_log), "the sharded run", a.steps)
    torch = counted(torch_losses(train), train, a.steps)

    changes = [f" {o} {v}" for o, v in [("schedule", a.schedule),
                                         ("microbatches", a.microbatches), ("zero", a.zero),
                                         ("clip", a.clip), ("schedule-lr", a.schedule_lr),
                                         ("f32-matmul", a.f32_matmul)]
               if v]
    c = Checks(tmp, f"{base} --mesh {a.mesh} ({a.comm}){''.join(changes)}", got)
    if a.against_local:
        local_log = run([shardrun, plan, "--comm", "local", "--ranks", ranks, *run_args,
                         "--save-params", local], echo=False)
        c.against_local(counted(losses(local_log), "the --comm local run", a.steps),
                        got_losses, local)
    # --exact: the sharded run does the unsharded run's arithmetic (a
    # pipeline of one microbatch without dp or tp), so equal to the bit
    ref_tol = Tol(0, 0, EXACT, None) if a.exact else tol
    ref_rtol = 0 if a.exact else STATE_RTOL
    c.losses("the unsharded run", ref_losses, got_losses, ref_tol.loss)
    c.losses("PyTorch", torch, got_losses, tol.loss)
    c.states("ref", ref, "the unsharded run", ref_tol.ref, ref_rtol, ref_tol.param_rtol)
    c.states("torch", train, "PyTorch", tol.torch, STATE_RTOL, tol.param_rtol)
    return c.ok


def parse_args(argv):
    ap = argparse.ArgumentParser(
        prog="run_train.py", usage="%(prog)s MODEL MESH COMM DATA STEPS [options]",
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model", metavar="MODEL")
    ap.add_argument("mesh", metavar="MESH")
    ap.add_argument("comm", metavar="COMM", choices=["local", "mpi"])
    ap.add_argument("data", metavar="DATA")
    ap.add_argument("steps", metavar="STEPS", type=int)
    ap.add_argument("--zero", metavar="K", choices=["1", "2", "3"])
    ap.add_argument("--clip", metavar="C", type=float)
    ap.add_argument("--schedule-lr", metavar="W,D,N,M")
    ap.add_argument("--schedule", metavar="S")
    ap.add_argument("--microbatches", metavar="N", type=int)
    ap.add_argument("--reference", metavar="MODEL|unpipelined")
    ap.add_argument("--pipelined", metavar="M,S")
    ap.add_argument("--reference-mesh", metavar="M")
    ap.add_argument("--define", metavar="NAME=VALUE", action="append", default=[])
    ap.add_argument("--exact", action="store_true")
    ap.add_argument("--against-local", action="store_true")
    ap.add_argument("--f32-matmul", metavar="MODE", choices=["f32", "bf16x3"])
    a = ap.parse_args(argv)
    if a.against_local and a.comm != "mpi":
        ap.error("--against-local is for COMM mpi")
    return a


def main(argv):
    a = parse_args(argv)
    # our lines and the tools' (which write to our stdout and stderr
    # themselves) in the order they were written
    sys.stdout.reconfigure(line_buffering=True)
    try:
        with tempfile.TemporaryDirectory(prefix="run_train.") as tmp:
            return 0 if check(a, tmp) else 1
    except Usage as e:
        print(f"run_train.py: {a.model}: {e}", file=sys.stderr)
        return 2
    except Failed as e:
        print(f"run_train.py: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
