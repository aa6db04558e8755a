# A layernorm's statistics from the forward (passes/norm_grad.c): its row
# kernel stores the row's mean and rstd from its own sums, by the row's
# first thread once they are known, and the backward has no kernel of its
# own for them (autodiff's mean(x) and its variance were two row kernels
# reading x again). rmsnorm's kernel stores its rstd likewise.
# RUN: %shardc %S/../../../examples/transformer.sh --mesh 1x1 -D L=1 --dtype bf16 --arch sm_90 --emit cuda | FileCheck %s
# RUN: %shardc %S/../../../examples/transformer.sh --mesh 1x1 -D L=1 --dtype bf16 --arch sm_90 --emit fused-ir | FileCheck %s --check-prefix=FUSED
# RUN: %shardc %S/../../../examples/llama.sh --mesh 1x1 -D L=1 --arch sm_90 --emit cuda | FileCheck %s --check-prefix=RMS
# CHECK:      k0_add_layernorm_mean_layernorm_rstd(
# CHECK:      const float mean = sh_warp_sum(acc) / 256.0f;
# CHECK:      const float rstd = 1.0f / sqrtf(sh_warp_sum(acc2) / 256.0f + 1e-05f);
# CHECK-NEXT: if (lane == 0) p_[[M:[a-z0-9_]+]][row] = __float2bfloat16_rn(mean); // mean
# CHECK-NEXT: if (lane == 0) p_[[R:[a-z0-9_]+]][row] = __float2bfloat16_rn(rstd); // layernorm_rstd
# FUSED:      kernel k0_add_layernorm_mean_layernorm_rstd: layernorm over the last axis of [8, 128, 256]; reads %0, %wpe, %layers.0.attn.ln_g, %layers.0.attn.ln_b; stores %x, %layers.0.attn.h, %[[M:[0-9]+]], %[[R:[0-9]+]]
# FUSED-NOT:  kernel {{.*}}_mean:
# FUSED-NOT:  rsqrt
# FUSED:      layernorm_dx %{{[0-9]+}}, %x, %[[M]], %[[R]], %layers.0.attn.ln_g
# RMS:        _rmsnorm_rmsnorm_rstd(
# RMS:        if (lane == 0) p_{{[a-z0-9_]+}}[row] = rstd; // rmsnorm_rstd
