# RUN: %shardc %S/embed.model --mesh 2 -o %t.plan
# One byte changed inside the program section: its checksum no longer holds.
# RUN: python3 -c "import sys; p=sys.argv[1]; b=bytearray(open(p,'rb').read()); b[len(b)-60]^=0x20; open(p,'wb').write(b)" %t.plan
# RUN: %expect 1 %shardrun %t.plan 2>&1 | FileCheck %s
# CHECK: shardrun: error: {{.*}}.plan: checksum mismatch in section {{[A-Z]+}}{{.*}}: the file is corrupt
