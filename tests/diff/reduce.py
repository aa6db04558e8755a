#!/usr/bin/env python3
"""reduce.py MODEL OUT [--shardc P] [--shardrun P]: shrinks a failing model.

MODEL must fail tests/diff/diffcheck.py. The reducer removes what the
failure does not need, keeping each change only while the model still
fails the same way (the same failure class and, for compile and run
errors, the same message with its numbers and names blanked):
  - whole statements and declarations, one at a time (a block with its
    body; a `repeat` with its body, or just its header and closing brace);
  - sharding annotations, keyword options (`keepdims`, `eps`, `causal`),
    a `zero K over AXIS`, names in an `output` line;
  - mesh axes, each size down to 1, and all but one `diff-mesh` line.
A removal that makes the model invalid (the reference no longer compiles)
is a different failure, so it is undone. Repeats until nothing more goes.
Writes the smallest failing model to OUT with a `# diff:` line naming the
failure; exit 0, or 1 when MODEL does not fail to begin with.
"""
import os
import re
import sys
import tempfile

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import diffcheck  # noqa: E402


def signature(failure):
    if failure is None:
        return None
    detail = failure.detail
    if failure.cls in ("crash", "reject", "error-differs"):
        m = re.search(r"error: (.*?)(\[|$)", detail)
        text = m.group(1) if m else detail
        text = re.sub(r"'[^']*'", "'_'", text)
        text = re.sub(r"\b(line|op|entries|stage|rank) [0-9, and]+", r"\1 N", text)
        text = re.sub(r"[0-9]+", "N", text)
        text = re.sub(r"\b[a-z]+[0-9]*\[[^]]*\]", "T", text)
        return (failure.cls, text.strip())
    return (failure.cls, "")


class Reducer:
    def __init__(self, shardc, shardrun):
        self.shardc, self.shardrun = shardc, shardrun
        self.tries = 0

    def failure(self, text):
        self.tries += 1
        with tempfile.TemporaryDirectory(prefix="reduce.") as work:
            path = os.path.join(work, "model.sh")
            with open(path, "w") as f:
                f.write(text)
            try:
                diffcheck.Checker(self.shardc, self.shardrun, work, True).check(path)
            except diffcheck.Failure as e:
                return e
        return None

    def same(self, text):
        return signature(self.failure(text)) == self.want

    def candidates(self, lines):
        """Smaller versions of lines, most removed first."""
        n = len(lines)
        for i in range(n):
            line = lines[i]
            s = line.strip()
            if not s or s.startswith("mesh ") or s.startswith("# diff-") or s.startswith("let "):
                continue
            if s.endswith("{"):
                depth, j = 0, i
                while j < n:
                    depth += lines[j].count("{") - lines[j].count("}")
                    if depth == 0:
                        break
                    j += 1
                yield lines[:i] + lines[j + 1:]
                if s.startswith("repeat"):
                    yield lines[:i] + lines[i + 1:j] + lines[j + 1:]
                continue
            if s == "}":
                continue
            yield lines[:i] + lines[i + 1:]
        for i, line in enumerate(lines):
            if line.lstrip().startswith("#"):
                continue
            for pat in (r"\s*shard\([^()]*(\([^()]*\)[^()]*)*\)", r",\s*keepdims = true",
                        r",\s*eps = [0-9.e-]+", r",\s*causal = (true|false)",
                        r"\s+zero [0-9] over \w+", r",\s*momentum = [0-9.]+",
                        r"\s+over \w+(?=\s*\{)"):
                new = re.sub(pat, "", line, count=1)
                if new != line:
                    yield lines[:i] + [new] + lines[i + 1:]
            m = re.match(r"(\s*output\s+)(.*)$", line)
            if m and "," in m.group(2):
                names = [x.strip() for x in m.group(2).split(",")]
                for k in range(len(names)):
                    rest = names[:k] + names[k + 1:]
                    yield lines[:i] + [m.group(1) + ", ".join(rest)] + lines[i + 1:]
        meshes = [i for i, l in enumerate(lines) if l.startswith("# diff-mesh:")]
        if len(meshes) > 1:
            for keep in meshes:
                yield [l for i, l in enumerate(lines) if i == keep or i not in meshes]
        for i in meshes:
            sizes = lines[i].split(":", 1)[1].strip().split("x")
            for k, v in enumerate(sizes):
                for smaller in range(1, int(v)):
                    new = sizes[:k] + [str(smaller)] + sizes[k + 1:]
                    prod = 1
                    for x in new:
                        prod *= int(x)
                    if prod > 1:
                        yield lines[:i] + ["# diff-mesh: " + "x".join(new)] + lines[i + 1:]

    def reduce(self, text):
        first = self.failure(text)
        if first is None:
            return None, None
        self.want = signature(first)
        lines = text.rstrip("\n").split("\n")
        progress = True
        while progress:
            progress = False
            for cand in self.candidates(lines):
                if self.same("\n".join(cand) + "\n"):
                    lines = cand
                    progress = True
                    break
        return "\n".join(lines) + "\n", first


def main(argv):
    import argparse
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("model")
    ap.add_argument("out")
    ap.add_argument("--shardc", default=os.environ.get("SHARDC", "build/shardc"))
    ap.add_argument("--shardrun", default=os.environ.get("SHARDRUN", "build/shardrun"))
    a = ap.parse_args(argv)
    with open(a.model) as f:
        text = f.read()
    red = Reducer(a.shardc, a.shardrun)
    small, first = red.reduce(text)
    if small is None:
        print(f"reduce.py: {a.model} does not fail", file=sys.stderr)
        return 1
    body = [l for l in small.split("\n") if not l.startswith("# generated")]
    head = f"# diff: reduced from {os.path.basename(a.model)}: {first.cls}: {first.detail[:200]}"
    with open(a.out, "w") as f:
        f.write(head + "\n" + "\n".join(body))
    print(f"reduce.py: {a.out}: {len(body)} lines after {red.tries} tries ({first.cls})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
