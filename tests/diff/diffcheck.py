#!/usr/bin/env python3
"""diffcheck.py MODEL [--shardc P] [--shardrun P] [--work DIR] [--quiet]

The differential check of one shard-language model (DESIGN.md §7): the model
is compiled for every mesh its header names and for the mesh of ones (every
axis of size 1, or the unpipelined model), both are run on the CPU backend
(every rank a thread) from the same seed and the same explicit inputs, and
every output, param and optimizer state must agree.

Directives, in the model's comments (one per line, before or among the code):
  # diff-mesh: 2x2          a mesh to check; one line each (at least one)
  # diff-ref: unpipelined   the reference is the model without `over AXIS` in
                            its repeats and without its `pipeline` line
  # diff-steps: N           steps to run (default 2 with `train`, else 1)
  # diff-ids: NAME N        the i32 input NAME is drawn from [0, N) (default 2)
  # diff-inputs: seed       inputs made by shardrun from --seed, no file
  # diff-inputs: batches    a batch of inputs per step: the file holds each
                            input with a step dimension in front, which
                            step k reads at index k - 1 (counted on from a
                            checkpoint's step when resumed)
  # diff-error: TEXT        every run must exit 1 with TEXT in its stderr
  # diff-seed: N            the explicit inputs' seed (default 1)
  # diff-define: NAME=VALUE -D NAME=VALUE for every compilation
  # diff-flags: FLAGS       shardc options for the sharded compilations only
                            (e.g. --keep-gathered); the reference is
                            compiled without them
  # diff-variant: FLAGS     each mesh checked again with these options (one
                            line each), besides without them; with
                            DIFF_EMULATE, one with --f32-matmul has its
                            kernels emulated too
  # diff-resume: FROM TO    a training program's steps split at a sharded
                            checkpoint (shardrun --save, then --resume with
                            the last step) saved by one plan and loaded by
                            another, each `ref` (the reference), `mesh`
                            (the model on the mesh being checked) or a
                            mesh's sizes (the model on that mesh, of the
                            same axes: `2x1x2`); the resumed run must end
                            where the reference's straight run does (one
                            line each)

Tolerances, |got - want| <= atol * max(1, max|want|) + rtol * |want| per
element, with max|want| over the tensor: sharded contractions sum in another
order, so errors scale with the tensor's magnitude, not the element's. Per
the lowest precision the program computes in (any bf16 or f16 in its text):
  f32  rtol 1e-4, atol 1e-5   (f32 sums in another order, through a few ops;
                               params and states after training: atol 1e-4,
                               for a gradient sums over the whole batch; so
                               do outputs computed after a step, from them)
  f16  rtol 1e-2, atol 1e-2   (2^-11 per rounding, sums of rounded partials)
  bf16 rtol 4e-2, atol 4e-2   (2^-8 per rounding, the same)
  i32  exact
A NaN must be a NaN in both, an infinity the same infinity.

DIFF_FAKECUDA, when set, names the folder of tests/fakecuda's pretend CUDA
driver and cuBLASLt (build/tests/fakecuda): each mesh's plan, compiled with
its kernels (sm_90), also runs on the cuda backend there, eagerly and by
graphs, on the same inputs. No kernel computes there, so no output is
compared: the run must end with exit 0 (or 1 on an id or label outside its
range, which the kernels never computed), break none of the driver's rules
and leave nothing allocated or created (class fakecuda); and eagerly, the
launches of a step on each rank (its kernels, cuBLASLt calls, copies and
sources, in order) must be those of shardc's estimate of the plan
(`--trace`, tests/tools/check_trace.py --like-launches; class estimate).
With DIFF_NCCL
set too, to a launcher (`mpirun --oversubscribe`), a plan of more than one
rank also runs through it as an MPI job with `--comm nccl` on
tests/fakecuda's pretend NCCL, which checks every call (the same
collective on every rank, buffers inside allocations, sends met by
receives of their size), on as many pretend devices as ranks, eagerly and
by graphs.

DIFF_MPIRUN, when set, is a launcher (`mpirun --oversubscribe`): each sharded
run of more than one rank then goes through it, a process per rank with
`--comm mpi`, against the reference run with the local communicator.

Exit 0: the runs agree. Exit 1: a failure; the first line of stdout is
`FAIL CLASS: detail`, CLASS one of mismatch, missing, crash (a signal or
exit 3+), reject (a compile or run error of a program that must be valid),
nondeterministic (with DIFF_REPEAT set: a sharded plan run twice the same
way gave other bits),
error-differs (a diff-error case not met), hang, fakecuda and estimate
(with DIFF_FAKECUDA: above), kernel (with DIFF_EMULATE
naming build/tests/test_kernel_emulate: a CUDA kernel of the plan on one of
the meshes, or on its mesh of ones, emulated on the host, differs from the
CPU backend's instructions beyond its tolerance, or its launch fails),
ill-conditioned (a mismatch that the program's own conditioning explains:
run again on its inputs and its starting params each moved one ulp,
the reference itself moves
past the tolerance in every tensor the sharded run does, and the sharded
run is at most NUDGE_FACTOR times as far from it; tests/diff/README.md).
A mismatch and an ill-conditioned failure give both distances, in
tolerances. Exit 2: bad usage or a model without diff-mesh.
"""
import argparse
import math
import os
import random
import re
import shutil
import struct
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
from st_io import _write_raw, st_load, st_read, st_write  # noqa: E402  (stdlib only)

