# RUN: %shardc %S/embed.model --mesh 2 -o %t.plan
# Version 2 with a valid header checksum: a plan from an older shardc.
# RUN: python3 -c "import sys,struct,zlib; p=sys.argv[1]; b=bytearray(open(p,'rb').read()); b[8:12]=struct.pack('<I',2); b[24:28]=struct.pack('<I',zlib.crc32(bytes(b[:24]))); open(p,'wb').write(b)" %t.plan
# RUN: %expect 1 %shardrun %t.plan 2>&1 | FileCheck %s
# CHECK: shardrun: error: {{.*}}.plan: the plan was written by an older shardc (plan format 2; this shardrun reads 23): compile the model again
