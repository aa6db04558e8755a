# --arch chooses the targets (a cubin each, PTX for the newest); text that
# is not sm_NN, or an architecture the NVRTC in use cannot compile for, is
# a usage error (exit 2). Duplicates are dropped.
# RUN: %shardc %s --emit cuda --arch sm_90,sm_80,sm_90 | FileCheck %s
# RUN: %expect 2 %shardc %s --emit cuda --arch sm_8x 2>&1 | FileCheck %s --check-prefix=SYNTAX
# RUN: %expect 2 %shardc %s --emit cuda --arch sm_80, 2>&1 | FileCheck %s --check-prefix=EMPTY
# RUN: %expect 2 %shardc %s --emit cuda --arch sm_1 2>&1 | FileCheck %s --check-prefix=UNSUPPORTED
# RUN: %expect 2 %shardc %s --emit kernels 2>&1 | FileCheck %s --check-prefix=EMIT
input x : f32[4]
y = exp(x)
output y
# CHECK: // shardc: 1 CUDA kernel for sm_90, sm_80; PTX for sm_90
# SYNTAX: shardc: error: --arch 'sm_8x': expected sm_NN, as in --arch sm_80,sm_90
# EMPTY: shardc: error: --arch '': expected sm_NN, as in --arch sm_80,sm_90
# UNSUPPORTED: shardc: error: --arch {{.*}}sm_1
# EMIT: shardc: error: --emit 'kernels': this version emits: {{.*}}fused-ir, cuda