TOL = {"f32": (1e-4, 1e-5), "f16": (1e-2, 1e-2), "bf16": (4e-2, 4e-2)}
# Params and optimizer states after training steps: a gradient sums over
# every row of the batch, the longest sums of the program, in another order
# when the batch is split (measured: 3.3e-5 on a 4-layer residual stack
# whose weight gradients sum 4096 terms, data parallel 2 against 1).
TOL_TRAINED = {"f32": (1e-4, 1e-4), "f16": (1e-2, 1e-2), "bf16": (4e-2, 4e-2)}
# A run that takes longer than this hangs (shardrun's own collective timeout
# is set well below it, so a deadlock inside a plan reports itself first).
RUN_TIMEOUT_S = 120
# a mismatch is ill-conditioned (Checker.conditioning) when 1 ulp of the
# inputs moves the reference past the tolerance, and the sharded run is no
# more than this many times as far from it
NUDGE_FACTOR = 4
CHECK_TRACE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools",
                           "check_trace.py")
COMPILE_TIMEOUT_S = 120
# test_kernel_emulate compiles a stage's kernels as C++ and runs them thread
# by thread: seconds for a generated program
EMULATE_TIMEOUT_S = 600


class Failure(Exception):
    def __init__(self, cls, detail, shaped=True):
        super().__init__(f"{cls}: {detail}")
        self.cls = cls
        self.detail = detail
        self.shaped = shaped  # a mismatch of values, not of dtype or shape


# ---- the model's directives and inputs ----

def directives(text):
    d = {"mesh": [], "ref": None, "steps": None, "ids": {}, "inputs": "file", "error": None,
         "seed": 1, "define": [], "flags": [], "variants": [[]], "resume": []}
    for line in text.splitlines():
        m = re.match(r"\s*#\s*diff-([a-z]+):\s*(.*?)\s*$", line)
        if not m:
            continue
        key, val = m.groups()
        if key == "mesh":
            d["mesh"].append(val)
        elif key == "ref":
            d["ref"] = val
        elif key == "steps":
            d["steps"] = int(val)
        elif key == "ids":
            name, n = val.split()
            d["ids"][name] = int(n)
        elif key == "inputs":
            if val not in ("file", "seed", "batches"):
                raise Failure("usage", f"unknown diff-inputs '{val}' (file, seed or batches)")
            d["inputs"] = val
        elif key == "error":
            d["error"] = val
        elif key == "seed":
            d["seed"] = int(val)
        elif key == "define":
            d["define"].append(val)
        elif key == "flags":
            d["flags"] += val.split()
        elif key == "variant":
            d["variants"].append(val.split())
        elif key == "resume":
            ends = val.split()
            if len(ends) != 2 or not all(e in ("ref", "mesh") or re.fullmatch(r"\d+(x\d+)*", e)
                                         for e in ends):
                raise Failure("usage", f"diff-resume '{val}': FROM TO, each ref, mesh or sizes")
            d["resume"].append(ends)
    return d


def unpipelined(text):
    """The model without `over AXIS` in its repeats and without `pipeline`."""
    out = []
    for line in text.splitlines():
        if re.match(r"\s*pipeline\b", line):
            continue
        out.append(re.sub(r"(\brepeat\b[^{#]*?)\s+over\s+[A-Za-z_][A-Za-z0-9_]*", r"\1", line))
    return "\n".join(out) + "\n"


def untrained(text):
    """The model without its `train` statement (to the end of its
    parentheses, which may span lines): the same params, made from the
    same seed, and no step."""
    out, depth = [], 0
    for line in text.splitlines():
        code = line.split("#", 1)[0]
        if depth == 0 and not re.match(r"\s*train\b", code):
            out.append(line)
            continue
        depth += code.count("(") - code.count(")")
        depth = max(depth, 0)
    return "\n".join(out) + "\n"


def precision(text):
    code = "\n".join(l.split("#", 1)[0] for l in text.splitlines())
    if re.search(r"\bbf16\b", code):
        return "bf16"
    if re.search(r"\bf16\b", code):
        return "f16"
    return "f32"


INPUT_RE = re.compile(r'^%\S+ = input \{name = "([^"]+)"\} : (\w+)\[([0-9, ]*)\]')


def input_specs(ir_text):
    specs = []
    for line in ir_text.splitlines():
        m = INPUT_RE.match(line)
        if m:
            name, dt, dims = m.groups()
            specs.append((name, dt, [int(x) for x in dims.split(",") if x.strip()]))
    return specs


