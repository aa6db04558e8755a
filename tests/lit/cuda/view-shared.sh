# An operand every lane of a vector reads one element of, in a vector's
# views computed at once (codegen/cuda_tile.c's view_vectors): the mean
# loss's gradient, a [1], expanded over the concat of a split's pieces in
# the kernel of their zero pads (tests/models/view_shared.sh). Each branch
# of each concat loads it as one float for the 4 lanes; no vector of 4 is
# loaded from the [1]'s buffer (it had been, reading 12 bytes past it:
# seed 2879296 of tests/diff/gen.py), while x, a vector of 32, is read 4
# floats at once.
# RUN: %shardc %S/../../models/view_shared.sh --mesh 1 --emit cuda | FileCheck %s
# CHECK:      k{{[0-9]+}}_expand_narrow_concat_add(
# CHECK-NEXT:     const float *__restrict__ p_[[G:t[0-9]+]],
# CHECK-NEXT:     const float *__restrict__ p_x,
# CHECK-NOT:  reinterpret_cast<const vec<float, 4> *>(p_[[G]]
# CHECK:      reinterpret_cast<const vec<float, 4> *>(p_x + e)
# CHECK-NOT:  reinterpret_cast<const vec<float, 4> *>(p_[[G]]
# CHECK:      // concat
# CHECK-NOT:  reinterpret_cast<const vec<float, 4> *>(p_[[G]]
# CHECK:      const float [[L:u[0-9]+]] = p_[[G]][0];
# CHECK-NEXT: vec<float, 4> {{u[0-9]+}}; // expand
# CHECK-NEXT: #pragma unroll
# CHECK-NEXT: for (int q = 0; q < 4; q++)
# CHECK-NEXT: .v[q] = [[L]];
# CHECK-NOT:  reinterpret_cast<const vec<float, 4> *>(p_[[G]]
# CHECK:      // concat
# CHECK-NOT:  reinterpret_cast<const vec<float, 4> *>(p_[[G]]
# CHECK:      const float [[L2:u[0-9]+]] = p_[[G]][0];
# CHECK-NEXT: vec<float, 4> {{u[0-9]+}}; // expand
# CHECK-NEXT: #pragma unroll
# CHECK-NEXT: for (int q = 0; q < 4; q++)
# CHECK-NEXT: .v[q] = [[L2]];
# CHECK-NOT:  reinterpret_cast<const vec<float, 4> *>(p_[[G]]
# CHECK:      *reinterpret_cast<vec<float, 4> *>(p_{{t[0-9]+}} + e) = s_{{t[0-9]+}};
