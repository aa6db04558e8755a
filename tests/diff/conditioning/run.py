#!/usr/bin/env python3
"""run.py: diffcheck.py's ill-conditioned class (tests/diff/README.md).

A mismatch counts as ill-conditioned only where 1 ulp of the inputs moves
the reference past the tolerance and the sharded run is not much further
from it. Checked here:
- nudge moves every finite f32, f16 and bf16 element by one unit in the
  last place of its magnitude, and leaves infinities, NaNs, i32 and bool;
- distance measures in tolerances, and calls an i32 difference or a lone
  NaN infinitely far;
- the rule: every tensor past the tolerance must be one that 1 ulp moves
  past it in the reference, the sharded run at most 4x as far;
- ill.sh, whose sharded run differs from the reference as much as the
  reference moves on nudged inputs, is ill-conditioned;
- ill.sh with its sharded params moved 50 tolerances (a shardrun wrapper
  standing in for a wrong plan) is a mismatch all the same;
- ill.sh with a sharded param left out fails (a mismatch or a missing
  tensor, whichever compare meets first), and is not weighed;
- tame.sh passes, and with its sharded params moved 3 tolerances is a
  mismatch: 1 ulp of its inputs moves its reference by a fraction of one;
- ill-params.sh, an inference program whose one input is i32 ids, has its
  params moved too (saved from a reference run), which moves its
  reference (a fraction of a tolerance there), and is a mismatch: the
  bf16 sum over a split axis rounded before its all-reduce and again
  after it, then a layernorm over 4 features (a known difference, gen.py
  seed 2773995);
- ill-train.sh, a bf16 training program, is ill-conditioned only through
  its starting params (saved from the model without `train`, read back
  moved): 1 ulp of its inputs alone keeps its reference within the
  tolerance; with its sharded params moved 50 tolerances it is a mismatch
  (gen.py seed 2946947).
Reads SHARDC and SHARDRUN, as diffcheck.py does.
"""
import math
import os
import re
import struct
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tools"))
import diffcheck  # noqa: E402
from st_io import st_load, st_read, st_write  # noqa: E402

failures = 0


def check(cond, what):
    global failures
    if not cond:
        failures += 1
        print(f"FAILED: {what}", flush=True)


def words(path, name):
    header, blob = st_load(path)
    e = header[name]
    lo, hi = e["data_offsets"]
    fmt = "I" if e["dtype"] in ("F32", "I32") else ("H" if e["dtype"] != "BOOL" else "B")
    return list(struct.unpack(f"<{(hi - lo) // struct.calcsize(fmt)}{fmt}", blob[lo:hi]))


def test_nudge(tmp):
    big32, big16 = 3.4028234663852886e38, 65504.0
    src, dst = os.path.join(tmp, "a.st"), os.path.join(tmp, "b.st")
    st_write(src, [("f", "F32", [8], [0.0, 1.0, -1.5, big32, math.inf, -math.inf, math.nan,
                                      1e-45]),
                   ("h", "F16", [4], [0.0, 2.0, -big16, math.inf]),
                   ("b", "BF16", [3], [0.0, -3.0, 1.0e30]),
                   ("i", "I32", [3], [0, -7, 2147483647]),
                   ("q", "BOOL", [2], [1, 0])])
    diffcheck.nudge(src, dst, 1)
    for name, sign in (("f", 0x80000000), ("h", 0x8000), ("b", 0x8000)):
        a, b = words(src, name), words(dst, name)
        for k, (x, y) in enumerate(zip(a, b)):
            mag_x, mag_y = x & (sign - 1), y & (sign - 1)
            special = (name == "f" and k in (4, 5, 6)) or (name == "h" and k == 3)
            if special:
                check(x == y, f"nudge leaves {name}[{k}] (an infinity or NaN) as it is")
            else:
                check(x & sign == y & sign and abs(mag_x - mag_y) == 1,
                      f"nudge moves {name}[{k}] by one ulp: {x:#x} to {y:#x}")
            if mag_x == 0:
                check(mag_y == 1, f"nudge moves {name}[{k}] (zero) up")
    check(words(dst, "f")[3] == words(src, "f")[3] - 1, "nudge moves the largest f32 down")
    check(words(dst, "h")[2] & 0x7FFF == 0x7BFE, "nudge moves the largest f16 down")
    check(st_read(dst)["i"] == st_read(src)["i"] and st_read(dst)["q"] == st_read(src)["q"],
          "nudge leaves i32 and bool tensors as they are")
    diffcheck.nudge(src, os.path.join(tmp, "c.st"), 2)
    check(words(os.path.join(tmp, "c.st"), "f") != words(dst, "f"),
          "another seed draws other directions")


def test_distance():
    tol = diffcheck.TOL
    d = diffcheck.distance([1.0, 2.0], [1.0, 2.0 + 2 * (1e-5 * 2 + 1e-4 * 2)], "F32", "f32", tol)
    check(abs(d - 2.0) < 1e-9, f"distance counts tolerances (2, got {d})")
    check(diffcheck.distance([1.0], [1.0], "F32", "f32", tol) == 0.0, "distance of equal is 0")
    check(diffcheck.distance([3, 4], [3, 5], "I32", "f32", tol) == math.inf,
          "an i32 difference is infinitely far")
    check(diffcheck.distance([1.0], [math.nan], "F32", "f32", tol) == math.inf,
          "a NaN against a number is infinitely far")
    check(diffcheck.distance([math.nan], [math.nan], "F32", "f32", tol) == 0.0,
          "a NaN against a NaN agrees")


