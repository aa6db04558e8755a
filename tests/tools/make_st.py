#!/usr/bin/env python3
"""make_st.py OUT NAME=DTYPE[d0,d1,...]:VALUES ...: writes a safetensors file
for tests, with no dependency beyond the standard library.

VALUES is a comma-separated list repeated to fill the tensor ("0" fills with
zeros, "1,2,3" cycles). DTYPE is F32 or I32 (F16/BF16 take their raw bits as
integers). Example: make_st.py in.safetensors ids=I32[2,3]:0,9 x=F32[4]:0.5
"""
import json
import re
import struct
import sys

FORMATS = {"F32": "<f", "I32": "<i", "F16": "<H", "BF16": "<H", "F64": "<d"}


def main(argv):
    if len(argv) < 2:
        sys.exit(__doc__)
    header, blobs, offset = {}, [], 0
    for spec in argv[2:]:
        m = re.fullmatch(r"([^=]+)=([A-Z0-9]+)\[([0-9,]*)\]:(.*)", spec)
        if not m:
            sys.exit(f"make_st.py: bad tensor spec '{spec}'")
        name, dtype, dims, values = m.groups()
        shape = [int(d) for d in dims.split(",") if d]
        n = 1
        for d in shape:
            n *= d
        vals = [float(v) if dtype in ("F32", "F64") else int(v) for v in values.split(",")]
        data = b"".join(struct.pack(FORMATS[dtype], vals[i % len(vals)]) for i in range(n))
        header[name] = {"dtype": dtype, "shape": shape,
                        "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(argv[1], "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


if __name__ == "__main__":
    main(sys.argv)
