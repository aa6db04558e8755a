"""attention-gqa.sh's inputs (random, seeded) and its reference: attention
written out in float64, query head h reading key/value head h // (H // G),
scores q.k * scale (default 1/sqrt(d)) + mask, -inf where j > i + T - S
when causal, softmax over j, then @ v. Standard library only."""
import json
import math
import random
import struct
import sys

B, H, G, S, T, D = 2, 4, 2, 4, 6, 3
SHAPES = {"q": [B, H, S, D], "k": [B, G, T, D], "v": [B, G, T, D], "m": [S, T]}


def write(path, tensors):
    header, blobs, off = {}, [], 0
    for name, (shape, vals) in tensors.items():
        data = struct.pack("<%df" % len(vals), *vals)
        header[name] = {"dtype": "F32", "shape": shape, "data_offsets": [off, off + len(data)]}
        blobs.append(data)
        off += len(data)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def read(path):
    b = open(path, "rb").read()
    n = struct.unpack("<Q", b[:8])[0]
    h = json.loads(b[8:8 + n])
    out = {}
    for name, e in h.items():
        if name == "__metadata__":
            continue
        lo, hi = e["data_offsets"]
        out[name] = list(struct.unpack("<%df" % ((hi - lo) // 4), b[8 + n + lo:8 + n + hi]))
    return out


def attention(x, causal, scale, mask):
    q, k, v, m = x["q"], x["k"], x["v"], x["m"]
    out = []
    for b in range(B):
        for h in range(H):
            g = h // (H // G)
            for i in range(S):
                s = []
                for j in range(T):
                    dot = sum(q[((b * H + h) * S + i) * D + e] * k[((b * G + g) * T + j) * D + e]
                              for e in range(D))
                    val = dot * (scale if scale else 1 / math.sqrt(D))
                    if mask:
                        val += m[i * T + j]
                    if causal and j > i + T - S:
                        val = -math.inf
                    s.append(val)
                top = max(s)
                p = [math.exp(x - top) for x in s]
                z = sum(p)
                for e in range(D):
                    out.append(sum(p[j] / z * v[((b * G + g) * T + j) * D + e] for j in range(T)))
    return out


def main(argv):
    if argv[1] == "inputs":
        r = random.Random(7)
        write(argv[2], {n: (s, [r.uniform(-2, 2) for _ in range(math.prod(s))])
                        for n, s in SHAPES.items()})
        return
    x, got = read(argv[2]), read(argv[3])
    cases = [("a", True, None, False, "causal"), ("b", True, 0.7, False, "causal, scale 0.7"),
             ("c", True, 0.7, True, "causal, scale 0.7, mask"), ("d", False, None, True, "mask")]
    for name, causal, scale, mask, what in cases:
        want = attention(x, causal, scale, mask)
        bad = len(got[name]) != len(want) or any(abs(a - w) > 1e-5 for a, w in zip(got[name], want))
        print("%s: %d values %s 1e-05 (%s)" % (name, len(want), "NOT within" if bad else "within",
                                               what))


if __name__ == "__main__":
    main(sys.argv)
