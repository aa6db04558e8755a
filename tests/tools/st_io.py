"""st_io.py: safetensors files with the standard library alone, for the
test scripts (tests/run_train.py, tests/diff/diffcheck.py), which must run
under any python3, without numpy or torch. Comparing tensors in bulk is
st_compare's (tests/tools/st_compare.c): these lists of Python numbers are
for files of a few tensors, or for moving bytes without decoding them.
"""
import json
import re
import struct

DT_SIZE = {"F32": 4, "F16": 2, "BF16": 2, "I32": 4, "F64": 8, "BOOL": 1}


def st_load(path):
    """Returns (header, blob): {name: {dtype, shape, data_offsets}} without
    __metadata__, and the bytes after the header (the offsets' base)."""
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack_from("<Q", data, 0)
    header = json.loads(data[8:8 + n])
    header.pop("__metadata__", None)
    return header, data[8 + n:]


def _decode(dt, raw):
    count = len(raw) // DT_SIZE[dt]
    if dt == "F32":
        return list(struct.unpack(f"<{count}f", raw))
    if dt == "F16":
        return list(struct.unpack(f"<{count}e", raw))
    if dt == "BF16":
        bits = struct.unpack(f"<{count}H", raw)
        return list(struct.unpack(f"<{count}f", struct.pack(f"<{count}I",
                                                            *[b << 16 for b in bits])))
    if dt == "I32":
        return list(struct.unpack(f"<{count}i", raw))
    if dt == "F64":
        return list(struct.unpack(f"<{count}d", raw))
    return list(raw)


def st_read(path):
    """Returns {name: (dtype, shape, [values as float or int])}."""
    header, blob = st_load(path)
    out = {}
    for name, e in header.items():
        lo, hi = e["data_offsets"]
        out[name] = (e["dtype"], e["shape"], _decode(e["dtype"], blob[lo:hi]))
    return out


def _write_raw(path, tensors, metadata=None):
    """tensors: list of (name, dtype, shape, raw bytes); metadata: the
    header's "__metadata__" (an object of strings), or None for none."""
    header, off = ({"__metadata__": metadata} if metadata else {}), 0
    for name, dt, shape, raw in tensors:
        header[name] = {"dtype": dt, "shape": shape, "data_offsets": [off, off + len(raw)]}
        off += len(raw)
    text = json.dumps(header).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(t[3] for t in tensors))


def st_write(path, tensors):
    """tensors: list of (name, dtype, shape, values); dtype F32 F16 BF16 I32
    BOOL (values true or false, or 0 and 1)."""
    raws = []
    for name, dt, shape, vals in tensors:
        if dt == "F32":
            raw = struct.pack(f"<{len(vals)}f", *vals)
        elif dt == "F16":
            raw = struct.pack(f"<{len(vals)}e", *vals)
        elif dt == "BF16":
            words = struct.unpack(f"<{len(vals)}I", struct.pack(f"<{len(vals)}f", *vals))
            raw = struct.pack(f"<{len(vals)}H", *[w >> 16 for w in words])
        elif dt == "BOOL":
            raw = bytes(1 if v else 0 for v in vals)
        else:
            raw = struct.pack(f"<{len(vals)}i", *vals)
        raws.append((name, dt, shape, raw))
    _write_raw(path, raws)


def st_split(path, routes, rest):
    """Writes each tensor of PATH, its bytes as they are, to the file of the
    first (regex, out) of ROUTES whose regex its name matches (re.search),
    else to REST. Writes no file for no tensors; returns the files written."""
    header, blob = st_load(path)
    files = {}
    for name in sorted(header):
        out = next((o for pattern, o in routes if re.search(pattern, name)), rest)
        e = header[name]
        lo, hi = e["data_offsets"]
        files.setdefault(out, []).append((name, e["dtype"], e["shape"], blob[lo:hi]))
    for out, tensors in files.items():
        _write_raw(out, tensors)
    return set(files)
