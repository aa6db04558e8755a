# shardc -o (a plan, or --emit text) and --trace never replace what is not
# a regular file: /dev/null stays a device, a FIFO and /dev/stdout stream,
# a symlink stays a link and its target gets the file (made when missing),
# a folder is an error that names it and leaves no temporary file.
# RUN: %shardc %S/../../../examples/mlp.sh --mesh 2x2 -o %t.plan
# RUN: %shardc %S/../../../examples/mlp.sh --mesh 2x2 --emit ir -o %t.ir
#
# RUN: %shardc %S/../../../examples/mlp.sh --mesh 2x2 -o /dev/null
# RUN: %shardc %S/../../../examples/mlp.sh --mesh 2x2 --emit ir -o /dev/null
# RUN: %shardc %S/../../../examples/mlp.sh --mesh 2x2 --trace /dev/null
# RUN: test -c /dev/null
# RUN: %shardc %S/../../../examples/mlp.sh --mesh 2x2 --emit ir -o /dev/stdout | cmp - %t.ir
# RUN: mkfifo %t.fifo
# RUN: timeout 30 cat %t.fifo > %t.streamed & %shardc %S/../../../examples/mlp.sh --mesh 2x2 -o %t.fifo && \
# RUN:   wait $! && test -p %t.fifo && cmp %t.plan %t.streamed
#
# RUN: echo old > %t.target && ln -s %t.target %t.link
# RUN: %shardc %S/../../../examples/mlp.sh --mesh 2x2 --emit ir -o %t.link
# RUN: test -L %t.link && cmp %t.ir %t.target
# RUN: mkdir %t.d && ln -s made.plan %t.d/dangling
# RUN: %shardc %S/../../../examples/mlp.sh --mesh 2x2 -o %t.d/dangling
# RUN: test -L %t.d/dangling && cmp %t.plan %t.d/made.plan && test ! -e made.plan
#
# RUN: mkdir %t.dir
# RUN: %expect 1 %shardc %S/../../../examples/mlp.sh --mesh 2x2 -o %t.dir 2>&1 | FileCheck %s --check-prefix=DIR
# RUN: %expect 1 %shardc %S/../../../examples/mlp.sh --mesh 2x2 --emit ir -o %t.dir 2>&1 | FileCheck %s --check-prefix=DIR
# DIR: shardc: error: -o {{.*}}t.dir cannot be written: {{.*}}t.dir is a folder
# RUN: test -d %t.dir && ls -A . %t.d %t.dir | FileCheck %s --check-prefix=LS --implicit-check-not=.tmp
# LS: t.plan
