# shardrun --comm nccl without a GPU: an MPI job on the pretend driver and
# NCCL of tests/fakecuda (fake_nccl.c: the job's processes meet through a
# shared file and the bytes really move; every NCCL call is checked: the
# same collective with the same count and type on every member, buffers
# inside live allocations, each send met by a recv of its size). Data
# parallel, tensor parallel with ZeRO-1 (reduce_scatter, all_gather), the
# MoE's all_to_all (a group of sends and receives) and a pipeline (sends
# and receives between stages): per step and rank, one NCCL call per
# collective of the schedule (an all_to_all: a group of one send and one
# recv per member), no allocation, no communicator made; nothing live at
# exit, no rule broken. A program of collectives only (nccl-comm.model)
# gives the CPU backend's outputs byte for byte. With --graph the
# collectives are captured with the rest (the comm stream joined to the
# capture, and joined back before it ends, which the pretend driver
# checks): a step is one graph launch and no NCCL call, the same bytes,
# and --trace's timeline passes check_trace.py. A failing NCCL call and a
# collective that never completes end the job with the instruction named
# (and a failed call's source line from the source tree's root).
# RUN: %shardc %S/../../../examples/mlp.sh -D B=8 -D D=64 --mesh 2x1 --arch sm_90 -o %t.dp.plan
# RUN: %shardc %S/../../../examples/mlp.sh -D B=8 -D D=64 --mesh 2x1 --arch sm_90 --emit schedule > %t.dp.sched
# RUN: python3 %S/steps.py --np 2 --schedule %t.dp.sched %t.dp.plan --comm nccl --timeout 60 > %t.1
# RUN: FileCheck %s --check-prefix=COMM < %t.1 && FileCheck %s --check-prefix=EXIT < %t.1
# RUN: FileCheck %s --check-prefix=DP < %t.1
# DP: collectives: all_reduce {{[1-9][0-9]*}}, all_gather 0, reduce_scatter 0, all_to_all 0
# RUN: %shardc %S/../../../examples/transformer.sh -D L=1 --mesh 2x2 --zero 1 --arch sm_90 -o %t.z.plan
# RUN: %shardc %S/../../../examples/transformer.sh -D L=1 --mesh 2x2 --zero 1 --arch sm_90 --emit schedule > %t.z.sched
# RUN: python3 %S/steps.py --np 4 --schedule %t.z.sched %t.z.plan --comm nccl --timeout 60 > %t.2
# RUN: FileCheck %s --check-prefix=COMM < %t.2 && FileCheck %s --check-prefix=EXIT < %t.2
# RUN: FileCheck %s --check-prefix=ZERO < %t.2
# ZERO: collectives: all_reduce {{[1-9][0-9]*}}, all_gather {{[1-9][0-9]*}}, reduce_scatter {{[1-9][0-9]*}}
# RUN: %shardc %S/../../../examples/moe.sh -D L=1 --mesh 2x2 --arch sm_90 -o %t.moe.plan
# RUN: %shardc %S/../../../examples/moe.sh -D L=1 --mesh 2x2 --arch sm_90 --emit schedule > %t.moe.sched
# RUN: python3 %S/steps.py --np 4 --schedule %t.moe.sched %t.moe.plan --comm nccl --timeout 60 > %t.3
# RUN: FileCheck %s --check-prefix=COMM < %t.3 && FileCheck %s --check-prefix=EXIT < %t.3
# RUN: FileCheck %s --check-prefix=MOE < %t.3
# MOE: all_to_all {{[1-9][0-9]*}}
# COMM: schedule: {{.*}} collectives: all_reduce [[#AR:]], all_gather [[#AG:]], reduce_scatter [[#RS:]], all_to_all [[#A2A:]], send 0, recv 0
# COMM: per step: cuMemAlloc_v2 0
# COMM: per step: cuModuleLoadDataEx 0
# COMM: per step: ncclAllGather [[#AG]]
# COMM-NEXT: per step: ncclAllReduce [[#AR]]
# COMM-NEXT: per step: ncclBroadcast 0
# COMM: per step: ncclCommInitRankConfig 0
# COMM-NEXT: per step: ncclCommSplit 0
# COMM: per step: ncclGroupEnd [[#A2A]]
# COMM-NEXT: per step: ncclGroupStart [[#A2A]]
# COMM-NEXT: per step: ncclRecv [[#mul(A2A,2)]]
# COMM-NEXT: per step: ncclReduceScatter [[#RS]]
# COMM-NEXT: per step: ncclSend [[#mul(A2A,2)]]
# EXIT: at exit: errors 0
# EXIT-NEXT: at exit: live_allocations 0
# EXIT-NEXT: at exit: live_bytes 0
# EXIT: at exit: live_events 0
# EXIT-NEXT: at exit: live_graph_execs 0
# EXIT-NEXT: at exit: live_graphs 0
# EXIT-NEXT: at exit: live_host_allocations 0
# EXIT-NEXT: at exit: live_modules 0
# EXIT-NEXT: at exit: live_nccl_comms 0
# EXIT-NEXT: at exit: live_streams 0
# By graphs: data parallel (one graph a step, its all_reduce in it), the
# MoE's groups of sends and receives, the pipeline.
# RUN: python3 %S/steps.py --np 2 %t.dp.plan --comm nccl --graph --timeout 60 > %t.g1
# RUN: FileCheck %s --check-prefix=GRAPH < %t.g1 && FileCheck %s --check-prefix=EXIT < %t.g1
# GRAPH: per step: cuGraphLaunch 1
# GRAPH: per step: cuMemAlloc_v2 0
# GRAPH: per step: cuStreamBeginCapture_v2 0
# GRAPH: per step: cublasLtMatmul 0
# GRAPH: per step: ncclAllGather 0
# GRAPH-NEXT: per step: ncclAllReduce 0
# GRAPH: per step: ncclGroupEnd 0
# GRAPH: per step: ncclReduceScatter 0
# GRAPH-NEXT: per step: ncclSend 0
# RUN: python3 %S/steps.py --np 4 %t.moe.plan --comm nccl --graph --timeout 60 > %t.g2
# RUN: FileCheck %s --check-prefix=GMOE < %t.g2 && FileCheck %s --check-prefix=EXIT < %t.g2
# GMOE: per step: cuGraphLaunch {{[1-9][0-9]*}}
# GMOE: per step: ncclGroupEnd 0
# GMOE: per step: ncclRecv 0
# GMOE-NEXT: per step: ncclReduceScatter 0
# GMOE-NEXT: per step: ncclSend 0
# RUN: %shardc %S/../../../examples/pipeline.sh --mesh 1x2x1 --arch sm_90 -o %t.pp.plan
# RUN: python3 %S/steps.py --np 2 %t.pp.plan --comm nccl --graph --timeout 60 > %t.g3
# RUN: FileCheck %s --check-prefix=GPIPE < %t.g3 && FileCheck %s --check-prefix=EXIT < %t.g3
# GPIPE: per step: ncclRecv 0
# GPIPE: per step: ncclSend 0
# On 2x2x2 a stage's graphs are split by its inputs, and a graph reads
# what a collective of an earlier one received (the earlier graph waited
# for it: a capture must not wait on another's events).
# RUN: %shardc %S/../../../examples/pipeline.sh --mesh 2x2x2 --arch sm_90 -o %t.pp8.plan
# RUN: env LD_LIBRARY_PATH=$FAKECUDA FAKECUDA_DEVICES=8 FAKECUDA_LOG=%t.g5 %mpirun -np 8 %shardrun %t.pp8.plan --backend cuda --comm nccl --graph --steps 3 --timeout 60 --quiet
# RUN: awk -f %S/no-leaks.awk %t.g5
# RUN: %shardc %S/../../../examples/mlp.sh -D B=8 -D D=64 --mesh 2x2 --arch sm_90 -o %t.tp.plan --trace %t-est.json
# RUN: env LD_LIBRARY_PATH=$FAKECUDA FAKECUDA_DEVICES=4 FAKECUDA_LOG=%t.g4 %mpirun -np 4 %shardrun %t.tp.plan --backend cuda --comm nccl --graph --steps 3 --trace %t.json --quiet
# RUN: python3 %S/../../tools/check_trace.py %t.json --ranks 4 --steps 3 --like %t-est.json | FileCheck %s --check-prefix=GTRACE
# RUN: awk -f %S/no-leaks.awk %t.g4
# GTRACE: rank 0 stage 0: collective {{[1-9][0-9]*}} compute
# GTRACE: rank 3 stage 0: collective {{[1-9][0-9]*}} compute
# The pipeline: 2 stages of one rank, 4 microbatches (each stage sends 4 and receives 4).
# RUN: python3 %S/steps.py --np 2 %t.pp.plan --comm nccl --timeout 60 > %t.4
# RUN: FileCheck %s --check-prefix=PIPE < %t.4 && FileCheck %s --check-prefix=EXIT < %t.4
# PIPE: per step: cuMemAlloc_v2 0
# PIPE: per step: ncclAllReduce 0
# PIPE: per step: ncclRecv 4
# PIPE: per step: ncclSend 4
# Collectives only, against the CPU backend.
# RUN: %shardc %S/nccl-comm.model --mesh 2x2 --arch sm_90 -o %t.c.plan
# RUN: python3 %S/../../tools/make_st.py %t.in x=F32[8,12]:0.5,1.25,-3,7,2.5,11,-0.125 z=BF16[8,12]:16256,16384,49216,16448,15872,32767 n=I32[4,6]:3,-7,11,2147483647
# RUN: %shardrun %t.c.plan --inputs %t.in --outputs %t.cpu.st --quiet
# RUN: env LD_LIBRARY_PATH=$FAKECUDA FAKECUDA_DEVICES=4 FAKECUDA_LOG=%t.5 %mpirun -np 4 %shardrun %t.c.plan --backend cuda --comm nccl --inputs %t.in --outputs %t.nccl.st --quiet
# RUN: cmp %t.cpu.st %t.nccl.st
# RUN: awk -f %S/no-leaks.awk %t.5
# RUN: env LD_LIBRARY_PATH=$FAKECUDA FAKECUDA_DEVICES=4 FAKECUDA_LOG=%t.5g %mpirun -np 4 %shardrun %t.c.plan --backend cuda --comm nccl --graph --steps 3 --inputs %t.in --outputs %t.graph.st --quiet
# RUN: cmp %t.cpu.st %t.graph.st
# RUN: awk -f %S/no-leaks.awk %t.5g
# RUN: grep -c "^cuGraphLaunch 2$" %t.5g | FileCheck %s --check-prefix=CALLS2
# CALLS2: 4
# RUN: grep -c -e "^ncclAllGather 7$" -e "^ncclGroupEnd 2$" %t.5 | FileCheck %s --check-prefix=CALLS
# CALLS: 8
# Failures: the second all_reduce fails on every rank; a collective of
# rank 1 that never completes (its peer's completes nothing either) is
# found by the watchdog after --timeout.
# RUN: %expect 5 env LD_LIBRARY_PATH=$FAKECUDA FAKECUDA_DEVICES=2 FAKECUDA_FAIL=ncclAllReduce:2 %mpirun -np 2 %shardrun %t.dp.plan --backend cuda --comm nccl --steps 3 --quiet > %t.6 2>&1
# RUN: FileCheck %s --check-prefix=FAIL < %t.6
# FAIL: shardrun: error: rank {{[01]}}: {{.*}}mlp.sh:{{[0-9]+:[0-9]+}}: instruction {{[0-9]+}} (all_reduce): runtime/comm/comm_nccl.c:{{[0-9]+}}: ncclAllReduce: ncclSystemError (unhandled system error)
# RUN: %expect 5 env LD_LIBRARY_PATH=$FAKECUDA FAKECUDA_DEVICES=2 FAKENCCL_HANG=1:3 %mpirun -np 2 %shardrun %t.dp.plan --backend cuda --comm nccl --steps 3 --timeout 1 --quiet > %t.7 2>&1
# RUN: FileCheck %s --check-prefix=HANG < %t.7
# HANG: shardrun: error: rank {{[01]}}: instruction {{[0-9]+}} (all_reduce on axes (dp) #{{[0-9]+}}) did not complete within 1 s (NCCL does not say which peer it waits for) (the nccl communicators are aborted)
