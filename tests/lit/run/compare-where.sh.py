"""compare-where.sh's inputs, and its outputs and updated param checked
against Python's own comparisons (IEEE: NaN is unequal to everything).

    compare-where.sh.py inputs OUT            x, m, ids and z
    compare-where.sh.py check OUTPUTS PARAMS  each against the reference
"""
import math
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools"))
from st_io import st_read, st_write  # noqa: E402

# x: quarters from -2.5 (0.5 appears once per row: ties for <= and >=),
# exactly representable, so sums of them are exact in f32 as in Python
X = [[(r * 6 + c) * 0.25 - 2.5 + (0.25 if r % 2 else 0.0) for c in range(6)] for r in range(4)]
M = [True, False, False, True, True, False]
IDS = [[(r + c) % 4 for c in range(6)] for r in range(4)]
Z = [math.nan, 1.0, math.inf, 0.0]
LR = 0.125


def main():
    if sys.argv[1] == "inputs":
        st_write(sys.argv[2], [
            ("x", "F32", [4, 6], [v for row in X for v in row]),
            ("m", "BOOL", [6], M),
            ("ids", "I32", [4, 6], [v for row in IDS for v in row]),
            ("z", "F32", [4], Z),
        ])
        return
    got = {n: vals for n, (dt, shape, vals) in st_read(sys.argv[2]).items()}
    got.update({n: vals for n, (dt, shape, vals) in st_read(sys.argv[3]).items()})
    xs = [v for row in X for v in row]
    want = {
        "clt": [v < 0.5 for v in xs],
        "cle": [v <= 0.5 for v in xs],
        "cgt": [v > 0.5 for v in xs],
        "cge": [v >= 0.5 for v in xs],
        "ceq": [v == 0.5 for v in xs],
        "cne": [v != 0.5 for v in xs],
        "nan": [v != v for v in Z] + [v == 1.0 for v in Z],
        "fb": [float((X[r][c] != 0) == M[c]) for r in range(4) for c in range(6)],
        "iw": [IDS[r][c] if IDS[r][c] > 1 else -1 for r in range(4) for c in range(6)],
        # the forward with w = 1, before the step
        "y": [X[r][c] if M[c] else 2.0 for r in range(4) for c in range(6)],
        # d sum(y) / d w[c]: x[:, c] summed where m[c], else 2 per row
        "w": [1.0 - LR * (sum(X[r][c] for r in range(4)) if M[c] else 8.0) for c in range(6)],
    }
    for name in sorted(want):
        w = [float(v) for v in want[name]]
        g = [float(v) for v in got[name]]
        bad = [i for i, (a, b) in enumerate(zip(w, g)) if a != b]
        if len(g) != len(w) or bad:
            print(f"{name}: MISMATCH at {bad[:5]}: want {w[:8]}, got {g[:8]}")
        else:
            print(f"{name}: {len(w)} values exact")


main()
