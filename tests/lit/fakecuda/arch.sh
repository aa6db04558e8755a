# Which of a plan's images the cuda backend loads, on the pretend driver of
# tests/fakecuda with FAKECUDA_CC as the device's compute capability: a
# device newer than every cubin of the plan loads its PTX, which the
# driver compiles (an sm_80 plan on sm_90, an sm_90 plan on sm_100; the
# pretend driver refuses PTX for a newer target and looks each kernel up
# among its .entry declarations), on 2x2 ranks, whose device reductions
# NVRTC compiles for the device at run time; a device older than the
# plan's images fails before anything runs, saying which --arch to
# compile for (exit 1: the plan's, not the GPU's fault). Nothing is left
# allocated or created.
# RUN: %shardc %S/../../../examples/mlp.sh --mesh 2x2 --arch sm_80 -o %t.80.plan
# RUN: %shardc %S/../../../examples/mlp.sh --mesh 2x2 --arch sm_90 -o %t.90.plan
# RUN: env LD_LIBRARY_PATH=$FAKECUDA FAKECUDA_CC=90 FAKECUDA_LOG=%t.1 %shardrun %t.80.plan --backend cuda --steps 2 --quiet
# RUN: awk -f %S/no-leaks.awk %t.1
# RUN: env LD_LIBRARY_PATH=$FAKECUDA FAKECUDA_CC=100 FAKECUDA_LOG=%t.2 %shardrun %t.90.plan --backend cuda --steps 2 --graph --quiet
# RUN: awk -f %S/no-leaks.awk %t.2
# RUN: %expect 1 env LD_LIBRARY_PATH=$FAKECUDA FAKECUDA_CC=80 FAKECUDA_LOG=%t.3 %shardrun %t.90.plan --backend cuda --quiet 2>&1 | FileCheck %s
# RUN: awk -f %S/no-leaks.awk %t.3
# CHECK: shardrun: error: rank {{[0-3]}}: kernel module {{[a-z_0-9]+}} holds cubins for sm_90 and PTX for compute_90, none of which runs on this GPU (sm_80): compile the model with --arch sm_80
