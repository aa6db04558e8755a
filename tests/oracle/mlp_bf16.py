#!/usr/bin/python3
"""mlp_bf16.py: the PyTorch reference of tests/models/mlp_bf16.sh and
mlp_bf16_momentum.sh (bf16 params trained through f32 master weights),
written by hand from the model files, through oracle.py's machinery:

    mlp_bf16.py MODEL DIR [--train STEPS] [NAME=VALUE ...]

MODEL is mlp_bf16 (adamw) or mlp_bf16_momentum (sgd with momentum).
Writes DIR/params.safetensors (the params in bf16), inputs.safetensors (x
and y, f32), expected.safetensors (the outputs "out" and "loss") and, with
--train, train.safetensors: "loss" (f32[STEPS]), every param after STEPS
steps (bf16), its f32 master "opt.NAME.master" and the f32 optimizer state
(opt.NAME.m and .v, or .momentum). Mixed-precision training as
Micikevicius et al. (2018) define it: the forward and backward run on the
bf16 params (PyTorch's bf16 CPU kernels: f32 arithmetic inside each op, the
result rounded to bf16), the bf16 gradients are cast to f32, torch.optim
updates the f32 masters, and the params are the masters rounded to bf16.
"""
import math
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import oracle  # noqa: E402


def data(c, gen):
    """Params larger than the model's own inits, so that every op matters."""
    B, D, H = c["B"], c["D"], c["H"]
    p = {
        "w1": (torch.randn(D, H, generator=gen) / math.sqrt(D)).bfloat16(),
        "b1": (torch.randn(H, generator=gen) * 0.1).bfloat16(),
        "w2": (torch.randn(H, D, generator=gen) / math.sqrt(H)).bfloat16(),
    }
    i = {"x": torch.randn(B, D, generator=gen), "y": torch.randn(B, D, generator=gen)}
    return p, i


def forward(c, P, i):
    """The outputs of the model, given params P (rounded to bf16, as the
    model's are) and inputs i."""
    w1, b1, w2 = (P[n].bfloat16() for n in ("w1", "b1", "w2"))
    h = oracle.gelu(i["x"].bfloat16() @ w1 + b1)
    out = h @ w2
    loss = ((out.float() - i["y"]) ** 2).mean()
    return {"out": out, "loss": loss}


# The `train` lines, written out by hand:
#   mlp_bf16.sh:          adamw(lr = 1e-3, beta1 = 0.9, beta2 = 0.95, eps = 1e-3, wd = 0.1)
#   mlp_bf16_momentum.sh: sgd(lr = 0.05, momentum = 0.9)
OPTIMIZERS = {
    "mlp_bf16": lambda ps: torch.optim.AdamW(ps, lr=1e-3, betas=(0.9, 0.95), eps=1e-3,
                                             weight_decay=0.1),
    "mlp_bf16_momentum": lambda ps: torch.optim.SGD(ps, lr=0.05, momentum=0.9),
}
# torch.optim's states under shardrun's names (opt.NAME.m, ...)
STATES = {"exp_avg": "m", "exp_avg_sq": "v", "momentum_buffer": "momentum"}
CONSTS = {"B": 16, "D": 32, "H": 64}


def train(model, consts, params, inputs, steps):
    """STEPS mixed-precision steps on one batch; returns the list of (name,
    tensor) of train.safetensors."""
    masters = {n: p.float().requires_grad_() for n, p in params.items()}
    opt = OPTIMIZERS[model](list(masters.values()))
    losses = []
    for _ in range(steps):
        P = {n: m.detach().bfloat16().requires_grad_() for n, m in masters.items()}
        loss = forward(consts, P, inputs)["loss"]
        loss.backward()
        losses.append(loss.item())
        for n, m in masters.items():
            m.grad = P[n].grad.float()
        opt.step()
        opt.zero_grad()
    out = [("loss", torch.tensor(losses, dtype=torch.float32))]
    for n, m in sorted(masters.items()):
        out.append((n, m.detach().bfloat16()))
        out.append((f"opt.{n}.master", m.detach().clone()))
        for key, suffix in STATES.items():
            if key in opt.state[m]:
                out.append((f"opt.{n}.{suffix}", opt.state[m][key].float()))
    return out


for name in OPTIMIZERS:
    oracle.MODELS[name] = (data, forward, ["out", "loss"], CONSTS)
    oracle.OPTIMIZERS[name] = OPTIMIZERS[name]

if __name__ == "__main__":
    model = sys.argv[1] if len(sys.argv) > 1 else ""
    if model not in OPTIMIZERS:
        sys.exit(__doc__)
    oracle.train = lambda _model, consts, params, inputs, steps: train(model, consts, params,
                                                                       inputs, steps)
    oracle.main(sys.argv)
