"""Checks arange-table.sh's outputs (a safetensors file) against math."""
import json
import math
import struct
import sys

b = open(sys.argv[1], "rb").read()
n = struct.unpack("<Q", b[:8])[0]
h = json.loads(b[8:8 + n])
data = b[8 + n:]


def tensor(name, fmt):
    lo, hi = h[name]["data_offsets"]
    return list(struct.unpack("<%d%s" % ((hi - lo) // 4, fmt), data[lo:hi]))


print("ids", tensor("ids", "i"))
c, y = tensor("c", "f"), tensor("y", "f")
want_c = [math.cos(0.5 * i * j) for i in range(8) for j in range(4)]
want_y = [math.cos(0.5 * i * j) + math.sin(0.5 * i * j) for _ in range(2) for i in range(8)
          for j in range(4)]
for name, got, want in (("c", c, want_c), ("y", y, want_y)):
    bad = [k for k in range(len(want)) if abs(got[k] - want[k]) > 1e-6]
    print("%s: %d values %s 1e-06 of %s" % (name, len(want), "within" if not bad and len(got) ==
          len(want) else "NOT within", "cos(0.5 i j)" + (" + sin(0.5 i j)" if name == "y" else "")))
