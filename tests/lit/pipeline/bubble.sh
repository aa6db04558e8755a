# The report's pipeline bubble, from running each stage's schedule with
# equal times per chunk: (p - 1) / m for gpipe and 1f1b, (p - 1) / (V m)
# for interleaved(V); and 1F1B's smaller activation peak on the first stage
# (at most p microbatches in flight, where gpipe keeps all m).
# RUN: sed 's/schedule 1f1b/schedule gpipe/' %S/../../../examples/pipeline.sh > %t-g.sh
# RUN: sed 's/schedule 1f1b/schedule interleaved(2)/' %S/../../../examples/pipeline.sh > %t-i.sh
# RUN: %shardc %t-g.sh --mesh 1x2x1 --report json | FileCheck %s --check-prefix=G24
# RUN: %shardc %t-g.sh --mesh 1x4x1 --report json | FileCheck %s --check-prefix=G44
# RUN: %shardc %S/../../../examples/pipeline.sh --mesh 1x2x1 --report json | FileCheck %s --check-prefix=F24
# RUN: %shardc %S/../../../examples/pipeline.sh --mesh 2x4x1 -DB=16 -DL=8 --report json | FileCheck %s --check-prefix=F44
# RUN: sed 's/microbatches 4/microbatches 8/' %S/../../../examples/pipeline.sh > %t-8.sh
# RUN: %shardc %t-8.sh --mesh 1x4x1 --report json | FileCheck %s --check-prefix=F48
# RUN: %shardc %t-i.sh --mesh 1x2x1 --report json | FileCheck %s --check-prefix=I24
# RUN: %shardc %t-i.sh --mesh 1x4x1 -DL=8 --report json | FileCheck %s --check-prefix=I44
# RUN: %shardc %t-i.sh --mesh 1x2x2 --report | FileCheck %s --check-prefix=TABLE
# G24: "pipeline": {"axis": "pp", "schedule": "gpipe", "stages": 2, "microbatches": 4, "chunks": 1, "bubble": 0.250000}
# G44: "pipeline": {"axis": "pp", "schedule": "gpipe", "stages": 4, "microbatches": 4, "chunks": 1, "bubble": 0.750000}
# F24: "pipeline": {"axis": "pp", "schedule": "1f1b", "stages": 2, "microbatches": 4, "chunks": 1, "bubble": 0.250000}
# F44: "pipeline": {"axis": "pp", "schedule": "1f1b", "stages": 4, "microbatches": 4, "chunks": 1, "bubble": 0.750000}
# F48: "pipeline": {"axis": "pp", "schedule": "1f1b", "stages": 4, "microbatches": 8, "chunks": 1, "bubble": 0.375000}
# I24: "pipeline": {"axis": "pp", "schedule": "interleaved(2)", "stages": 2, "microbatches": 4, "chunks": 2, "bubble": 0.125000}
# I44: "pipeline": {"axis": "pp", "schedule": "interleaved(2)", "stages": 4, "microbatches": 4, "chunks": 2, "bubble": 0.375000}
# Each stage lists its own ranks (dp x pp x tp = 1x2x2: pp is the middle axis).
# TABLE: pipeline: interleaved(2) over pp, 2 stages, 4 microbatches, bubble 0.1250 of the ideal compute time
# TABLE: stage 0: 2 ranks, the first 0
# TABLE: send            pp->1
# TABLE: stage 1: 2 ranks, the first 2
# TABLE: recv            pp->0

# 8 microbatches on 2 stages: gpipe holds every microbatch's activations on
# stage 0 at once, 1f1b at most 2.
# RUN: sed 's/microbatches 4/microbatches 8/' %t-g.sh > %t-g8.sh
# RUN: %shardc %t-g8.sh --mesh 1x2x1 --report json > %t-g8.json
# RUN: %shardc %t-8.sh --mesh 1x2x1 --report json > %t-f8.json
# RUN: python3 -c 'import json, sys; g, f = (json.load(open(p))["stages"][0]["memory"]["activations"] for p in sys.argv[1:]); print("gpipe", g, "1f1b", f); sys.exit(0 if g > 1.5 * f else 1)' %t-g8.json %t-f8.json
