# The cuda backend's host side, on the pretend driver and cuBLASLt of
# tests/fakecuda (no GPU: kernels and matmuls compute nothing; every copy,
# launch, handle and capture is checked as a strict driver would). Per
# step of a training run, in the steady state (steps.py: 5 steps against
# 2): no memory allocated, no module loaded, no function looked up, no
# cuBLASLt heuristic asked (all that at the session's start); one launch
# per CUDA kernel of the plan and one cuBLASLt call per matmul, plus the
# init kernel of each input made from the seed (transformer.sh's tokens
# and targets; its AdamW groups share code, "kN as kM"), and one wait for
# the stream (3 before the error words came back with the outputs). By
# graphs, transformer.sh is one graph launch a step, its inputs' init
# kernels inside it (2 launches outside it before). With
# --graph and the inputs from a file: one graph launch a step, no kernel or
# matmul outside it, the inputs copied in by the graph (from the
# page-locked block the host reads them into before the step), and one
# wait for the stream a step (7 before the inputs moved into the graph:
# two for each input and one for each output). A model that hands its
# inputs back, on 2 ranks, 4 steps of batches from a file by graphs: the
# outputs are the 4th batch, the CPU backend's to the byte (the 3rd step's
# differ: the check can fail). On 2x2 and a pipeline over
# 2x2x2, the ranks as threads on one device (collectives and sends device
# to device), eagerly and by graphs. Each run leaves nothing allocated or
# created at exit and breaks no rule of the driver.
# RUN: %shardc %S/../../../examples/transformer.sh -D L=2 --mesh 1x1 --arch sm_90 -o %t.t.plan
# RUN: %shardc %S/../../../examples/transformer.sh -D L=2 --mesh 1x1 --arch sm_90 --emit schedule > %t.sched
# RUN: python3 %S/steps.py --schedule %t.sched %t.t.plan > %t.1
# RUN: FileCheck %s --check-prefix=EAGER < %t.1 && FileCheck %s --check-prefix=EXIT < %t.1
# EAGER: schedule: [[#K:]] kernels, [[#M:]] cuBLASLt matmuls
# EAGER: per step: cuGraphLaunch 0
# EAGER: per step: cuLaunchKernel [[#K+2]]
# EAGER: per step: cuMemAlloc_v2 0
# EAGER: per step: cuModuleGetFunction 0
# EAGER: per step: cuModuleLoadDataEx 0
# EAGER: per step: cuStreamSynchronize 1
# EAGER: per step: cublasLtMatmul [[#M]]
# EAGER-NEXT: per step: cublasLtMatmulAlgoGetHeuristic 0
# RUN: python3 %S/steps.py %t.t.plan --graph > %t.1g
# RUN: FileCheck %s --check-prefix=TGRAPH < %t.1g && FileCheck %s --check-prefix=EXIT < %t.1g
# TGRAPH: per step: cuGraphLaunch 1
# TGRAPH: per step: cuLaunchKernel 0
# TGRAPH: per step: cuStreamSynchronize 1
# TGRAPH: per step: cublasLtMatmul 0
# EXIT: at exit: errors 0
# EXIT-NEXT: at exit: live_allocations 0
# EXIT-NEXT: at exit: live_bytes 0
# EXIT-NEXT: at exit: live_cublasLt_descriptors 0
# EXIT-NEXT: at exit: live_cublasLt_handles 0
# EXIT-NEXT: at exit: live_cublasLt_layouts 0
# EXIT-NEXT: at exit: live_cublasLt_preferences 0
# EXIT-NEXT: at exit: live_events 0
# EXIT-NEXT: at exit: live_graph_execs 0
# EXIT-NEXT: at exit: live_graphs 0
# EXIT-NEXT: at exit: live_host_allocations 0
# EXIT-NEXT: at exit: live_modules 0
# EXIT-NEXT: at exit: live_streams 0
# RUN: %shardc %S/../../../examples/mlp.sh --mesh 1x1 --arch sm_90 -o %t.plan
# RUN: python3 %S/../../tools/make_batches.py %t.in 5 x=F32[64,1024] y=F32[64,1024]
# RUN: python3 %S/steps.py %t.plan --graph --inputs %t.in > %t.2
# RUN: FileCheck %s --check-prefix=GRAPH < %t.2 && FileCheck %s --check-prefix=EXIT < %t.2
# GRAPH: per step: cuGraphLaunch 1
# GRAPH: per step: cuLaunchKernel 0
# GRAPH: per step: cuMemAlloc_v2 0
# GRAPH: per step: cuMemcpyHtoDAsync_v2 0
# GRAPH: per step: cuModuleLoadDataEx 0
# GRAPH: per step: cuStreamBeginCapture_v2 0
# GRAPH: per step: cuStreamSynchronize 1
# GRAPH: per step: cublasLtMatmul 0
# RUN: printf 'mesh dp\ninput x : f32[8, 6] shard(dp, _)\ninput ids : i32[4, 6]\noutput x, ids\n' > %t.io.sh
# RUN: %shardc %t.io.sh --mesh 2 --arch sm_90 -o %t.io.plan
# RUN: python3 %S/../../tools/make_batches.py %t.io.in 4 'x=F32[8,6]' 'ids=I32[4,6]<1000'
# RUN: env LD_LIBRARY_PATH=$FAKECUDA %shardrun %t.io.plan --backend cuda --graph --steps 4 --inputs %t.io.in --outputs %t.io.cuda --quiet
# RUN: %shardrun %t.io.plan --steps 4 --inputs %t.io.in --outputs %t.io.cpu --quiet
# RUN: %shardrun %t.io.plan --steps 3 --inputs %t.io.in --outputs %t.io.cpu3 --quiet
# RUN: cmp %t.io.cuda %t.io.cpu && ! cmp -s %t.io.cuda %t.io.cpu3
# RUN: %shardc %S/../../../examples/mlp.sh --mesh 2x2 --arch sm_90 -o %t.4.plan
# RUN: python3 %S/steps.py %t.4.plan > %t.3
# RUN: python3 %S/steps.py %t.4.plan --graph > %t.4
# RUN: %shardc %S/../../../examples/pipeline.sh --mesh 2x2x2 --arch sm_90 -o %t.8.plan
# RUN: python3 %S/steps.py %t.8.plan > %t.5
# RUN: python3 %S/steps.py %t.8.plan --graph > %t.6
# RUN: for f in %t.3 %t.4 %t.5 %t.6; do FileCheck %s --check-prefix=RANKS < $f && FileCheck %s --check-prefix=EXIT < $f || exit 1; done
# RANKS: per step: cuMemAlloc_v2 0
# RANKS: per step: cuModuleLoadDataEx 0
# RANKS: per step: cublasLtMatmulAlgoGetHeuristic 0
