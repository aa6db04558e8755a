#!/usr/bin/env python3
"""nccl_eff.py --profile BASE.json --link intra|inter [-o OUT.json] LOG...:
a hardware profile (docs/hw/README.md) whose collectives take the link
efficiency nccl-tests measured, by the bytes they send.

Each LOG is the output of one nccl-tests program (all_reduce_perf,
all_gather_perf, reduce_scatter_perf, alltoall_perf, sendrecv_perf) run
on the machines the profile describes: inside one node for --link intra,
across nodes for --link inter. Its rows give, per size, the out-of-place
time; the bytes a rank sends are the size times the test's bus factor
(busbw / algbw, as nccl-tests counts them, and as shardc's estimate
counts a collective's bytes). shardc times a collective as

    latency + bytes / (bandwidth x efficiency(bytes))

with the profile's intra_lat_s and intra_bw (inter_ for --link inter),
so each row gives efficiency = bytes / ((time - latency) x bandwidth).
Rows are pooled per decade of bytes (the bytes over the time past the
latency, as bench_cuda --calibrate pools matmuls), and each decade with a
row is one point [bytes, efficiency] of the profile's "intra_eff" or
"inter_eff" at its rows' geometric mean bytes; at most 16, the largest
kept. A row whose time is not past the latency is left out (the latency
alone is longer than what it measured: lower intra_lat_s). Efficiencies
are held to at most 1 (printed when one is: the profile's bandwidth is
below what the link reached).

The profile is written to OUT.json (default: stdout) with the points,
and the command added to "calibrated_by". Stdlib only.
"""
import argparse
import json
import math
import os
import re
import sys

ROW = re.compile(r"^\s*(\d+)\s+(\d+)\s+(\S+)\s+(\S+)\s+(-?\d+)\s+"
                 r"([0-9.]+)\s+([0-9.]+)\s+([0-9.]+)\s+(\S+)")
MAX_POINTS = 16


def fail(msg):
    sys.stderr.write("nccl_eff.py: %s\n" % msg)
    sys.exit(1)


def rows(path):
    """(size bytes, out-of-place time s, algbw, busbw) of each data row."""
    try:
        text = open(path).read()
    except OSError as e:
        fail("%s: %s" % (path, e.strerror))
    out = []
    for n, line in enumerate(text.splitlines(), 1):
        if line.lstrip().startswith("#") or not line.strip():
            continue
        m = ROW.match(line)
        if not m:
            continue  # NCCL's INFO lines and the like
        size, us, alg, bus = int(m.group(1)), float(m.group(6)), float(m.group(7)), float(m.group(8))
        if m.group(9) not in ("0", "N/A"):
            fail("%s:%d: %s wrong results at %d bytes: not a measurement to keep"
                 % (path, n, m.group(9), size))
        out.append((size, us * 1e-6, alg, bus))
    if not out:
        fail("%s: no nccl-tests rows (size count type redop root time algbw busbw #wrong ...)"
             % path)
    return out


def factor(path, rs):
    """The test's bus factor, busbw / algbw, from its largest row (where
    both have the most digits)."""
    size, _, alg, bus = max(rs)
    if alg <= 0:
        fail("%s: its largest row (%d bytes) has no bandwidth to take the bus factor from"
             % (path, size))
    return bus / alg


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--profile", required=True, help="the profile to start from")
    ap.add_argument("--link", required=True, choices=("intra", "inter"))
    ap.add_argument("-o", "--out", help="where to write the profile (default: stdout)")
    ap.add_argument("logs", nargs="+", metavar="LOG")
    a = ap.parse_args()
    try:
        prof = json.load(open(a.profile))
    except (OSError, ValueError) as e:
        fail("%s: %s" % (a.profile, e))
    bw, lat = prof.get("%s_bw" % a.link), prof.get("%s_lat_s" % a.link)
    if not isinstance(bw, (int, float)) or not isinstance(lat, (int, float)) or bw <= 0 or lat < 0:
        fail("%s: needs %s_bw and %s_lat_s" % (a.profile, a.link, a.link))
    bins = {}  # decade -> [bytes, seconds past the latency, sum of log bytes, rows]
    skipped = 0
    for path in a.logs:
        rs = rows(path)
        f = factor(path, rs)
        for size, t, _, _ in rs:
            sent = size * f
            if sent <= 0:
                continue
            if t <= lat:
                skipped += 1
                continue
            b = bins.setdefault(int(math.floor(math.log10(sent))), [0.0, 0.0, 0.0, 0])
            b[0] += sent
            b[1] += t - lat
            b[2] += math.log(sent)
            b[3] += 1
    if not bins:
        fail("no row takes longer than the profile's %s_lat_s (%g s)" % (a.link, lat))
    points = []
    for d in sorted(bins)[-MAX_POINTS:]:
        sent, past, logs, n = bins[d]
        eff = sent / (past * bw)
        if eff > 1:
            sys.stderr.write("nccl_eff.py: around %.3g bytes the link reached %.2fx %s_bw: "
                             "held at 1\n" % (math.exp(logs / n), eff, a.link))
            eff = 1.0
        points.append([float("%.4g" % math.exp(logs / n)), round(eff, 4)])
    if skipped:
        sys.stderr.write("nccl_eff.py: %d row(s) no longer than %s_lat_s left out\n"
                         % (skipped, a.link))
    prof["%s_eff" % a.link] = points
    by = " ".join(["nccl_eff.py"] + sys.argv[1:])
    prof["calibrated_by"] = "; ".join(filter(None, [prof.pop("calibrated_by", None), by]))
    text = "{\n%s\n}\n" % ",\n".join("  %s: %s" % (json.dumps(k), json.dumps(v))
                                     for k, v in prof.items())
    if not a.out:
        sys.stdout.write(text)
        return
    tmp = "%s.tmp%d" % (a.out, os.getpid())  # whole or not at all
    try:
        with open(tmp, "w") as f:
            f.write(text)
        os.replace(tmp, a.out)
    except OSError as e:
        if os.path.exists(tmp):
            os.unlink(tmp)
        fail("%s: %s" % (a.out, e.strerror))


if __name__ == "__main__":
    main()
