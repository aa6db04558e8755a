# The report reconciles each stage's peak with its parts: params and
# optimizer state (held throughout), then, at the op where the most other
# bytes are live, the activations and the gradients live there, and the
# gaps between buffers with their alignment; the parts add up to the peak
# to the byte, for the GPT on 2x2 and each stage of its pipelined form.
# RUN: %shardc %S/../../../examples/transformer.sh --mesh 2x2 --report json > %t.1.json
# RUN: %shardc %S/../../../examples/pipeline.sh --mesh 2x2x1 --report json > %t.2.json
# RUN: python3 %s.py %t.1.json %t.2.json | FileCheck %s
# RUN: %shardc %S/../../../examples/transformer.sh --mesh 2x2 --report | FileCheck %s --check-prefix=TEXT
# CHECK: 1.json stage 0: adds up
# CHECK-NEXT: 2.json stage 0: adds up
# CHECK-NEXT: 2.json stage 1: adds up
# TEXT: peak bytes per rank: 56296448
# TEXT: peak reconciled: params and optimizer state, then at op {{[0-9]+}} (line {{[0-9]+}}) 23664648 of activations and 8026112 of gradients live, and 527348 of gaps between buffers and alignment