def make_inputs(path, specs, ids, seed, batches=None):
    """Each input's values depend only on the seed and its name, so that
    removing a statement (reduce.py) leaves the other inputs as they were.
    With batches, each input has that many batches, a step dimension in
    front."""
    tensors = []
    for name, dt, shape in specs:
        rng = random.Random(f"{seed}:{name}")
        if batches is not None:
            shape = [batches] + shape
        n = 1
        for x in shape:
            n *= x
        if dt == "i32":
            hi = ids.get(name, 2)
            vals = [rng.randrange(hi) for _ in range(n)]
        elif dt == "bool":
            vals = [rng.randrange(2) for _ in range(n)]
        else:
            vals = [rng.gauss(0.0, 1.0) for _ in range(n)]
        tensors.append((name, dt.upper(), shape, vals))
    st_write(path, tensors)


# ---- running the tools ----

def run(cmd, timeout, what, env=None):
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        raise Failure("hang", f"{what} ran over {timeout} s: {' '.join(cmd)}")
    except OSError as e:
        raise Failure("usage", f"cannot run {cmd[0]}: {e.strerror} (set SHARDC and SHARDRUN)")
    return p


def stderr_line(p):
    """The line of stderr that says what went wrong: the first naming an
    error (the source line and caret follow it), else the last."""
    lines = p.stderr.strip().splitlines() or [""]
    for line in lines:
        if "error" in line:
            return line[:300]
    return lines[-1][:300]


def check_status(p, what, cmd):
    tail = stderr_line(p)
    if p.returncode < 0 or p.returncode >= 3:
        raise Failure("crash", f"{what} exited {p.returncode}: {tail} [{' '.join(cmd)}]")
    if p.returncode != 0:
        raise Failure("reject", f"{what} exited {p.returncode}: {tail} [{' '.join(cmd)}]")


def total_steps(d, train):
    return d["steps"] if d["steps"] is not None else (2 if train else 1)


def ranks_of(mesh):
    r = 1
    for x in mesh.split("x"):
        r *= int(x)
    return r


def ones_of(mesh):
    return "x".join("1" for _ in mesh.split("x"))


# ---- comparing ----

def tolerance(want, prec, tol):
    """The tolerance of each element of a tensor whose reference values are
    want: atol * max(1, max |want|) + rtol * |w|, as a function of w."""
    rtol, atol = tol[prec]
    finite = [abs(v) for v in want if isinstance(v, int) or math.isfinite(v)]
    scale = max([1.0] + finite)
    return lambda w: atol * scale + rtol * abs(w)


def compare(ref, got, prec, what, tol=TOL):
    """Every tensor of ref must be in got, same dtype and shape, close."""
    for name, (dt, shape, want) in ref.items():
        if name not in got:
            raise Failure("missing", f"{what}: '{name}' is in the reference, not in the sharded run")
        gdt, gshape, have = got[name]
        if gdt != dt or gshape != shape:
            raise Failure("mismatch", f"{what}: '{name}' is {dt}{shape} in the reference, "
                          f"{gdt}{gshape} in the sharded run", shaped=False)
        within = tolerance(want, prec, tol)
        worst, worst_i = 0.0, -1
        for i, (w, h) in enumerate(zip(want, have)):
            if dt in ("I32", "BOOL"):
                bad = w != h
                err = abs(w - h)
            elif math.isnan(w) or math.isnan(h):
                bad = not (math.isnan(w) and math.isnan(h))
                err = math.inf if bad else 0.0
            elif math.isinf(w) or math.isinf(h):
                bad = w != h
                err = math.inf if bad else 0.0
            else:
                err = abs(w - h)
                bad = err > within(w)
            if bad:
                raise Failure("mismatch", f"{what}: '{name}' {dt}{shape} at flat index {i}: "
                              f"reference {w!r}, sharded {h!r} (|err| {err:.3g}, tolerance "
                              f"{within(w) if dt not in ('I32', 'BOOL') else 0:.3g})")
            if err > worst:
                worst, worst_i = err, i
    for name in got:
        if name not in ref:
            raise Failure("missing", f"{what}: '{name}' is in the sharded run, not the reference")


def distance(want, have, dt, prec, tol):
    """How far have is from want, in tolerances: the largest |have - want|
    over its element's tolerance (compare's), 0 where they agree; for i32
    and bool, and for a NaN or an infinity in one and not the other, inf
    where they differ."""
    within = tolerance(want, prec, tol)
    worst = 0.0
    for w, h in zip(want, have):
        if dt in ("I32", "BOOL") or not (math.isfinite(w) and math.isfinite(h)):
            same = w == h or (dt not in ("I32", "BOOL") and math.isnan(w) and math.isnan(h))
            worst = worst if same else math.inf
        else:
            worst = max(worst, abs(w - h) / within(w))
    return worst


