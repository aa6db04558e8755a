#!/usr/bin/env python3
"""edit_kern.py PLAN EDIT: damages the KERN section of a one-stage plan
file in place, for the tests of the plan reader (runtime/plan/plan_io.c's
format 10). EDIT is one of:
  flip            a byte of the first cubin changed, checksums as they were
  cut-in-cubin    the section ends 16 bytes into the first cubin
  cubin-len=N     the first cubin's length set to N
  anchor=N        kernel 0's last instruction (its anchor) set to N
  arch=NAME       the first cubin's architecture name set to NAME (same length)
Every edit but flip makes the section's length, the checksums and the
header's total size right again, so that the reader's decoder or its
validator is what refuses the file."""
import struct
import sys
import zlib

path, edit = sys.argv[1], sys.argv[2]
b = bytearray(open(path, "rb").read())


def u(at, k):
    return int.from_bytes(b[at:at + k], "little")


def sections():
    pos, out = 28, []
    for _ in range(u(12, 4)):
        out.append(pos)
        pos += 20 + u(pos + 8, 8)
    return out


kern = sections()[3]
assert b[kern:kern + 4] == b"KERN", "section 3 is not KERN: not a one-stage plan"
p = kern + 20
# module 0: u32 nentry, str entries, u32 ncubin, then (str arch, u64 length,
# bytes)...
at = p + 4 + 4
for _ in range(u(p + 4, 4)):
    at += 4 + u(at, 4)
arch0 = at + 4
cubin0_len = arch0 + 4 + u(arch0, 4)
cubin0 = cubin0_len + 8
# skip every module, then kernel 0: i32 stage, str name, i32 module, i32
# entry, u8, u8, i64 grid, i32 block, i32 shared, u32 nin, u32 nout, params,
# u32 ninstr
at = p + 4
for _ in range(u(p, 4)):
    ne = u(at, 4)
    at += 4
    for _ in range(ne):
        at += 4 + u(at, 4)
    n = u(at, 4)
    at += 4
    for _ in range(n + 1):  # the cubins, then the PTX
        at += 4 + u(at, 4)
        at += 8 + u(at, 8)
at += 4 + 4  # the kernel count, kernel 0's stage
at += 4 + u(at, 4) + 4 + 4 + 1 + 1 + 8 + 4 + 4
nparams = u(at, 4) + u(at + 4, 4)
at += 8
for _ in range(nparams):
    at += 4 + 2 + 8 * b[at + 5]
ninstr = u(at, 4)
anchor = at + 4 + 4 * (ninstr - 1)

if edit == "flip":
    b[cubin0 + 5] ^= 0x40
elif edit == "cut-in-cubin":
    end = kern + 20 + u(kern + 8, 8)
    b[cubin0 + 16:end] = b""
    b[kern + 8:kern + 16] = struct.pack("<Q", cubin0 + 16 - (kern + 20))
elif edit.startswith("cubin-len="):
    b[cubin0_len:cubin0_len + 8] = struct.pack("<Q", int(edit[10:]))
elif edit.startswith("anchor="):
    b[anchor:anchor + 4] = struct.pack("<i", int(edit[7:]))
elif edit.startswith("arch="):
    name = edit[5:].encode()
    assert len(name) == u(arch0, 4), "the new name must have the old one's length"
    b[arch0 + 4:arch0 + 4 + len(name)] = name
else:
    sys.exit(f"edit_kern.py: unknown edit '{edit}'")

if edit != "flip":
    for s in sections():
        n = u(s + 8, 8)
        b[s + 16:s + 20] = struct.pack("<I", zlib.crc32(bytes(b[s + 20:s + 20 + n])))
    b[16:24] = struct.pack("<Q", len(b))
    b[24:28] = struct.pack("<I", zlib.crc32(bytes(b[:24])))
open(path, "wb").write(b)
