# The model must be a regular file of at most 64 MiB, checked before
# anything is read: /dev/urandom, a FIFO (no writer: nothing to wait for)
# and a folder are refused at once, as is a file that is too large, each
# error naming the file and the reason.
# RUN: %expect 1 timeout 20 %shardc /dev/urandom --mesh 2 2>&1 | FileCheck %s --check-prefix=DEV
# DEV: {{^}}shardc: error: /dev/urandom: cannot read a model from a character device, only from a regular file{{$}}
# RUN: mkfifo %t.fifo
# RUN: %expect 1 timeout 20 %shardc %t.fifo 2>&1 | FileCheck %s --check-prefix=FIFO
# FIFO: {{^}}shardc: error: {{.*}}t.fifo: cannot read a model from a FIFO or pipe, only from a regular file{{$}}
# RUN: %expect 1 %shardc %S 2>&1 | FileCheck %s --check-prefix=DIR
# DIR: {{^}}shardc: error: {{.*}}cli: cannot read a model from a directory, only from a regular file{{$}}
# RUN: truncate -s 67108865 %t.big.sh
# RUN: %expect 1 timeout 20 %shardc %t.big.sh 2>&1 | FileCheck %s --check-prefix=BIG
# BIG: {{^}}shardc: error: {{.*}}t.big.sh: 67108865 bytes, more than the 64 MiB a model may have{{$}}
# RUN: %expect 1 %shardc %t.missing.sh 2>&1 | FileCheck %s --check-prefix=MISSING
# MISSING: {{^}}shardc: error: {{.*}}t.missing.sh: cannot open: No such file or directory{{$}}
