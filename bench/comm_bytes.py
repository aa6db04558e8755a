#!/usr/bin/env python3
"""comm_bytes.py SHARDC [OUT.md]: bytes each rank sends per training step,
from shardc --report json, against the closed forms of the standard
strategies, for the GPT of issue 18 (examples/transformer.sh with L = 24,
D = 1024, S = 1024, B = 32, V = 51200, NH = 16, AdamW, f32) on 8 ranks.

Closed forms, per rank and step, e = 4 bytes, n ranks in the group:
  DP (and ZeRO-1, ZeRO-2):  2(n-1)/n * Psi * e, plus the loss scalar's
                            all-reduce, 2(n-1)/n * e
  ZeRO-3:                   3(n-1)/n * Psi * e (params gathered in the
                            forward and again in the backward, gradients
                            reduce-scattered), plus the loss scalar
  Megatron TP:              (4 L + 1) all-reduces of b*s*h: 2 per layer in
                            the forward, 2 in the backward, 1 for the LM
                            head's input gradient; plus the vocabulary-
                            parallel cross-entropy's row max, label's
                            logit and sum of exp, all-reduced once each in
                            the forward (b*s elements each, as Megatron's
                            vocab_parallel_cross_entropy; its backward
                            reuses them); an all-reduce sends 2(n-1)/n of
                            its elements
  Megatron TP + SP:         the same bytes as TP (each all-reduce of b*s*h
                            becomes an all-gather and a reduce-scatter),
                            plus the all-reduce over tp of the gradients
                            of the params each rank reads from its own
                            rows of the sequence and holds whole (the
                            norms' gains and biases and the MLP's output
                            bias: 5 h per layer and 2 h for the final
                            norm), which Megatron-LM all-reduces too;
                            shardc meets it with --keep-gathered, where
                            the backward reads each input the forward
                            gathered
  Megatron-LM TP + SP, as implemented: that, plus one all-gather of
                            b*s*h per column-parallel layer in the
                            backward (2 per layer, QKV and FC1, and the
                            LM head: 2 L + 1), since Megatron-LM gathers
                            each such layer's sequence-split input again
                            for its weight's gradient rather than keep it
  PP (examples/pipeline.sh, the same GPT with its layers over pp, 1F1B):
                            a stage sends the activation b*s*h forward
                            (but the last) and its gradient b*s*h backward
                            (but the first), over all microbatches
                            together; the table gives the busiest stage,
                            2 * b*s*h * e
where b*s*h is the local batch's rows times the model width. The rows
marked "tied" tie the LM head to the token embedding (logits = x @
transpose(wte), as GPT-2 does; Psi less D * V): the table's gradient is
the sum of the embedding's and the head's, and the closed forms are the
same in the tied Psi. Stdlib only.
"""
import json
import os
import subprocess
import sys

DEFINES = {"B": 32, "S": 1024, "D": 1024, "NH": 16, "V": 51200, "L": 24}
HERE = os.path.dirname(os.path.abspath(__file__))
MODEL = os.path.join(HERE, "..", "examples", "transformer.sh")
PP_MODEL = os.path.join(HERE, "..", "examples", "pipeline.sh")


def params(defines, tied=False):
    """Psi of examples/transformer.sh (tied: its head the embedding's)."""
    d, v, s, n_layers = defines["D"], defines["V"], defines["S"], defines["L"]
    f = 4 * d
    attn = 2 * d + 4 * d * d
    mlp = 2 * d + d * f + f + f * d + d
    return v * d + s * d + n_layers * (attn + mlp) + 2 * d + (0 if tied else d * v)


def model_text(variant):
    text = open(PP_MODEL if variant.get("pp") else MODEL).read()
    if variant.get("tied"):
        head = "param  wlm   : f32[D, V] shard(_, tp) = normal(0.02)\n"
        assert head in text and "@ wlm" in text
        text = text.replace(head, "").replace("@ wlm", "@ transpose(wte)")
    if variant.get("zero"):
        text = text.replace("wd = 0.1)", "wd = 0.1) zero %d over dp" % variant["zero"])
    if variant.get("sp"):
        # the residual stream split over tp along the sequence
        text = text.replace("    x = x + attn(x)\n    x = x + mlp(x)\n",
                            "    x = (x + attn(x)) shard(dp, tp, _)\n"
                            "    x = (x + mlp(x)) shard(dp, tp, _)\n")
    return text


