#!/usr/bin/env python3
"""trace_table.py TRACE.json [--skip K] [--rank R] [--title T]: the time of
one training step by kernel, from `shardrun --trace` (runtime/exec/trace.c),
as markdown tables. Stdlib only.

The trace holds one "X" event per instruction run, with args.step (the
session's run, from 0) and a category: with --backend cuda a fused kernel
is cat "kernel" and named as shardc names it ("k12_add_layernorm": its
group number, then its distinct ops, "_xN" when it updates N tensors
together), its times the GPU's (an event pair around it); an instruction
outside kernels (a matmul by cuBLAS, a host source) is named by its op, cat
"compute", "source", "collective" or "p2p". The CPU backend's events are all
of the second sort, timed on the host. Kernels are grouped by name without
their number (k3_gelu and k40_gelu are both "gelu"), then by kind.

`shardc --trace` (passes/timeline.c) writes the estimate of one step in the
same form, without args.step: it is read as step 0, alone (K does not
apply), so the estimate and the run table alike.

Steps before K (default 1: the first run makes the params on the host and
loads the modules) are left out; the others are averaged. "share" is of
the step's timed work (the sum of its events); the step span (first begin
to last end, the median over steps) includes the gaps between them.
"""
import argparse
import json
import re
import statistics
import sys

# a group name's kind: the first rule whose text it contains
KINDS = [
    ("attn_probs", "attn_probs"), ("attention", "attention"),
    ("attn_", "attention"),  # the backward's attn_stats, attn_dq, attn_dk, attn_dv
    ("cross_entropy", "cross_entropy"), ("embedding_grad", "embedding_grad"),
    ("embedding", "embedding"), ("layernorm", "layernorm"), ("adam", "adamw"),
    ("sgd", "sgd"), ("gelu", "gelu"), ("matmul", "matmul"), ("transpose", "transpose"),
]
REDUCTIONS = ("sum", "mean", "amax", "softmax")


def group_of(event):
    """(group, kind) of a trace event."""
    name = event["name"]
    if event.get("cat") == "kernel":
        name = re.sub(r"_x\d+$", "", re.sub(r"^k\d+_", "", name))
    if event.get("cat") in ("source", "collective", "p2p"):
        return name, event["cat"]
    for text, kind in KINDS:
        if text in name:
            return name, kind
    ops = name.split("_")
    if any(r in ops for r in REDUCTIONS):
        return name, "reduction"
    return name, "cast" if ops == ["cast"] else "elementwise"


def load(path, rank):
    with open(path) as f:
        trace = json.load(f)
    events = [e for e in trace["traceEvents"] if e.get("ph") == "X" and e.get("pid", 0) == rank]
    return trace.get("otherData", {}), events


def fmt_count(n):
    return "%d" % n if n == int(n) else "%.1f" % n


def step_of(event):
    """The step of an event; an estimate's events (no step) are step 0."""
    return event.get("args", {}).get("step", 0)


def is_estimate(meta):
    return meta.get("source") == "shardc estimate"


def summarize(events, skip):
    """Per group and per kind: count and ms per step; the steps kept."""
    steps = sorted({step_of(e) for e in events if step_of(e) >= skip})
    if not steps:
        return None
    kept = [e for e in events if step_of(e) in steps]
    groups, kinds = {}, {}
    for e in kept:
        name, kind = group_of(e)
        for table, key in ((groups, (name, kind, e.get("cat", ""))), (kinds, kind)):
            row = table.setdefault(key, [0, 0.0])
            row[0] += 1
            row[1] += e["dur"] / 1e3
    spans = []
    for s in steps:
        es = [e for e in kept if step_of(e) == s]
        spans.append((max(e["ts"] + e["dur"] for e in es) - min(e["ts"] for e in es)) / 1e3)
    n = len(steps)
    total = sum(r[1] for r in kinds.values()) / n
    return {"steps": steps, "total_ms": total, "span_ms": statistics.median(spans),
            "groups": {k: (v[0] / n, v[1] / n) for k, v in groups.items()},
            "kinds": {k: (v[0] / n, v[1] / n) for k, v in kinds.items()}}


def table(s, title, top):
    steps = s["steps"]
    out = ["%s: steps %d..%d of the trace (%d), per step: timed work %.2f ms, "
           "span %.2f ms (median)" % (title, steps[0] + 1, steps[-1] + 1, len(steps),
                                     s["total_ms"], s["span_ms"]), ""]
    share = lambda ms: 100 * ms / s["total_ms"] if s["total_ms"] > 0 else 0.0
    out += ["| kind | count | ms | share |", "| --- | ---: | ---: | ---: |"]
    for kind, (count, ms) in sorted(s["kinds"].items(), key=lambda kv: -kv[1][1]):
        out.append("| %s | %s | %.3f | %.1f%% |" % (kind, fmt_count(count), ms, share(ms)))
    out += ["", "| kernel or op (kN_ dropped) | kind | where | count | ms | share |",
            "| --- | --- | --- | ---: | ---: | ---: |"]
    rows = sorted(s["groups"].items(), key=lambda kv: -kv[1][1])
    for (name, kind, cat), (count, ms) in rows[:top]:
        out.append("| `%s` | %s | %s | %s | %.3f | %.1f%% |"
                   % (name, kind, cat, fmt_count(count), ms, share(ms)))
    if len(rows) > top:
        count = sum(v[0] for _, v in rows[top:])
        ms = sum(v[1] for _, v in rows[top:])
        out.append("| (%d others) | | | %s | %.3f | %.1f%% |"
                   % (len(rows) - top, fmt_count(count), ms, share(ms)))
    return "\n".join(out)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("trace")
    p.add_argument("--skip", type=int, default=1, help="leave out the first K steps (default 1)")
    p.add_argument("--rank", type=int, default=0, help="the rank (pid) to table (default 0)")
    p.add_argument("--title", default="shardrun --trace")
    p.add_argument("--top", type=int, default=25, help="rows of the kernel table (default 25)")
    p.add_argument("--json", action="store_true", help="print the summary as JSON instead")
    args = p.parse_args()
    try:
        meta, events = load(args.trace, args.rank)
    except (OSError, ValueError, KeyError) as e:
        sys.exit("trace_table.py: error: %s: %s" % (args.trace, e))
    s = summarize(events, 0 if is_estimate(meta) else args.skip)
    if s is None:
        sys.exit("trace_table.py: error: %s: no events of rank %d from step %d on"
                 % (args.trace, args.rank, args.skip + 1))
    if args.json:
        flat = dict(s, groups=[[list(k), list(v)] for k, v in s["groups"].items()])
        print(json.dumps(dict(flat, backend=meta.get("backend"))))
    else:
        print(table(s, "%s (%s backend)" % (args.title, meta.get("backend", "?")), args.top))
    return 0


if __name__ == "__main__":
    sys.exit(main())
