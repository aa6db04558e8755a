# An output that names a file the command reads is refused before anything
# is written (bad usage, exit 2), and the file is left as it was: shardc's
# -o, --trace, --auto-csv and --auto-svg against the model and a --hw
# profile (also through a symlink), and two outputs naming one file;
# shardrun's --outputs, --save-params and --trace against the plan,
# --inputs and --params. Devices (/dev/null) may be named by several
# outputs, and --save-params may name the --params file, which continues
# a training.
# RUN: rm -rf %t && mkdir %t && cp %S/../../../examples/mlp.sh %t/m.sh && cp %t/m.sh %t/orig.sh
# RUN: cp %S/../../../docs/hw/h100.json %t/hw.json && cp %t/hw.json %t/orig.json
# RUN: ln -s m.sh %t/link.plan
#
# RUN: %expect 2 %shardc %t/m.sh --mesh 2x2 -o %t/m.sh 2>&1 | FileCheck %s --check-prefix=MODEL
# MODEL: shardc: error: -o {{.*}}/m.sh is the model ({{.*}}/m.sh): the output would replace it; choose another file
# RUN: %expect 2 %shardc %t/m.sh --mesh 2x2 --emit ir -o %t/m.sh 2>&1 | FileCheck %s --check-prefix=MODEL
# RUN: %expect 2 %shardc %t/m.sh --mesh 2x2 -o %t/link.plan 2>&1 | FileCheck %s --check-prefix=LINK
# LINK: shardc: error: -o {{.*}}/link.plan is the model ({{.*}}/m.sh)
# RUN: %expect 2 %shardc %t/m.sh --mesh 2x2 --trace %t/m.sh 2>&1 | FileCheck %s --check-prefix=TRACE
# TRACE: shardc: error: --trace {{.*}}/m.sh is the model
# RUN: %expect 2 %shardc %t/m.sh --mesh 2x2 --hw %t/hw.json -o %t/hw.json 2>&1 | FileCheck %s --check-prefix=HW
# HW: shardc: error: -o {{.*}}/hw.json is the hardware profile ({{.*}}/hw.json)
# RUN: %expect 2 %shardc %t/m.sh --auto 4 --auto-csv %t/m.sh 2>&1 | FileCheck %s --check-prefix=CSV
# CSV: shardc: error: --auto-csv {{.*}}/m.sh is the model
# RUN: %expect 2 %shardc %t/m.sh --auto 4 --auto-csv %t/a.out --auto-svg %t/a.out 2>&1 | FileCheck %s --check-prefix=BOTH
# BOTH: shardc: error: --auto-csv and --auto-svg both name {{.*}}/a.out: one would replace the other; choose two files
# RUN: %expect 2 %shardc %t/m.sh --mesh 2x2 -o %t/p.plan --trace %t/p.plan 2>&1 | FileCheck %s --check-prefix=TWO
# TWO: shardc: error: -o and --trace both name {{.*}}/p.plan
# RUN: cmp %t/m.sh %t/orig.sh && cmp %t/hw.json %t/orig.json && test -L %t/link.plan
# RUN: test ! -e %t/p.plan && test ! -e %t/a.out
# RUN: %shardc %t/m.sh --mesh 2x2 -o /dev/null --trace /dev/null
#
# RUN: %shardc %t/m.sh --mesh 1x1 -o %t/p.plan && cp %t/p.plan %t/orig.plan
# RUN: %shardrun %t/p.plan --quiet --steps 1 --save-params %t/w.st && cp %t/w.st %t/orig.st
# RUN: %expect 2 %shardrun %t/p.plan --quiet --outputs %t/p.plan 2>&1 | FileCheck %s --check-prefix=PLAN
# PLAN: shardrun: error: --outputs {{.*}}/p.plan is the plan ({{.*}}/p.plan): the output would replace it; choose another file
# RUN: %expect 2 %shardrun %t/p.plan --quiet --params %t/w.st --outputs %t/w.st 2>&1 | FileCheck %s --check-prefix=PARAMS
# PARAMS: shardrun: error: --outputs {{.*}}/w.st is --params ({{.*}}/w.st)
# RUN: %expect 2 %shardrun %t/p.plan --quiet --params %t/w.st --save-params %t/w.st --outputs %t/w.st 2>&1 | FileCheck %s --check-prefix=SAVED
# SAVED: shardrun: error: --outputs and --save-params both name {{.*}}/w.st
# RUN: %expect 2 %shardrun %t/p.plan --quiet --trace %t/p.plan 2>&1 | FileCheck %s --check-prefix=PTRACE
# PTRACE: shardrun: error: --trace {{.*}}/p.plan is the plan
# RUN: cmp %t/p.plan %t/orig.plan && cmp %t/w.st %t/orig.st
# RUN: %shardrun %t/p.plan --quiet --steps 1 --params %t/w.st --save-params %t/w.st
# RUN: not cmp -s %t/w.st %t/orig.st
