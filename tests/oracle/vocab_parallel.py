#!/usr/bin/python3
"""vocab_parallel.py: the PyTorch reference of tests/models/vocab_parallel.sh,
written by hand from the model file, through oracle.py's machinery:

    vocab_parallel.py DIR [--train STEPS] [NAME=VALUE ...]

writes DIR/params.safetensors, inputs.safetensors, expected.safetensors
(the outputs "loss" and "p") and with --train, train.safetensors, as
oracle.py does for the examples.
"""
import math
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import oracle  # noqa: E402


def data(c, gen):
    """Params larger than the model's own inits, so that every op matters."""
    D, H, V = c["D"], c["H"], c["V"]
    p = {
        "wte": torch.randn(V, D, generator=gen) * 0.5,
        "w1": torch.randn(D, H, generator=gen) / math.sqrt(D),
        "g1": 0.6 + 0.1 * torch.randn(H, generator=gen),
        "b1": 0.1 * torch.randn(H, generator=gen),
        "g2": 0.6 + 0.1 * torch.randn(H, generator=gen),
        "w2": torch.randn(H, D, generator=gen) / math.sqrt(H),
        "wlm": torch.randn(D, V, generator=gen) / math.sqrt(D),
    }
    shape = (c["B"], c["S"])
    i = {"tokens": torch.randint(0, V, shape, generator=gen, dtype=torch.int32),
         "targets": torch.randint(0, V, shape, generator=gen, dtype=torch.int32)}
    return p, i


def rmsnorm(x, g, eps=1e-6):
    return x * torch.rsqrt((x * x).mean(-1, keepdim=True) + eps) * g


def forward(c, P, i):
    V = c["V"]
    x = P["wte"][i["tokens"].long()]
    h = oracle.layernorm(x @ P["w1"], P["g1"], P["b1"])
    h = h - h.amax(-1, keepdim=True)
    p = torch.softmax(h, dim=-1)
    r = rmsnorm(h + p, P["g2"])
    x = x + r @ P["w2"]
    logits = x @ P["wlm"]
    loss = torch.nn.functional.cross_entropy(logits.reshape(-1, V),
                                             i["targets"].reshape(-1).long())
    return {"loss": loss, "p": p}


# the model's train line: train loss with sgd(lr = 0.1)
oracle.MODELS["vocab_parallel"] = (data, forward, ["loss", "p"],
                                   {"B": 4, "S": 8, "D": 32, "H": 64, "V": 128})
oracle.OPTIMIZERS["vocab_parallel"] = lambda ps: torch.optim.SGD(ps, lr=0.1)

if __name__ == "__main__":
    oracle.main([sys.argv[0], "vocab_parallel"] + sys.argv[1:])
