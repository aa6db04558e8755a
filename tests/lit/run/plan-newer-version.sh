# RUN: %shardc %S/embed.model --mesh 2 -o %t.plan
# Version 24 with a valid header checksum: a plan from a newer shardc.
# RUN: python3 -c "import sys,struct,zlib; p=sys.argv[1]; b=bytearray(open(p,'rb').read()); b[8:12]=struct.pack('<I',24); b[24:28]=struct.pack('<I',zlib.crc32(bytes(b[:24]))); open(p,'wb').write(b)" %t.plan
# RUN: %expect 1 %shardrun %t.plan 2>&1 | FileCheck %s
# CHECK: shardrun: error: {{.*}}.plan: plan format version 24 is newer than this shardrun reads (23)