def report(shardc, variant, work):
    path = os.path.join(work, variant["name"].replace(" ", "_").replace("+", "") + ".sh")
    with open(path, "w") as f:
        f.write(model_text(variant))
    cmd = [shardc, path, "--mesh", variant["mesh"], "--arch", "none", "--report", "json"]
    cmd += variant.get("flags", [])
    for k, val in DEFINES.items():
        cmd += ["-D", "%s=%d" % (k, val)]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    stages = json.loads(out)["stages"]
    stage = max(stages, key=lambda st: st["bytes_sent"])  # the busiest (all alike but PP)
    kinds = {}
    for c in stage["collectives"]:
        key = "%s/%s" % (c["kind"], c["phase"])
        kinds[key] = kinds.get(key, 0) + c.get("times", 1)  # a pipeline's: once per microbatch
    return stage["bytes_sent"], kinds, stage["memory"]["params"], stage["memory"]["activations"]


def closed_form(variant, psi, local_bytes):
    """local_bytes: a rank's params without ZeRO (Psi * e, or less under
    TP, whose split params each rank holds a part of)."""
    e = 4
    if variant.get("pp"):  # mesh dp x pp x tp = 1 x P x 1: the busiest stage
        return 2.0 * DEFINES["B"] * DEFINES["S"] * DEFINES["D"] * e
    dp, tp = (int(x) for x in variant["mesh"].split("x"))
    b, s, h = DEFINES["B"] // dp, DEFINES["S"], DEFINES["D"]
    total = 0.0
    if dp > 1:
        k = 3 if variant.get("zero") == 3 else 2
        total += k * (dp - 1) / dp * (psi * e if variant.get("zero") else local_bytes)
        total += 2 * (dp - 1) / dp * e          # the loss scalar
    if tp > 1:
        ar = 2 * (tp - 1) / tp
        total += (4 * DEFINES["L"] + 1) * ar * b * s * h * e
        total += 3 * ar * b * s * e             # cross-entropy max, label, sum
        if variant.get("sp"):
            total += ar * (5 * DEFINES["L"] + 2) * h * e
        if variant.get("regather"):
            total += (2 * DEFINES["L"] + 1) * (tp - 1) / tp * b * s * h * e
    return total


VARIANTS = [
    {"name": "DP 8", "mesh": "8x1"},
    {"name": "ZeRO-1 8", "mesh": "8x1", "zero": 1},
    {"name": "ZeRO-2 8", "mesh": "8x1", "zero": 2},
    {"name": "ZeRO-3 8", "mesh": "8x1", "zero": 3},
    {"name": "TP 8", "mesh": "1x8"},
    {"name": "TP 8 + SP", "mesh": "1x8", "sp": True},
    {"name": "TP 8 + SP against Megatron-LM's re-gathers", "mesh": "1x8", "sp": True,
     "regather": True},
    {"name": "TP 8 + SP, --keep-gathered", "mesh": "1x8", "sp": True,
     "flags": ["--keep-gathered"]},
    {"name": "DP 2 x TP 4", "mesh": "2x4"},
    {"name": "PP 8 (busiest stage)", "mesh": "1x8x1", "pp": True},
    {"name": "DP 8, tied", "mesh": "8x1", "tied": True},
    {"name": "ZeRO-1 8, tied", "mesh": "8x1", "zero": 1, "tied": True},
    {"name": "ZeRO-3 8, tied", "mesh": "8x1", "zero": 3, "tied": True},
]


def main(argv):
    if not argv:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    shardc = argv[0]
    work = os.path.join("/tmp", "comm_bytes.%d" % os.getpid())
    os.makedirs(work, exist_ok=True)
    rows = []
    for v in VARIANTS:
        got, kinds, local, act = report(shardc, v, work)
        want = closed_form(v, params(DEFINES, v.get("tied", False)), local)
        rows.append((v["name"], got, want, kinds, act))
    lines = ["| strategy | shardc (bytes) | closed form (bytes) | shardc - closed form | ratio "
             "| activations (bytes) | collectives (kind/phase count) |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    for name, got, want, kinds, act in rows:
        ks = ", ".join("%s %d" % (k, n) for k, n in sorted(kinds.items()))
        lines.append("| %s | %d | %.0f | %+.0f | %.4f | %d | %s |" % (
            name, got, want, got - want, got / want, act, ks))
    text = "\n".join(lines) + "\n"
    if len(argv) > 1:
        with open(argv[1], "w") as f:
            f.write(text)
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
