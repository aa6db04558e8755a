# --mem-limit: a plan whose peak per rank is over the limit is an error
# naming the stage and what fills it, largest first, with no plan written;
# under it, the report gives the headroom (text and JSON); hw takes the
# --hw profile's memory (h200: 143771 MiB, the card's total).
# RUN: %expect 1 %shardc %S/../../../examples/transformer.sh --mesh 2x2 --mem-limit 10MiB -o %t.plan 2>&1 | FileCheck %s --check-prefix=OVER
# RUN: test ! -e %t.plan
# RUN: %expect 1 %shardc %S/../../../examples/pipeline.sh --mesh 1x2x1 --mem-limit 30MB -o %t.plan 2>&1 | FileCheck %s --check-prefix=STAGE
# RUN: %shardc %S/../../../examples/transformer.sh --mesh 2x2 --mem-limit 1GiB --report | FileCheck %s --check-prefix=ROOM
# RUN: %shardc %S/../../../examples/transformer.sh --mesh 2x2 --mem-limit hw --hw h200 --report json | FileCheck %s --check-prefix=JSON
# RUN: %expect 2 %shardc %S/../../../examples/mlp.sh --mem-limit 12XB 2>&1 | FileCheck %s --check-prefix=BAD
# OVER: transformer.sh: error: the plan needs 53.7 MiB per rank, over --mem-limit 10.0 MiB by 43.7 MiB: activations (the most live at once) 24.1 MiB, optimizer state 15.3 MiB, gradients 7.7 MiB, params 7.7 MiB
# STAGE: pipeline.sh: error: stage 0 needs {{[0-9.]+}} MiB per rank, over --mem-limit 28.6 MiB by
# ROOM: peak bytes per rank:  56296448
# ROOM: headroom per rank:    1017445376 under --mem-limit 1073741824 (5.2% used)
# JSON: "mem_limit": 150754820096,
# JSON-SAME: "peak_bytes": 56296448,
# JSON-SAME: "headroom": 150698523648,
# BAD: shardc: error: --mem-limit '12XB': expected a size such as 80GiB, 75GB, 512MiB or a number of bytes, or hw (the --hw profile's memory)
