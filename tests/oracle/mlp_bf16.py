#!/usr/bin/python3
"""mlp_bf16.py: the PyTorch reference of tests/models/mlp_bf16.sh,
mlp_bf16_momentum.sh, mlp_f16.sh and mlp_bf16_pp.sh (bf16 or f16 params
trained through f32 master weights), written by hand from the model files,
through oracle.py's machinery:

    mlp_bf16.py MODEL DIR [--train STEPS] [NAME=VALUE ...]

MODEL is mlp_bf16 (adamw), mlp_bf16_momentum (sgd with momentum),
mlp_f16 (mlp_bf16 with f16 params and activations) or mlp_bf16_pp (4
residual layers of mlp_bf16's, unpipelined: its pipeline changes only the
rounding); the model names its dtype (DTYPES below). Writes DIR/params.safetensors (the params in that
dtype), inputs.safetensors (x and y, f32), expected.safetensors (the
outputs "out" and "loss") and, with --train, train.safetensors: "loss"
(f32[STEPS]), every param after STEPS steps (in its dtype), its f32 master
"opt.NAME.master" and the f32 optimizer state (opt.NAME.m and .v, or
.momentum). Mixed-precision training as Micikevicius et al. (2018) define
it: the forward and backward run on the low-precision params, each op in
f32 arithmetic with its result rounded to the dtype (op() below writes
the casts out, and autograd then rounds every gradient at the same
places), the gradients are cast to f32, torch.optim updates
the f32 masters, and the params are the masters rounded to the dtype.
"""
import functools
import math
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import oracle  # noqa: E402

# The dtype of each model's params and activations (its loss is f32)
DTYPES = {"mlp_bf16": torch.bfloat16, "mlp_bf16_momentum": torch.bfloat16,
          "mlp_f16": torch.float16, "mlp_bf16_pp": torch.bfloat16}
oracle.DTYPES.setdefault(torch.float16, "F16")  # for write_safetensors


def data(c, gen, dtype):
    """Params larger than the model's own inits, so that every op matters:
    w1, b1 and w2, or with a constant L those of each layers.K.mlp."""
    B, D, H = c["B"], c["D"], c["H"]
    p = {}
    for pre in [f"layers.{k}.mlp." for k in range(c["L"])] if "L" in c else [""]:
        p[pre + "w1"] = (torch.randn(D, H, generator=gen) / math.sqrt(D)).to(dtype)
        p[pre + "b1"] = (torch.randn(H, generator=gen) * 0.1).to(dtype)
        p[pre + "w2"] = (torch.randn(H, D, generator=gen) / math.sqrt(H)).to(dtype)
    i = {"x": torch.randn(B, D, generator=gen), "y": torch.randn(B, D, generator=gen)}
    return p, i


def op(f, *xs):
    """f on tensors xs of one low-precision dtype, as shardrun's CPU backend
    computes it: in f32, the result rounded to that dtype. The casts are
    written out for bf16 too: PyTorch's own bf16 CPU kernels pick their
    path by the processor (on an AMD EPYC with AVX2 and no AVX-512, the
    second moments of mlp_bf16 came out 1.35e-5 away from shardrun's, over
    their atol of 1e-5, where earlier machines had agreed), so the oracle
    would depend on the machine it runs on."""
    return f(*(x.float() for x in xs)).to(xs[0].dtype)


def mlp(P, pre, x):
    """gelu(x @ w1 + b1) @ w2 with the params named pre + "w1", ..., in
    x's dtype."""
    w1, b1, w2 = (P[pre + n].to(x.dtype) for n in ("w1", "b1", "w2"))
    return op(torch.matmul, op(oracle.gelu, op(torch.add, op(torch.matmul, x, w1), b1)), w2)


def forward(c, P, i, dtype):
    """The outputs of mlp_bf16.sh (and the others of one layer), given
    params P (rounded to dtype, as the model's are) and inputs i."""
    out = mlp(P, "", i["x"].to(dtype))
    loss = ((out.float() - i["y"]) ** 2).mean()
    return {"out": out, "loss": loss}


def forward_pp(c, P, i, dtype):
    """The outputs of mlp_bf16_pp.sh, unpipelined: L residual layers."""
    h = i["x"].to(dtype)
    for k in range(c["L"]):
        h = op(torch.add, h, mlp(P, f"layers.{k}.mlp.", h))
    return {"loss": ((h.float() - i["y"]) ** 2).mean()}


# The `train` lines, written out by hand:
#   mlp_bf16.sh, mlp_f16.sh, mlp_bf16_pp.sh:
#                         adamw(lr = 1e-3, beta1 = 0.9, beta2 = 0.95, eps = 1e-3, wd = 0.1)
#   mlp_bf16_momentum.sh: sgd(lr = 0.05, momentum = 0.9)
OPTIMIZERS = {
    "mlp_bf16": lambda ps: torch.optim.AdamW(ps, lr=1e-3, betas=(0.9, 0.95), eps=1e-3,
                                             weight_decay=0.1),
    "mlp_bf16_momentum": lambda ps: torch.optim.SGD(ps, lr=0.05, momentum=0.9),
}
OPTIMIZERS["mlp_f16"] = OPTIMIZERS["mlp_bf16_pp"] = OPTIMIZERS["mlp_bf16"]
# torch.optim's states under shardrun's names (opt.NAME.m, ...)
STATES = {"exp_avg": "m", "exp_avg_sq": "v", "momentum_buffer": "momentum"}
CONSTS = {"B": 16, "D": 32, "H": 64}
# mlp_bf16_pp.sh: its forward, outputs and constants
PIPELINED = {"mlp_bf16_pp": (forward_pp, ["loss"], dict(CONSTS, L=4))}


def train(model, consts, params, inputs, steps):
    """STEPS mixed-precision steps on one batch; returns the list of (name,
    tensor) of train.safetensors."""
    dtype = DTYPES[model]
    masters = {n: p.float().requires_grad_() for n, p in params.items()}
    opt = OPTIMIZERS[model](list(masters.values()))
    losses = []
    for _ in range(steps):
        P = {n: m.detach().to(dtype).requires_grad_() for n, m in masters.items()}
        loss = oracle.MODELS[model][1](consts, P, inputs)["loss"]
        loss.backward()
        losses.append(loss.item())
        for n, m in masters.items():
            m.grad = P[n].grad.float()
        opt.step()
        opt.zero_grad()
    out = [("loss", torch.tensor(losses, dtype=torch.float32))]
    for n, m in sorted(masters.items()):
        out.append((n, m.detach().to(dtype)))
        out.append((f"opt.{n}.master", m.detach().clone()))
        for key, suffix in STATES.items():
            if key in opt.state[m]:
                out.append((f"opt.{n}.{suffix}", opt.state[m][key].float()))
    return out


for name in OPTIMIZERS:
    fwd, outputs, consts = PIPELINED.get(name, (forward, ["out", "loss"], CONSTS))
    oracle.MODELS[name] = (functools.partial(data, dtype=DTYPES[name]),
                           functools.partial(fwd, dtype=DTYPES[name]), outputs, consts)
    oracle.OPTIMIZERS[name] = OPTIMIZERS[name]

if __name__ == "__main__":
    model = sys.argv[1] if len(sys.argv) > 1 else ""
    if model not in OPTIMIZERS:
        sys.exit(__doc__)
    oracle.train = lambda _model, consts, params, inputs, steps: train(model, consts, params,
                                                                       inputs, steps)
    oracle.main(sys.argv)
