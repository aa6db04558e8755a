# RUN: %expect 1 %shardc %s --emit ir 2>&1 | FileCheck %s
# argmax names its axis.
input x : f32[4, 8]
y = argmax(x)
output y
# CHECK: {{^}}{{.*}}argmax-no-axis.sh:4:5: error: 'argmax' needs argument 'axis'{{$}}
