"""select.sh's inputs, and its outputs checked against plain Python.

    select.sh.py inputs OUT     x[e] = (37 e) mod 11 (f32[4, 6, 8]: ties in
                                every row), ids = e mod 7 - 1 (some outside
                                [0, 5)), gi = (5 e) mod 8
    select.sh.py check OUTPUTS  each output against the reference
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools"))
from st_io import st_read, st_write  # noqa: E402

B, S, N = 4, 6, 8


def write(path, tensors):
    st_write(path, [(name, dt, shape, vals) for name, (dt, shape, vals) in tensors.items()])


def read(path):
    return {name: vals for name, (dt, shape, vals) in st_read(path).items()}


X = [float((37 * e) % 11) for e in range(B * S * N)]
IDS = [e % 7 - 1 for e in range(B * S)]
GI = [(5 * e) % N for e in range(B * S * 3)]


def x(b, s, n):
    return X[(b * S + s) * N + n]


def first_max(vals):
    return max(range(len(vals)), key=lambda k: (vals[k], -k))


def main():
    if sys.argv[1] == "inputs":
        write(sys.argv[2], {"x": ("F32", [B, S, N], X), "ids": ("I32", [B, S], IDS),
                            "gi": ("I32", [B, S, 3], GI)})
        return
    got = read(sys.argv[2])
    rows = [(b, s) for b in range(B) for s in range(S)]
    want = {
        "oh": [1.0 if IDS[r] == c else 0.0 for r in range(B * S) for c in range(5)],
        "am": [first_max([x(b, s, n) for n in range(N)]) for b, s in rows],
        "am1": [first_max([x(b, s, n) for s in range(S)]) for b in range(B) for n in range(N)],
        "g": [x(b, s, GI[(b * S + s) * 3 + j]) for b, s in rows for j in range(3)],
        "cs": [sum(x(b, s, k) for k in range(n + 1)) for b, s in rows for n in range(N)],
    }
    v, i = [], []
    for b, s in rows:
        order = sorted(range(N), key=lambda k: (-x(b, s, k), k))[:3]
        i += order
        v += [x(b, s, k) for k in order]
    want["v"], want["i"] = v, i
    for name in sorted(want):
        w, g = want[name], got[name]
        print("%s: %d values %s" % (name, len(w), "exact" if g == w else "DIFFER: %s" % g[:24]))


main()
