# Where the results go is checked before the first step, not after the
# last, when a training run's params would be lost: a missing folder, a
# file where a folder should be, a folder where the file should be. Each
# exits 1, naming the option, the path and why, with nothing run and
# nothing written. shardc checks -o before it compiles.
# RUN: %shardc %S/train.model --mesh 2 -o %t.plan
# RUN: rm -rf %t.w && mkdir %t.w && touch %t.w/file && mkdir %t.w/dir
# RUN: %expect 1 %shardrun %t.plan --steps 2 --save-params %t.w/none/p.st > %t.out 2> %t.err
# RUN: FileCheck %s --check-prefix=PARAMS < %t.err
# PARAMS: shardrun: error: --save-params {{.*}}.w/none/p.st cannot be written: the folder {{.*}}.w/none does not exist
# RUN: not grep . %t.out
# RUN: %expect 1 %shardrun %t.plan --steps 2 --outputs %t.w/file/o.st 2>&1 | FileCheck %s --check-prefix=OUT
# OUT: shardrun: error: --outputs {{.*}}.w/file/o.st cannot be written: {{.*}}.w/file is not a folder
# RUN: %expect 1 %shardrun %t.plan --steps 2 --trace %t.w/dir 2>&1 | FileCheck %s --check-prefix=TRACE
# TRACE: shardrun: error: --trace {{.*}}.w/dir cannot be written: {{.*}}.w/dir is a folder
# RUN: %expect 1 %shardrun %t.plan --steps 2 --outputs %t.w/o.st/ 2>&1 | FileCheck %s --check-prefix=SLASH
# SLASH: shardrun: error: --outputs {{.*}}.w/o.st/ cannot be written: {{.*}}.w/o.st/ ends in /, which names a folder
# A symlink's target gets the file, through every link: a chain of links
# into a missing folder is caught, and so is a loop of links.
# RUN: rm -rf %t.l && mkdir %t.l && ln -s %t.l/none/p.st %t.l/one && ln -s one %t.l/two
# RUN: %expect 1 %shardrun %t.plan --steps 2 --save-params %t.l/two 2>&1 | FileCheck %s --check-prefix=CHAIN
# CHAIN: shardrun: error: --save-params {{.*}}.l/two cannot be written: the folder {{.*}}.l/none does not exist
# RUN: ln -s loop2 %t.l/loop1 && ln -s loop1 %t.l/loop2
# RUN: %expect 1 %shardrun %t.plan --steps 2 --outputs %t.l/loop1 2>&1 | FileCheck %s --check-prefix=LOOP
# LOOP: shardrun: error: --outputs {{.*}}.l/loop1 cannot be written: Too many levels of symbolic links
# A checkpoint folder is made with its missing parents, but not through a
# file.
# RUN: %expect 1 %shardrun %t.plan --steps 2 --save %t.w/file 2>&1 | FileCheck %s --check-prefix=SAVE
# SAVE: shardrun: error: --save {{.*}}.w/file cannot be written: {{.*}}.w/file is not a folder
# RUN: %expect 1 %shardrun %t.plan --steps 2 --save %t.w/file/a/b 2>&1 | FileCheck %s --check-prefix=DEEP
# DEEP: shardrun: error: --save {{.*}}.w/file/a/b cannot be written: {{.*}}.w/file is not a folder
# RUN: ls -A %t.w | FileCheck %s --check-prefix=NOTHING --implicit-check-not={{.}}
# NOTHING: dir
# NOTHING-NEXT: file
# RUN: %shardrun %t.plan --quiet --steps 1 --save %t.w/new/a/b --save-params %t.w/dir/p.st
# RUN: test -f %t.w/new/a/b/latest && test -f %t.w/dir/p.st
# RUN: %expect 1 %shardc %S/train.model --mesh 2 -o %t.w/none/m.plan 2>&1 | FileCheck %s --check-prefix=PLAN
# PLAN: shardc: error: -o {{.*}}.w/none/m.plan cannot be written: the folder {{.*}}.w/none does not exist
# Under a launcher, rank 0 alone writes the outputs, so it alone checks
# them (another node may lack their folder); every rank writes its
# checkpoint file, so every rank checks that folder and says why, by rank.
# Either way every rank learns of a failure and exits 1 (none is left
# waiting in MPI for one that ended).
# RUN: not %mpirun -np 2 %shardrun %t.plan --outputs %t.w/file/o.st 2>&1 | FileCheck %s --check-prefix=MPIOUT --implicit-check-not="error:"
# MPIOUT: shardrun: error: --outputs {{.*}}.w/file/o.st cannot be written
# RUN: not %mpirun -np 2 %shardrun %t.plan --save %t.w/file 2>&1 | FileCheck %s --check-prefix=MPISAVE
# MPISAVE-DAG: shardrun: error: --save {{.*}}.w/file cannot be written: {{.*}}.w/file is not a folder
# MPISAVE-DAG: shardrun: rank 1: error: --save {{.*}}.w/file cannot be written: {{.*}}.w/file is not a folder
