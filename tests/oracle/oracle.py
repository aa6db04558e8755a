#!/usr/bin/python3
"""oracle.py: an outside reference for shardrun (DESIGN.md §7).

PyTorch (Debian's python3-torch, run with Debian's /usr/bin/python3) computes
the forward pass of examples/mlp.sh, examples/transformer.sh,
examples/llama.sh or examples/moe.sh, and with
--train their training steps, written here by hand from the model files,
never from shardc's output:

    oracle.py MODEL DIR [--train STEPS [--clip C] [--schedule-lr W,DECAY,N,M]]
              [NAME=VALUE ...]

MODEL is mlp, transformer, llama or moe; NAME=VALUE overrides the model's
`let` constants (pass the same values to shardc with -D). llama's own
`train` line clips and schedules the learning rate, moe's clips: with
--train, oracle.py does the same (TRAIN_OPTIONS), from llama's WARMUP and
STEPS. Writes, in DIR:
    params.safetensors    every param, made here (seeded, larger than the
                          models' own inits so that every op matters)
    inputs.safetensors    every input
    expected.safetensors  the outputs PyTorch computes (float64, stored f32)
and with --train STEPS:
    train.safetensors     "loss": f32[STEPS], the loss of each step before
                          that step's update, and every param after STEPS
                          updates under its own name, with AdamW its moments
                          as opt.NAME.m and opt.NAME.v; float64 autograd,
                          the same batch at every step, the optimizer of the
                          model's `train` line (OPTIMIZERS below); with
                          --clip C, the gradients clipped to a global L2
                          norm of C before each step
                          (torch.nn.utils.clip_grad_norm_), as the `train`
                          line's `clip = C` does (the norms before
                          clipping printed, one a step); with --schedule-lr,
                          the learning rate of step t set before it to
                          what `warmup = W, decay = DECAY, steps = N,
                          min_lr = M` gives (scheduled_lr, from
                          LANGUAGE.md §12's words)
"""
import json
import math
import os
import struct
import sys

import torch

DTYPES = {torch.float32: "F32", torch.int32: "I32", torch.bfloat16: "BF16"}


