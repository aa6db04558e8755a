#!/usr/bin/env python3
"""gpt2_torch.py: the training step of examples/transformer.sh, written
again in PyTorch, timed on the GPU: the reference side of bench/gpt2.

The model is the shard model's graph, op for op and param for param (same
names, shapes [in, out] and init std): token embedding wte [V, D] (std
0.02) plus a learned position embedding wpe [S, D] (std 0.01); L layers of
x = x + attn(x), x = x + mlp(x), each pre-norm (layernorm, eps 1e-5);
attn: q, k, v and o projections [D, D] without biases (std 0.02), causal
softmax(q k^T / sqrt(HD)) v over NH heads; mlp: [D, 4D] with a bias, gelu
(tanh approximation), [4D, D] with a bias; a final layernorm, an untied
lm head wlm [D, V] and the mean cross-entropy. AdamW on every param (lr
3e-4, betas 0.9, 0.95, eps 1e-8, wd 0.1), torch's fused implementation.
check_same_model.py checks it against shardrun (loss, gradients, a step).

Modes (--modes, a comma list; default all four):
  eager-f32     f32 throughout; TF32 off for matmuls and cuDNN
  eager-bf16    f32 params and optimizer, forward under
                torch.autocast(bfloat16): matmuls and attention in bf16,
                layernorm and the loss in f32 as autocast chooses; the
                backward follows the forward's dtypes
  compile-f32   eager-f32 with the model (forward and loss) through
  compile-bf16  torch.compile (default mode); the optimizer step stays
                fused AdamW, one multi-tensor kernel family

Each mode: random tokens and targets (one batch, reused every step), W
warmup steps (the first compiles), then N steps, each between two CUDA
events, with the loss read back after each step (as shardrun does). One
JSON line per mode: median and mean step ms, tokens/s (B*S over the
median), first and last loss. --profile adds, after the timing, a
markdown table of one more step's GPU kernels by torch.profiler.

Without a GPU: "skipped: no GPU" and exit 77. --device cpu and --tiny
(for checking the model without a GPU: tiny sizes, eager only, wall-clock
times) and --count (print the param count for the sizes, built on the
meta device, and exit) are for tests.
"""
import argparse
import json
import math
import statistics
import sys
import time

GPT2_SMALL = {"B": 8, "S": 1024, "D": 768, "NH": 12, "V": 50304, "L": 12}
TINY = {"B": 2, "S": 16, "D": 32, "NH": 4, "V": 64, "L": 2}
MODES = ["eager-f32", "eager-bf16", "compile-f32", "compile-bf16"]
ADAMW = {"lr": 3e-4, "betas": (0.9, 0.95), "eps": 1e-8, "weight_decay": 0.1}
EXIT_SKIP = 77


def closed_form_params(c):
    """examples/transformer.sh's parameter count, from its declarations."""
    d, f = c["D"], 4 * c["D"]
    attn = 2 * d + 4 * d * d                  # ln_g, ln_b, wq, wk, wv, wo
    mlp = 2 * d + d * f + f + f * d + d       # ln_g, ln_b, w1, b1, w2, b2
    return c["V"] * d + c["S"] * d + c["L"] * (attn + mlp) + 2 * d + d * c["V"]


