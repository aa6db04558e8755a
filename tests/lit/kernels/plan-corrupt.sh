# A damaged KERN section is refused before anything runs, with what is
# wrong and where: a checksum that no longer holds, a section cut short,
# an image longer than what is left, an anchor past the program, an
# architecture name that is not one (tests/lit/kernels/edit_kern.py makes
# the damage, and the checksums right again after every edit but the first).
# RUN: %shardc %S/plan.sh --mesh 2 --arch sm_80,sm_90 -o %t.plan
# RUN: cp %t.plan %t.1 && python3 %S/edit_kern.py %t.1 flip
# RUN: %expect 1 %shardrun %t.1 2>&1 | FileCheck %s --check-prefix=FLIP
# RUN: cp %t.plan %t.2 && python3 %S/edit_kern.py %t.2 cut-in-cubin
# RUN: %expect 1 %shardrun %t.2 2>&1 | FileCheck %s --check-prefix=CUT
# RUN: cp %t.plan %t.3 && python3 %S/edit_kern.py %t.3 cubin-len=1000000
# RUN: %expect 1 %shardrun %t.3 2>&1 | FileCheck %s --check-prefix=LEN
# RUN: cp %t.plan %t.4 && python3 %S/edit_kern.py %t.4 anchor=99
# RUN: %expect 1 %shardrun %t.4 2>&1 | FileCheck %s --check-prefix=ANCHOR
# RUN: cp %t.plan %t.5 && python3 %S/edit_kern.py %t.5 arch=sm_8x
# RUN: %expect 1 %shardrun %t.5 2>&1 | FileCheck %s --check-prefix=ARCH
# FLIP: shardrun: error: {{.*}}.1: checksum mismatch in section KERN: the file is corrupt
# CUT: shardrun: error: {{.*}}.2: section KERN: module 0, cubin has length {{[0-9]+}}, beyond the 16 bytes left
# LEN: shardrun: error: {{.*}}.3: section KERN: module 0, cubin has length 1000000, beyond the {{[0-9]+}} bytes left
# ANCHOR: shardrun: error: {{.*}}.4: kernel 0 (k0_add_gelu) of stage 0: instruction 99 is out of range (the program has 8)
# ARCH: shardrun: error: {{.*}}.5: module 0 (k0_add_gelu): cubin 0 has the architecture 'sm_8x'; expected sm_NN
