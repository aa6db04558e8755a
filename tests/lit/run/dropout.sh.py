"""dropout.sh's inputs, and its outputs checked against a Python
transcription of runtime/plan/plan.h's rt_dropout_bits.

    dropout.sh.py inputs OUT                x = 1 .. 48 (f32[8, 6])
    dropout.sh.py check OUTPUTS PARAMS LAYERS  a, b and w after 2 steps
    dropout.sh.py identity OUTPUTS          a and b equal x
"""
import os
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools"))
from st_io import st_read, st_write  # noqa: E402

M64 = (1 << 64) - 1
X = [float(i + 1) for i in range(48)]
P = {"a": 0.25, "b": 0.5}
TAG = {"a": 0, "b": 1}
LR = 1e-4


def f32(v):
    return struct.unpack("<f", struct.pack("<f", v))[0]


def mix(z):
    z ^= z >> 30
    z = (z * 0xbf58476d1ce4e5b9) & M64
    z ^= z >> 27
    z = (z * 0x94d049bb133111eb) & M64
    return z ^ (z >> 31)


def bits(key, tag, g):
    z = ((((key & 0xffffffff) << 32) | (tag & 0xffffffff)) + 0x9e3779b97f4a7c15) & M64
    z = mix(z)
    z = (z + g * 0x9e3779b97f4a7c15) & M64
    return mix(z) >> 40


def kept(key, name, g):
    return bits(key, TAG[name], g) >= int(P[name] * 16777216.0 + 0.5)


def main():
    if sys.argv[1] == "inputs":
        st_write(sys.argv[2], [("x", "F32", [8, 6], X)])
        return
    got = {n: v for n, (dt, shape, v) in st_read(sys.argv[2]).items()}
    if sys.argv[1] == "identity":
        for name in "ab":
            print(f"{name}: the input, exact" if got[name] == X else f"{name}: MISMATCH")
        return
    par = {n: v for n, (dt, shape, v) in st_read(sys.argv[3]).items()}
    seed = par["rng.seed"][0]
    keys = [(seed + step * 1000003) & 0xffffffff for step in (1, 2)]
    keys = [k - (1 << 32) if k >= 1 << 31 else k for k in keys]
    # w after each step: the loss sum(h * h), h = a + b, so dL/da = dL/db
    # = 2 h, and w -= lr * sum over rows of 2 h x (kept / (1 - p)) for a
    # and b
    w = [1.0] * 6
    for key in keys:
        m = {n: [kept(key, n, i) / (1.0 - P[n]) for i in range(48)] for n in "ab"}
        h = [x * w[i % 6] * (m["a"][i] + m["b"][i]) for i, x in enumerate(X)]
        g = [0.0] * 6
        for i, x in enumerate(X):
            g[i % 6] += 2 * h[i] * x * (m["a"][i] + m["b"][i])
        w_now = list(w)
        w = [wi - LR * gi for wi, gi in zip(w, g)]
    for name in "ab":
        s = f32(1.0 / (1.0 - P[name]))
        want = [f32(f32(x * w_now[i % 6]) * s) if kept(keys[1], name, i) else 0.0
                for i, x in enumerate(X)]
        dropped = sum(1 for v in want if v == 0.0)
        bad = [i for i, (u, v) in enumerate(zip(want, got[name])) if abs(u - v) > 1e-6 * abs(u)]
        zeros = [i for i, (u, v) in enumerate(zip(want, got[name])) if (u == 0) != (v == 0)]
        mean = len(want) * P[name]
        sd = (len(want) * P[name] * (1 - P[name])) ** 0.5
        near = f"within 3 sd of {mean:g}" if abs(dropped - mean) <= 3 * sd else f"FAR from {mean:g}"
        print(f"{name}: {len(want)} values, {dropped} dropped ({near}): " +
              ("exact" if not bad and not zeros else f"MISMATCH at {(zeros or bad)[:5]}"))
    err = max(abs(u - v) / max(1.0, abs(u)) for u, v in zip(w, par["w"]))
    print("w: within 1e-06" if err <= 1e-6 else f"w: MISMATCH, relative error {err:.3g}")


main()
