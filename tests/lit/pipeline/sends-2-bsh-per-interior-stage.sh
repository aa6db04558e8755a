# Pipeline parallelism's closed form: a stage sends the activation of its
# last layer forward (all but the last stage) and the gradient of its
# first layer's input backward (all but the first), b·s·h elements each
# over all microbatches, and nothing else. examples/pipeline.sh on 4
# stages (B·S·D = 8·128·256 = 262,144 f32, 4 microbatches of 65,536): the
# two interior stages send 2 x 1,048,576 = 2,097,152 bytes per step, the
# first and the last 1,048,576; no collective, no param crosses stages.
# RUN: %shardc %S/../../../examples/pipeline.sh --mesh 1x4x1 --report | grep 'bytes sent per rank' | FileCheck %s
# RUN: %shardc %S/../../../examples/pipeline.sh --mesh 1x4x1 --report json | FileCheck %s --check-prefix=JSON
# CHECK:      bytes sent per rank:  1048576
# CHECK-NEXT: bytes sent per rank:  2097152
# CHECK-NEXT: bytes sent per rank:  2097152
# CHECK-NEXT: bytes sent per rank:  1048576
# CHECK-NOT:  bytes sent
# JSON-NOT: all_reduce
# JSON-NOT: all_gather
# JSON-NOT: reduce_scatter
# JSON-NOT: all_to_all
