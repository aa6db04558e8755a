# The experiment $SHARDC_EXPERIMENT_XENT_APART (fuse.c's xent_apart):
# with 1, the GPT-2-sized loss of tests/models/xent_rows.sh keeps its
# gradient in a kernel of its own, reading the log-sum-exp the loss's
# kernel stores; unset, or anything but 1, the loss's kernel computes it
# (bench/gpu_session.sh times GPT-2's bf16 step both ways).
# RUN: %shardc %S/../../models/xent_rows.sh --mesh 1 --emit fused-ir | FileCheck %s --check-prefix=FUSED
# RUN: env SHARDC_EXPERIMENT_XENT_APART=0 %shardc %S/../../models/xent_rows.sh --mesh 1 --emit fused-ir | FileCheck %s --check-prefix=FUSED
# RUN: env SHARDC_EXPERIMENT_XENT_APART=1 %shardc %S/../../models/xent_rows.sh --mesh 1 --emit fused-ir | FileCheck %s --check-prefix=APART
# FUSED: // kernel k1_cross_entropy_cross_entropy_lse_add_cross_entropy_grad: cross_entropy over the last axis of [64, 50304] and its gradient; reads %x, %lab, %0; stores %loss, %[[G:[0-9]+]]
# FUSED-NOT: cross_entropy_grad over the last axis of [64, 50304]
# FUSED: // kernel k2_cross_entropy_grad_mul: cross_entropy_grad over the last axis of [64, 12000]
# APART: // kernel k1_cross_entropy_cross_entropy_lse_add: cross_entropy over the last axis of [64, 50304]; reads %x, %lab, %0; stores %[[LSE:[0-9]+]], %loss
# APART-NEXT: %{{[0-9]+}} = cross_entropy %x, %lab
# APART: // kernel k2_cross_entropy_grad_mul: cross_entropy_grad over the last axis of [64, 50304]; reads %x, %lab, %[[LSE]]; stores
# APART: // kernel k3_cross_entropy_grad_mul: cross_entropy_grad over the last axis of [64, 12000]
