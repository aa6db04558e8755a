# RUN: %expect 1 %shardc %s -o %t.plan 2>&1 | FileCheck %s
# RUN: test ! -e %t.plan
# A program of comments only, or an empty file, computes nothing: an error
# (there is no statement to point at), also before a --mesh that no mesh
# statement takes.
# RUN: : > %t.empty.sh
# RUN: %expect 1 %shardc %t.empty.sh --mesh 2 -o %t.plan 2>&1 | FileCheck %s --check-prefix=EMPTY
# RUN: test ! -e %t.plan
# CHECK: {{^}}{{.*}}program-empty.sh: error: the program is empty: it has no statement (a program declares its inputs and params, computes, and ends with 'output' or 'train'){{$}}
# CHECK-NOT: {{.}}
# EMPTY: {{^}}{{.*}}t.empty.sh: error: the program is empty: it has no statement
