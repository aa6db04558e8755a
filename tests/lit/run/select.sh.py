"""select.sh's inputs, and its outputs checked against plain Python.

    select.sh.py inputs OUT     x[e] = (37 e) mod 11 (f32[4, 6, 8]: ties in
                                every row), ids = e mod 7 - 1 (some outside
                                [0, 5)), gi = (5 e) mod 8
    select.sh.py check OUTPUTS  each output against the reference
"""
import json
import struct
import sys

B, S, N = 4, 6, 8


def write(path, tensors):
    header, blobs, offset = {}, [], 0
    for name, (dtype, shape, values) in tensors.items():
        blob = struct.pack("<%d%s" % (len(values), "f" if dtype == "F32" else "i"), *values)
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + len(blob)]}
        offset += len(blob)
        blobs.append(blob)
    h = json.dumps(header).encode()
    open(path, "wb").write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def read(path):
    b = open(path, "rb").read()
    n = struct.unpack("<Q", b[:8])[0]
    header, data, out = json.loads(b[8:8 + n]), b[8 + n:], {}
    for name, t in header.items():
        if name != "__metadata__":
            lo, hi = t["data_offsets"]
            fmt = "f" if t["dtype"] == "F32" else "i"
            out[name] = list(struct.unpack("<%d%s" % ((hi - lo) // 4, fmt), data[lo:hi]))
    return out


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
