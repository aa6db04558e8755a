"""indexing.sh's inputs, and its outputs checked against Python's own
indexing of nested lists (NumPy's rules for basic indexing).

    indexing.sh.py inputs OUT     x = 0, 1, 2, ... (f32[4, 6, 8]), ids = 10 .. 15
    indexing.sh.py check OUTPUTS  each output against the reference
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools"))
from st_io import st_read, st_write  # noqa: E402


def write(path, tensors):
    st_write(path, [(name, dt, shape, vals) for name, (dt, shape, vals) in tensors.items()])


def read(path):
    return {name: (shape, vals) for name, (dt, shape, vals) in st_read(path).items()}


def nest(flat, shape):
    if not shape:
        return flat[0]
    step = len(flat) // shape[0]
    return [nest(flat[i * step:(i + 1) * step], shape[1:]) for i in range(shape[0])]


def flat(v):
    return [e for x in v for e in flat(x)] if isinstance(v, list) else [v]


def cat(parts, axis):
    """concat of nested lists along axis."""
    if axis == 0:
        return [row for p in parts for row in p]
    return [cat([p[i] for p in parts], axis - 1) for i in range(len(parts[0]))]


def main():
    if sys.argv[1] == "inputs":
        write(sys.argv[2], {"x": ("F32", [4, 6, 8], [float(i) for i in range(192)]),
                            "ids": ("I32", [6], list(range(10, 16)))})
        return
    got = read(sys.argv[2])
    x = nest([float(i) for i in range(192)], [4, 6, 8])
    ids = list(range(10, 16))
    sl = lambda v, a, b: [row[a:b] for row in v]  # dim 1 of a 2-D nest
    want = {
        "a": [[x[i][j][-1] for j in range(1, 3)] for i in range(4)],
        "b": x[-4],
        "c": [[row[5:] + row[:-3] for row in m] for m in x],
        "d": [[row[0:2] + row[2:4] + row[4:8] + row[0:2] + row[2:4] for row in m] for m in x],
        "e": cat([[m[4:] for m in x], [m[:2] for m in x]], 1),
        "f": [row[7] for row in x[3][-100:100]],
        "n": ids[1:4] + ids[:] + ids[5:],
    }
    for name in sorted(want):
        w = flat(want[name])
        shape, g = got[name]
        print("%s: %d values %s" % (name, len(w), "exact" if g == w else "DIFFER: %s" % g[:16]))


main()