def build_model(torch, c, device):
    """The GPT as an nn.Module on device ('meta' allocates nothing)."""
    nn, F = torch.nn, torch.nn.functional
    D, NH, S, V = c["D"], c["NH"], c["S"], c["V"]
    HD = D // NH

    def param(shape, init):
        t = torch.empty(shape, device=device)
        if init == "ones":
            t.fill_(1.0)
        elif init == "zeros":
            t.zero_()
        else:
            t.normal_(0.0, init)
        return nn.Parameter(t)

    def mm(x, w, b=None):
        # x @ w (+ b), w stored [in, out] as in the shard model; F.linear
        # takes [out, in], and the transposed view costs no copy (cuBLAS
        # reads it transposed, the bias in its epilogue)
        return F.linear(x, w.t(), b)

    def attention(q, k, v):
        if hasattr(F, "scaled_dot_product_attention"):  # torch >= 2.0
            return F.scaled_dot_product_attention(q, k, v, is_causal=True)
        # torch 1.x (the CPU check only): the same op written out
        s = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
        mask = torch.ones(s.shape[-2:], dtype=torch.bool, device=s.device).tril()
        return torch.softmax(s.masked_fill(~mask, float("-inf")), dim=-1) @ v

    class Attn(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln_g, self.ln_b = param(D, "ones"), param(D, "zeros")
            self.wq, self.wk = param((D, D), 0.02), param((D, D), 0.02)
            self.wv, self.wo = param((D, D), 0.02), param((D, D), 0.02)

        def forward(self, x):                          # x: [B, S, D]
            B = x.shape[0]
            h = F.layer_norm(x, (D,), self.ln_g, self.ln_b, 1e-5)
            q, k, v = (mm(h, w).view(B, S, NH, HD).transpose(1, 2)  # [B, NH, S, HD]
                       for w in (self.wq, self.wk, self.wv))
            a = attention(q, k, v).transpose(1, 2).reshape(B, S, D)
            return mm(a, self.wo)

    class Mlp(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln_g, self.ln_b = param(D, "ones"), param(D, "zeros")
            self.w1, self.b1 = param((D, 4 * D), 0.02), param(4 * D, "zeros")
            self.w2, self.b2 = param((4 * D, D), 0.02), param(D, "zeros")

        def forward(self, x):
            h = F.layer_norm(x, (D,), self.ln_g, self.ln_b, 1e-5)
            return mm(F.gelu(mm(h, self.w1, self.b1), approximate="tanh"), self.w2, self.b2)

    class Layer(nn.Module):
        def __init__(self):
            super().__init__()
            self.attn, self.mlp = Attn(), Mlp()

        def forward(self, x):
            x = x + self.attn(x)
            return x + self.mlp(x)

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte = param((V, D), 0.02)             # token embedding
            self.wpe = param((S, D), 0.01)             # position embedding
            self.layers = nn.ModuleList(Layer() for _ in range(c["L"]))
            self.lnf_g, self.lnf_b = param(D, "ones"), param(D, "zeros")
            self.wlm = param((D, V), 0.02)             # lm head, untied

        def forward(self, tokens, targets):            # i64 [B, S] each
            x = F.embedding(tokens, self.wte) + self.wpe
            for layer in self.layers:
                x = layer(x)
            logits = mm(F.layer_norm(x, (D,), self.lnf_g, self.lnf_b, 1e-5), self.wlm)
            return F.cross_entropy(logits.view(-1, V), targets.view(-1))

    return GPT()


def count_params(model):
    return sum(p.numel() for p in model.parameters())


def sizes(args):
    c = dict(TINY if args.tiny else GPT2_SMALL)
    for d in args.define:
        name, _, value = d.partition("=")
        if name not in c or not value.isdigit():
            sys.exit("gpt2_torch.py: error: -D %s: expected NAME=N with NAME one of %s"
                     % (d, ", ".join(c)))
        c[name] = int(value)
    if c["D"] % c["NH"]:
        sys.exit("gpt2_torch.py: error: D=%d is not a multiple of NH=%d" % (c["D"], c["NH"]))
    return c


class Timer:
    """Step times: CUDA events on the GPU, the wall clock on the CPU."""

    def __init__(self, torch, device):
        self.torch, self.cuda = torch, device == "cuda"

    def __call__(self, fn):
        torch = self.torch
        if not self.cuda:
            t0 = time.perf_counter()
            loss = fn().item()
            return (time.perf_counter() - t0) * 1e3, loss
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        loss = fn()
        end.record()
        end.synchronize()
        return start.elapsed_time(end), loss.item()


def make_step(torch, model, opt, mode, device, tokens, targets):
    kind, precision = mode.split("-")
    forward = torch.compile(model) if kind == "compile" else model

    def step():
        with torch.autocast(device, dtype=torch.bfloat16, enabled=precision == "bf16"):
            loss = forward(tokens, targets)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        return loss.detach()

    return step


def profile_table(torch, step, top):
    """One step under torch.profiler: its GPU kernels, the top by time."""
    from torch.profiler import ProfilerActivity, profile
    cuda = torch.cuda.is_available()
    acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    with profile(activities=acts) as prof:
        step()
        if cuda:
            torch.cuda.synchronize()
    # a kernel's own device time (torch 2.x's name, then 1.x's); ops have
    # none of their own, their kernels are rows of their own. On the CPU
    # (the check without a GPU) the ops' own CPU time instead.
    names = ("self_device_time_total", "self_cuda_time_total") if cuda else ("self_cpu_time_total",)

    def self_us(e):
        return next((getattr(e, n) for n in names if hasattr(e, n)), 0)

    rows = [(e.key, e.count, self_us(e) / 1e3) for e in prof.key_averages() if self_us(e) > 0]
    rows.sort(key=lambda r: -r[2])
    total = sum(r[2] for r in rows)
    share = lambda ms: 100 * ms / total if total > 0 else 0.0
    out = ["| kernel | launches | total ms | share |", "| --- | ---: | ---: | ---: |"]
    for name, count, ms in rows[:top]:
        name = name.replace("|", "\\|").replace("`", "'")
        name = name if len(name) <= 90 else name[:87] + "..."
        out.append("| `%s` | %d | %.3f | %.1f%% |" % (name, count, ms, share(ms)))
    rest = rows[top:]
    if rest:
        ms = sum(r[2] for r in rest)
        out.append("| (%d others) | %d | %.3f | %.1f%% |"
                   % (len(rest), sum(r[1] for r in rest), ms, share(ms)))
    out.append("| all | %d | %.3f | 100%% |" % (sum(r[1] for r in rows), total))
    return "\n".join(out)


def run_mode(torch, args, c, mode):
    device = args.device
    torch.manual_seed(args.seed)
    model = build_model(torch, c, device)
    # fused: one multi-tensor kernel family (torch 1.13 has none on the CPU)
    opt = torch.optim.AdamW(model.parameters(),
                            **(dict(ADAMW, fused=True) if device == "cuda" else ADAMW))
    g = torch.Generator(device=device).manual_seed(args.seed)
    tokens = torch.randint(0, c["V"], (c["B"], c["S"]), device=device, generator=g)
    targets = torch.randint(0, c["V"], (c["B"], c["S"]), device=device, generator=g)
    step = make_step(torch, model, opt, mode, device, tokens, targets)
    timer = Timer(torch, device)
    t0 = time.perf_counter()
    warm = [timer(step) for _ in range(args.warmup)]
    warm_s = time.perf_counter() - t0
    timed = [timer(step) for _ in range(args.steps)]
    ms = [t for t, _ in timed]
    median = statistics.median(ms)
    losses = [l for _, l in warm + timed]
    result = {
        "impl": "torch", "mode": mode, "device": device_name(torch, device),
        "torch": torch.__version__, "fp32_matmul": torch.get_float32_matmul_precision(),
        "sizes": c, "params": count_params(model),
        "warmup": args.warmup, "warmup_s": round(warm_s, 3), "steps": args.steps,
        "step_ms": [round(t, 3) for t in ms], "step_ms_median": round(median, 3),
        "step_ms_mean": round(statistics.mean(ms), 3),
        "tokens_per_s": round(c["B"] * c["S"] * 1e3 / median, 1),
        "loss_first": losses[0], "loss_last": losses[-1],
    }
    if device == "cuda":
        result["max_memory_gib"] = round(torch.cuda.max_memory_allocated() / 2**30, 2)
    print(json.dumps(result), flush=True)
    if args.profile:
        try:  # the timing is out already: a profiler failure only loses the table
            table = profile_table(torch, step, args.top)
        except Exception as e:  # noqa: BLE001 (any profiler failure)
            print("gpt2_torch.py: --profile failed: %r" % e, file=sys.stderr)
            return
        print("profile of one %s step (torch.profiler, GPU kernels):" % mode)
        print(table, flush=True)


def no_tf32(torch):
    """f32 means f32: no TF32 in matmuls or cuDNN (the bf16 modes have no
    f32 matmul). The legacy flags, though torch >= 2.9 deprecates them for
    fp32_precision: there a write through the new API makes the legacy
    getters raise, and inductor read them (pytorch/pytorch#189955)."""
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False


def device_name(torch, device):
    return torch.cuda.get_device_name(0) if device == "cuda" else "cpu"


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--modes", default=",".join(MODES),
                   help="comma list of %s (default: all)" % ", ".join(MODES))
    p.add_argument("--warmup", type=int, default=3, help="untimed steps first (default 3)")
    p.add_argument("--steps", type=int, default=5, help="timed steps (default 5)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--profile", action="store_true",
                   help="after the timing, a table of one step's GPU kernels")
    p.add_argument("--top", type=int, default=15, help="rows of the --profile table")
    p.add_argument("-D", dest="define", action="append", default=[], metavar="NAME=N",
                   help="a size, as shardc's -D (B, S, D, NH, V, L)")
    p.add_argument("--device", default="cuda", choices=["cuda", "cpu"], help=argparse.SUPPRESS)
    p.add_argument("--tiny", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--count", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    args.modes = args.modes.split(",")
    bad = [m for m in args.modes if m not in MODES]
    if bad:
        p.error("unknown mode %s (expected %s)" % (", ".join(bad), ", ".join(MODES)))
    if args.warmup < 1 or args.steps < 1:
        p.error("--warmup and --steps must be at least 1")
    return args


def main():
    args = parse_args()
    try:
        import torch
    except ImportError as e:
        sys.exit("gpt2_torch.py: error: cannot import torch (%s) with %s" % (e, sys.executable))
    c = sizes(args)
    if args.count:
        n = count_params(build_model(torch, c, "meta"))
        print(json.dumps({"sizes": c, "params": n, "closed_form": closed_form_params(c)}))
        return 0 if n == closed_form_params(c) else 1
    if args.device == "cuda" and not torch.cuda.is_available():
        print("skipped: no GPU (torch %s: torch.cuda.is_available() is false)" % torch.__version__)
        return EXIT_SKIP
    if args.device == "cpu" and any(m.startswith("compile") for m in args.modes):
        args.modes = [m for m in args.modes if not m.startswith("compile")]
    no_tf32(torch)
    for mode in args.modes:
        run_mode(torch, args, c, mode)
        if args.device == "cuda":
            torch.cuda.empty_cache()
            torch.cuda.reset_peak_memory_stats()
    return 0


if __name__ == "__main__":
    sys.exit(main())
