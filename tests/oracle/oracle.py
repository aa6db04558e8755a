#!/usr/bin/python3
"""oracle.py: an outside reference for shardrun (DESIGN.md §7).

PyTorch (Debian's python3-torch, run with Debian's /usr/bin/python3) computes
the forward pass of examples/mlp.sh or examples/transformer.sh, written here
by hand from the model files, never from shardc's output:

    oracle.py MODEL DIR [NAME=VALUE ...]

MODEL is mlp or transformer; NAME=VALUE overrides the model's `let`
constants (pass the same values to shardc with -D). Writes, in DIR:
    params.safetensors    every param, made here (seeded, larger than the
                          models' own inits so that every op matters)
    inputs.safetensors    every input
    expected.safetensors  the outputs PyTorch computes (float64, stored f32)
"""
import json
import math
import os
import struct
import sys

import torch

DTYPES = {torch.float32: "F32", torch.int32: "I32"}


def write_safetensors(path, tensors):
    """tensors: list of (name, tensor); the format of safetensors 0.x."""
    header, blobs, offset = {}, [], 0
    for name, t in tensors:
        t = t.contiguous()
        data = t.numpy().tobytes()
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


def mlp(c, gen):
    B, D = c["B"], c["D"]
    H = c.get("H", 4 * D)
    p = {
        "w1": torch.randn(D, H, generator=gen) / math.sqrt(D),
        "b1": torch.randn(H, generator=gen) * 0.1,
        "w2": torch.randn(H, D, generator=gen) / math.sqrt(H),
    }
    i = {"x": torch.randn(B, D, generator=gen), "y": torch.randn(B, D, generator=gen)}
    P = {k: v.double() for k, v in p.items()}
    x, y = i["x"].double(), i["y"].double()
    out = gelu(x @ P["w1"] + P["b1"]) @ P["w2"]
    loss = ((out - y) ** 2).mean()
    return p, i, [("out", out), ("loss", loss)]


def transformer(c, gen):
    B, S, D, NH, V, L = c["B"], c["S"], c["D"], c["NH"], c["V"], c["L"]
    HD, F = D // NH, c.get("F", 4 * D)
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
    P = {k: v.double() for k, v in p.items()}

    x = P["wte"][tokens.long()] + P["wpe"]
    mask = torch.ones(S, S, dtype=torch.bool).tril()
    for l in range(L):
        a, m = f"layers.{l}.attn.", f"layers.{l}.mlp."
        h = layernorm(x, P[a + "ln_g"], P[a + "ln_b"])

        def heads(t):
            return t.reshape(B, S, NH, HD).transpose(1, 2)

        q, k, v = heads(h @ P[a + "wq"]), heads(h @ P[a + "wk"]), heads(h @ P[a + "wv"])
        s = (q @ k.transpose(-1, -2)) / math.sqrt(HD)
        s = s.masked_fill(~mask, float("-inf"))
        o = (torch.softmax(s, dim=-1) @ v).transpose(1, 2).reshape(B, S, D)
        x = x + o @ P[a + "wo"]
        h = layernorm(x, P[m + "ln_g"], P[m + "ln_b"])
        x = x + gelu(h @ P[m + "w1"] + P[m + "b1"]) @ P[m + "w2"] + P[m + "b2"]
    logits = layernorm(x, P["lnf_g"], P["lnf_b"]) @ P["wlm"]
    loss = torch.nn.functional.cross_entropy(logits.reshape(-1, V), targets.reshape(-1).long())
    return p, {"tokens": tokens, "targets": targets}, [("loss", loss)]


MODELS = {
    "mlp": (mlp, {"B": 64, "D": 1024}),
    "transformer": (transformer, {"B": 8, "S": 128, "D": 256, "NH": 8, "V": 1024, "L": 4}),
}


def main(argv):
    if len(argv) < 3 or argv[1] not in MODELS:
        sys.exit(__doc__)
    build, consts = MODELS[argv[1]]
    consts = dict(consts)
    for kv in argv[3:]:
        k, v = kv.split("=")
        consts[k] = int(v)
    gen = torch.Generator().manual_seed(1234)
    params, inputs, outputs = build(consts, gen)
    os.makedirs(argv[2], exist_ok=True)
    write_safetensors(os.path.join(argv[2], "params.safetensors"), sorted(params.items()))
    write_safetensors(os.path.join(argv[2], "inputs.safetensors"), sorted(inputs.items()))
    write_safetensors(os.path.join(argv[2], "expected.safetensors"),
                      [(n, t.float()) for n, t in outputs])


if __name__ == "__main__":
    main(sys.argv)
