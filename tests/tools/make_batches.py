#!/usr/bin/env python3
"""make_batches.py OUT N NAME=DTYPE[d0,d1,...][<HI] ...: writes inputs with a
step dimension for tests, with no dependency beyond the standard library.

OUT gets each tensor with shape [N, d0, d1, ...] (batch k, 0-based, at
index k of the first dim); OUT.1 ... OUT.N each get one batch, shape
[d0, d1, ...], the same values, so a run reading batch k from OUT can be
compared with a run reading OUT.k. DTYPE is F32 (values normal(0, 1)) or
I32 (integers uniform in [0, HI)). Values depend only on (NAME, k, i), so
every call makes the same files. Example:
    make_batches.py in.safetensors 5 x=F32[8,4] ids=I32[8,16]<1024
"""
import json
import random
import re
import struct
import sys


def write(path, tensors):
    """tensors: list of (name, dtype, shape, packed bytes)."""
    header, offset = {}, 0
    for name, dtype, shape, data in tensors:
        header[name] = {"dtype": dtype, "shape": shape,
                        "data_offsets": [offset, offset + len(data)]}
        offset += len(data)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(t[3] for t in tensors))


def batch(name, dtype, shape, hi, k):
    n = 1
    for d in shape:
        n *= d
    rng = random.Random(f"{name}/{k}")
    if dtype == "F32":
        return struct.pack(f"<{n}f", *(rng.gauss(0.0, 1.0) for _ in range(n)))
    return struct.pack(f"<{n}i", *(rng.randrange(hi) for _ in range(n)))


def main(argv):
    if len(argv) < 4 or not argv[2].isdigit() or int(argv[2]) < 1:
        sys.exit(__doc__)
    out, steps = argv[1], int(argv[2])
    specs = []
    for spec in argv[3:]:
        m = re.fullmatch(r"([^=]+)=(F32|I32)\[([0-9,]*)\](?:<([0-9]+))?", spec)
        if not m or (m.group(2) == "I32") != (m.group(4) is not None):
            sys.exit(f"make_batches.py: bad tensor spec '{spec}'")
        name, dtype, dims, hi = m.groups()
        specs.append((name, dtype, [int(d) for d in dims.split(",") if d], int(hi or 0)))
    batches = {s[0]: [batch(*s, k) for k in range(steps)] for s in specs}
    write(out, [(name, dtype, [steps] + shape, b"".join(batches[name]))
                for name, dtype, shape, _ in specs])
    for k in range(steps):
        write(f"{out}.{k + 1}", [(name, dtype, shape, batches[name][k])
                                 for name, dtype, shape, _ in specs])


if __name__ == "__main__":
    main(sys.argv)
