#!/usr/bin/env python3
"""soak.py N SEED [--jobs J] [--out DIR] [--avoid LIST] [--no-reduce]:
generates N programs (tests/diff/gen.py, seeds SEED .. SEED+N-1), checks
each with tests/diff/diffcheck.py, and reduces every failure
(tests/diff/reduce.py). Failing programs land in DIR (default
build/diff-failures) as fail-SEED.sh, reduced as fail-SEED.min.sh.

Prints a line per failure, the count per failure class, and closes with
`diff: N passed, N failed, N ill-conditioned`. An ill-conditioned program
(diffcheck.py: 1 ulp of its inputs moves its reference past the tolerance,
and the sharded run is no further off than that) is neither passed nor
failed: the comparison cannot tell there. It lands in DIR as ill-SEED.sh,
unreduced. Exit 0 when none failed, 1 otherwise.
"""
import argparse
import collections
import concurrent.futures as cf
import os
import sys
import tempfile

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import diffcheck  # noqa: E402
import gen  # noqa: E402
import reduce as reducer  # noqa: E402


def one(seed, avoid, shardc, shardrun):
    text = gen.Gen(seed, avoid).generate()
    with tempfile.TemporaryDirectory(prefix="diff.") as work:
        path = os.path.join(work, f"gen-{seed}.sh")
        with open(path, "w") as f:
            f.write(text)
        try:
            diffcheck.Checker(shardc, shardrun, work, True).check(path)
        except diffcheck.Failure as e:
            return seed, text, e
    return seed, text, None


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("n", type=int)
    ap.add_argument("seed", type=int)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--out", default="build/diff-failures")
    ap.add_argument("--avoid", default=os.environ.get("DIFF_AVOID", ""))
    ap.add_argument("--no-reduce", action="store_true")
    ap.add_argument("--shardc", default=os.environ.get("SHARDC", "build/shardc"))
    ap.add_argument("--shardrun", default=os.environ.get("SHARDRUN", "build/shardrun"))
    a = ap.parse_args(argv)
    avoid = [x for x in a.avoid.split(",") if x]
    shardc, shardrun = os.path.abspath(a.shardc), os.path.abspath(a.shardrun)
    classes = collections.Counter()
    failed, ill = [], []
    with cf.ThreadPoolExecutor(a.jobs) as pool:
        futs = [pool.submit(one, s, avoid, shardc, shardrun)
                for s in range(a.seed, a.seed + a.n)]
        for done, fut in enumerate(cf.as_completed(futs), 1):
            seed, text, err = fut.result()
            if err is not None and err.cls == "ill-conditioned":
                ill.append((seed, text))
                print(f"seed {seed}: ill-conditioned: {err.detail[:300]}", flush=True)
            elif err is not None:
                classes[err.cls] += 1
                failed.append((seed, text, err))
                print(f"seed {seed}: FAIL {err.cls}: {err.detail[:300]}", flush=True)
            if done % 1000 == 0:
                print(f"diff: {done} checked, {done - len(failed) - len(ill)} passed",
                      flush=True)
    if failed or ill:
        os.makedirs(a.out, exist_ok=True)
    for seed, text in ill:
        with open(os.path.join(a.out, f"ill-{seed}.sh"), "w") as f:
            f.write(text)
    for seed, text, err in sorted(failed, key=lambda t: t[0]):
        path = os.path.join(a.out, f"fail-{seed}.sh")
        with open(path, "w") as f:
            f.write(text)
        if not a.no_reduce:
            red = reducer.Reducer(shardc, shardrun)
            small, first = red.reduce(text)
            if small is not None:
                with open(os.path.join(a.out, f"fail-{seed}.min.sh"), "w") as f:
                    f.write(f"# diff: reduced from gen.py seed {seed}: {first.cls}: "
                            f"{first.detail[:160]}\n" + small)
                print(f"seed {seed}: reduced to {a.out}/fail-{seed}.min.sh "
                      f"({small.count(chr(10))} lines)")
    for cls, n in sorted(classes.items()):
        print(f"  {cls}: {n}")
    print(f"diff: {a.n - len(failed) - len(ill)} passed, {len(failed)} failed, "
          f"{len(ill)} ill-conditioned")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
