# shardc --auto keeps the compiles under way within a memory budget
# (tools/auto.h): with SHARDC_AUTO_MEMORY=1 (one byte) no two compiles run
# at once, and standard error says so; the table is the same bytes as with
# a budget nothing reaches, where standard error stays empty.
# RUN: env SHARDC_AUTO_MEMORY=1 SHARDC_AUTO_JOBS=2 %shardc %S/../../../examples/pipeline.sh --auto 4 --top 2 > %t.held 2> %t.err
# RUN: FileCheck %s < %t.err
# RUN: env SHARDC_AUTO_MEMORY=1e12 SHARDC_AUTO_JOBS=2 %shardc %S/../../../examples/pipeline.sh --auto 4 --top 2 > %t.free 2> %t.quiet
# RUN: test ! -s %t.quiet
# RUN: cmp %t.held %t.free
# RUN: grep -q '^1 ' %t.held
# CHECK: shardc: --auto: compiles held back to stay within 1.0 B of memory: at most 1 at once on 2 threads (a compile taken to need {{[0-9.]+}} {{KiB|MiB}} a microbatch)
# CHECK-NOT: shardc
