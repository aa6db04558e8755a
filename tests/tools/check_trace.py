#!/usr/bin/env python3
"""Checks a Chrome trace written by `shardc --trace` (an estimate) or
`shardrun --trace` (measured), and prints a summary line per rank.

usage: check_trace.py TRACE --ranks N [--steps K] [--like ESTIMATE]
                      [--like-launches] [--rendezvous]

Checks, each failing with a message and exit 1:
  - the JSON has traceEvents (an estimate of a large mesh holds only each
    stage's first rank: otherData.ranks says so); every complete ("X") event has name, cat,
    pid, tid, ts >= 0 and dur >= 0; collectives, sends and recvs are on
    tid 1, everything else on tid 0; the pids are exactly 0 .. N-1, each
    named by a process_name event;
  - on each (pid, tid) the events do not overlap: one stream runs one
    thing at a time;
  - an estimate (otherData.source "shardc estimate"): each send has the
    recv of its peer stage starting and ending with it (a rendezvous), and
    otherData.step_ms is the end of the last event;
  - measured: every event's args.step is below K, and each rank runs the
    same number of instructions in every step (params load only at the
    first, so sources are not counted);
  - --like ESTIMATE: per rank and step, the measured collectives, sends
    and recvs have the names, in order, of the estimate's;
  - --like-launches (with --like; measured with --backend cuda): per rank,
    what the compute stream runs in the second step (or in a run of one
    step, the first, but for its params and states, which only the
    first step loads), by name without a kernel's number (k12_gelu and
    gelu alike: the estimate names an op's kernel of its own by the op),
    in order, is the estimate's: every kernel, cuBLASLt call, copy and
    source the estimate times, and nothing else, runs;
  - --rendezvous (measured with the local communicator, where a send waits
    for its recv): each send overlaps a recv of its peer stage.
"""
import argparse
import json
import re
import sys
from collections import defaultdict

EPS = 2e-3  # microseconds: ts and dur are each rounded to 3 decimals


def fail(msg):
    print("check_trace: " + msg, file=sys.stderr)
    sys.exit(1)


def load(path):
    try:
        with open(path) as f:
            d = json.load(f)
    except (OSError, ValueError) as e:
        fail("%s: %s" % (path, e))
    if not isinstance(d.get("traceEvents"), list):
        fail("%s: no traceEvents list" % path)
    return d


def events(d, path):
    out = []
    for e in d["traceEvents"]:
        if e.get("ph") != "X":
            continue
        for k in ("name", "cat", "pid", "tid", "ts", "dur"):
            if k not in e:
                fail("%s: event without %s: %s" % (path, k, e))
        if e["ts"] < 0 or e["dur"] < 0:
            fail("%s: negative time: %s" % (path, e))
        comm = e["cat"] in ("collective", "p2p")
        if e["tid"] != (1 if comm else 0):
            fail("%s: %s event on tid %s" % (path, e["cat"], e["tid"]))
        out.append(e)
    return out


def check_streams(evs, path):
    lanes = defaultdict(list)
    for e in evs:
        lanes[(e["pid"], e["tid"])].append(e)
    for (pid, tid), lane in lanes.items():
        lane.sort(key=lambda e: e["ts"])
        for a, b in zip(lane, lane[1:]):
            if b["ts"] < a["ts"] + a["dur"] - EPS:
                fail("%s: rank %d stream %d: %s at %.3f starts before %s ends at %.3f"
                     % (path, pid, tid, b["name"], b["ts"], a["name"], a["ts"] + a["dur"]))


def stage_of(d):
    """rank -> stage, from the process names ("rank 3 (stage 1)")."""
    st = {}
    for e in d["traceEvents"]:
        if e.get("ph") == "M" and e.get("name") == "process_name":
            name = e["args"]["name"]
            st[e["pid"]] = int(name.split("stage ")[1].rstrip(")")) if "stage" in name else 0
    return st


def check_pids(d, evs, n, path):
    named = stage_of(d)
    if d.get("otherData", {}).get("ranks") == "the first of each stage":
        # a large mesh: one rank per stage, each stage once
        if any(not 0 <= r < n for r in named) or \
                sorted(named.values()) != list(range(len(named))):
            fail("%s: ranks %s are not one per stage of %d ranks" % (path, sorted(named), n))
        if sorted(set(e["pid"] for e in evs)) != sorted(named):
            fail("%s: events for other ranks than the named ones" % path)
        return named
    if sorted(named) != list(range(n)):
        fail("%s: process names for ranks %s, expected 0..%d" % (path, sorted(named), n - 1))
    have = sorted(set(e["pid"] for e in evs))
    if have != list(range(n)):
        fail("%s: events for ranks %s, expected 0..%d" % (path, have, n - 1))
    return named