def write_safetensors(path, tensors):
    """tensors: list of (name, tensor); the format of safetensors 0.x."""
    header, blobs, offset = {}, [], 0
    for name, t in tensors:
        t = t.contiguous()
        # numpy has no bfloat16: its bits, as int16
        data = (t.view(torch.int16) if t.dtype == torch.bfloat16 else t).numpy().tobytes()
        header[name] = {"dtype": DTYPES[t.dtype], "shape": list(t.shape),
                        "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for b in blobs:
            f.write(b)
    os.replace(tmp, path)


def gelu(x):
    """The tanh approximation (LANGUAGE.md §7)."""
    return torch.nn.functional.gelu(x, approximate="tanh")


def layernorm(x, g, b, eps=1e-5):
    return torch.nn.functional.layer_norm(x, (x.shape[-1],), g, b, eps)


def mlp_data(c, gen):
    """examples/mlp.sh: its params and inputs, f32."""
    B, D = c["B"], c["D"]
    H = c.get("H", 4 * D)
    p = {
        "w1": torch.randn(D, H, generator=gen) / math.sqrt(D),
        "b1": torch.randn(H, generator=gen) * 0.1,
        "w2": torch.randn(H, D, generator=gen) / math.sqrt(H),
    }
    i = {"x": torch.randn(B, D, generator=gen), "y": torch.randn(B, D, generator=gen)}
    return p, i


def mlp_forward(c, P, i):
    """The outputs of examples/mlp.sh, given float64 params P and inputs i;
    "loss" is the trained one."""
    x, y = i["x"].double(), i["y"].double()
    out = gelu(x @ P["w1"] + P["b1"]) @ P["w2"]
    loss = ((out - y) ** 2).mean()
    return {"out": out, "loss": loss}


def transformer_data(c, gen):
    """examples/transformer.sh: its params and inputs (f32 and i32)."""
    B, S, D, V, L = c["B"], c["S"], c["D"], c["V"], c["L"]
    F = c.get("F", 4 * D)
    p = {"wte": torch.randn(V, D, generator=gen), "wpe": torch.randn(S, D, generator=gen) * 0.5}

    def lin(n, m):
        return torch.randn(n, m, generator=gen) / math.sqrt(n)

    for l in range(L):
        a, m = f"layers.{l}.attn.", f"layers.{l}.mlp."
        p[a + "ln_g"] = 1 + 0.1 * torch.randn(D, generator=gen)
        p[a + "ln_b"] = 0.1 * torch.randn(D, generator=gen)
        for w in ("wq", "wk", "wv", "wo"):
            p[a + w] = lin(D, D)
        p[m + "ln_g"] = 1 + 0.1 * torch.randn(D, generator=gen)
        p[m + "ln_b"] = 0.1 * torch.randn(D, generator=gen)
        p[m + "w1"], p[m + "b1"] = lin(D, F), 0.1 * torch.randn(F, generator=gen)
        p[m + "w2"], p[m + "b2"] = lin(F, D), 0.1 * torch.randn(D, generator=gen)
    p["lnf_g"] = 1 + 0.1 * torch.randn(D, generator=gen)
    p["lnf_b"] = 0.1 * torch.randn(D, generator=gen)
    p["wlm"] = lin(D, V) * 4
    tokens = torch.randint(0, V, (B, S), generator=gen, dtype=torch.int32)
    targets = torch.randint(0, V, (B, S), generator=gen, dtype=torch.int32)
    return p, {"tokens": tokens, "targets": targets}


def transformer_forward(c, P, i):
    """The outputs of examples/transformer.sh, given float64 params P and
    inputs i."""
    B, S, D, NH, V, L = c["B"], c["S"], c["D"], c["NH"], c["V"], c["L"]
    HD = D // NH
    tokens, targets = i["tokens"], i["targets"]
    x = P["wte"][tokens.long()] + P["wpe"]
    mask = torch.ones(S, S, dtype=torch.bool).tril()

    def heads(t):
        return t.reshape(B, S, NH, HD).transpose(1, 2)

    for l in range(L):
        a, m = f"layers.{l}.attn.", f"layers.{l}.mlp."
        h = layernorm(x, P[a + "ln_g"], P[a + "ln_b"])
        q, k, v = heads(h @ P[a + "wq"]), heads(h @ P[a + "wk"]), heads(h @ P[a + "wv"])
        s = (q @ k.transpose(-1, -2)) / math.sqrt(HD)
        s = s.masked_fill(~mask, float("-inf"))
        o = (torch.softmax(s, dim=-1) @ v).transpose(1, 2).reshape(B, S, D)
        x = x + o @ P[a + "wo"]
        h = layernorm(x, P[m + "ln_g"], P[m + "ln_b"])
        x = x + gelu(h @ P[m + "w1"] + P[m + "b1"]) @ P[m + "w2"] + P[m + "b2"]
    logits = layernorm(x, P["lnf_g"], P["lnf_b"]) @ P["wlm"]
    loss = torch.nn.functional.cross_entropy(logits.reshape(-1, V), targets.reshape(-1).long())
    return {"loss": loss}


def rmsnorm(x, g, eps):
    return x * torch.rsqrt((x * x).mean(-1, keepdim=True) + eps) * g


def llama_data(c, gen):
    """examples/llama.sh: its params and inputs (f32 and i32)."""
    S, D, H, G, V, L = c["S"], c["D"], c["H"], c["G"], c["V"], c["L"]
    E, F = D // H, c["F"]

    def lin(n, m):
        return torch.randn(n, m, generator=gen) / math.sqrt(n)

    # the embedding is the output layer too: rows of norm about 3 keep the
    # logits of unit-RMS features in a few units
    p = {"emb": torch.randn(V, D, generator=gen) * (3 / math.sqrt(D)),
         "norm": 1 + 0.1 * torch.randn(D, generator=gen)}
    for l in range(L):
        a, m = f"layers.{l}.attn.", f"layers.{l}.mlp."
        p[a + "norm"] = 1 + 0.1 * torch.randn(D, generator=gen)
        p[a + "wq"], p[a + "wk"], p[a + "wv"] = lin(D, H * E), lin(D, G * E), lin(D, G * E)
        p[a + "wo"] = lin(H * E, D)
        p[m + "norm"] = 1 + 0.1 * torch.randn(D, generator=gen)
        p[m + "w1"], p[m + "w3"], p[m + "w2"] = lin(D, F), lin(D, F), lin(F, D)
    tokens = torch.randint(0, V, (c["B"], S), generator=gen, dtype=torch.int32)
    targets = torch.randint(0, V, (c["B"], S), generator=gen, dtype=torch.int32)
    return p, {"tokens": tokens, "targets": targets}


def llama_attention(c):
    """The attention of examples/llama.sh (and moe.sh), as Hugging Face's
    LlamaModel computes it: rotate_half, the rotary tables of inv_freq =
    THETA^(-2i/E) repeated for both halves, each key/value head read by
    H / G query heads (repeat_kv). Returns attn(P, prefix, x)."""
    B, S, D, H, G = c["B"], c["S"], c["D"], c["H"], c["G"]
    E = D // H
    inv = 1.0 / (c["THETA"] ** (torch.arange(0, E, 2, dtype=torch.float64) / E))
    ang = torch.arange(S, dtype=torch.float64)[:, None] * inv[None, :]
    cos, sin = torch.cat([ang, ang], -1).cos(), torch.cat([ang, ang], -1).sin()
    mask = torch.ones(S, S, dtype=torch.bool).tril()

    def rotate_half(t):
        return torch.cat([-t[..., E // 2:], t[..., :E // 2]], -1)

    def heads(t, n):
        return t.reshape(B, S, n, E).transpose(1, 2)

    def attn(P, a, x):
        h = rmsnorm(x, P[a + "norm"], 1e-5)
        q, k, v = heads(h @ P[a + "wq"], H), heads(h @ P[a + "wk"], G), heads(h @ P[a + "wv"], G)
        q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
        k, v = k.repeat_interleave(H // G, dim=1), v.repeat_interleave(H // G, dim=1)
        s = (q @ k.transpose(-1, -2)) / math.sqrt(E)
        s = s.masked_fill(~mask, float("-inf"))
        o = (torch.softmax(s, dim=-1) @ v).transpose(1, 2).reshape(B, S, D)
        return o @ P[a + "wo"]
    return attn


def llama_forward(c, P, i):
    """The loss of examples/llama.sh, given float64 params P and inputs i,
    written as Hugging Face's LlamaModel computes it (llama_attention), the
    output layer the transposed embedding."""
    V, L = c["V"], c["L"]
    tokens, targets = i["tokens"].long(), i["targets"].long()
    attn = llama_attention(c)
    x = P["emb"][tokens]
    for l in range(L):
        a, m = f"layers.{l}.attn.", f"layers.{l}.mlp."
        x = x + attn(P, a, x)
        h = rmsnorm(x, P[m + "norm"], 1e-5)
        x = x + (torch.nn.functional.silu(h @ P[m + "w1"]) * (h @ P[m + "w3"])) @ P[m + "w2"]
    logits = rmsnorm(x, P["norm"], 1e-5) @ P["emb"].T
    loss = torch.nn.functional.cross_entropy(logits.reshape(-1, V), targets.reshape(-1))
    return {"loss": loss}


def moe_data(c, gen):
    """examples/moe.sh: its params and inputs. The router's weights are
    large enough that routing is uneven, so experts fill up and drop
    tokens."""
    S, D, H, G, V, L, X, F = c["S"], c["D"], c["H"], c["G"], c["V"], c["L"], c["X"], c["F"]
    E = D // H

    def lin(*shape):
        return torch.randn(*shape, generator=gen) / math.sqrt(shape[-2])

    p = {"emb": torch.randn(V, D, generator=gen) * (3 / math.sqrt(D)),
         "norm": 1 + 0.1 * torch.randn(D, generator=gen)}
    for l in range(L):
        a, m = f"layers.{l}.attn.", f"layers.{l}.moe."
        p[a + "norm"] = 1 + 0.1 * torch.randn(D, generator=gen)
        p[a + "wq"], p[a + "wk"], p[a + "wv"] = lin(D, H * E), lin(D, G * E), lin(D, G * E)
        p[a + "wo"] = lin(H * E, D)
        p[m + "norm"] = 1 + 0.1 * torch.randn(D, generator=gen)
        p[m + "wg"] = 2 * lin(D, X)
        p[m + "w1"], p[m + "w3"], p[m + "w2"] = lin(X, D, F), lin(X, D, F), lin(X, F, D)
    tokens = torch.randint(0, V, (c["B"], S), generator=gen, dtype=torch.int32)
    targets = torch.randint(0, V, (c["B"], S), generator=gen, dtype=torch.int32)
    return p, {"tokens": tokens, "targets": targets}


def moe_forward(c, P, i):
    """The loss of examples/moe.sh, written from its comments: llama.sh's
    attention; each token's top K experts by router logit, weighted by the
    softmax of those K logits; per sequence, each expert takes its first
    choices in token order and then its second choices, up to C tokens,
    and drops the rest; the expert a SwiGLU; plus 0.01 times the mean over
    layers of Switch's load-balancing term X * sum(share * mean prob), per
    sequence, averaged over the sequences."""
    B, S, D, V, L, X, K = c["B"], c["S"], c["D"], c["V"], c["L"], c["X"], c["K"]
    C = 5 * S * K // (4 * X)
    tokens, targets = i["tokens"].long(), i["targets"].long()
    attn = llama_attention(c)
    silu = torch.nn.functional.silu
    x = P["emb"][tokens]
    aux, dropped = 0.0, 0
    for l in range(L):
        x = x + attn(P, f"layers.{l}.attn.", x)
        m = f"layers.{l}.moe."
        h = rmsnorm(x, P[m + "norm"], 1e-5)
        logits = h @ P[m + "wg"]
        v, idx = torch.topk(logits, K, dim=-1)
        p = torch.softmax(v, dim=-1)
        rows, experts, weights = [], [], []
        for b in range(B):
            fill = [0] * X
            for k in range(K):
                for s in range(S):
                    e = int(idx[b, s, k])
                    if fill[e] < C:
                        fill[e] += 1
                        rows.append(b * S + s)
                        experts.append(e)
                        weights.append(p[b, s, k])
                    else:
                        dropped += 1
        hf = h.reshape(B * S, D)
        y = torch.zeros(B * S, D, dtype=h.dtype)
        for e in range(X):
            sel = [j for j in range(len(rows)) if experts[j] == e]
            t = hf[[rows[j] for j in sel]]
            out = (silu(t @ P[m + "w1"][e]) * (t @ P[m + "w3"][e])) @ P[m + "w2"][e]
            w = torch.stack([weights[j] for j in sel])[:, None]
            y = y.index_add(0, torch.tensor([rows[j] for j in sel]), w * out)
        x = x + y.reshape(B, S, D)
        share = torch.nn.functional.one_hot(idx, X).sum(-2).double().mean(1) / K  # [B, X]
        prob = torch.softmax(logits, dim=-1).mean(1)
        aux = aux + X * (share * prob).sum(-1).mean()
    out = rmsnorm(x, P["norm"], 1e-5) @ P["emb"].T
    loss = torch.nn.functional.cross_entropy(out.reshape(-1, V), targets.reshape(-1))
    return {"loss": loss + 0.01 * aux / L, "dropped": dropped}


# The `train` line of each model file, written out by hand:
#   mlp.sh:         train loss with sgd(lr = 0.01)      (momentum 0, wd 0)
#   transformer.sh: train loss with adamw(lr = 3e-4, beta1 = 0.9,
#                   beta2 = 0.95, eps = 1e-8, wd = 0.1)
OPTIMIZERS = {
    "mlp": lambda ps: torch.optim.SGD(ps, lr=0.01),
    "transformer": lambda ps: torch.optim.AdamW(ps, lr=3e-4, betas=(0.9, 0.95), eps=1e-8,
                                                weight_decay=0.1),
    "llama": lambda ps: torch.optim.AdamW(ps, lr=3e-4, betas=(0.9, 0.95), eps=1e-8,
                                          weight_decay=0.1),
    "moe": lambda ps: torch.optim.AdamW(ps, lr=3e-4, betas=(0.9, 0.95), eps=1e-8,
                                        weight_decay=0.1),
}

# The rest of a `train` line that oracle.py applies itself (the clip and
# the schedule): llama.sh's clip = 1.0, warmup = WARMUP, decay = cosine,
# steps = STEPS, min_lr = 3e-5, with WARMUP and STEPS from the constants.
TRAIN_OPTIONS = {
    "llama": lambda c: (1.0, (c["WARMUP"], "cosine", c["STEPS"], 3e-5)),
    "moe": lambda c: (1.0, None),
}

# torch.optim's states under shardrun's names (opt.NAME.m, opt.NAME.v)
STATES = {"exp_avg": "m", "exp_avg_sq": "v"}

MODELS = {
    "mlp": (mlp_data, mlp_forward, ["out", "loss"], {"B": 64, "D": 1024}),
    "transformer": (transformer_data, transformer_forward, ["loss"],
                    {"B": 8, "S": 128, "D": 256, "NH": 8, "V": 1024, "L": 4}),
    "llama": (llama_data, llama_forward, ["loss"],
              {"B": 8, "S": 128, "D": 256, "H": 8, "G": 2, "F": 688, "V": 1024, "L": 4,
               "THETA": 500000, "WARMUP": 100, "STEPS": 2000}),
    "moe": (moe_data, moe_forward, ["loss"],
            {"B": 8, "S": 64, "D": 128, "H": 8, "G": 2, "X": 4, "K": 2, "F": 256, "V": 256,
             "L": 2, "THETA": 10000}),
}


def scheduled_lr(lr, t, warmup, decay, steps, min_lr):
    """LANGUAGE.md §12: lr t / W for t <= W; for W < t < N, with f = (t - W) /
    (N - W), cosine M + (lr - M) (1 + cos(pi f)) / 2, linear lr + (M - lr) f,
    none lr; from t = N on, M (none: lr)."""
    if t <= warmup:
        return lr * t / warmup
    if decay == "none":
        return lr
    if t >= steps:
        return min_lr
    f = (t - warmup) / (steps - warmup)
    if decay == "cosine":
        return min_lr + (lr - min_lr) * (1 + math.cos(math.pi * f)) / 2
    return lr + (min_lr - lr) * f


def train(model, consts, params, inputs, steps, clip=0.0, schedule=None):
    """Runs STEPS optimizer steps in float64 on one batch; returns the list
    of (name, f32 tensor) of train.safetensors."""
    forward = MODELS[model][1]
    P = {k: v.double().requires_grad_() for k, v in params.items()}
    opt = OPTIMIZERS[model](list(P.values()))
    losses, norms = [], []
    lr0 = opt.param_groups[0]["lr"]
    for step in range(1, steps + 1):
        if schedule:
            for group in opt.param_groups:
                group["lr"] = scheduled_lr(lr0, step, *schedule)
        opt.zero_grad()
        out = forward(consts, P, inputs)
        loss = out["loss"]
        loss.backward()
        if "dropped" in out:
            print("step %d: %d expert choices dropped past capacity" % (step, out["dropped"]))
        losses.append(loss.item())
        if clip:
            norms.append(float(torch.nn.utils.clip_grad_norm_(list(P.values()), clip)))
        opt.step()
    out = [("loss", torch.tensor(losses, dtype=torch.float64).float())]
    if clip:
        print("gradient norms before clip = %g: %s" % (clip, ", ".join("%.6f" % n for n in norms)))
    for n, t in sorted(P.items()):
        out.append((n, t.detach().float()))
        state = opt.state[t]
        for key, suffix in STATES.items():
            if key in state:
                out.append((f"opt.{n}.{suffix}", state[key].float()))
    return out


def parse_args(argv):
    """argv -> (model, dir, consts, steps or 0, clip or 0); exits with the
    usage."""
    if len(argv) < 3 or argv[1] not in MODELS:
        sys.exit(__doc__)
    model, out_dir, steps, clip, schedule = argv[1], argv[2], 0, 0.0, None
    consts = dict(MODELS[model][3])
    rest = argv[3:]
    while rest:
        if rest[0] == "--train" and len(rest) > 1 and rest[1].isdigit() and int(rest[1]) > 0:
            steps, rest = int(rest[1]), rest[2:]
        elif rest[0] == "--clip" and len(rest) > 1 and float(rest[1]) > 0:
            clip, rest = float(rest[1]), rest[2:]
        elif rest[0] == "--schedule-lr" and len(rest) > 1 and len(rest[1].split(",")) == 4:
            w, d, n, m = rest[1].split(",")
            schedule, rest = (int(w), d, int(n), float(m)), rest[2:]
        elif "=" in rest[0] and not rest[0].startswith("-"):
            k, v = rest[0].split("=")
            consts[k] = int(v)
            rest = rest[1:]
        else:
            sys.exit(__doc__)
    if (clip or schedule) and not steps:
        sys.exit(__doc__)
    return model, out_dir, consts, steps, clip, schedule


def main(argv):
    model, out_dir, consts, steps, clip, schedule = parse_args(argv)
    data, forward, output_names, _ = MODELS[model]
    gen = torch.Generator().manual_seed(1234)
    params, inputs = data(consts, gen)
    outputs = forward(consts, {k: v.double() for k, v in params.items()}, inputs)
    if "dropped" in outputs:
        print("%d expert choices dropped past capacity" % outputs["dropped"])
    os.makedirs(out_dir, exist_ok=True)
    write_safetensors(os.path.join(out_dir, "params.safetensors"), sorted(params.items()))
    write_safetensors(os.path.join(out_dir, "inputs.safetensors"), sorted(inputs.items()))
    write_safetensors(os.path.join(out_dir, "expected.safetensors"),
                      [(n, outputs[n].float()) for n in output_names])
    if steps and model in TRAIN_OPTIONS:
        clip, schedule = TRAIN_OPTIONS[model](consts)
    if steps:
        write_safetensors(os.path.join(out_dir, "train.safetensors"),
                          train(model, consts, params, inputs, steps, clip, schedule)
                          if clip or schedule else train(model, consts, params, inputs, steps))


if __name__ == "__main__":
    main(sys.argv)
