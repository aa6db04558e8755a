"""auto.sh's brute force: every strategy --auto searches for a model with
mesh dp, tp and a train line (meshes of N ranks over the two axes, ZeRO 0
to 3 where dp > 1, --recompute on and off, --keep-gathered on and off,
the latter counted only where it changes the estimated step or memory),
each compiled with `--report json` on its own, the fastest within the
limit (ties: the least memory) against --auto's first CSV row, and the
set of fitting strategies and their figures against the CSV's.

    auto.sh.py SHARDC MODEL N LIMIT_BYTES CSV
"""
import csv
import json
import subprocess
import sys


def main():
    shardc, model, n, limit, table = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
    found = []
    for dp in range(1, n + 1):
        if n % dp:
            continue
        tp = n // dp
        for zero in range(4 if dp > 1 else 1):
            plain = None
            for rc, keep in ((False, False), (False, True), (True, False)):
                cmd = [shardc, model, "--mesh", f"{dp}x{tp}", "--zero", str(zero), "--arch",
                       "none", "--report", "json"] + (["--recompute"] if rc else []) + \
                      (["--keep-gathered"] if keep else [])
                r = json.loads(subprocess.run(cmd, check=True, capture_output=True).stdout)
                peak = max(s["peak_bytes"] for s in r["stages"])
                got = (f"{dp}x{tp}", zero, int(rc), int(keep), r["estimate"]["step_ms"], peak)
                if not rc and not keep:
                    plain = got
                elif keep and got[4:] == plain[4:]:
                    continue  # the plain plan's figures: not another strategy
                found.append(got)
    fits = [f for f in found if f[5] <= limit]
    print(f"brute force: {len(found)} strategies, {len(fits)} within {limit} bytes")
    best = min(fits, key=lambda f: (f[4], f[5]))
    rows = list(csv.DictReader(open(table)))
    first = rows[0]
    got = (first["mesh"], int(first["zero"]), int(first["recompute"]), int(first["keep_gathered"]),
           float(first["step_ms"]), int(first["peak_bytes"]))
    same = got[:4] == best[:4] and abs(got[4] - best[4]) <= 1e-6 and got[5] == best[5]
    print(("the same winner: %s zero %d recompute %d keep-gathered %d, %.6f ms, %d bytes" if same
           else "DIFFERENT winner: auto %s, brute force %s") % (best if same else (got, best)))
    mine = {f[:4]: (round(f[4], 6), f[5]) for f in fits}
    theirs = {(r["mesh"], int(r["zero"]), int(r["recompute"]), int(r["keep_gathered"])):
              (round(float(r["step_ms"]), 6), int(r["peak_bytes"]))
              for r in rows if r["fits"] == "1"}
    print("the same fitting set and figures as the CSV" if mine == theirs else
          "DIFFERENT sets: only brute force %s, only CSV %s" %
          (sorted(set(mine.items()) - set(theirs.items())),
           sorted(set(theirs.items()) - set(mine.items()))))


main()
