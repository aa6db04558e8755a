# RUN: %expect 1 %shardc %s --emit ir -o %t.ir 2>&1 | FileCheck %s
# RUN: test ! -e %t.ir
# 1f1b is a schedule's name and nothing else's: a name starts with a letter,
# and the IR printed for a mesh axis called 1f1b would not parse back.
mesh 1f1b = 1
# CHECK: {{^}}{{.*}}name-1f1b.sh:5:6: error: syntax error, unexpected 1f1b, expecting name{{$}}
# CHECK-NEXT: {{^}}mesh 1f1b = 1{{$}}
# CHECK-NEXT: {{^}}     ^{{$}}
