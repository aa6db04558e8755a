# RUN: %expect 1 %shardc %s --emit ir 2>&1 | FileCheck %s
# Only `recompute` may stand before `block`; it stays a plain name
# elsewhere (version 0 programs may use it).
input x : f32[4]
recompute = x * 2
remat block f(x : f32[4]) -> f32[4] {
    return x
}
output recompute
# CHECK: {{^}}{{.*}}block-before-word.sh:6:1: error: unexpected name 'remat' before 'block' (only 'recompute' may stand there){{$}}
