# Data parallelism sends exactly 2(d-1)/d · Ψ · 4 bytes per rank and step
# (f32 gradients of Ψ params, all-reduced), plus the loss scalar's 6 bytes.
# examples/transformer.sh has Ψ = 3712512 params (wte 1024·256, wpe 128·256,
# 4 layers of 262656 + 526080, the final norm's 512, the LM head 256·1024),
# so dp = 4 sends 6Ψ + 6 = 22275078 bytes: the norms' gain and bias
# gradients are summed over the local rows before they are reduced, [D]
# not [S, D], and every gradient goes in one 25 MiB bucket.
# RUN: %shardc %S/../../../examples/transformer.sh --mesh 4x1 --report json | FileCheck %s
# CHECK: "bytes_sent": 22275078, "collectives": [{"kind": "all_reduce", "axes": ["dp"], "dtype": "f32", "elements": 1, "phase": "forward"}, {"kind": "all_reduce", "axes": ["dp"], "dtype": "f32", "elements": 3712512, "phase": "backward"}]
