#!/usr/bin/env python3
"""gen.py SEED [--avoid A,B,...]: prints a random valid shard-language model.

The model is drawn from the whole language (LANGUAGE.md §1-12): meshes of 1
to 4 axes of sizes 1 to 4, `let` constants, inputs, params with every init,
sharding annotations on inputs, params and intermediate values (one axis,
a tuple of axes, or none per dimension), every op of §7 (elementwise,
broadcasting, matmul plain and batched, reductions with and without
keepdims, softmax, the norms, transpose, reshape, cast, embedding,
attention, mse, cross_entropy; of §12, indexing, concat and split, sin,
cos, arange, one_hot, argmax, gather, cumsum and topk, comparisons, bool
inputs and where, i32 index arithmetic on an embedding's ids (division
included), dropout, stop_gradient, grouped-query attention with as
many or twice as many keys as queries (and in 16 bits at the widths of
the tensor-core kernels), attention of a value whose sequence is split
over an axis (context parallelism; outside pipelines), recompute blocks, an MLP gelu(x @ w1 + b1) @ w2
in 16-bit training, its hidden width a multiple of 8 on every rank, so
that its gelu and gelu_grad run in cuBLASLt's epilogues), a pre-norm
linear layer layernorm(x, g, b) @ w in training (its bias's and gain's
gradients summed in one kernel), a pre-norm residual block x + norm(x) @ w
over a hidden value in training (the norm's input gradient one op,
passes/norm_grad.c; a loss past such a norm for 6 in 10 of those
programs), f32, bf16 and
f16 values, blocks of one or two results called
once or more, `repeat`, `repeat ... over pp` with every schedule, one
carry or two (`h, g = f(h, g)`: both cross the stages), and
1, 2, 4 or 8 microbatches (8: several in flight on a stage, where the
plan's loop form cycles each value through its places), and `train` with sgd (with and without momentum) or
adamw, with and without `zero K over AXIS`, with and without shardc
--keep-gathered.

Its header carries tests/diff/diffcheck.py's directives: the mesh to check
(its sizes; the mesh of ones is the reference), `diff-ref: unpipelined`
for pipelines, `diff-flags: --keep-gathered` for a third of the training
programs, `diff-variant: --f32-matmul bf16x3` for a quarter of the
programs with a matmul (drawn by a generator of its own, so a seed's
program is the same with or without it), variants of options that must
not change the result (`--bucket-mb` small or 0 for 3 in 10 training
programs, `--unroll` for 3 in 10 pipelines, `--recompute` for 15 in 100
training programs; drawn apart likewise), `diff-resume` for 3 in 10
training programs (the steps split at a checkpoint saved on the mesh and
resumed on the reference or on the mesh with some axes of size 1, or the
reverse; drawn apart likewise),
`diff-inputs: batches` for 3 in 10 programs (an inputs file with a batch
per step; drawn apart likewise), and the range of every i32 input.

Values stay in a numerically tame range, so that f32 sums in another order
stay within diffcheck's tolerances: the domain of log, sqrt, rsqrt, pow and
division is kept positive, exp reads a bounded value, params are scaled by
1/sqrt(fan-in), and a value whose estimated magnitude grows past 64 goes
through tanh. A training program in bf16 or f16 uses only ops whose
gradient is continuous (low precision rounds near ties into exact ties
and back, and relu, abs, max, min and amax send their gradient one way or
the other at a tie); in f32 a training program's leaky relu (a where)
has its kink at -0.3, where no structure puts a value (at 0 the last
column of a cumsum along normalized rows, 0 up to rounding, took either
branch's gradient by the order of its sums).

--avoid names constructs to leave out (known failure classes while they are
being fixed): attn-causal-split, pipe-mixed-inputs, pipe-loss-reduce,
pipe-early-output, pipe-matvec (a 1-D right operand of a matmul in a
pipeline), pipe-param-output (an output of a param in pipelined training), io-names, lowp (bf16/f16), pipeline, train, attention;
and only-pipeline makes every program a pipeline (a soak of pipelines);
few-microbatches leaves out a pipeline's small microbatch counts (16 or 32
microbatches, interleaved 4 or 8 per stage: many microbatches in flight,
as the plan's loop form holds them in slots).
"""
import copy
import random
import re
import sys

AXIS_NAMES = ["dp", "tp", "sp", "ep", "a", "b", "c"]
UNARY = ["relu", "gelu", "silu", "tanh", "sigmoid", "exp", "log", "sqrt", "rsqrt", "neg", "abs",
         "sin", "cos"]


class Value:
    def __init__(self, name, dtype, shape, mag, param_dep=False, batch=True):
        self.name, self.dtype, self.shape = name, dtype, list(shape)
        self.mag = mag                # a rough bound of |elements|
        self.param_dep = param_dep    # depends on a param (a loss needs one)
        self.batch = batch            # dim 0 is the batch (rows per microbatch)
        self.centred = False          # a layernorm's result: its rows sum to ~0
        self.row_param = False        # shifted or scaled by a scalar param
        self.gain = 1.0               # a rough bound of d(elements)/d(block input)
        self.norm_dx = False          # made from a norm of a hidden value