def ill_conditioned(worst):
    """worst: (tensor, the sharded run's distance, the nudged references'
    largest) for each tensor the sharded run has past the tolerance;
    whether 1 ulp of the inputs moves the reference past the tolerance in
    every one of them, the sharded run no more than NUDGE_FACTOR times as
    far."""
    return bool(worst) and all(m > 1.0 and f <= NUDGE_FACTOR * m for _, f, m in worst)


def nudge(src, dst, seed):
    """Writes src's tensors to dst with every finite float element moved by
    one unit in the last place of its own dtype, up or down in magnitude as
    drawn from seed (an element at 0 moves up, one at the largest finite
    value down); i32 and bool tensors as they are."""
    header, blob = st_load(src)
    rng = random.Random(f"nudge:{seed}")
    tensors = []
    for name, e in sorted(header.items(), key=lambda t: t[1]["data_offsets"][0]):
        lo, hi = e["data_offsets"]
        raw, dt = blob[lo:hi], e["dtype"]
        if dt in ("F32", "F16", "BF16"):
            fmt, sign, expo = (("I", 0x80000000, 0x7F800000) if dt == "F32" else
                               ("H", 0x8000, 0x7C00 if dt == "F16" else 0x7F80))
            words = list(struct.unpack(f"<{len(raw) // struct.calcsize(fmt)}{fmt}", raw))
            for i, w in enumerate(words):
                mag = w & (sign - 1)
                if mag & expo == expo:
                    continue  # an infinity or a NaN
                up = mag == 0 or rng.random() < 0.5
                if up and (mag + 1) & expo == expo:
                    up = False
                words[i] = (w & sign) | (mag + 1 if up else mag - 1)
            raw = struct.pack(f"<{len(words)}{fmt}", *words)
        tensors.append((name, dt, e["shape"], raw))
    _write_raw(dst, tensors)


# ---- one model ----

