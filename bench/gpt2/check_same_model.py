#!/usr/bin/env python3
"""check_same_model.py BUILD: gpt2_torch.py's model is examples/transformer.sh,
checked on the CPU at small sizes (no GPU). From the same params P0 (drawn
here, larger than the model's init so that every op's nonlinearity shows)
and batch, shardrun runs one training step of the f32 model and saves the
params and AdamW state after it (P1); gpt2_torch.py's model must give
shardrun's loss, the gradients (AdamW's first moment after one step is
(1 - beta1) * the gradient) and, after one torch AdamW step, P1. Names and
shapes must match exactly, and so must the param counts at GPT-2 small's
sizes (shardc --report json against the torch model on the meta device).

Needs torch (any version from 1.13; Debian's python3-torch will do).
Prints the errors and "ok"; exit 77 without torch.
"""
import json
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")
sys.path.insert(0, os.path.join(ROOT, "tests", "tools"))
sys.path.insert(0, HERE)
import gpt2_torch  # noqa: E402
from st_io import st_read, st_write  # noqa: E402

SMALL = {"B": 2, "S": 16, "D": 32, "NH": 4, "V": 64, "L": 2}
LOSS_RTOL = 1e-5          # f32 forward, ops in another order
GRAD_RTOL = 1e-4          # of the tensor's largest gradient
PARAM_ATOL = 1e-6         # one AdamW step of lr 3e-4 from equal states


def defines(sizes):
    return [a for k, v in sizes.items() for a in ("-D", "%s=%d" % (k, v))]


def run(cmd):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if r.returncode:
        sys.exit("check_same_model.py: %s failed (exit %d):\n%s"
                 % (" ".join(cmd), r.returncode, r.stdout))
    return r.stdout


def shardc_params(build, sizes):
    out = run([os.path.join(build, "shardc"), os.path.join(ROOT, "examples", "transformer.sh"),
               *defines(sizes), "--mesh", "1x1", "--report", "json"])
    return json.loads(out)["stages"][0]["memory"]["params"] // 4  # f32


def draw_p0(torch, model):
    """P0: matrices normal(0.3), layernorm gains 1 + normal(0.1), vectors
    normal(0.1); as [(name, dtype, shape, values)] for st_write."""
    g = torch.Generator().manual_seed(1)
    out = []
    for name, p in model.named_parameters():
        t = torch.randn(p.shape, generator=g)
        t = t * 0.3 if p.dim() == 2 else (1 + 0.1 * t if name.endswith("_g") else 0.1 * t)
        out.append((name, "F32", list(p.shape), t.reshape(-1).tolist()))
    return out


def shardrun_one_step(build, tmp, p0):
    """shardrun's loss of one step from P0, and P1 (params and AdamW state)."""
    plan, params, inputs = (os.path.join(tmp, f) for f in ("small.plan", "p0.st", "batch.st"))
    run([os.path.join(build, "shardc"), os.path.join(ROOT, "examples", "transformer.sh"),
         *defines(SMALL), "--mesh", "1x1", "--arch", "none", "-o", plan])
    n, v = SMALL["B"] * SMALL["S"], SMALL["V"]
    st_write(params, p0)
    shape = [SMALL["B"], SMALL["S"]]
    st_write(inputs, [("tokens", "I32", shape, [(7 * i + 3) % v for i in range(n)]),
                      ("targets", "I32", shape, [(5 * i + 1) % v for i in range(n)])])
    p1 = os.path.join(tmp, "p1.st")
    out = run([os.path.join(build, "shardrun"), plan, "--params", params, "--inputs", inputs,
               "--steps", "1", "--save-params", p1])
    loss = float(re.search(r"^step 1/1\s+loss (\S+)", out, re.M).group(1))
    return loss, st_read(p1), st_read(inputs)


