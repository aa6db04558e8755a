# A safetensors BOOL input holds bytes 0 and 1 only: any other byte is
# refused with the file, the tensor and the byte, exit 1, no outputs.
# RUN: %shardc %s --mesh 2 -o %t.plan
# RUN: python3 -c "import struct, sys; sys.path.insert(0, sys.argv[1]); from st_io import _write_raw; _write_raw(sys.argv[2], [('x', 'F32', [4], struct.pack('<4f', 1, 2, 3, 4)), ('m', 'BOOL', [4], bytes([1, 0, 2, 1]))])" %S/../../tools %t.bad.st
# RUN: %expect 1 %shardrun %t.plan --inputs %t.bad.st --outputs %t.out 2>&1 | FileCheck %s
# RUN: test ! -e %t.out
# CHECK: error: {{.*}}bool-input-corrupt.sh:10:7: instruction {{[0-9]+}} (input): {{.*}}.bad.st: tensor 'm': byte 2 of its data is 2, not a bool (0 or 1)
mesh dp
input x : f32[4] shard(dp)
input m : bool[4]
y = where(m, x, 0.0)
output y