def check_estimate(d, evs, stage, path):
    by_rank = defaultdict(list)
    for e in evs:
        by_rank[e["pid"]].append(e)
    ranks_of = defaultdict(list)
    for r, s in sorted(stage.items()):
        ranks_of[s].append(r)
    for e in evs:
        if e["name"] != "send":
            continue
        me, peer = e["pid"], e["args"]["peer_stage"]
        # the peer rank: the same index among its stage's ranks
        other = ranks_of[peer][ranks_of[stage[me]].index(me)]
        match = [f for f in by_rank[other] if f["name"] == "recv" and
                 f["args"]["peer_stage"] == stage[me] and abs(f["ts"] - e["ts"]) <= EPS and
                 abs(f["dur"] - e["dur"]) <= EPS]
        if not match:
            fail("%s: rank %d's send at %.3f has no recv on rank %d at the same time"
                 % (path, me, e["ts"], other))
    end = max(e["ts"] + e["dur"] for e in evs) / 1e3
    step = d["otherData"]["step_ms"]
    if abs(end - step) > 1e-5 * max(1, step):
        fail("%s: step_ms %.6f, but the last event ends at %.6f ms" % (path, step, end))


def per_step(evs):
    out = defaultdict(list)  # (rank, step) -> events in time order
    for e in sorted(evs, key=lambda e: e["ts"]):
        out[(e["pid"], e["args"].get("step", 0))].append(e)
    return out


def check_measured(evs, steps, path):
    counts = defaultdict(set)
    for (rank, step), lst in per_step(evs).items():
        if not 0 <= step < steps:
            fail("%s: rank %d has events of step %d, expected 0..%d" % (path, rank, step, steps - 1))
        counts[rank].add(sum(e["cat"] != "source" for e in lst))
    for rank, c in counts.items():
        if len(c) != 1:
            fail("%s: rank %d runs %s events in its steps, not the same number" % (path, rank, sorted(c)))


def check_like(evs, est, steps, path):
    comm = lambda lst: [e["name"] for e in lst if e["cat"] in ("collective", "p2p")]
    want = {r: comm(lst) for (r, _), lst in per_step(est).items()}
    for (rank, step), lst in per_step(evs).items():
        if comm(lst) != want.get(rank):
            fail("%s: rank %d step %d communicates %s, the estimate %s"
                 % (path, rank, step, comm(lst)[:8], (want.get(rank) or [])[:8]))


def check_launches(evs, est, est_stage, stage, steps, path):
    name = lambda e: re.sub(r"^k[0-9]+_", "", e["name"])
    loaded = lambda e: e["cat"] == "source" and e["name"] in ("param", "state")
    launches = lambda lst: [name(e) for e in lst if e["tid"] == 0 and not loaded(e)]
    # a stage's ranks run its one program: an estimate of a large mesh
    # holds each stage's first rank alone
    want = {est_stage[r]: launches(lst) for (r, _), lst in per_step(est).items()}
    for (rank, step), lst in per_step(evs).items():
        if step != (1 if steps > 1 else 0):
            continue
        got, exp = launches(lst), want.get(stage[rank], [])
        if got != exp:
            at = next((i for i, (g, x) in enumerate(zip(got, exp)) if g != x), min(len(got), len(exp)))
            fail("%s: rank %d step %d runs %d launches, the estimate %d; the first to differ, "
                 "#%d: %s against %s" % (path, rank, step, len(got), len(exp), at,
                                        got[at:at + 3], exp[at:at + 3]))


def check_rendezvous(evs, stage, path):
    by_rank = defaultdict(list)
    for e in evs:
        if e["cat"] == "p2p":
            by_rank[e["pid"]].append(e)
    ranks_of = defaultdict(list)
    for r, s in sorted(stage.items()):
        ranks_of[s].append(r)
    for e in evs:
        if e["name"] != "send":
            continue
        me, peer = e["pid"], e["args"]["peer_stage"]
        other = ranks_of[peer][ranks_of[stage[me]].index(me)]
        lo, hi = e["ts"], e["ts"] + e["dur"]
        if not any(f["name"] == "recv" and f["ts"] <= hi + EPS and f["ts"] + f["dur"] >= lo - EPS
                   for f in by_rank[other]):
            fail("%s: rank %d's send at %.3f overlaps no recv of rank %d" % (path, me, lo, other))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("trace")
    ap.add_argument("--ranks", type=int, required=True)
    ap.add_argument("--steps", type=int, default=1)
    ap.add_argument("--like")
    ap.add_argument("--like-launches", action="store_true")
    ap.add_argument("--rendezvous", action="store_true")
    a = ap.parse_args()
    if a.like_launches and not a.like:
        fail("--like-launches needs --like")
    d = load(a.trace)
    evs = events(d, a.trace)
    if not evs:
        fail("%s: no events" % a.trace)
    stage = check_pids(d, evs, a.ranks, a.trace)
    check_streams(evs, a.trace)
    estimate = d.get("otherData", {}).get("source") == "shardc estimate"
    if estimate:
        check_estimate(d, evs, stage, a.trace)
    else:
        check_measured(evs, a.steps, a.trace)
    if a.like:
        e = load(a.like)
        check_like(evs, events(e, a.like), a.steps, a.trace)
        if a.like_launches:
            check_launches(evs, events(e, a.like), stage_of(e), stage, a.steps, a.trace)
    if a.rendezvous:
        check_rendezvous(evs, stage, a.trace)
    for r in sorted(stage):
        lst = [e for e in evs if e["pid"] == r]
        kinds = defaultdict(int)
        for e in lst:
            kinds[e["cat"]] += 1
        print("rank %d stage %d: %s" % (r, stage[r], " ".join(
            "%s %d" % (k, kinds[k]) for k in sorted(kinds))))
    if estimate:
        print("step_ms %.6f" % d["otherData"]["step_ms"])


if __name__ == "__main__":
    main()