class Checker:
    def __init__(self, shardc, shardrun, work, quiet):
        self.shardc, self.shardrun, self.work, self.quiet = shardc, shardrun, work, quiet

    def say(self, msg):
        if not self.quiet:
            print(msg, flush=True)

    def compile(self, model, mesh, out, extra=()):
        # DIFF_ARCH (default none): the plans' kernels; the CPU backend runs
        # such a plan's instructions, in the memory the kernels' plan gives them
        arch = os.environ.get("DIFF_ARCH") or "none"
        cmd = [self.shardc, model, "--mesh", mesh, "--arch", arch, "-o", out, *extra]
        for d in self.defines:
            cmd += ["-D", d]
        p = run(cmd, COMPILE_TIMEOUT_S, f"shardc --mesh {mesh}")
        return p, cmd

    def run_plan(self, plan, mesh, tag, d, train, inputs, mpi=False, steps=None, extra=()):
        out = os.path.join(self.work, f"{tag}.out.st")
        params = os.path.join(self.work, f"{tag}.params.st")
        ranks = ranks_of(mesh)
        # DIFF_MPIRUN: a sharded run of more than one rank goes through
        # mpirun, a process per rank with the MPI communicator, rather than
        # threads with the local one (the reference stays local)
        mpirun = os.environ.get("DIFF_MPIRUN")
        if mpi and mpirun and ranks > 1:
            cmd = [*mpirun.split(), "-n", str(ranks), self.shardrun, plan, "--comm", "mpi"]
        else:
            cmd = [self.shardrun, plan, "--comm", "local", "--ranks", str(ranks)]
        cmd += ["--quiet", "--seed", "7", "--timeout-ms", "60000", "--outputs", out]
        if steps is None:
            steps = total_steps(d, train)
        cmd += ["--steps", str(steps), *extra]
        if train:
            cmd += ["--save-params", params]
        if inputs:
            cmd += ["--inputs", inputs]
        p = run(cmd, RUN_TIMEOUT_S, f"shardrun --mesh {mesh}")
        return p, cmd, out, (params if train else None)

    def check(self, path):
        with open(path) as f:
            text = f.read()
        d = directives(text)
        self.defines = d["define"]
        if not d["mesh"]:
            raise Failure("usage", f"{path}: no '# diff-mesh:' line")
        train = re.search(r"^\s*train\b", text, re.M) is not None
        prec = precision(text)
        ref_model = path
        if d["ref"] == "unpipelined":
            ref_model = os.path.join(self.work, "ref_" + os.path.basename(path))
            with open(ref_model, "w") as f:
                f.write(unpipelined(text))
        elif d["ref"] is not None:
            raise Failure("usage", f"{path}: unknown diff-ref '{d['ref']}'")
        seed = d["seed"]
        refs = {}
        for mesh in d["mesh"]:
            ones = ones_of(mesh)
            if ones not in refs:
                refs[ones] = self.reference(ref_model, ones, d, train, seed)
            ref = refs[ones]
            if d["error"] is not None:
                self.expect_error(path, mesh, d, train, ref["inputs"])
                continue
            for variant in d["variants"]:
                self.check_mesh(path, mesh, d, train, prec, ref, d["flags"] + variant)
            for ends in d["resume"]:
                self.check_resume(path, mesh, d, train, prec, ref, ends)
        fake = os.environ.get("DIFF_FAKECUDA")
        if fake and d["error"] is None:
            for mesh in d["mesh"]:
                self.fake_cuda(fake, path, mesh, d, train, refs[ones_of(mesh)]["inputs"])
        emulator = os.environ.get("DIFF_EMULATE")
        if emulator and d["error"] is None:
            meshes = list(dict.fromkeys(d["mesh"] + [ones_of(m) for m in d["mesh"]]))
            for mesh in meshes:
                self.emulate(emulator, path, mesh, d["flags"] if mesh in d["mesh"] else [])
            # a variant that makes kernels of its own (--f32-matmul's
            # splits) on the program's meshes too
            for variant in d["variants"]:
                if "--f32-matmul" in variant:
                    for mesh in d["mesh"]:
                        self.emulate(emulator, path, mesh, d["flags"] + variant)

    def fake_cuda(self, fake, path, mesh, d, train, inputs):
        # DIFF_FAKECUDA: the plan with kernels on the cuda backend's host
        # side, the pretend driver checking every call (tests/fakecuda)
        plan = os.path.join(self.work, f"f{mesh}.plan")
        est = os.path.join(self.work, f"f{mesh}.estimate.json")
        cmd = [self.shardc, path, "--mesh", mesh, "--arch", "sm_90", "-o", plan, "--trace", est,
               *d["flags"]]
        for x in self.defines:
            cmd += ["-D", x]
        check_status(run(cmd, COMPILE_TIMEOUT_S, f"shardc --mesh {mesh} --arch sm_90"),
                     f"shardc (mesh {mesh}, sm_90)", cmd)
        ranks = ranks_of(mesh)
        mpirun = os.environ.get("DIFF_NCCL")
        ways = [["--comm", "local"], ["--comm", "local", "--graph"]]
        if mpirun and ranks > 1:
            ways.append(["--comm", "nccl", "--timeout", "60"])
            ways.append(["--comm", "nccl", "--graph", "--timeout", "60"])
        for extra in ways:
            log = os.path.join(self.work, "fakecuda.log")
            if os.path.exists(log):
                os.remove(log)
            cmd = [self.shardrun, plan, "--backend", "cuda", "--quiet",
                   "--seed", "7", "--steps", str(total_steps(d, train)), *extra]
            trace = os.path.join(self.work, "fakecuda-trace.json")
            if extra == ["--comm", "local"]:  # eagerly: its launches against the estimate's
                cmd += ["--trace", trace]
            if "nccl" in extra:
                cmd = [*mpirun.split(), "-n", str(ranks), *cmd]
            if inputs:
                cmd += ["--inputs", inputs]
            env = dict(os.environ, LD_LIBRARY_PATH=fake, FAKECUDA_LOG=log)
            if "nccl" in extra:  # a pretend GPU a process
                env["FAKECUDA_DEVICES"] = str(ranks)
            what = (f"mesh {mesh} on the pretend driver" +
                    "".join(" " + e for e in extra if e not in ("--timeout", "60")))
            try:
                p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                   text=True, timeout=RUN_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                raise Failure("hang", f"{what}: no end in {RUN_TIMEOUT_S} s [{' '.join(cmd)}]")
            data = p.returncode == 1 and "is outside" in p.stderr
            if p.returncode != 0 and not data:
                raise Failure("fakecuda", f"{what}: exit {p.returncode}: {stderr_line(p)} "
                              f"[{' '.join(cmd)}]")
            left = []
            try:
                with open(log) as f:
                    left = [x.strip() for x in f if re.match(r"(errors|live_\S+) [1-9]", x)]
            except OSError:
                left = ["no count at exit"]
            if left:
                raise Failure("fakecuda", f"{what}: {', '.join(left)}: {p.stderr.strip()[:300]} "
                              f"[{' '.join(cmd)}]")
            if "--trace" in cmd and p.returncode == 0:
                # the estimate times what the cuda backend launches, in
                # its order (tests/tools/check_trace.py --like-launches)
                c = [sys.executable, CHECK_TRACE, trace, "--ranks", str(ranks), "--steps",
                     str(total_steps(d, train)), "--like", est, "--like-launches"]
                q = subprocess.run(c, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                if q.returncode != 0:
                    raise Failure("estimate", f"{what}: {q.stderr.strip()[:400]} [{' '.join(c)}]")
            self.say(f"ok: {os.path.basename(path)} {what}: the driver's rules kept, "
                     f"nothing left")

    def emulate(self, emulator, path, mesh, flags):
        # DIFF_EMULATE: test_kernel_emulate runs every CUDA kernel of the
        # program's plan on the host against the CPU backend's instructions
        # (the CPU backend alone never runs the kernels), compiled with the
        # sharded compilations' flags (--keep-gathered) on the program's meshes
        cmd = [emulator, path, mesh, *self.defines, *flags]
        what = f"mesh {mesh}" + "".join(" " + f for f in flags)
        p = run(cmd, EMULATE_TIMEOUT_S, f"test_kernel_emulate ({what})")
        if p.returncode == 77:
            raise Failure("usage", f"test_kernel_emulate cannot run: {p.stdout.strip()}")
        if p.returncode != 0:
            bad = [x.strip() for x in (p.stderr + p.stdout).splitlines()
                   if "differs" in x or "failed" in x or "error" in x]
            detail = (bad[0] if bad else stderr_line(p))[:300]
            raise Failure("kernel", f"{what}: exit {p.returncode}: {detail} [{' '.join(cmd)}]")
        self.say(f"ok: {os.path.basename(path)} {what}: every kernel as the CPU backend")

    def check_mesh(self, path, mesh, d, train, prec, ref, flags):
        ones = ones_of(mesh)
        what = f"mesh {mesh}" + "".join(" " + f for f in flags)
        plan = os.path.join(self.work, f"m{mesh}.plan")
        p, cmd = self.compile(path, mesh, plan, flags)
        check_status(p, f"shardc ({what})", cmd)
        if d["ref"] == "unpipelined":
            self.check_unheld(path, mesh, flags, what)
        p, cmd, out, params = self.run_plan(plan, mesh, f"m{mesh}", d, train, ref["inputs"],
                                            mpi=True)
        check_status(p, f"shardrun ({what})", cmd)
        # after a step the outputs are computed from the stepped params,
        # which may differ by their own tolerance: the outputs get it too
        stepped = train and (d["steps"] or 2) > 1
        self.compare_runs(ref, d, train, prec, what, out, params,
                          TOL_TRAINED if stepped else TOL)
        self.say(f"ok: {os.path.basename(path)} {what} against {ones} ({prec})")
        if os.environ.get("DIFF_REPEAT"):
            self.check_repeat(plan, mesh, d, train, ref, what, out, params)

    def check_unheld(self, path, mesh, flags, what):
        """A pipeline's stage programs and instruction lists (--emit
        stage-ir and schedule: every op, buffer and offset) are the same
        when no stage's middle microbatches are held once
        ($SHARDC_EXPERIMENT_UNHELD=1: each through every pass): a pass that
        treats a held stage otherwise than its microbatches unrolled shows
        here, even where the values stay within the tolerance. (Not the
        plan's bytes: where a fused group would span another chunk's
        middle microbatches, the estimate's groups may differ.)"""
        for emit in ("stage-ir", "schedule"):
            texts = []
            for unheld in (False, True):
                cmd = [self.shardc, path, "--mesh", mesh, "--arch", "none", "--emit", emit,
                       *flags]
                for d in self.defines:
                    cmd += ["-D", d]
                # the environment given, not set: the soak checks programs
                # on threads, and a thread's setenv under another's exec
                # fails it (EFAULT)
                env = dict(os.environ, SHARDC_EXPERIMENT_UNHELD="1") if unheld else None
                p = run(cmd, COMPILE_TIMEOUT_S, f"shardc --emit {emit}", env=env)
                check_status(p, f"shardc ({what}, --emit {emit})", cmd)
                texts.append(p.stdout)
            if texts[0] != texts[1]:
                raise Failure("held", f"{what}: --emit {emit} differs from the one compiled "
                              f"with no stage held once (SHARDC_EXPERIMENT_UNHELD=1) "
                              f"[{' '.join(cmd)}]", shaped=False)

    def compare_runs(self, ref, d, train, prec, what, out, params, out_tol):
        """The sharded run's outputs (and params and states) against the
        reference's; a mismatch of values is weighed against the program's
        own conditioning (conditioning) before it is raised."""
        got = {"outputs": (ref["out"], st_read(out), out_tol)}
        if train:
            got["params and states"] = (ref["params"], st_read(params), TOL_TRAINED)
        try:
            for kind, (want, have, tol) in got.items():
                compare(want, have, prec, f"{kind}, {what}", tol)
        except Failure as e:
            if e.cls != "mismatch" or not e.shaped:
                raise
            self.conditioning(e, ref, d, train, prec, got)

    def conditioning(self, failure, ref, d, train, prec, got):
        """A mismatch beyond the tolerance: the reference runs again, twice,
        on its inputs each moved one unit in the last place (nudge), and
        its params as they start too (starting_params). When
        that alone moves the reference past the tolerance, the program is
        ill-conditioned there: if every tensor the sharded run has past the
        tolerance is at most NUDGE_FACTOR times as far from the reference
        as the nudged references get, the failure is of class
        ill-conditioned (the comparison cannot tell a correct plan from a
        wrong one), else still a mismatch; either way its detail gives
        both distances, in tolerances."""
        if "nudged" not in ref:
            # its params, made from the seed, are moved too (saved as they
            # start, read back moved), so that a program whose only inputs
            # are ids is probed as well (gen.py seed 2773995: a bf16 sum over
            # a split axis, then a layernorm over 4 features), and a
            # training program through every layer's weights, not its
            # inputs alone (gen.py seed 2946947: 5 layers of a bf16 matmul
            # then an rmsnorm over 4 features)
            params0 = self.starting_params(ref, d, train)
            if not ref["inputs"] and not params0:
                raise failure  # nothing the reference reads to move
            ref["nudged"] = []
            ref["nudged_params"] = params0 is not None
            for k in (1, 2):
                path, extra = None, ()
                if ref["inputs"]:
                    path = os.path.join(self.work,
                                        f"nudged{k}-{os.path.basename(ref['inputs'])}")
                    nudge(ref["inputs"], path, k)
                if params0:
                    moved = os.path.join(self.work, f"nudged{k}-params.st")
                    nudge(params0, moved, 10 + k)
                    extra = ("--params", moved)
                p, cmd, out, params = self.run_plan(ref["plan"], ref["ones"], f"nudged{k}", d,
                                                    train, path, extra=extra)
                check_status(p, "shardrun reference, inputs nudged", cmd)
                ref["nudged"].append({"outputs": st_read(out),
                                      "params and states": st_read(params) if train else None})
        worst = []  # (name, sharded's distance, the nudged references')
        for kind, (want, have, tol) in got.items():
            for name, (dt, shape, vals) in want.items():
                if name not in have or have[name][:2] != (dt, shape):
                    compare(want, have, prec, kind, tol)  # its missing or mismatch
                far = distance(vals, have[name][2], dt, prec, tol)
                if far <= 1.0:
                    continue
                moved = max(distance(vals, n[kind][name][2], dt, prec, tol)
                            for n in ref["nudged"])
                worst.append((f"{kind} '{name}'", far, moved))
        what = "inputs and params" if ref["nudged_params"] else "inputs"
        figures = "; ".join(f"{n}: the sharded run {f:.3g} tolerances from the reference, "
                            f"the reference on {what} moved 1 ulp {m:.3g}" for n, f, m in worst)
        if ill_conditioned(worst):
            raise Failure("ill-conditioned", f"{failure.detail} ({figures})")
        raise Failure("mismatch", f"{failure.detail} ({figures})")

    def starting_params(self, ref, d, train):
        """The reference's params as they start, saved by a run of one step
        (of the model without its `train` statement, for a training
        program), or None where there is no float param to move. A training
        program's are used only where the reference, started from them as
        read back, ends with the same bits as it does from the seed (a
        param read back is the param's dtype, where a 16-bit param's f32
        master may have been made from the seed at f32); where that model
        does not compile or run, the params are not moved."""
        params0 = os.path.join(self.work, "seeded.params.st")
        if not train:
            p, cmd, _, _ = self.run_plan(ref["plan"], ref["ones"], "seeded", d, train,
                                         ref["inputs"], steps=1,
                                         extra=("--save-params", params0))
            check_status(p, "shardrun reference, its params saved", cmd)
        else:
            with open(ref["model"]) as f:
                text = f.read()
            model = os.path.join(self.work, "untrained_" + os.path.basename(ref["model"]))
            with open(model, "w") as f:
                f.write(untrained(text))
            plan = os.path.join(self.work, "untrained.plan")
            p, _ = self.compile(model, ref["ones"], plan)
            if p.returncode != 0:
                return None
            p, _, _, _ = self.run_plan(plan, ref["ones"], "seeded", d, False, ref["inputs"],
                                       steps=1, extra=("--save-params", params0))
            if p.returncode != 0:
                return None
            p, cmd, out, params = self.run_plan(ref["plan"], ref["ones"], "started", d, train,
                                                ref["inputs"], extra=("--params", params0))
            check_status(p, "shardrun reference, started from its saved params", cmd)
            if st_read(out) != ref["out"] or st_read(params) != ref["params"]:
                return None
        if not any(dt in ("F32", "F16", "BF16") for dt, _, _ in st_read(params0).values()):
            return None
        return params0

    def check_repeat(self, plan, mesh, d, train, ref, what, out, params):
        """DIFF_REPEAT: the sharded plan run again, the same way (under
        DIFF_MPIRUN through the launcher again: MPI's own reductions, for
        large buffers, sum in another order than the local communicator,
        so the two need not agree to the bit), must give the same bits."""
        p, cmd, out2, params2 = self.run_plan(plan, mesh, f"again{mesh}", d, train, ref["inputs"],
                                              mpi=True)
        check_status(p, f"shardrun again ({what})", cmd)
        pairs = [("outputs", out, out2)] + ([("params and states", params, params2)] if train else [])
        for kind, a, b in pairs:
            first, again = st_read(a), st_read(b)
            for name, (dt, shape, vals) in first.items():
                if name not in again or again[name][:2] != (dt, shape) or \
                        not all(x == y or (x != x and y != y)  # a NaN is a NaN
                                for x, y in zip(vals, again[name][2])):
                    raise Failure("nondeterministic", f"{kind}, {what}: '{name}' differs between "
                                  f"two runs of the same plan [{' '.join(cmd)}]")
        self.say(f"ok: {os.path.basename(plan)} {what}: the same bits when run again")

    def check_resume(self, path, mesh, d, train, prec, ref, ends):
        """The program's steps split at a checkpoint: every step but the
        last by one plan, saved (shardrun --save), the last resumed by
        another (--resume, which reshards the checkpoint onto its own mesh
        and goes on from the saved step), against the reference's straight
        run."""
        steps = total_steps(d, train)
        if not train or steps < 2:
            raise Failure("usage", f"{path}: diff-resume needs a training program of 2 or more steps")
        ones = ones_of(mesh)
        sides = []
        for e in ends:
            if e == "ref":
                sides.append((ref["plan"], ones, False, "the reference"))
                continue
            m = mesh if e == "mesh" else e
            if len(m.split("x")) != len(mesh.split("x")):
                raise Failure("usage", f"{path}: diff-resume mesh {m} has not the axes of {mesh}")
            plan = os.path.join(self.work, f"r{m}.plan")
            p, cmd = self.compile(path, m, plan, d["flags"])
            check_status(p, f"shardc (mesh {m})", cmd)
            sides.append((plan, m, True, f"mesh {m}"))
        first, then = sides
        what = f"{steps - 1} step(s) on {first[3]} resumed on {then[3]}"
        ck = os.path.join(self.work, "ck")
        shutil.rmtree(ck, ignore_errors=True)
        p, cmd, _, _ = self.run_plan(first[0], first[1], "save", d, train, ref["inputs"],
                                     mpi=first[2], steps=steps - 1, extra=["--save", ck])
        check_status(p, f"shardrun ({first[3]}, saving)", cmd)
        p, cmd, out, params = self.run_plan(then[0], then[1], "resumed", d, train,
                                            ref["inputs"], mpi=then[2], steps=1,
                                            extra=["--resume", ck])
        check_status(p, f"shardrun ({then[3]}, resumed)", cmd)
        self.compare_runs(ref, d, train, prec, what, out, params, TOL_TRAINED)
        self.say(f"ok: {os.path.basename(path)} {what} against {ones} ({prec})")

    def reference(self, model, ones, d, train, seed):
        plan = os.path.join(self.work, f"ref{ones}.plan")
        p, cmd = self.compile(model, ones, plan)
        check_status(p, f"shardc reference (mesh {ones})", cmd)
        inputs = None
        if d["inputs"] != "seed":
            cmd = [self.shardc, model, "--mesh", ones, "--emit", "ir"]
            for x in self.defines:
                cmd += ["-D", x]
            p2 = run(cmd, COMPILE_TIMEOUT_S, "shardc --emit ir")
            check_status(p2, "shardc --emit ir", [model])
            inputs = os.path.join(self.work, f"inputs{ones}.st")
            make_inputs(inputs, input_specs(p2.stdout), d["ids"], seed,
                        total_steps(d, train) if d["inputs"] == "batches" else None)
        ref = {"inputs": inputs, "plan": plan, "ones": ones, "model": model}
        if d["error"] is not None:
            return ref
        p, cmd, out, params = self.run_plan(plan, ones, f"ref{ones}", d, train, inputs)
        check_status(p, f"shardrun reference (mesh {ones})", cmd)
        ref["out"] = st_read(out)
        ref["params"] = st_read(params) if train else None
        return ref

    def expect_error(self, path, mesh, d, train, inputs):
        runs = [(self.work + f"/ref{ones_of(mesh)}.plan", ones_of(mesh), "ref")]
        plan = os.path.join(self.work, f"m{mesh}.plan")
        p, cmd = self.compile(path, mesh, plan, d["flags"])
        check_status(p, f"shardc (mesh {mesh})", cmd)
        runs.append((plan, mesh, f"m{mesh}"))
        for plan, m, tag in runs:
            p, cmd, _, _ = self.run_plan(plan, m, tag, d, train, inputs)
            if p.returncode != 1 or d["error"] not in p.stderr:
                tail = stderr_line(p)
                raise Failure("error-differs", f"mesh {m}: exit {p.returncode}, expected 1 "
                              f"with '{d['error']}'; stderr: {tail}")
        self.say(f"ok: {os.path.basename(path)} mesh {mesh}: the same error as {ones_of(mesh)}")


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("model")
    ap.add_argument("--shardc", default=os.environ.get("SHARDC", "build/shardc"))
    ap.add_argument("--shardrun", default=os.environ.get("SHARDRUN", "build/shardrun"))
    ap.add_argument("--work", help="keep the plans and files here")
    ap.add_argument("--quiet", action="store_true")
    a = ap.parse_args(argv)
    work = a.work or tempfile.mkdtemp(prefix="diffcheck.")
    os.makedirs(work, exist_ok=True)
    try:
        Checker(a.shardc, a.shardrun, work, a.quiet).check(a.model)
    except Failure as e:
        print(f"FAIL {e.cls}: {e.detail}", flush=True)
        return 2 if e.cls == "usage" else 1
    finally:
        if not a.work:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
