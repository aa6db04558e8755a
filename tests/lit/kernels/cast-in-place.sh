# A cast to the dtype its operand already has, in a kernel after an
# elementwise op whose result the kernel keeps in registers: the memory
# plan puts the cast's result over that dead operand (passes/memplan.c,
# kernel_in_place), as it does for any elementwise op of one type, and the
# plan's validator allows a cast of one type in place (rt_op_in_place: the
# CPU backend copies it with memmove). It had refused the plan with an
# internal error ("the result overlaps operand 1"). The plan with kernels
# runs on the CPU backend to the same bytes as the plan without.
# RUN: python3 %S/../../tools/make_st.py %t.in a=F32[4,8]:1 b=F32[4,8]:2 u=F32[4,8]:3
# RUN: %shardc %s --mesh 1 --arch sm_80 --emit fused-ir | FileCheck %s --check-prefix=FUSED
# RUN: %shardc %s --mesh 1 --arch sm_80 -o %t.k.plan
# RUN: %shardc %s --mesh 1 --arch none -o %t.n.plan
# RUN: %shardrun %t.k.plan --quiet --inputs %t.in --outputs %t.k.out
# RUN: %shardrun %t.n.plan --quiet --inputs %t.in --outputs %t.n.out
# RUN: cmp %t.k.out %t.n.out
# FUSED: // kernel [[K:k[0-9]+]]_add_cast_mse: mse over [4, 8]
# FUSED-NEXT: %0 = add %a, %b : f32[4, 8] {{.*}} // [[K]]_add_cast_mse
# FUSED-NEXT: %1 = cast %0 {dtype = f32} : f32[4, 8] {{.*}} // [[K]]_add_cast_mse{{$}}
mesh a
input a : f32[4, 8]
input b : f32[4, 8]
input u : f32[4, 8]
loss = mse(cast(a + b, f32), u)
output loss