class Gen:
    def __init__(self, seed, avoid):
        self.seed = seed
        self.r = random.Random(seed)
        self.avoid = set(avoid)
        self.lines = []
        self.count = 0
        self.params = 0
        self.scalar_params = set()    # the names of rank-0 params

    # ---- helpers ----
    def chance(self, p):
        return self.r.random() < p

    def fresh(self, prefix="v"):
        self.count += 1
        return f"{prefix}{self.count}"

    def dimtext(self, n):
        return self.consts.get(n, str(n))

    def typetext(self, dtype, shape):
        return f"{dtype}[{', '.join(self.dimtext(n) for n in shape)}]"

    def annotation(self, shape, p=0.5, keep_batch=None):
        """A random shard(...) for shape, or "" (each dim: _, an axis, a tuple)."""
        if not self.chance(p) or not shape:
            return ""
        free = [a for a in self.axes if a != "pp" and (self.size[a] > 1 or self.chance(0.3))]
        self.r.shuffle(free)
        entries = []
        for i, n in enumerate(shape):
            if keep_batch is not None and i == 0:
                if keep_batch != "_" and n % self.size[keep_batch] == 0:
                    entries.append(keep_batch)
                    free = [a for a in free if a != keep_batch]
                else:
                    entries.append("_")
                continue
            pick = []
            k = self.r.choice([0, 0, 1, 1, 2])
            for a in list(free):
                if len(pick) >= k:
                    break
                prod = self.size[a]
                for b in pick:
                    prod *= self.size[b]
                if n % prod == 0:
                    pick.append(a)
            for a in pick:
                free.remove(a)
            if not pick:
                entries.append("_")
            elif len(pick) == 1:
                entries.append(pick[0])
            else:
                entries.append("(" + ", ".join(pick) + ")")
        return " shard(" + ", ".join(entries) + ")"

    def batch_annotation(self, shape, p):
        """An input's annotation. Its batch dim is split over the batch
        axis or not; in a pipeline while pipe-mixed-inputs is avoided,
        every input's batch dim is split alike."""
        if self.pipelined and "pipe-mixed-inputs" in self.avoid:
            if self.batch_axis != "_":
                p = 1.0
            return self.annotation(shape, p, keep_batch=self.batch_axis)
        keep = self.batch_axis if self.batch_axis != "_" and self.chance(0.6) else None
        return self.annotation(shape, p, keep_batch=keep)

    def emit(self, line):
        self.out.append(self.indent + line)

    # ---- declarations ----
    def new_param(self, shape, dtype, kind="weight"):
        self.params += 1
        name = f"w{self.params}" if kind == "weight" else f"g{self.params}"
        if not shape:
            self.scalar_params.add(name)
        fan = shape[0] if len(shape) > 1 else 1
        if kind == "weight":
            std = round(1.0 / (fan ** 0.5), 3)
            mag = 4 * std
            if len(shape) == 1:
                # a vector is contracted over its one dim (x @ w, w @ x):
                # std 1/sqrt(K) keeps the result's size. With std 1, x @ w1
                # then w3 @ it reached |16| before a tanh, and a step's f32
                # rounding in w3 (1e-5, within tolerance) moved the next
                # step's output 4x its tolerance (seed 30256). The size
                # estimate keeps the old bound, so the rest of each program
                # (where tanh goes) is as before
                std = round(1.0 / (shape[0] ** 0.5), 3)
            init = self.r.choice([f"normal({std})", f"normal({std})",
                                  f"uniform({-std * 1.7:.3f}, {std * 1.7:.3f})"])
        elif kind == "gain":
            init, mag = self.r.choice([("ones", 1.0), (f"uniform(0.5, 1.5)", 1.5)]), None
            init, mag = init
        else:  # bias
            init, mag = self.r.choice([("zeros", 0.0), ("normal(0.1)", 0.4), ("ones", 1.0)])
        ann = self.annotation(shape, 0.5)
        self.emit(f"param {name} : {self.typetext(dtype, shape)}{ann} = {init}")
        if not self.indent:
            self.param_names.append(name)
        return Value(name, dtype, shape, max(mag, 0.1), param_dep=True, batch=False)

    # ---- expressions ----
    def pick(self, pred=lambda v: True):
        cands = [v for v in self.pool if pred(v)]
        if not cands:
            return None
        # prefer recent values, so programs are chains, not fans
        weights = [1 + i for i in range(len(cands))]
        return self.r.choices(cands, weights)[0]

    def tame(self, text, mag):
        if mag > 64:
            # scaled by a power of two (exact) to magnitude 4 first: a value
            # of magnitude m is off by some m 2^-24 after sums in another
            # order, which tanh passes on whole near 0 (seen: the tanh of a
            # cumsum whose partial sums reached 287, 4.8e-5 from float64's
            # against a tolerance of 2.2e-5, seed 2191943 on 3x2x2)
            k = 1
            while mag / 2 ** k > 4:
                k += 1
            return f"tanh({text} * {2.0 ** -k!r})", 1.0
        return text, mag

    def pos(self, t):
        """A positive expression of t: abs(t), or t * t in smooth programs."""
        return f"{t} * {t}" if self.smooth else f"abs({t})"

    def unary(self, x):
        f = self.r.choice([u for u in UNARY if not (self.smooth and u in ("relu", "abs"))])
        t, m = x.name, x.mag
        if self.train and self.chance(0.4):
            # dropout's bits come from each element's global index, the
            # same on every mesh and in every microbatch
            p = self.r.choice([0.1, 0.25, 0.5])
            return f"dropout({t}, {p})", m / (1 - p)
        if self.train and self.chance(0.08):
            # the value, with no gradient through it (LANGUAGE.md §12)
            return f"stop_gradient({t})", m
        if f == "exp":
            if m > 3:
                return f"exp(tanh({t}))", 2.8
            return f"exp({t})", 2.8 ** m if m < 3 else 20.0
        if f == "log":
            return f"log({self.pos(t)} + 1.0)", max(1.0, m ** 0.5)
        if f == "sqrt":
            return f"sqrt({self.pos(t)} + 0.5)", (m + 0.5) ** 0.5
        if f == "rsqrt":
            return f"rsqrt({self.pos(t)} + 1.0)", 1.0
        if f in ("tanh", "sigmoid", "sin", "cos"):
            if m > 4 and (x.dtype in ("bf16", "f16") or f in ("sin", "cos")):
                # a 16-bit value of magnitude m is off by m 2^-9 (bf16) or
                # more after its roundings, which these pass on whole to a
                # result of magnitude 1 and its tolerance; scaled by a power
                # of two (exact) to magnitude 4, its error shrinks alike
                # (seen: sin of the sum of 16 bf16 rows, 0.26 against 0.20,
                # seed 940544; tanh of a 16-layer bf16 residual stream,
                # -0.090 against -0.153, seed 910497 --avoid only-pipeline).
                # sin and cos, whose slope never flattens, do the same to an
                # f32 value: one trained step's f32 sums in another order
                # leave some 1e-6 of its magnitude (seen: sin of a v9 near
                # 94, 1.3e-4 apart against a tolerance of 1.1e-4, seed
                # 2070873, a pipeline on 4x1)
                k = 1
                while m / 2 ** k > 4:
                    k += 1
                return f"{f}({t} * {2.0 ** -k!r})", 1.0
            return f"{f}({t})", 1.0
        return f"{f}({t})", m

    def broadcast_partner(self, x):
        """A second operand for an elementwise op on x: a value or param of
        x's shape or a suffix of it, or a literal."""
        roll = self.r.random()
        if roll < 0.15:
            return self.r.choice(["2.0", "0.5", "1.5", "3"]), 3.0, False
        if roll < 0.2:
            p = self.new_param([], x.dtype, "bias")     # a scalar param
            return p.name, p.mag, True
        if roll < 0.55:
            same = self.pick(lambda v: v is not x and v.dtype == x.dtype and v.shape == x.shape
                             and (v.batch == x.batch or not self.pipelined))
            if same:
                return same.name, same.mag, same.param_dep
        if roll < 0.62 and x.shape:
            # a table no input makes (LANGUAGE.md §12): the same in every
            # microbatch of a pipeline, never split
            n = x.shape[-1]
            f = self.r.choice(["sin", "cos"])
            return f"{f}(cast(arange({self.dimtext(n)}), {x.dtype}) * 0.25)", 1.0, False
        if roll < 0.75:
            suff = self.pick(lambda v: v.dtype == x.dtype and 0 < len(v.shape) < len(x.shape)
                             and not (v.batch and self.pipelined)
                             and v.shape == x.shape[len(x.shape) - len(v.shape):])
            if suff:
                return suff.name, suff.mag, suff.param_dep
        shape = x.shape[-1:] if self.chance(0.6) else x.shape[1:] or x.shape
        if x.batch and shape == x.shape:
            shape = x.shape[1:]     # never the batch dim (maybe a scalar)
        p = self.new_param(shape, x.dtype, "bias")
        return p.name, p.mag, True

    def binary(self, x):
        ops = ["+", "-", "*", "/", "pow"] + ([] if self.smooth else ["max", "min"])
        op = self.r.choice(ops)
        b, bm, bdep = self.broadcast_partner(x)
        if self.chance(0.3) and op in "+-*" and b[0].isalpha():
            a_t, b_t = b, x.name     # the broadcast operand on the left
        else:
            a_t, b_t = x.name, b
        if op == "/":
            return f"{x.name} / ({self.pos(b)} + 1.0)", x.mag, bdep
        if op == "pow":
            e = self.r.choice(["2.0", "0.5", f"tanh({b})"]) if b[0].isalpha() else "2.0"
            return (f"pow({self.pos(x.name)} + 0.5, {e})", (x.mag * x.mag + 0.5) ** 2,
                    bdep and b in e)
        if op in ("max", "min"):
            if self.train:
                # a tie routes the gradient by a rule, so operands tied up
                # to rounding (h and h + g, g a zeros bias a step moved by
                # 1e-11 of noise, + on one mesh and - on the other) send
                # each mesh's gradient a different way (seen: seed 4609, a
                # cross-entropy gradient summing to 0 or to 5e-3): the
                # right operand is kept a quarter apart from anything the
                # program's inits make equal to it
                b_t = f"({b_t} + 0.25)"
            return f"{op}({a_t}, {b_t})", max(x.mag, bm + (0.25 if self.train else 0.0)), bdep
        mag = x.mag * bm if op == "*" else x.mag + bm
        return f"{a_t} {op} {b_t}", mag, bdep

    def select(self, x):
        """where and the comparisons (LANGUAGE.md §12). A sharded run sums
        in another order, and its rounding can flip a comparison of values
        equal up to rounding: so a float condition is x against a partner
        in a form whose two branches meet where it flips (max or min
        written with where, a leaky relu), or a bool input, which no
        rounding moves. i32 values compare exactly."""
        if x.dtype == "i32":
            op = self.r.choice(["==", "!=", "<", ">="])
            return f"where({x.name} {op} 1, {x.name}, 0)", x.mag, x.param_dep
        roll = self.r.random()
        if roll < 0.35 and x.shape and not self.pipelined and not self.indent:
            shape = x.shape[-1:] if self.chance(0.6) else x.shape[1:] or x.shape[-1:]
            m = self.fresh("m")
            self.out.insert(self.input_end(), f"input {m} : {self.typetext('bool', shape)}")
            b, bm, bdep = self.broadcast_partner(x)
            a_t, b_t = (x.name, b) if self.chance(0.5) else (b, x.name)
            if self.chance(0.3):
                a_t = f"{a_t} * cast({m}, {x.dtype})"
            return f"where({m}, {a_t}, {b_t})", max(x.mag, bm), bdep
        if self.smooth:
            return None     # the forms below have kinks
        op = self.r.choice([">", ">=", "<", "<="])
        if roll < 0.6:
            k = self.r.choice(["0.1", "0.5", "0.25"])
            big, small = x.name, f"{k} * {x.name}"
            t = "0.0"
            if self.train:
                # a leaky relu's gradient jumps at its kink, and a value
                # that is 0 up to rounding (seed 2578248: the last column
                # of a cumsum along a layernorm's rows, which sum to 0)
                # takes one branch or the other by the order of its sums:
                # in training the kink is at -0.3, a value no structure
                # makes, the branches still meeting there
                t = "-0.3"
                small = f"({k} * {x.name} - {0.3 * (1 - float(k)):g})"
            if op in ("<", "<="):
                big, small = small, big
            return f"where({x.name} {op} {t}, {big}, {small})", x.mag + 0.3, False
        b, bm, bdep = self.broadcast_partner(x)
        if self.train:
            b = f"({b} + 0.25)"     # apart from a zeros bias, as max and min (binary)
        return f"where({x.name} {op} {b}, {x.name}, {b})", max(x.mag, bm + 0.25), bdep

    def matmul(self, x):
        if len(x.shape) < 1 or (self.pipelined and x.batch and len(x.shape) < 2):
            return None     # (a pipeline never contracts the batch dim)
        k = x.shape[-1]
        roll = self.r.random()
        if roll < 0.05 and len(x.shape) == 2 and not self.pipelined:
            # a 1-D left operand: [K] @ [K, N] -> [N]
            w = self.new_param([x.shape[0]], x.dtype)
            return f"{w.name} @ {x.name}", x.mag * 2, x.shape[1:], True
        if roll < 0.15 and len(x.shape) >= 2 and not (self.pipelined and
                                                      "pipe-matvec" in self.avoid):
            # a 1-D right operand: the last dim is contracted away
            w = self.new_param([k], x.dtype)
            return f"{x.name} @ {w.name}", x.mag * w.mag * k ** 0.5, x.shape[:-1], True
        if roll < 0.3 and len(x.shape) == 3 and not self.pipelined_block:
            # batched: [B, M, K] @ [B, K, N] with a value as the right operand
            other = self.pick(lambda v: v.dtype == x.dtype and len(v.shape) == 3 and
                              v.shape[0] == x.shape[0] and v.shape[1] == k)
            if other:
                shape = x.shape[:-1] + [other.shape[2]]
                return (f"{x.name} @ {other.name}", x.mag * other.mag * k ** 0.5 / 2, shape,
                        x.param_dep or other.param_dep)
        if (x.dtype in ("bf16", "f16") and self.train and len(x.shape) >= 2 and
                self.chance(0.5)):
            # an MLP, gelu(x @ w1 + b1) @ w2, its hidden width a multiple of
            # 8 on every rank: in 16-bit training the gelu runs in the first
            # matmul's cuBLASLt epilogue, its operand stored (GELU_AUX), and
            # the backward's gelu_grad in the data-gradient matmul's (DGELU)
            h = 8 * self.unit
            w1 = self.new_param([k, h], x.dtype)
            b1 = self.new_param([h], x.dtype, kind="bias")
            n = self.r.choice(self.dims)
            w2 = self.new_param([h, n], x.dtype)
            return (f"gelu({x.name} @ {w1.name} + {b1.name}) @ {w2.name}", x.mag * 4,
                    x.shape[:-1] + [n], True)
        if self.train and len(x.shape) >= 2 and self.chance(0.2):
            # a pre-norm linear layer, layernorm(x, g, b) @ w: the backward
            # sums dy over the rows for the bias's gradient and dy times
            # the normalized rows for the gain's, the first in the second's
            # kernel (a sibling sum: passes/fuse.c's join_siblings), under
            # data parallelism its all-reduce moved after the second
            # (passes/siblings.c)
            got = self.norm(x, bias=True)
            if got:
                if x.param_dep and self.chance(0.5):
                    # a residual block over a hidden value, x + ln(x) @ w,
                    # as a transformer's: the norm's input gradient
                    # (passes/norm_grad.c) takes the residual's add, and
                    # its gain and bias sums partial sums in its kernel
                    # over runs of rows (passes/norm_cols.c)
                    w = self.new_param([k, k], x.dtype)
                    return (f"{x.name} + {got[0]} @ {w.name}", x.mag + got[1] * 2, x.shape,
                            True)
                n = self.r.choice(self.dims)
                w = self.new_param([k, n], x.dtype)
                return f"{got[0]} @ {w.name}", got[1] * 2, x.shape[:-1] + [n], True
        n = self.r.choice(self.dims)
        w = self.new_param([k, n], x.dtype)
        return f"{x.name} @ {w.name}", x.mag * 2, x.shape[:-1] + [n], True

    def reduce(self, x):
        if len(x.shape) < 2:
            return None
        lo = 1 if x.batch and self.pipelined else 0
        axis = self.r.randrange(lo, len(x.shape))
        f = self.r.choice(["sum", "mean"] + ([] if self.smooth else ["amax"]))
        keep = self.chance(0.3)
        ax = axis if self.chance(0.6) else axis - len(x.shape)
        shape = list(x.shape)
        if keep:
            shape[axis] = 1
        else:
            del shape[axis]
        mag = x.mag * (x.shape[axis] if f == "sum" else 1)
        kd = ", keepdims = true" if keep else ""
        return f"{f}({x.name}, axis = {ax}{kd})", mag, shape

    def softmax(self, x):
        if not x.shape:
            return None
        lo = 1 if x.batch and self.pipelined else 0
        if len(x.shape) <= lo:
            return None
        axis = self.r.randrange(lo, len(x.shape))
        if axis == len(x.shape) - 1 and self.chance(0.5):
            return f"softmax({x.name})", 1.0, x.shape
        return f"softmax({x.name}, axis = {axis})", 1.0, x.shape

    def norm(self, x, bias=False):
        """A layernorm or rmsnorm of x (bias: a layernorm with a bias)."""
        if not x.shape or (self.pipelined and x.batch and len(x.shape) < 2):
            return None
        if self.train and x.row_param:
            # a layernorm is blind to a shift of its rows and both norms
            # all but blind to a scale of them, so a scalar param that only
            # shifts or scales the normalized value has a gradient of
            # rounding noise, which AdamW scales into different steps on
            # different meshes (seen: seed 408460, h - g2 into a
            # layernorm, g2 1.0004 on one mesh and 0.9951 on the other)
            return None
        d = x.shape[-1]
        g = self.new_param([d], x.dtype, "gain")
        if bias or self.chance(0.5):
            b = self.new_param([d], x.dtype, "bias")
            # eps bounds how much a near-constant row's rounding noise is
            # amplified (1/sqrt(eps)); the defaults (1e-5, 1e-6) let f32
            # noise through at 300x to 1000x (seen: a layernorm of rows
            # made by softmax, attention and rmsnorm, 7.2e-5 apart)
            eps = self.lowp_eps(x, self.r.choice([", eps = 1e-3", ", eps = 1e-2"]))
            return f"layernorm({x.name}, {g.name}, {b.name}{eps})", 4.0 * g.mag + b.mag, x.shape
        eps = self.lowp_eps(x, self.r.choice([", eps = 1e-3", ", eps = 1e-2"]))
        return f"rmsnorm({x.name}, {g.name}{eps})", 4.0 * g.mag, x.shape

    def lowp_eps(self, x, eps):
        """bf16 and f16 round a near-constant row (saturated tanh, say) to
        noise of 1e-2 of its values, which eps 1e-3 still amplifies into a
        sign flip when meshes round differently (seen: a bf16 layernorm
        -0.46 against 0.86 after two microbatches' gradients). In f32, a
        norm in a repeated block amplifies a near-constant row's rounding
        by up to 1/sqrt(eps) at every repetition, forward and backward:
        1e-2 there (seen: seed 1960523, rows clamped by a where to one value
        into 5 layernorm layers of eps 1e-3, AdamW: outputs 1.5e-3 apart
        after 2 steps, when 2 ulps more on the input moved them 6.7e-4)."""
        if x.dtype in ("bf16", "f16"):
            return ", eps = 0.1"
        return ", eps = 1e-2" if self.in_block else eps

    def transpose(self, x):
        if len(x.shape) < 2:
            return None
        lo = 1 if x.batch and self.pipelined else 0
        rest = list(range(lo, len(x.shape)))
        if len(rest) < 2:
            return None
        perm = list(range(lo)) + self.r.sample(rest, len(rest))
        if perm == list(range(len(x.shape))):
            perm[-1], perm[-2] = perm[-2], perm[-1]
        shape = [x.shape[p] for p in perm]
        return f"transpose({x.name}, [{', '.join(map(str, perm))}])", x.mag, shape

    def reshape(self, x):
        if len(x.shape) < 2:
            return None
        shape = list(x.shape)
        lo = 1 if x.batch and self.pipelined else 0
        if len(shape) - lo >= 2 and self.chance(0.5):
            i = self.r.randrange(lo, len(shape) - 1)     # merge two dims
            shape[i:i + 2] = [shape[i] * shape[i + 1]]
        else:
            i = self.r.randrange(lo, len(shape))         # split one dim
            f = self.r.choice([2, self.unit]) if shape[i] % (2 * self.unit) == 0 else 0
            if not f or shape[i] // f < 1:
                return None
            shape[i:i + 1] = [shape[i] // f, f]
        if len(shape) > 4:
            return None
        return f"reshape({x.name}, [{', '.join(self.dimtext(n) for n in shape)}])", x.mag, shape

    def cast(self, x):
        if not self.lowp:
            return None
        to = self.r.choice([d for d in ["f32", "bf16", "f16"] if d != x.dtype])
        return f"cast({x.name}, {to})", x.mag, x.shape, to

    def attention(self, x):
        if "attention" in self.avoid or len(x.shape) < 2:
            return None
        causal = self.chance(0.6) and "attn-causal-split" not in self.avoid
        # context parallelism: x's sequence dim split over an axis, three
        # times in ten outside pipelines (the queries split along S, the
        # keys and values gathered), drawn by a generator of its own so
        # that a seed's program is otherwise the one it was
        cr = random.Random(f"context {self.seed} {x.name}")
        if len(x.shape) >= 3 and not self.pipelined and cr.random() < 0.3:
            axes = [a for a in self.axes
                    if a != "pp" and self.size[a] > 1 and x.shape[-2] % self.size[a] == 0]
            if axes:
                ent = ["_"] * len(x.shape)
                ent[-2] = cr.choice(axes)
                y = copy.copy(x)
                y.name = f"{x.name}_cp"
                self.emit(f"{y.name} = {x.name} shard({', '.join(ent)})")
                x = y
        # q, k, v of x's shape [..., S, d] through three projections, or x
        # itself; a large x goes through tanh first, for scores of hundreds
        # make softmax a near-argmax whose near-ties f32 rounding decides
        # (seen: h @ h then attention, 5e-5 apart)
        d = x.shape[-1]
        base = x.name if x.mag <= 4 else f"tanh({x.name})"
        if x.dtype != "f32" and self.chance(0.5):
            # heads of 16 or 32, the widths whose 16-bit attention and its
            # backward run on tensor cores (WMMA; the programs' own widths
            # are mostly below 16), projected back to d after
            hw, vw = self.r.choice([16, 32]), self.r.choice([16, 32])
            wq = self.new_param([d, hw], x.dtype)
            wk = self.new_param([d, hw], x.dtype)
            wv = self.new_param([d, vw], x.dtype)
            wo = self.new_param([vw, d], x.dtype)
            causal_text = "" if causal and self.chance(0.5) else \
                f", causal = {'true' if causal else 'false'}"
            # grouped-query heads on tensor cores: k and v from the first
            # half (or first one) of a [B, H, S, d] value's heads
            kvb = base
            if len(x.shape) == 4 and x.shape[1] % 2 == 0 and self.chance(0.3):
                g = self.r.choice([1, x.shape[1] // 2])
                kvb = f"{x.name}[:, :{self.dimtext(g)}]"
                kvb = kvb if x.mag <= 4 else f"tanh({kvb})"
            return (f"attention({base} @ {wq.name}, {kvb} @ {wk.name}, {kvb} @ {wv.name}"
                    f"{causal_text}) @ {wo.name}", x.mag * 2, x.shape)
        # grouped-query attention (LANGUAGE.md §12): k and v of a [B, H, S,
        # d] value from its first G heads, G dividing H (1: multi-query),
        # and sometimes twice as many key positions as queries (the two
        # halves joined), where the causal mask is aligned to the end. A
        # [B, S, d] value is viewed as [B, 2, S/2, d] for it, and the
        # result viewed back.
        kv, longer, back = base, False, None
        gqa = len(x.shape) == 4 or (len(x.shape) == 3 and x.shape[1] % 2 == 0)
        if gqa and self.chance(0.5):
            src = x.name
            if len(x.shape) == 3:
                b, sq = x.shape[0], x.shape[1]
                src = self.fresh()
                self.emit(f"{src} = reshape({x.name}, [{self.dimtext(b)}, 2, "
                          f"{self.dimtext(sq // 2)}, {self.dimtext(d)}])")
                base = src if x.mag <= 4 else f"tanh({src})"
                back = [b, sq, d]
            heads = 2 if back else x.shape[1]
            g = self.r.choice(sorted({1, heads // 2 if heads % 2 == 0 else 1}))
            kv = f"{src}[:, :{self.dimtext(g)}]"
            if x.mag > 4:
                kv = f"tanh({kv})"
            if self.chance(0.3):
                kv, longer = f"concat([{kv}, {kv}], axis = 2)", True
        if self.chance(0.5):
            names = []
            for src in (base, kv, kv):
                w = self.new_param([d, d], x.dtype)
                names.append(f"{src} @ {w.name}")
            q, k, v = names
        else:
            q, k, v = base, kv, kv
        # causal defaults to true
        c = "" if causal and self.chance(0.5) else f", causal = {'true' if causal else 'false'}"
        # a scale, and an additive mask over [S, S] (the scores made whole)
        if self.chance(0.25):
            c += f", scale = {self.r.choice(['0.25', '0.5'])}"
        if self.chance(0.2) and not longer:
            n = x.shape[-2] // 2 if back else x.shape[-2]
            m = self.new_param([n, n], x.dtype)
            c += f", mask = {m.name}"
        if back:
            dims = ", ".join(self.dimtext(n) for n in back)
            return f"reshape(attention({q}, {k}, {v}{c}), [{dims}])", x.mag * 2, x.shape
        return f"attention({q}, {k}, {v}{c})", x.mag * 2, x.shape

    def slicing(self, x):
        """Indexing, concat and split (LANGUAGE.md §12) along a dim that is
        not a pipeline's batch: a slice, an integer index that removes the
        dim, a rotation (the dim's two parts joined the other way round),
        or a split whose pieces are joined back in another order."""
        lo = 1 if x.batch and self.pipelined else 0
        dims = [d for d in range(lo, len(x.shape)) if x.shape[d] >= 2]
        if not dims:
            return None
        d = self.r.choice(dims)
        n = x.shape[d]
        k = n // 2 if n % 2 == 0 and self.chance(0.6) else self.r.randrange(1, n)
        pre = ":, " * d
        ax = d if self.chance(0.6) else d - len(x.shape)
        roll = self.r.random()
        if roll < 0.3:   # a slice, bounds from either end
            a = self.r.choice([f"{k}:", f"-{n - k}:", f":{k}", f":-{n - k}"])
            size = n - k if a.startswith(f"{k}:") or a.startswith("-") else k
            shape = x.shape[:d] + [size] + x.shape[d + 1:]
            return f"{x.name}[{pre}{a}]", shape
        if roll < 0.45 and len(x.shape) >= 2 and not (x.batch and d == 0):
            i = self.r.choice([k, k - n])
            return f"{x.name}[{pre}{i}]", x.shape[:d] + x.shape[d + 1:]
        if roll < 0.75:
            return (f"concat([{x.name}[{pre}{k}:], {x.name}[{pre}:{k}]], axis = {ax})",
                    list(x.shape))
        a, b = self.fresh(), self.fresh()
        self.emit(f"{a}, {b} = split({x.name}, [{k}, {n - k}], axis = {ax})")
        return f"concat([{b}, {a}], axis = {ax})", list(x.shape)

    def selecting(self, x):
        """cumsum of x, or of an input: topk, gather at an argmax, one_hot
        of an argmax (LANGUAGE.md §12). The indices come from inputs only:
        they are the same bits on every mesh, where a computed value's
        near-ties could be broken another way by sums in another order
        (and outside blocks, which see only their arguments). Returns
        (text, shape, dtype, param_dep, batch) or None: what is made from
        an input holds the batch whatever x is (seed 2627107: a topk of an
        input, read after a pipeline beside a per-step carry, was taken for
        a per-step value and normalised over its rows)."""
        lo = 1 if x.batch and self.pipelined else 0
        dims = [d for d in range(lo, len(x.shape)) if x.shape[d] >= 2]
        roll = self.r.random()
        if roll < 0.35 and dims and x.dtype != "i32":
            d = self.r.choice(dims)
            return f"cumsum({x.name}, axis = {d})", list(x.shape), x.dtype, x.param_dep, x.batch
        if self.indent:     # a block sees only its arguments
            return None
        xi = self.r.choice(self.inputs)
        lo = 1 if self.pipelined else 0
        dims = [d for d in range(lo, len(xi.shape)) if xi.shape[d] >= 2]
        if not dims:
            return None
        d = self.r.choice(dims)
        kept = xi.shape[:d] + [1] + xi.shape[d + 1:]
        am = f"argmax({xi.name}, axis = {d})"
        # a per-step x (a per-step carry, a param's rows) gathered at an
        # input's per-microbatch indices pairs its rows with the batch's,
        # which a pipeline refuses (seed 2702073: a carry read after the
        # pipeline, its 8 rows against the microbatch's)
        if (roll < 0.55 and x.shape == xi.shape and x.dtype == xi.dtype and
                (x.batch or not self.pipelined)):
            ids = f"reshape({am}, [{', '.join(self.dimtext(n) for n in kept)}])"
            return f"gather({x.name}, {ids}, axis = {d})", kept, x.dtype, x.param_dep, True
        if roll < 0.8 and len(xi.shape) - 1 >= lo + 1 and xi.shape[-1] >= 2:
            k = self.r.choice([1, 2, min(3, xi.shape[-1])])
            v, i = self.fresh(), self.fresh()
            self.emit(f"{v}, {i} = topk({xi.name}, {k})")
            return v, xi.shape[:-1] + [k], xi.dtype, False, True
        if self.train:
            # one_hot rows are exact 0s and 1s, often constant along a row
            # once summed: a norm of them, in a block that cannot see where
            # its argument came from, has gradients of rounding noise, which
            # AdamW scales into steps (seen: seed 650438, a layernorm bias
            # 0.0 on one mesh, -2.2e-4 on the other); one_hot has no
            # gradient, so training programs go without
            return None
        n = self.r.choice([2, 3, xi.shape[d]])
        return f"one_hot({am}, {n})", xi.shape[:d] + xi.shape[d + 1:] + [n], "f32", False, True

    # ---- statements ----
    def statement(self, allow_param=True):
        x = self.pick()
        if x is None:
            return
        kinds = ["unary", "binary", "binary", "matmul", "matmul", "reduce", "softmax", "norm",
                 "transpose", "reshape", "cast", "attention", "slicing", "selecting", "select"]
        if self.train:
            kinds.append("prenorm")
        for _ in range(8):
            kind = self.r.choice(kinds)
            res = None
            dtype, batch = x.dtype, x.batch
            if kind == "unary":
                t, m = self.unary(x)
                # no gradient reaches a param through stop_gradient
                res = (t, m, x.shape, x.param_dep and not t.startswith("stop_gradient("))
            elif kind == "binary":
                t, m, dep = self.binary(x)
                res = (t, m, x.shape, x.param_dep or dep)
            elif kind == "select":
                got = self.select(x)
                if got:
                    res = (got[0], got[1], x.shape, x.param_dep or got[2])
            elif kind == "matmul":
                if self.train and not x.param_dep and self.chance(0.3):
                    # a hidden value rather than an input: a gradient
                    # reaches the ops over it (a norm's input gradient)
                    x = self.pick(lambda v: v.param_dep and v.shape) or x
                    dtype, batch = x.dtype, x.batch
                got = self.matmul(x)
                if got:
                    res = got
            elif kind in ("reduce", "softmax", "transpose", "reshape"):
                got = getattr(self, kind)(x)
                if got:
                    res = (got[0], got[1], got[2], x.param_dep)
            elif kind == "prenorm":
                # a transformer's pre-norm residual block over a hidden
                # value, x + norm(x) @ w
                h = self.pick(lambda v: v.param_dep and len(v.shape) >= 2 and v.batch and
                              not v.row_param)
                got = self.norm(h, bias=self.chance(0.7)) if h else None
                if got:
                    x = h
                    dtype, batch = x.dtype, x.batch
                    w = self.new_param([x.shape[-1], x.shape[-1]], x.dtype)
                    res = (f"{x.name} + {got[0]} @ {w.name}", x.mag + got[1] * 2, x.shape, True)
            elif kind == "norm":
                if self.train and not x.param_dep and self.chance(0.7):
                    x = self.pick(lambda v: v.param_dep and v.shape) or x
                    dtype, batch = x.dtype, x.batch
                got = self.norm(x)
                if got:
                    res = (got[0], got[1], got[2], True)
            elif kind == "slicing":
                got = self.slicing(x)
                if got:
                    res = (got[0], x.mag, got[1], x.param_dep)
            elif kind == "selecting":
                got = self.selecting(x)
                if got:
                    cum = got[0].startswith("cumsum")
                    n = x.shape[int(got[0].rsplit("axis = ", 1)[1].rstrip(")"))] if cum else 1
                    res = (got[0], x.mag * n if got[3] or cum else 4.0, got[1], got[3])
                    dtype, batch = got[2], got[4]
            elif kind == "cast":
                got = self.cast(x)
                if got:
                    res = (got[0], got[1], got[2], x.param_dep)
                    dtype = got[3]
            elif kind == "attention":
                if self.pipelined and len(x.shape) < 3:
                    continue
                got = self.attention(x)
                if got:
                    res = (got[0], got[1], got[2], x.param_dep or "@" in got[0])
            if res:
                break
        if not res:
            return
        text, mag, shape, dep = res
        # the gain over x is bounded by how much the op grows the size; a
        # tanh (tame) bounds the size but not the slope, so the gain stays
        gain = x.gain * max(1.0, mag / max(x.mag, 1e-6))
        text, mag = self.tame(text, mag)
        name = self.fresh()
        ann = ""
        if shape and self.chance(0.25):
            ann = self.annotation(shape, 1.0, keep_batch=self.batch_axis if batch and
                                  self.pipelined else None)
        self.emit(f"{name} = {text}{ann}")
        self.pool.append(Value(name, dtype, shape, mag, dep, batch))
        self.pool[-1].centred = text.startswith("layernorm(")
        self.pool[-1].row_param = (bool(set(re.findall(r"\b[gw]\d+\b", text)) &
                                        self.scalar_params) and
                                   any(f" {o} " in text for o in "+-*/"))
        self.pool[-1].gain = gain
        # (an op may read another value than x: topk, a gather)
        self.pool[-1].norm_dx = dep and bool(re.search(rf"\b{x.name}\b", text)) and (
            x.norm_dx or (x.param_dep and "norm(" in text))

    def to_shape(self, x, shape, dtype):
        """An expression of x brought to shape (same rank, last dims differ
        at most) and dtype: for a block's return and residuals."""
        t = x.name
        if x.dtype != dtype:
            t = f"cast({t}, {dtype})"
        if x.shape != shape:
            if len(x.shape) != len(shape):
                return None
            if x.shape[:-1] != shape[:-1]:
                return None
            w = self.new_param([x.shape[-1], shape[-1]], dtype)
            t = f"{t} @ {w.name}"
        return t

    # ---- the program ----
    def mesh(self):
        n = self.r.choice([1, 2, 2, 3, 3, 4])
        if self.pipelined:
            n = max(n, 2)
        limit = self.r.choice([4, 8, 8, 8, 16])
        while True:
            sizes = [self.r.choice([1, 2, 2, 3, 4]) for _ in range(n)]
            prod = 1
            for s in sizes:
                prod *= s
            if 1 < prod <= limit:
                break
        names = self.r.sample(AXIS_NAMES, n)
        if self.pipelined:
            names[self.r.randrange(n)] = "pp"
        self.axes = names
        self.size = dict(zip(names, sizes))
        return "x".join(map(str, sizes))

    def lcm_unit(self):
        u = 1
        for a in self.axes:
            if a != "pp":
                u *= self.size[a]
        return u

    def generate(self):
        self.pipelined = "pipeline" not in self.avoid and (self.chance(0.2) or
                                                           "only-pipeline" in self.avoid)
        self.train = "train" not in self.avoid and self.chance(0.5 if not self.pipelined else 0.7)
        self.pipelined_block = False
        self.in_block = False
        # bf16/f16 somewhere (low-precision inputs, or casts). Rounding there
        # is coarse enough to flip a near tie, so a low-precision training
        # program is smooth: no relu, abs, max, min or amax, whose gradient
        # jumps at a tie (forward-only programs keep them: their values
        # are continuous there).
        self.lowp = "lowp" not in self.avoid and self.chance(0.3)
        self.smooth = self.lowp and self.train
        mesh = self.mesh()
        self.unit = self.lcm_unit()
        while self.unit < 4:
            self.unit *= 2
        u = self.unit
        many = "few-microbatches" in self.avoid
        self.micro = self.r.choice([16, 32] if many else [1, 2, 4, 8]) if self.pipelined else 1
        if self.pipelined:
            self.sched = self.r.choice(["gpipe", "1f1b", "interleaved"])
            if self.sched == "interleaved":
                # Megatron's rule: microbatches a multiple of the stages
                self.micro = self.size["pp"] * self.r.choice([4, 8] if many else [1, 2])
        B = u * self.micro * self.r.choice([1, 2])
        D = u * self.r.choice([1, 2, 3, 4])
        H = u * self.r.choice([1, 2])
        while D * u > 64 and D > u:
            D -= u
        self.dims = sorted({D, H, 2 * u})
        self.consts = {}
        out = []
        head = [f"# generated by tests/diff/gen.py", f"# diff-mesh: {mesh}"]
        if self.pipelined:
            head.append("# diff-ref: unpipelined")
        # the backward reads what the forward gathered (shardc
        # --keep-gathered), checked against the unsharded run
        keep = self.train and self.chance(0.3)
        self.out = out
        self.indent = ""
        axes_decl = ", ".join(self.axes)
        if self.chance(0.2):
            axes_decl = ", ".join(f"{a} = {self.size[a]}" for a in self.axes)
        out.append(f"mesh {axes_decl}")
        self.consts = {B: "B", D: "D"}
        if H not in self.consts:
            self.consts[H] = "H"
        lets = [(v, n) for n, v in self.consts.items()]
        if self.chance(0.15):
            # the first constant's value from the command line (-D), over
            # a `let` that says otherwise
            name, value = lets[0]
            head.append(f"# diff-define: {name}={value}")
            lets[0] = (name, value * 2)
        out.append("let " + ", ".join(f"{n} = {v}" for n, v in lets))
        self.batch_axis = "_"
        dp_like = [a for a in self.axes if a != "pp" and self.size[a] > 1 and B % self.size[a] == 0]
        if dp_like and self.chance(0.7):
            self.batch_axis = self.r.choice(dp_like)
        self.pool = []
        self.ids = {}
        self.early = []
        self.param_names = []
        # inputs
        n_in = self.r.choice([1, 1, 2, 3])
        lowp = self.lowp and self.chance(0.6)
        dtype0 = self.r.choice(["bf16", "f16"]) if lowp else "f32"
        for i in range(n_in):
            rank = self.r.choice([2, 2, 3])
            shape = [B] + [self.r.choice(self.dims) for _ in range(rank - 1)]
            ann = self.batch_annotation(shape, 0.8)
            name = f"x{i}"
            out.append(f"input {name} : {self.typetext(dtype0, shape)}{ann}")
            self.pool.append(Value(name, dtype0, shape, 4.0))
        self.inputs = list(self.pool)
        if self.chance(0.3):
            # an embedding from i32 ids
            V = self.r.choice(self.dims)
            rank = self.r.choice([1, 2])
            shape = [B] + ([self.r.choice(self.dims)] if rank == 2 else [])
            ann = self.batch_annotation(shape, 0.7)
            out.append(f"input ids : {self.typetext('i32', shape)}{ann}")
            self.ids["ids"] = V
            t = self.new_param([V, self.r.choice(self.dims)], dtype0)
            self.emb = (t.name, V, self.params_shape_last(t), dtype0)
            e = self.fresh()
            ix = self.index_arithmetic(out, shape, V)
            out.append(f"{e} = embedding({t.name}, {ix})")
            self.pool.append(Value(e, dtype0, shape + [self.params_shape_last(t)], 1.0, True))
        pre = self.r.randrange(1, 5)
        for _ in range(pre):
            self.statement()
        if self.pipelined or self.chance(0.3):
            self.block_section()
        post = self.r.randrange(0, 4)
        for _ in range(post):
            self.statement()
        self.finish()
        if keep and any(l.startswith("train ") for l in out):  # a loss was made
            head.append("# diff-flags: --keep-gathered")
        # a quarter of the programs with a matmul are checked again with
        # their f32 matmuls as bf16 parts (shardc --f32-matmul bf16x3),
        # against the unsharded run of f32 matmuls; drawn apart from the
        # program (its own generator), so that a seed makes the program it
        # made before
        if any(" @ " in l for l in out) and random.Random(f"parts {self.seed}").random() < 0.25:
            head.append("# diff-variant: --f32-matmul bf16x3")
        head += self.option_variants(out)
        head += self.resume(out, mesh)
        # and 3 in 10 programs read a batch of inputs per step (its own
        # generator too)
        if random.Random(f"batches {self.seed}").random() < 0.3:
            head.append("# diff-inputs: batches")
        head += [f"# diff-ids: {n} {v}" for n, v in sorted(self.ids.items())]
        return "\n".join(head + [self.lexical(l) for l in out]) + "\n"

    def index_arithmetic(self, out, shape, V):
        """Half the embeddings read ids made from the input's by i32
        arithmetic (drawn by a generator of its own, so that a seed makes
        the program it made before but for these lines), each map keeping
        [0, V) inside [0, V): division by a constant, by a tensor of ids
        plus 1 or by a broadcast row of arange plus 1, wrapping products,
        max, min, comparisons picked by where, and the ids reversed. Their
        name, or `ids` as it was."""
        g = random.Random(f"i32 {self.seed}")
        if g.random() >= 0.5:
            return "ids"
        n = shape[-1]
        last = self.dimtext(n) if len(shape) == 2 else None
        terms = [
            lambda x: f"{x} / {g.randrange(2, 5)}",
            lambda x: f"{x} / ({x} / 4 + 1)",
            lambda x: f"(3 * {x} + 1) / 4",
            lambda x: f"max({x} - {g.randrange(1, 4)}, {x} / 2)",
            lambda x: f"min({x}, {x} * 2)",
            lambda x: f"where({x} > {g.randrange(0, 3)}, {x} - 1, {x})",
            lambda x: f"({V} - 1) - {x}",
        ]
        if last:
            terms.append(lambda x: f"{x} / (arange({last}) + 1)")
        x = "ids"
        for _ in range(g.choice([1, 1, 2])):
            x = g.choice(terms)(x if x == "ids" else f"({x})")
        out.append(f"ix = {x}")  # not fresh(): the later names stay
        return "ix"

    def option_variants(self, out):
        """Variants of shardc's options that must not change what a program
        computes, each drawn by a generator of its own (so a seed's program
        is the same with or without them): gradient buckets small enough
        to cut a program's gradients into several, or none (--bucket-mb;
        generated gradients are a few hundred bytes to a few KiB, so the
        default 25 MiB makes one bucket of them all); a pipeline written
        unrolled rather than in loop form (--unroll); every block of a
        training program recomputed in the backward (--recompute); a
        pipeline on another schedule (--schedule) or with fewer
        microbatches (--microbatches), against the same unpipelined
        reference."""
        r = random.Random(f"options {self.seed}")
        trains = any(l.startswith("train ") for l in out)
        variants = []
        piped = self.pipelined and getattr(self, "pipeline_line", None) in out
        if piped and r.random() < 0.3:
            stages = self.size["pp"]
            others = [s for s in ("gpipe", "1f1b") if s != self.sched]
            if self.sched != "interleaved" and self.pipe_reps >= 2 * stages and \
                    self.micro % stages == 0:
                others.append("interleaved(2)")
            variants.append(f"# diff-variant: --schedule {r.choice(others)}")
        if piped and r.random() < 0.3:
            # a divisor of the count (the batch splits into it); on the
            # interleaved schedule, still a multiple of the stages
            step = self.size["pp"] if self.sched == "interleaved" else 1
            fewer = [m for m in range(step, self.micro, step) if self.micro % m == 0]
            if fewer:
                variants.append(f"# diff-variant: --microbatches {r.choice(fewer)}")
        if trains and r.random() < 0.3:
            mb = r.choice(["0", "0.0002", "0.001", "0.004"])
            variants.append(f"# diff-variant: --bucket-mb {mb}")
        if self.pipelined and r.random() < 0.3:
            variants.append("# diff-variant: --unroll")
        if trains and r.random() < 0.15:
            variants.append("# diff-variant: --recompute")
        return variants

    def resume(self, out, mesh):
        """For 3 in 10 training programs, a checkpoint saved by one plan and
        resumed by another (diffcheck's diff-resume), drawn by a generator of
        its own: between the program's mesh and the reference, either way,
        or between its mesh and the same mesh with some of its axes of size
        1 (every annotation still divides; a pipeline with fewer stages, or
        one), either way."""
        r = random.Random(f"resume {self.seed}")
        if not any(l.startswith("train ") for l in out) or r.random() >= 0.3:
            return []
        sizes = [int(x) for x in mesh.split("x")]
        wide = [i for i, x in enumerate(sizes) if x > 1]
        if wide and r.random() < 0.5:
            ones = set(r.sample(wide, r.randrange(1, len(wide) + 1)))
            other = "x".join("1" if i in ones else str(x) for i, x in enumerate(sizes))
        else:
            other = "ref"
        ends = ["mesh", other]
        r.shuffle(ends)
        return [f"# diff-resume: {ends[0]} {ends[1]}"]

    def lexical(self, line):
        """The same statement, sometimes with a comment after it or broken
        over two lines inside an open bracket (LANGUAGE.md §2)."""
        if self.chance(0.05):
            line += "   # a comment"
        i = line.find(", ")
        if i > 0 and line.count("(", 0, i) > line.count(")", 0, i) and self.chance(0.08):
            line = line[:i + 1] + "\n" + " " * 8 + line[i + 2:]
        return line

    def params_shape_last(self, t):
        return t.shape[-1]

    def block_section(self):
        """A block with params, called in a `repeat` (over pp when
        pipelined) or once or twice outside one."""
        x = self.pick(lambda v: v.batch and len(v.shape) >= 2)
        if x is None:
            return
        shape, dtype = x.shape, x.dtype
        bname = self.fresh("blk")
        outer, outer_pool = self.out, self.pool
        body = []
        self.out, self.indent = body, "    "
        self.pool = [Value("h", dtype, shape, 4.0, False, True)]
        # a second argument: another value of the caller's (not in a
        # pipeline, whose stages would all read it)
        extra = None
        if not self.pipelined and self.chance(0.3):
            extra = self.r.choice(outer_pool)
            self.pool.append(Value("e", extra.dtype, extra.shape, extra.mag, False, extra.batch))
        # a second carry (LANGUAGE.md §8 and §12: `h, g = f(h, g)` in a
        # repeat, over pp too, where both cross the stages): one of the
        # caller's values of h's rank and leading dims, carried beside h,
        # or (a third of them) a per-step one: a param of h's shape without
        # the batch, which h reads at the block's start and which the
        # block updates from itself alone (reading h's batch would make it
        # a batch reduction, which pipelining refuses); drawn by a
        # generator of its own
        g0, gstep = None, False
        cr = random.Random(f"carry2 {self.seed} {bname}")
        if extra is None and cr.random() < 0.25:
            gstep = len(shape) >= 2 and cr.random() < 0.35
            cands = [v for v in outer_pool if len(v.shape) == len(shape) and
                     v.shape[:-1] == shape[:-1] and v.name != x.name]
            g0 = Value("", dtype, shape[1:], 1.0, True, False) if gstep else \
                cr.choice(cands) if cands else x
            self.pool.append(Value("g", g0.dtype, g0.shape, 4.0, False, g0.batch))
            if gstep:
                # the body reads h only through this
                hg = self.fresh()
                self.emit(f"{hg} = h + g * 0.25")
                self.pool = [v for v in self.pool if v.name != "h"]
                self.pool.append(Value(hg, dtype, shape, 5.0, False, True))
        self.pipelined_block = self.pipelined
        self.in_block = True
        for _ in range(self.r.randrange(1, 4)):
            self.statement()
        self.in_block = False
        last = self.pool[-1]
        ret = self.to_shape(last, shape, dtype)
        gain = last.gain * (2.0 if ret is not None and last.shape != shape else 1.0)
        out_mag = last.mag  # the result's magnitude from an h of 4
        if ret is None or not last.param_dep:
            # every block holds a param, so the carry depends on one
            w = self.new_param([shape[-1], shape[-1]], dtype)
            gain = (gain if ret is not None else 1.0) * 2.0
            out_mag = (out_mag if ret is not None else 4.0) * 2.0
            ret = f"{ret or 'h'} @ {w.name}"
        if gain > 8.0 and dtype == "f32":
            # a repeated block multiplies its input's rounding by its gain
            # at every repetition. With a gain near 64 (sum(h) over 16
            # columns, then a 1-to-16 weight of std 1), 8 residual layers
            # turned one f32 ulp of input noise into 4.5e-5 of an adam
            # moment, and a sharded run's other summation order into 2.2e-4
            # (seed 42673; 6 layers pass): the block is scaled to a gain of
            # about 2, a matmul's
            ret = f"({ret}) * {2.0 / gain:.3g}"
            out_mag *= 2.0 / gain
        elif gain > 1.0 and dtype != "f32":
            # in f16 and bf16 the tolerance is some 20 units in the last
            # place (f32's, some 800), so a repeated block gets no gain to
            # spend: h * 3 then a matmul (a gain near 6) over 8 layers
            # turned the one f16 ulp a split contraction's rounded partial
            # sums leave (0.002 at 3.9) into 0.04 (seed 1800426 on 2x1 and
            # 2x4; 4 layers pass, and the model in f32): the block is scaled
            # to a gain of about 1
            ret = f"({ret}) * {1.0 / gain:.3g}"
            out_mag /= gain
        # a residual step adds the block's result to the carry at every
        # repetition (up to 16): bounded by tanh, the carry grows by at most
        # 1 a step, not 2x, which would amplify f32 rounding past any
        # tolerance (seen: 12 linear residual layers, 2.5e-5 apart)
        residual = self.chance(0.5)
        ret = f"tanh({ret})" if residual or self.chance(0.5) else ret
        # a second result (LANGUAGE.md §12: `-> (T1, T2)`, `a, b = f(x)`)
        # for a block called outside a repeat: one of its values, drawn by
        # a generator of its own
        aux = None
        bounded = ret.startswith("tanh(")
        mr = random.Random(f"results {self.seed} {bname}")
        if g0 is not None:
            # the second result is the next g: half of g, and the first
            # result brought to g's shape, scaled to at most a half, so
            # neither carry grows a difference from one repetition to the
            # next by more than the first result's own gain
            r = self.fresh()
            self.emit(f"{r} = {ret}")
            rmag = 1.0 if bounded else max(out_mag, 1.0)
            if gstep:
                wg = self.new_param([g0.shape[-1], g0.shape[-1]], dtype)
                ret = f"{r}, tanh(g * 0.5 + g @ {wg.name} * 0.5)"
            else:
                t = self.to_shape(Value(r, dtype, shape, rmag), g0.shape, g0.dtype)
                ret = f"{r}, tanh(g * 0.5 + {t} * {0.5 / rmag:.3g})"
        elif not self.pipelined and mr.random() < 0.3:
            cands = [v for v in self.pool if v.shape and v.name not in ("h", "e")]
            if cands:
                aux = mr.choice(cands)
                ret += f", {aux.name}"
        self.emit(f"return {ret}")
        self.out, self.indent, self.pool = outer, "", outer_pool
        self.pipelined_block = False
        tt = self.typetext(dtype, shape)
        args = f"h : {tt}"
        if g0 is not None:
            args += f", g : {self.typetext(g0.dtype, g0.shape)}"
        if extra is not None:
            args += f", e : {self.typetext(extra.dtype, extra.shape)}"
        # a recompute block (LANGUAGE.md §12) when training: its values
        # made again in the backward, which must change no bit
        rc = "recompute " if self.train and self.chance(0.3) else ""
        rt = tt if aux is None else f"({tt}, {self.typetext(aux.dtype, aux.shape)})"
        if g0 is not None:
            rt = f"({tt}, {self.typetext(g0.dtype, g0.shape)})"
        self.out.append(f"{rc}block {bname}({args}) -> {rt} {{")
        self.out.extend(body)
        self.out.append("}")
        carry = self.fresh()
        # the block's body was written for an h of magnitude 4: a larger
        # carry is scaled by a power of two (exact) to 4 first. A cumsum
        # of magnitude 32 fed 8 residual layers of attention whose scores
        # then made softmax a near-argmax: 1 ulp on a third of the inputs
        # moved the unsharded run's own trained params 6.6e-4, and the
        # sharded run's sums in another order 7.0e-4, against a tolerance
        # of 3.2e-4 (seed 2603451 --avoid only-pipeline, reduced to 1x1x2)
        start, start_mag = x.name, x.mag
        if x.mag > 4:
            k = 1
            while x.mag / 2 ** k > 4:
                k += 1
            start, start_mag = f"{x.name} * {2.0 ** -k!r}", x.mag / 2 ** k
        self.out.append(f"{carry} = {start}")
        call = f"{bname}({carry}" + (f", {extra.name})" if extra is not None else ")")
        second = self.fresh() if aux is not None else None
        if g0 is not None:
            # g starts scaled like h (by a power of two, to magnitude 4)
            second = self.fresh()
            if gstep:
                g0 = self.new_param(g0.shape, dtype)
            gstart = g0.name
            if g0.mag > 4:
                k = 1
                while g0.mag / 2 ** k > 4:
                    k += 1
                gstart = f"{g0.name} * {2.0 ** -k!r}"
            self.out.append(f"{second} = {gstart}")
            call = f"{bname}({carry}, {second})"
        def step_of(reps):
            if second is not None:
                # the results bound apart; a residual adds the first after
                if not residual:
                    return f"{carry}, {second} = {call}"
                part = self.fresh()
                step = f"{part}, {second} = {call}\n{carry} = {carry} + {part}"
                if dtype != "f32":
                    c = 8.0 ** (1.0 / reps) - 1.0
                    if c < 1.0:
                        step += f" * {c:.3g}"
                return step
            if not residual:
                return f"{carry} = {call}"
            if dtype == "f32":
                return f"{carry} = {carry} + {call}"
            # a residual step x + tanh(f(x)) doubles a difference near 0,
            # where tanh's slope is 1, at every repetition: in f16 the one
            # ulp a split contraction's rounded partial sums leave at a
            # value near 0 became 0.144 after 8 layers against a tolerance
            # of 0.143 (seed 2420676, v + tanh(v) on 2x1; 4 layers pass,
            # and the model in f32). The step is scaled so that the layers
            # together grow a difference at most 8x
            c = 8.0 ** (1.0 / reps) - 1.0
            if c >= 1.0:
                return f"{carry} = {carry} + {call}"
            return f"{carry} = {carry} + {call} * {c:.3g}"
        if second is not None and g0 is None:
            reps = self.r.choice([1, 2])
            for _ in range(reps):
                self.out.extend(step_of(reps).split("\n"))
        elif self.pipelined:
            stages = self.size["pp"]
            reps = stages * self.r.choice([1, 2])
            sched = self.sched
            if sched == "interleaved":
                v = self.r.choice([1, 2])
                reps = stages * v * self.r.choice([1, 2])
                sched = f"interleaved({v})"
                if self.train and reps > 8:
                    # 16 layers of attention and norms amplify the
                    # rounding of a split matmul's partial sums into
                    # gradients 3e-3 apart in f32 (seen; 8 layers pass,
                    # and so does the same model at lr 0.001)
                    reps = stages * v
            if self.chance(0.3):
                # a count the stages do not divide (LANGUAGE.md §12): the
                # split balances the stages' work, one repetition at least
                reps += self.r.randrange(1, stages) if stages > 1 else 0
            self.pipeline_line = f"pipeline microbatches {self.micro} schedule {sched}"
            self.pipe_reps = reps
            step = step_of(reps)
            if "\n" in step:
                self.out.append("repeat {reps} as layers over pp {{".format(reps=reps))
                self.out.extend("    " + line for line in step.split("\n"))
                self.out.append("}")
            else:
                self.out.append(f"repeat {reps} as layers over pp {{ {step} }}")
            self.after_pipe = True
        elif self.chance(0.6):
            reps = self.r.choice([1, 2, 3])
            self.out.append(f"repeat {reps} as layers {{")
            self.out.extend("    " + line for line in step_of(reps).split("\n"))
            self.out.append("}")
        else:
            reps = self.r.choice([1, 2])
            for _ in range(reps):
                self.out.extend(step_of(reps).split("\n"))
        # a residual carry grows by up to 1 a step (the block's tanh) from
        # its start: what reads it must know (seen: tanh of a 16-layer bf16
        # residual stream, -0.090 against -0.153, seed 910497 --avoid
        # only-pipeline, when the carry was taken for magnitude 4)
        # Without a residual or a closing tanh, the block's result is of
        # magnitude out_mag from an h of 4: a block that adds to h (h + g)
        # grows the carry by the difference at every repetition (seen:
        # h / (abs(g) + 1) + g over 10 layers, taken for magnitude 4, near
        # 13, seed 2070873)
        grow = 0.0 if bounded else max(0.0, out_mag - 4.0)
        mag = max(start_mag, 4.0) + reps if residual else 4.0 + reps * grow
        self.pool.append(Value(carry, dtype, shape, mag, True, True))
        if g0 is not None:
            self.pool.append(Value(second, g0.dtype, g0.shape, 1.0, True, g0.batch))
        elif second is not None:
            self.pool.append(Value(second, aux.dtype, aux.shape, aux.mag, aux.param_dep,
                                   aux.batch))
        if self.pipelined:
            # values from before the pipeline must not be read after it
            self.early = [v for v in self.pool if v.name not in (carry, second) and v.batch
                          and not v.name.startswith("x")]
            self.pool = [v for v in self.pool if v.name in (carry, second) or not v.batch]

    def finish(self):
        outs = []
        cands = [v for v in self.pool if v.shape and not v.name.startswith("x")]
        if self.pipelined:
            cands = [v for v in cands if v.batch]
        for v in self.r.sample(cands, min(len(cands), self.r.choice([1, 1, 2]))):
            outs.append(v.name)
        if self.pipelined and self.early and "pipe-early-output" not in self.avoid \
                and self.chance(0.3):
            outs.append(self.r.choice(self.early).name)
        if "io-names" not in self.avoid and self.chance(0.15):
            # an input or a param by its own name (LANGUAGE.md §12)
            names = [v.name for v in self.inputs] + self.param_names
            if self.pipelined:
                names = [] if self.train and "pipe-param-output" in self.avoid \
                    else self.param_names
            if names:
                outs.append(self.r.choice(names))
        if self.train:
            loss = self.loss()
            if loss:
                outs.append(loss)
        if not outs:
            v = self.pool[-1]
            outs.append(v.name)
        self.out.append(f"output {', '.join(dict.fromkeys(outs))}")
        if self.pipelined:
            self.out.append(self.pipeline_line)
        if self.train and "loss" in outs:
            self.out.append(self.train_line())

    def loss(self):
        x = None
        if self.train and self.chance(0.6):
            # past a norm of a hidden value, so that the loss's gradient
            # reaches the norm's input gradient (passes/norm_grad.c,
            # combine.c, norm_cols.c)
            x = self.pick(lambda v: v.norm_dx and v.shape and v.batch)
        if x is None:
            x = self.pick(lambda v: v.param_dep and v.shape and v.batch)
        if x is None:
            x = self.pick(lambda v: v.param_dep and v.shape)
        if x is None:
            return None
        t = x.name
        if x.dtype != "f32" and self.chance(0.5):
            t = f"cast({t}, f32)"
        kinds = ["mse", "ce"] + (["ce", "ce"] if getattr(self, "emb", None) else [])
        if not self.pipelined or "pipe-loss-reduce" not in self.avoid:
            kinds += ["mean", "sum"]
        kind = self.r.choice(kinds)
        if kind == "ce" and len(x.shape) < 2:
            kind = "mse"      # cross_entropy needs rows of logits
        if kind == "sum" and self.lowp:
            # in bf16 a sum loss of many terms of either sign is a small
            # result made of large partial sums, each rounded before they
            # are added: it differs between meshes by more than its
            # tolerance (seen: -0.90 against -1.13 over 16 ranks), and so
            # do weights after a step on its large gradients. A mean keeps
            # the terms' scale.
            kind = "mean"
        if kind in ("mean", "sum") and x.centred:
            # a layernorm's rows sum to its bias (times the gain's mean):
            # a mean or sum over them is all but constant in its input, so
            # every gradient behind it is rounding noise, which AdamW then
            # scales up into different steps on different meshes (seen:
            # seed 9008775, an f32 output 1.02x its tolerance after a step)
            kind = "mse"
        dtype = "f32" if t != x.name else x.dtype
        if kind == "mse":
            shape = x.shape
            ann = self.batch_annotation(shape, 0.6)
            self.out.insert(self.input_end(), f"input target : {self.typetext(dtype, shape)}{ann}")
            self.out.append(f"loss = mse({t}, target)")
        elif kind == "ce" and len(x.shape) >= 2:
            shape = x.shape[:-1]
            ann = self.batch_annotation(shape, 0.6)
            self.out.insert(self.input_end(), f"input labels : {self.typetext('i32', shape)}{ann}")
            self.ids["labels"] = x.shape[-1]
            emb = getattr(self, "emb", None)
            if emb and emb[3] == x.dtype and self.chance(0.7):
                # the output layer tied to the embedding (read on the first
                # stage and the last when pipelined: LANGUAGE.md §12), after
                # a projection to its width where x's differs
                self.ids["labels"] = emb[1]
                h = x.name
                if emb[2] != x.shape[-1]:
                    h = f"{h} @ {self.new_param([x.shape[-1], emb[2]], x.dtype).name}"
                t = f"{h} @ transpose({emb[0]})"
                if x.dtype != "f32":
                    t = f"cast({t}, f32)"
            self.out.append(f"loss = cross_entropy({t}, labels)")
        else:
            f = "mean" if kind != "sum" else "sum"
            e = t
            n = len(x.shape)
            for i in range(n):
                if self.chance(0.5):
                    g, ax = self.r.choice(["mean", f]), -1
                else:
                    g, ax = f, 0
                if kind == "sum" and i < n - 1:
                    # only the last reduction sums: a sum over thousands of
                    # elements makes gradients so large that one step moves
                    # weights far enough for f32 rounding to show (seen: a
                    # residual tanh stack 9.2e-5 apart, tolerance 8.9e-5)
                    g = "mean"
                e = f"{g}({e}, axis = {ax})"
            self.out.append(f"loss = {e}" if self.chance(0.6) else f"loss = 0.5 * {e}")
        return "loss"

    def input_end(self):
        i = 0
        for j, line in enumerate(self.out):
            if line.startswith("input ") or line.startswith("let ") or line.startswith("mesh "):
                i = j + 1
        return i

    def train_line(self):
        # AdamW's first steps move a weight by about lr * sign(g): in bf16
        # or f16, whose rounding flips the sign of a small gradient, the
        # weights of two meshes then differ by 2 lr (seen: a bf16 attention
        # output 0.15 apart after one step); low precision trains with sgd
        opt = self.r.choice(["sgd", "sgd_m"] + ([] if self.lowp else ["adamw"]))
        # and with a smaller step: deep bf16 stacks of saturating ops turn
        # a 1-ulp difference in a weight (two microbatches' gradients
        # rounded apart) into a different output after a step of 0.05
        # (seen: 0.79 against 1.65; it passes at 0.01, and in f32)
        lr = "0.01" if self.lowp else "0.05"
        if opt == "sgd":
            o = f"sgd(lr = {lr})"
        elif opt == "sgd_m":
            o = f"sgd(lr = {lr}, momentum = 0.9)"
        else:
            o = self.r.choice(["adamw(lr = 0.01, eps = 1e-3)",
                               "adamw(lr = 0.01, beta1 = 0.8, beta2 = 0.9, eps = 1e-2, wd = 0.1)"])
        z = ""
        axes = [a for a in self.axes if a != "pp"]
        if axes and self.chance(0.4):
            z = f" zero {self.r.choice([1, 2, 3])} over {self.r.choice(axes)}"
        # the gradients' global norm clipped (in a pipeline, summed over the
        # stages)
        if self.chance(0.3):
            o = o[:-1] + f", clip = {self.r.choice(['0.05', '0.5', '5.0'])})"
        # a learning-rate schedule
        if self.chance(0.2):
            o = o[:-1] + (f", warmup = {self.r.choice([0, 1, 2])}, decay = "
                          f"{self.r.choice(['cosine', 'linear', 'none'])}, steps = 3, "
                          f"min_lr = 0.001)")
        return f"train loss with {o}{z}"


def main(argv):
    if not argv or argv[0] in ("-h", "--help"):
        sys.stdout.write(__doc__)
        sys.exit(0 if argv else 2)
    avoid = []
    if len(argv) >= 3 and argv[1] == "--avoid":
        avoid = [a for a in argv[2].split(",") if a]
    sys.stdout.write(Gen(int(argv[0]), avoid).generate())


if __name__ == "__main__":
    main(sys.argv[1:])
