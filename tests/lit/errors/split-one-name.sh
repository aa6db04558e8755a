# RUN: %expect 1 %shardc %s --emit ir 2>&1 | FileCheck %s
# split gives one value per size: bind each.
input x : f32[4, 8]
y = split(x, [4, 4], axis = 1)
output y
# CHECK: {{^}}{{.*}}split-one-name.sh:4:5: error: split gives 2 values here; bind each to a name, as in a, b = split(...){{$}}