def test_rule():
    ill = diffcheck.ill_conditioned
    check(ill([("a", 3.0, 1.2)]), "3 tolerances where the nudged reference moves 1.2: ill")
    check(ill([("a", 4.8, 1.2), ("b", 1.1, 2.0)]), "every tensor within 4x: ill")
    check(not ill([("a", 1.5, 0.5)]), "a reference that 1 ulp keeps within the tolerance: "
          "a mismatch, however close the sharded run")
    check(not ill([("a", 5.0, 1.2)]), "more than 4x the reference's own move: a mismatch")
    check(not ill([("a", 2.0, 1.5), ("b", 3.0, 0.1)]), "one tensor not explained: a mismatch")
    check(not ill([]), "nothing past the tolerance: not ill-conditioned")


WRAPPER = '''#!/usr/bin/env python3
# shardrun as a wrong plan would run: the sharded run's (more than one
# rank) first float param (not an optimizer state) moved COND_TOLERANCES
# tolerances of the program's precision COND_PREC (a trained param's rtol and
# atol, one number for both) at element 0
import os, subprocess, sys
sys.path.insert(0, {tools!r})
from st_io import st_read, st_write
args = sys.argv[1:]
rc = subprocess.call([{shardrun!r}] + args)
if rc == 0 and "--save-params" in args and args[args.index("--ranks") + 1] != "1":
    path = args[args.index("--save-params") + 1]
    t = st_read(path)
    tol = {{"f32": 1e-4, "f16": 1e-2, "bf16": 4e-2}}[os.environ.get("COND_PREC", "f32")]
    name = next(n for n in t if t[n][0] in ("F32", "F16", "BF16")
                and not n.startswith(("opt.", "rng.")))
    dt, shape, v = t[name]
    scale = max([1.0] + [abs(x) for x in v])
    v[0] += float(os.environ["COND_TOLERANCES"]) * tol * (scale + abs(v[0]))
    if os.environ.get("COND_DROP"):  # the last tensor left out
        del t[list(t)[-1]]
    st_write(path, [(n, d, s, x) for n, (d, s, x) in t.items()])
sys.exit(rc)
'''


def diffcheck_run(model, shardrun, moved=None, drop=False, prec="f32"):
    env = dict(os.environ, SHARDRUN=shardrun, COND_PREC=prec)
    if drop:
        env["COND_DROP"] = "1"
    if moved is not None:
        env["COND_TOLERANCES"] = str(moved)
    p = subprocess.run([sys.executable, os.path.join(HERE, "..", "diffcheck.py"),
                        os.path.join(HERE, model), "--quiet"],
                       capture_output=True, text=True, env=env, timeout=600)
    return p.returncode, p.stdout.strip()


def test_models(tmp):
    shardrun = os.path.abspath(os.environ.get("SHARDRUN", "build/shardrun"))
    wrapper = os.path.join(tmp, "shardrun-moved")
    with open(wrapper, "w") as f:
        f.write(WRAPPER.format(tools=os.path.join(HERE, "..", "..", "tools"),
                               shardrun=shardrun))
    os.chmod(wrapper, 0o755)
    rc, out = diffcheck_run("ill.sh", shardrun)
    check(rc == 1 and out.startswith("FAIL ill-conditioned:") and "moved 1 ulp" in out,
          f"ill.sh is ill-conditioned: {rc} {out[:300]}")
    rc, out = diffcheck_run("ill.sh", wrapper, 50)
    check(rc == 1 and out.startswith("FAIL mismatch:") and "'w2'" in out,
          f"ill.sh moved 50 tolerances is a mismatch: {rc} {out[:300]}")
    rc, out = diffcheck_run("ill.sh", wrapper, 0, drop=True)
    check(rc == 1 and (out.startswith("FAIL missing:") or out.startswith("FAIL mismatch:")),
          f"ill.sh with a param left out fails, not ill-conditioned: {rc} {out[:300]}")
    rc, out = diffcheck_run("tame.sh", shardrun)
    check(rc == 0, f"tame.sh passes: {rc} {out[:300]}")
    rc, out = diffcheck_run("tame.sh", wrapper, 3)
    check(rc == 1 and out.startswith("FAIL mismatch:") and "moved 1 ulp" in out,
          f"tame.sh moved 3 tolerances is a mismatch: {rc} {out[:300]}")
    rc, out = diffcheck_run("ill-params.sh", shardrun)
    m = re.search(r"the reference on inputs and params moved 1 ulp ([0-9.e+-]+)", out)
    check(rc == 1 and out.startswith("FAIL mismatch:") and m and float(m.group(1)) > 0.0,
          f"ill-params.sh: its params moved, the reference moves, a mismatch: {rc} {out[:300]}")
    rc, out = diffcheck_run("ill-train.sh", shardrun)
    check(rc == 1 and out.startswith("FAIL ill-conditioned:") and
          "the reference on inputs and params moved 1 ulp" in out,
          f"ill-train.sh is ill-conditioned through its params: {rc} {out[:300]}")
    rc, out = diffcheck_run("ill-train.sh", wrapper, 50, prec="bf16")
    check(rc == 1 and out.startswith("FAIL mismatch:") and "'layers.0.blk5.w2'" in out,
          f"ill-train.sh moved 50 tolerances is a mismatch: {rc} {out[:300]}")


def main():
    with tempfile.TemporaryDirectory(prefix="conditioning.") as tmp:
        test_nudge(tmp)
        test_distance()
        test_rule()
        test_models(tmp)
    print(f"conditioning: {'failed ' + str(failures) if failures else 'passed'}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
