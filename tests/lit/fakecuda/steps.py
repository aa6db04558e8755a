#!/usr/bin/env python3
"""steps.py [--schedule FILE] PLAN [SHARDRUN ARGS...]: what shardrun's cuda
backend asks of the driver per step, on the pretend driver of
tests/fakecuda ($FAKECUDA, first on LD_LIBRARY_PATH; $SHARDRUN).

Runs PLAN with --backend cuda for 2 and for 5 steps (ARGS added to both)
and prints, for every entry point the fake driver and cuBLASLt count,
its calls per step in the steady state: (calls in 5 steps - calls in 2) / 3,
as "per step: NAME N" in name order. Then what the 5-step run left live at
exit and the breaches of the driver's rules it met ("at exit: NAME N").
With --schedule (shardc --emit schedule of the plan's one stage), first
"schedule: K kernels, M cuBLASLt matmuls": its CUDA kernels (kernel lines
but those cuBLASLt runs) and its matmuls (each matmul instruction, in a
kernel of cuBLASLt's or alone). A run that fails prints its output and
exits 1.
"""
import os
import re
import subprocess
import sys
import tempfile


def run(plan, args, steps, log):
    env = dict(os.environ)
    env["FAKECUDA_LOG"] = log
    env["LD_LIBRARY_PATH"] = os.environ["FAKECUDA"] + ":" + env.get("LD_LIBRARY_PATH", "")
    cmd = [os.environ["SHARDRUN"], plan, "--backend", "cuda", "--quiet",
           "--steps", str(steps)] + args
    p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True)
    if p.returncode != 0:
        print(f"steps.py: {' '.join(cmd)} exited {p.returncode}:\n{p.stdout}")
        sys.exit(1)
    counts = {}
    with open(log) as f:
        for line in f:
            name, value = line.split()
            counts[name] = int(value)
    return counts


def schedule(path):
    kernels = matmuls = 0
    with open(path) as f:
        for line in f:
            m = re.search(r"// kernel \S+(?: as \S+)? \(([^,)]+)", line)
            if m and m.group(1) != "cuBLASLt":
                kernels += 1
            if re.match(r"\s+%\S+ = matmul ", line):
                matmuls += 1
    return kernels, matmuls


def main():
    argv = sys.argv[1:]
    sched = None
    if argv[:1] == ["--schedule"]:
        sched, argv = argv[1], argv[2:]
    plan, args = argv[0], argv[1:]
    if sched:
        k, m = schedule(sched)
        print(f"schedule: {k} kernels, {m} cuBLASLt matmuls")
    with tempfile.TemporaryDirectory() as tmp:
        short = run(plan, args, 2, os.path.join(tmp, "2.log"))
        long = run(plan, args, 5, os.path.join(tmp, "5.log"))
    for name in sorted(long):
        if name.startswith("live_") or name == "errors":
            continue
        delta = long[name] - short.get(name, 0)
        if delta % 3:
            print(f"per step: {name} not steady ({short.get(name, 0)} in 2 steps, "
                  f"{long[name]} in 5)")
        else:
            print(f"per step: {name} {delta // 3}")
    for name in sorted(long):
        if name.startswith("live_") or name == "errors":
            print(f"at exit: {name} {long[name]}")


main()
