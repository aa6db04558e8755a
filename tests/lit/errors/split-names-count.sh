# RUN: %expect 1 %shardc %s --emit ir 2>&1 | FileCheck %s
# As many names as pieces.
input x : f32[4, 8]
a, b = split(x, [2, 2, 4], axis = 1)
output a
# CHECK: {{^}}{{.*}}split-names-count.sh:4:8: error: this gives 3 values, but 2 names are bound to them{{$}}
