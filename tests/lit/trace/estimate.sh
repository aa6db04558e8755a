# shardc --trace: the estimated timeline of one step, by the cost rules of
# passes/passes.h (pass_timeline) on the hardware profile of --hw.
#
# One bf16 matmul [4096, 4096] x [4096, 4096] on one rank is compute bound:
# 4 us launch + 2 * 4096^3 FLOPs / (0.7 x the profile's 989 TFLOP/s on H100,
# 312 on A100) = 202.525 us and 633.299 us. It starts when its input a
# is made: each step, on the device from the seed (shardrun's inputs
# without --inputs), a kernel writing a's 33554432 bytes: 4 us + 33554432
# B / (0.8 x 3.35 TB/s) = 16.520 us. The param w costs nothing: it stays
# on the device from the first step.
# RUN: printf 'mesh tp\ninput a : bf16[4096, 4096] shard(_, _)\nparam w : bf16[4096, 4096] shard(_, _) = normal(0.02)\nout = a @ w\noutput out\n' > %t.model
# RUN: %shardc %t.model --mesh 1 --trace %t-h100.json
# RUN: FileCheck %s --check-prefix=H100 < %t-h100.json
# RUN: %shardc %t.model --mesh 1 --trace %t-a100.json --hw a100
# RUN: FileCheck %s --check-prefix=A100 < %t-a100.json
# H100: "hardware": "h100"
# H100: {"name": "input", "cat": "source", "ph": "X", "pid": 0, "tid": 0, "ts": 0.000, "dur": 16.520, "args": {"op": 0, "value": "%0", "line": 2, "phase": "forward", "flops": 0, "bytes": 33554432, "class": "elementwise"}},
# H100-NEXT: {"name": "matmul", "cat": "compute", "ph": "X", "pid": 0, "tid": 0, "ts": 16.520, "dur": 202.525, "args": {"op": 2, "value": "%2", "line": 4, "phase": "forward", "flops": 137438953472}}
# A100: "hardware": "a100"
# A100: "dur": 633.299
#
# Ops the CUDA backend fuses into one kernel (passes/fuse.h) are one event,
# named as the kernel, at its last op: (a + b) * a over f32[1024, 1024]
# reads a and b and stores the product, 12582912 bytes, once: 4 us launch
# + 12582912 B / (0.8 x 3.35 TB/s) = 8.695 us (the two ops alone would be
# 17.390 us: two launches, and the sum written and read back), after the
# two inputs' kernels, 4 us + 4194304 B / (0.8 x 3.35 TB/s) = 5.565 us
# each.
# RUN: printf 'mesh tp\ninput a : f32[1024, 1024] shard(_, _)\ninput b : f32[1024, 1024] shard(_, _)\ny = (a + b) * a\noutput y\n' > %t.fz
# RUN: %shardc %t.fz --mesh 1 --trace %t-fz.json
# RUN: FileCheck %s --check-prefix=FUSED < %t-fz.json
# FUSED: {"name": "input", {{.*}} "ts": 5.565, "dur": 5.565,
# FUSED-NEXT: {"name": "k0_add_mul", "cat": "kernel", "ph": "X", "pid": 0, "tid": 0, "ts": 11.130, "dur": 8.695, "args": {"op": 3, "ops": 2, "line": 4, "phase": "forward", "flops": 2097152, "bytes": 12582912, "class": "elementwise"}}
# FUSED-NOT: "name": "add"
#
# A profile may give per-class efficiencies (docs/hw/README.md): with
# matmul_eff [[1e9, 0.2], [1e12, 0.6]] the 2 x 4096^3 = 1.374e11 FLOP
# matmul runs at 0.2 + 0.4 ln(137.44) / ln(1000) = 0.4851 of the peak:
# 4 us + 1.374e11 / (0.4851 x 989 TFLOP/s) = 290.483 us; one of 2 x 8192^3
# FLOPs, past the last point, at 0.6: 1856.901 us; with attention_eff 0.5
# the attention of q, k, v bf16[1, 16, 4096, 128] (16 x 4096^2 x (2 x 256
# + 5) = 1.388e11 FLOPs) takes 4 us + 1.388e11 / (0.5 x 989e12) = 284.649
# us: at the tensor cores' peak, which shardc's WMMA kernel runs 16-bit
# heads of 128 on; the same attention in f32, which runs on the tensor
# cores as six products of bf16 parts, takes 4 us + 1.388e11 / (0.5 x
# 989e12 / 6) = 1687.896 us.
# RUN: sed 's/"mem_bytes": \(.*\)$/"mem_bytes": \1,\n  "matmul_eff": [[1e9, 0.2], [1e12, 0.6]],\n  "attention_eff": 0.5/' %S/../../../docs/hw/h100.json > %t.cls.json
# RUN: printf 'mesh tp\ninput a : bf16[4096, 4096] shard(_, _)\nparam w : bf16[4096, 4096] shard(_, _) = normal(0.02)\nout = a @ w\ninput c : bf16[8192, 8192] shard(_, _)\nparam u : bf16[8192, 8192] shard(_, _) = normal(0.02)\nbig = c @ u\ninput q : bf16[1, 16, 4096, 128] shard(_, _, _, _)\ninput k : bf16[1, 16, 4096, 128] shard(_, _, _, _)\ninput v : bf16[1, 16, 4096, 128] shard(_, _, _, _)\no = attention(q, k, v)\ninput q32 : f32[1, 16, 4096, 128] shard(_, _, _, _)\ninput k32 : f32[1, 16, 4096, 128] shard(_, _, _, _)\ninput v32 : f32[1, 16, 4096, 128] shard(_, _, _, _)\no32 = attention(q32, k32, v32)\noutput out, big, o, o32\n' > %t.cls
# RUN: %shardc %t.cls --mesh 1 --trace %t-cls.json --hw %t.cls.json
# RUN: FileCheck %s --check-prefix=CLS < %t-cls.json
# CLS: {"name": "matmul", {{.*}} "dur": 290.483, {{.*}} "flops": 137438953472}}
# CLS: {"name": "matmul", {{.*}} "dur": 1856.901, {{.*}} "flops": 1099511627776}}
# CLS: {"name": "attention", {{.*}} "dur": 284.649, {{.*}} "flops": 138781130752}}
# CLS: {"name": "attention", {{.*}} "dur": 1687.896, {{.*}} "flops": 138781130752}}
#
# mem_eff_by_class gives a memory-bound kernel's class its own fraction of
# the bandwidth (the class: passes.h's pass_kclass). With elementwise 0.4,
# row 0.5 and column 0.25 on H100's 3.35 TB/s: the fused (a + b) * a
# above, 4 us + 12582912 B / (0.4 x 3.35e12) = 13.390 us; a sum along the
# last dim of f32[1024, 1024] (reads 4194304 B, writes 4096) a row kernel,
# 4 us + 4198400 B / (0.5 x 3.35e12) = 6.507 us; a sum along dim 0, a
# column kernel, 4 us + 4198400 B / (0.25 x 3.35e12) = 9.013 us. A class
# the profile leaves out takes mem_eff: the same model on h100 itself,
# 8.695 us and 5.567 us twice.
# RUN: printf 'mesh tp\ninput a : f32[1024, 1024] shard(_, _)\ninput b : f32[1024, 1024] shard(_, _)\ny = (a + b) * a\nr = sum(b, axis = 1)\nc = sum(b, axis = 0)\noutput y, r, c\n' > %t.kc
# RUN: sed 's/"mem_bytes": \(.*\)$/"mem_bytes": \1,\n  "mem_eff_by_class": {"elementwise": 0.4, "row": 0.5, "column": 0.25}/' %S/../../../docs/hw/h100.json > %t.kc.json
# RUN: %shardc %t.kc --mesh 1 --trace %t-kc.json --hw %t.kc.json
# RUN: FileCheck %s --check-prefix=KC < %t-kc.json
# KC: {"name": "k0_add_mul", {{.*}} "dur": 13.390,
# KC: {"name": "k1_sum", {{.*}} "dur": 6.507, {{.*}} "class": "row"}}
# KC: {"name": "k2_sum", {{.*}} "dur": 9.013, {{.*}} "class": "column"}}
# RUN: %shardc %t.kc --mesh 1 --trace %t-kc0.json
# RUN: FileCheck %s --check-prefix=KC0 < %t-kc0.json
# KC0: {"name": "k0_add_mul", {{.*}} "dur": 8.695,
# KC0: {"name": "k1_sum", {{.*}} "dur": 5.567,
# KC0: {"name": "k2_sum", {{.*}} "dur": 5.567,
#
# The Megatron MLP's forward all_reduce over tp of 64 x 1024 f32 sends
# 2 (n-1)/n of it per rank: inside one node (tp = 8) 10 us + 458752 B /
# (0.8 x 450 GB/s NVLink) = 11.274 us; over two nodes (tp = 16) 25 us +
# 491520 B / (0.8 x 50 GB/s) = 37.288 us. It runs on the communication
# stream (tid 1) of every rank.
# RUN: %shardc %S/../../../examples/mlp.sh --mesh 1x8 --trace %t-8.json
# RUN: FileCheck %s --check-prefix=TP8 < %t-8.json
# RUN: %shardc %S/../../../examples/mlp.sh --mesh 1x16 --trace %t-16.json
# RUN: FileCheck %s --check-prefix=TP16 < %t-16.json
# TP8: "pid": 0, "tid": 1, {{.*}} "dur": 11.274, "args": {"op": {{[0-9]+}}, "value": "%{{[0-9]+}}", "line": 13, "phase": "forward", "bytes_sent": 458752}}
# TP8: "pid": 7, "tid": 1, {{.*}} "dur": 11.274,
# TP16: "pid": 0, "tid": 1, {{.*}} "dur": 37.288, {{.*}} "bytes_sent": 491520}}
#
# intra_eff and inter_eff give the link's efficiency by the bytes sent,
# interpolated on log bytes as matmul_eff is on log FLOPs: with intra_eff
# [[1e5, 0.2], [1e7, 0.9]] the all_reduce above inside a node reaches
# 0.2 + 0.7 ln(4.58752) / ln(100) = 0.4316 of NVLink: 10 us + 458752 B /
# (0.4316 x 450 GB/s) = 12.362 us; with inter_eff [[1e6, 0.5]] the one over
# two nodes, below the point, 0.5: 25 us + 491520 B / (0.5 x 50 GB/s) =
# 44.661 us. Every collective and send of a pipeline's trace follows the
# rule.
# RUN: sed 's/"mem_bytes": \(.*\)$/"mem_bytes": \1,\n  "intra_eff": [[1e5, 0.2], [1e7, 0.9]],\n  "inter_eff": [[1e6, 0.5]]/' %S/../../../docs/hw/h100.json > %t.link.json
# RUN: %shardc %S/../../../examples/mlp.sh --mesh 1x8 --trace %t-l8.json --hw %t.link.json
# RUN: FileCheck %s --check-prefix=L8 < %t-l8.json
# RUN: %shardc %S/../../../examples/mlp.sh --mesh 1x16 --trace %t-l16.json --hw %t.link.json
# RUN: FileCheck %s --check-prefix=L16 < %t-l16.json
# L8: "pid": 0, "tid": 1, {{.*}} "dur": 12.362, {{.*}} "bytes_sent": 458752}}
# L16: "pid": 0, "tid": 1, {{.*}} "dur": 44.661, {{.*}} "bytes_sent": 491520}}
# RUN: %shardc %S/../../../examples/pipeline.sh --mesh 2x2x2 --trace %t-lp.json --hw %t.link.json
# RUN: python3 -c "import json, math; eff = lambda b: 0.2 if b <= 1e5 else 0.9 if b >= 1e7 else 0.2 + 0.7 * math.log(b / 1e5) / math.log(100); ev = [(e['dur'], e['args'].get('bytes_sent', e['args'].get('bytes'))) for e in json.load(open('%t-lp.json'))['traceEvents'] if e.get('ph') == 'X' and e.get('cat') in ('collective', 'p2p')]; ev = [(d, b) for d, b in ev if b]; bad = [d for d, b in ev if abs(d - 10 - b / (450e9 * eff(b)) * 1e6) > 0.0015]; print('links', len(ev) > 100, 'off', len(bad))" | FileCheck %s --check-prefix=LP
# LP: links True off 0
#
# Every example on its meshes: valid, every rank present, no two events of
# one stream overlapping, sends meeting their recvs, step_ms the last end.
# RUN: %shardc %S/../../../examples/transformer.sh --mesh 2x2 --trace %t-t.json
# RUN: python3 %S/../../tools/check_trace.py %t-t.json --ranks 4 | FileCheck %s --check-prefix=T
# T: rank 0 stage 0: collective {{[1-9][0-9]*}} compute {{[1-9][0-9]*}}
# T: rank 3 stage 0:
# T: step_ms
# RUN: %shardc %S/../../../examples/pipeline.sh --mesh 2x2x2 --trace %t-p.json
# RUN: python3 %S/../../tools/check_trace.py %t-p.json --ranks 8 | FileCheck %s --check-prefix=P
# P: rank 0 stage 0: collective {{[0-9]+}} compute {{[0-9]+}} kernel {{[0-9]+}} p2p 8
# P: rank 2 stage 1: collective {{[0-9]+}} compute {{[0-9]+}} kernel {{[0-9]+}} p2p 8
# RUN: sed 's/schedule 1f1b/schedule interleaved(2)/' %S/../../../examples/pipeline.sh > %t-i.sh
# RUN: %shardc %t-i.sh --mesh 1x2x1 --trace %t-i.json --hw h200
# RUN: python3 %S/../../tools/check_trace.py %t-i.json --ranks 2 | FileCheck %s --check-prefix=I
# (interleaved(2): stage 0 sends and receives 4 microbatches each way per chunk boundary: 3 boundaries x 2 directions x 4)
# I: rank 0 stage 0: compute {{[0-9]+}} kernel {{[0-9]+}} p2p 24
#
# With --emit, -o or nothing else, the trace comes as well; a wrong profile
# is bad usage; a trace that cannot be written is said before the compile.
# RUN: %shardc %S/../../../examples/mlp.sh --mesh 2x2 --trace %t-2.json -o %t.plan
# RUN: test -s %t.plan && test -s %t-2.json
# RUN: %expect 2 %shardc %S/../../../examples/mlp.sh --mesh 2x2 --trace %t-3.json --hw tpu 2>&1 | FileCheck %s --check-prefix=HW
# HW: shardc: error: --hw 'tpu': the hardware profiles are a100, h100, h200
# RUN: %expect 1 %shardc %S/../../../examples/mlp.sh --mesh 2x2 --trace /nonexistent/dir/t.json 2>&1 | FileCheck %s --check-prefix=IO
# IO: shardc: error: --trace /nonexistent/dir/t.json cannot be written: the folder /nonexistent/dir does not exist
#
# The report ends its table with the step time and puts it in the JSON
# before the stages: the end of the same timeline.
# RUN: %shardc %S/../../../examples/mlp.sh --mesh 2x2 --hw a100 --trace %t-a.json --report json > %t-a-rep.json
# RUN: cat %t-a-rep.json %t-a.json | FileCheck %s --check-prefix=REP
# REP: "sizes": [2, 2]}, "estimate": {"hardware": "a100", "step_ms": [[MS:[0-9.]+]], "mfu": {{[0-9.]+}}, "imbalance": 1.000000, "calibrated_by": null, "throughput": {"input": "x", "unit": "samples", "per_step": 64, "per_s": {{[0-9.e+]+}}}, "stages": [{"compute_ms": {{[0-9.]+}}, "comm_ms": {{[0-9.]+}}, "exposed_comm_ms": {{[0-9.]+}}}]}, "bytes": [{{.*}}], "stages": [
# REP: "hardware": "a100", {{.*}} "step_ms": [[MS]],
# RUN: %shardc %S/../../../examples/mlp.sh --mesh 2x2 --report | FileCheck %s --check-prefix=TABLE
# TABLE: step time, estimated on h100: {{[0-9]+\.[0-9][0-9][0-9]}} ms (the timeline: shardc --trace)
# TABLE-NEXT: stage 0: compute {{[0-9.]+}} ms, communication {{[0-9.]+}} ms ({{[0-9.]+}} ms of it exposed: the compute stream idle)
# TABLE-NEXT: model FLOPs utilisation: {{[0-9.]+}}% of h100's bf16 tensor-core peak
# TABLE-NEXT: throughput: {{.*}}
# TABLE-NEXT: efficiencies: not measured on a GPU (the profile has no calibrated_by; bench_cuda --calibrate measures them: docs/hw/README.md)
#
# A profile that says what measured it (calibrated_by: bench_cuda
# --calibrate and bench/nccl_eff.py write it) is named so, in the table
# and the JSON.
# RUN: sed 's/"mem_bytes": \(.*\)$/"mem_bytes": \1,\n  "calibrated_by": "bench_cuda --calibrate h.json (NVIDIA H200, \\"2026\\")"/' %S/../../../docs/hw/h100.json > %t.by.json
# RUN: %shardc %S/../../../examples/mlp.sh --mesh 2x2 --hw %t.by.json --report | FileCheck %s --check-prefix=BY
# BY: efficiencies: calibrated by bench_cuda --calibrate h.json (NVIDIA H200, "2026")
# RUN: %shardc %S/../../../examples/mlp.sh --mesh 2x2 --hw %t.by.json --report json | FileCheck %s --check-prefix=BYJSON
# BYJSON: "imbalance": 1.000000, "calibrated_by": "bench_cuda --calibrate h.json (NVIDIA H200, \"2026\")", "throughput":
#
# Each stage's busy times, and how much of its communication the compute
# stream does not hide, add up: exposed <= communication, compute <= step;
# with a pipeline, the imbalance names the busiest stage.
# RUN: %shardc %S/../../../examples/pipeline.sh --mesh 2x2x2 --report json | python3 -c "import json,sys; e=json.load(sys.stdin)['estimate']; print('ok' if all(0 <= s['exposed_comm_ms'] <= s['comm_ms'] + 1e-9 and s['compute_ms'] <= e['step_ms'] + 1e-9 for s in e['stages']) and len(e['stages']) == 2 and e['imbalance'] >= 1 and 0 < e['mfu'] < 1 else 'BAD')" | FileCheck %s --check-prefix=SUM
# SUM: ok
# RUN: %shardc %S/../../../examples/pipeline.sh --mesh 2x2x2 --report | FileCheck %s --check-prefix=IMB
# IMB: imbalance: stage {{[01]}} computes {{[0-9.]+}}x the stages' mean
