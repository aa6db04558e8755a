#!/usr/bin/env python3
"""steps.py [--np N] [--schedule FILE] PLAN [SHARDRUN ARGS...]: what
shardrun's cuda backend asks of the driver per step, on the pretend driver
of tests/fakecuda ($FAKECUDA, first on LD_LIBRARY_PATH; $SHARDRUN).

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

With --np N, shardrun runs as an MPI job of N processes ($MPIRUN
$MPIRUN_FLAGS -np N, on N pretend devices): every count is summed over the
processes and divided by N, so it reads per rank ("per step: NAME N",
"not even" when the processes differ), and with --schedule the schedule
line also gives its collectives and sends ("collectives: all_reduce A,
all_gather G, reduce_scatter R, all_to_all T, send S, recv V", of the
plan's one stage).
"""
import os
import re
import subprocess
import sys
import tempfile


def run(plan, args, steps, log, np):
    env = dict(os.environ)
    env["FAKECUDA_LOG"] = log
    env["LD_LIBRARY_PATH"] = os.environ["FAKECUDA"] + ":" + env.get("LD_LIBRARY_PATH", "")
    cmd = [os.environ["SHARDRUN"], plan, "--backend", "cuda", "--quiet",
           "--steps", str(steps)] + args
    if np:
        env["FAKECUDA_DEVICES"] = str(np)
        cmd = ([os.environ["MPIRUN"]] + os.environ.get("MPIRUN_FLAGS", "").split() +
               ["-np", str(np)] + cmd)
    p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True)
    if p.returncode != 0:
        print(f"steps.py: {' '.join(cmd)} exited {p.returncode}:\n{p.stdout}")
        sys.exit(1)
    counts = {}
    with open(log) as f:
        for line in f:
            name, value = line.split()
            counts[name] = counts.get(name, 0) + int(value)
    return counts


COMM = ["all_reduce", "all_gather", "reduce_scatter", "all_to_all", "send", "recv"]


def schedule(path):
    kernels = matmuls = 0
    comm = dict.fromkeys(COMM, 0)
    with open(path) as f:
        for line in f:
            m = re.search(r"// kernel \S+(?: as \S+)? \(([^,)]+)", line)
            if m and m.group(1) != "cuBLASLt":
                kernels += 1
            if re.match(r"\s+%\S+ = matmul ", line):
                matmuls += 1
            m = re.match(r"\s+(?:%\S+ = )?(\w+) ", line)
            if m and m.group(1) in comm:
                comm[m.group(1)] += 1
    return kernels, matmuls, comm


def main():
    argv = sys.argv[1:]
    sched = None
    if argv[:1] == ["--schedule"]:
        sched, argv = argv[1], argv[2:]
    np = 0
    if argv[:1] == ["--np"]:
        np, argv = int(argv[1]), argv[2:]
    if argv[:1] == ["--schedule"]:
        sched, argv = argv[1], argv[2:]
    plan, args = argv[0], argv[1:]
    if sched:
        k, m, comm = schedule(sched)
        line = f"schedule: {k} kernels, {m} cuBLASLt matmuls"
        if np:
            line += ", collectives: " + ", ".join(f"{c} {comm[c]}" for c in COMM)
        print(line)
    with tempfile.TemporaryDirectory() as tmp:
        short = run(plan, args, 2, os.path.join(tmp, "2.log"), np)
        long = run(plan, args, 5, os.path.join(tmp, "5.log"), np)
    ranks = max(np, 1)
    for name in sorted(long):
        if name.startswith("live_") or name == "errors":
            continue
        delta = long[name] - short.get(name, 0)
        if delta % (3 * ranks):
            print(f"per step: {name} not {'steady' if ranks == 1 else 'even'} "
                  f"({short.get(name, 0)} in 2 steps, {long[name]} in 5)")
        else:
            print(f"per step: {name} {delta // (3 * ranks)}")
    for name in sorted(long):
        if name.startswith("live_") or name == "errors":
            print(f"at exit: {name} {long[name]}")


main()
