# --outputs and --save-params never replace what is not a regular file:
# /dev/null stays a device, a FIFO streams to its reader, /dev/stdout
# streams too, a symlink stays a link and its target gets the file (made
# when missing, a relative target taken from the link's folder), a folder
# or a link into a missing folder is an error that names it, said before
# the run, and a failure leaves no temporary file.
# RUN: %shardc %S/embed.model --mesh 2 -o %t.plan
# RUN: %shardrun %t.plan --quiet --outputs %t.ref
#
# RUN: %shardrun %t.plan --quiet --outputs /dev/null
# RUN: test -c /dev/null
# RUN: %shardrun %t.plan --quiet --outputs /dev/stdout | cmp - %t.ref
# RUN: mkfifo %t.fifo
# RUN: timeout 30 cat %t.fifo > %t.streamed & %shardrun %t.plan --quiet --outputs %t.fifo && \
# RUN:   wait $! && test -p %t.fifo && cmp %t.ref %t.streamed
#
# RUN: echo old > %t.target && ln -s %t.target %t.link
# RUN: %shardrun %t.plan --quiet --outputs %t.link
# RUN: test -L %t.link && cmp %t.ref %t.target
# RUN: mkdir %t.d && ln -s made.st %t.d/dangling
# RUN: %shardrun %t.plan --quiet --outputs %t.d/dangling
# RUN: test -L %t.d/dangling && cmp %t.ref %t.d/made.st && test ! -e made.st
#
# RUN: mkdir %t.dir
# RUN: %expect 1 %shardrun %t.plan --quiet --outputs %t.dir 2>&1 | FileCheck %s --check-prefix=DIR
# DIR: shardrun: error: --outputs {{.*}}t.dir cannot be written: {{.*}}t.dir is a folder
# RUN: ln -s nodir/x.st %t.badlink
# RUN: %expect 1 %shardrun %t.plan --quiet --outputs %t.badlink 2>&1 | FileCheck %s --check-prefix=NODIR
# NODIR: shardrun: error: --outputs {{.*}}t.badlink cannot be written: the folder {{.*}}nodir does not exist
# RUN: test -d %t.dir && test -L %t.badlink
# RUN: ls -A . %t.d %t.dir | FileCheck %s --check-prefix=LS --implicit-check-not=.tmp.
# LS: t.ref
#
# The params after training, the same way.
# RUN: %shardc %S/train.model --mesh 2 -o %t.train
# RUN: %shardrun %t.train --quiet --steps 2 --save-params %t.pref
# RUN: %shardrun %t.train --quiet --steps 2 --save-params /dev/null
# RUN: test -c /dev/null
# RUN: mkfifo %t.pfifo
# RUN: timeout 30 cat %t.pfifo > %t.pstreamed & %shardrun %t.train --quiet --steps 2 --save-params %t.pfifo && \
# RUN:   wait $! && test -p %t.pfifo && cmp %t.pref %t.pstreamed
# RUN: ln -s %t.ptarget %t.plink
# RUN: %shardrun %t.train --quiet --steps 2 --save-params %t.plink
# RUN: test -L %t.plink && cmp %t.pref %t.ptarget
# RUN: %expect 1 %shardrun %t.train --quiet --steps 2 --save-params %t.dir 2>&1 | FileCheck %s --check-prefix=PDIR
# PDIR: shardrun: error: --save-params {{.*}}t.dir cannot be written: {{.*}}t.dir is a folder