def check_init(torch, build, tmp, model):
    """The inits: each param after shardrun's first step from the seed (a
    step moves a param by about lr = 3e-4) against the torch model's own:
    the same std within 15% (normal), or the same constant (ones, zeros)."""
    plan, p1 = os.path.join(tmp, "small.plan"), os.path.join(tmp, "seed1.st")
    run([os.path.join(build, "shardrun"), plan, "--steps", "1", "--save-params", p1])
    shard, bad = st_read(p1), []
    for name, p in model.named_parameters():
        mine = torch.tensor(shard[name][2])
        std = float(p.detach().std())
        if std > 1e-3 and abs(float(mine.std()) / std - 1) > 0.15:
            bad.append("%s: std %.4g, shardc's %.4g" % (name, std, float(mine.std())))
        elif std <= 1e-3 and float((mine - p.detach().reshape(-1)).abs().max()) > 2e-3:
            bad.append("%s: a constant %.4g, shardc's not" % (name, float(p.detach().mean())))
    print("inits: %d params compared, %d differ" % (len(shard) - sum(k.startswith("opt.")
                                                                        for k in shard), len(bad)))
    return bad


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: check_same_model.py BUILD")
    try:
        import torch
    except ImportError:
        print("skipped: no torch with %s" % sys.executable)
        return 77
    build, errors = sys.argv[1], []
    big = dict(gpt2_torch.GPT2_SMALL)
    n_torch = gpt2_torch.count_params(gpt2_torch.build_model(torch, big, "meta"))
    n_shardc = shardc_params(build, big)
    print("params at GPT-2 small's sizes: shardc %d, torch %d" % (n_shardc, n_torch))
    if n_torch != n_shardc:
        errors.append("param counts differ")

    model = gpt2_torch.build_model(torch, SMALL, "cpu")
    params = dict(model.named_parameters())
    p0 = draw_p0(torch, model)
    with tempfile.TemporaryDirectory() as tmp:
        loss1, p1, batch = shardrun_one_step(build, tmp, p0)
        errors += check_init(torch, build, tmp, model)
    file_params = {k for k in p1 if not k.startswith("opt.")}
    if set(params) != file_params:
        sys.exit("check_same_model.py: names differ: torch only %s, shardc only %s"
                 % (sorted(set(params) - file_params), sorted(file_params - set(params))))
    tensor = lambda e, dt=torch.float32: torch.tensor(e[-1], dtype=dt).reshape(e[-2])
    with torch.no_grad():
        for (name, _, shape, values), p in zip(p0, params.values()):
            if list(p.shape) != p1[name][1]:
                sys.exit("check_same_model.py: %s: torch %s, shardc %s"
                         % (name, list(p.shape), p1[name][1]))
            p.copy_(tensor((shape, values)))
    loss = model(tensor(batch["tokens"], torch.int64), tensor(batch["targets"], torch.int64))
    rel = abs(loss.item() - loss1) / abs(loss1)
    print("loss of one step from P0: shardrun %.6f, torch %.6f (relative error %.2g, "
          "tolerance %g)" % (loss1, loss.item(), rel, LOSS_RTOL))
    if rel > LOSS_RTOL:
        errors.append("the losses differ")
    loss.backward()
    beta1 = gpt2_torch.ADAMW["betas"][0]
    worst, where = max((float((p.grad - tensor(p1["opt.%s.m" % n]) / (1 - beta1)).abs().max()
                              / p.grad.abs().max()), n) for n, p in params.items())
    print("gradients: max |torch - shardrun| / the tensor's max |gradient| %.2g in %s "
          "(tolerance %g)" % (worst, where, GRAD_RTOL))
    if worst > GRAD_RTOL:
        errors.append("the gradients differ")
    opt = torch.optim.AdamW(model.parameters(), **gpt2_torch.ADAMW)
    opt.step()
    worst, where = max((float((p.detach() - tensor(p1[n])).abs().max()), n)
                       for n, p in params.items())
    print("params after one AdamW step: max |torch - shardrun| %.2g in %s (tolerance %g)"
          % (worst, where, PARAM_ATOL))
    if worst > PARAM_ATOL:
        errors.append("the params after a step differ")
    if errors:
        print("FAILED: " + "; ".join(errors))
        return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
