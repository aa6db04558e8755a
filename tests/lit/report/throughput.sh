# The estimate's throughput (issue 22): tokens a step are the elements of
# the largest i32 input (token ids: B x S, whatever their sharding, and
# in a pipeline on the stage that reads them), else samples are the rows
# of the first input; a second is the estimated step. The text and the
# JSON agree, and per second is per step over the step.
# RUN: %shardc %S/../../../examples/llama.sh --mesh 2x2 -D B=8 -D S=128 --report | FileCheck %s --check-prefix=LLAMA
# LLAMA: model FLOPs utilisation
# LLAMA-NEXT: throughput: {{[0-9.e+]+}} tokens/s (1024 a step: the ids of input 'tokens')
# RUN: %shardc %S/../../../examples/pipeline.sh --mesh 2x2x2 -D B=16 -D S=64 --report | FileCheck %s --check-prefix=PIPE
# PIPE: throughput: {{[0-9.e+]+}} tokens/s (1024 a step: the ids of input 'tokens')
# RUN: %shardc %S/../../../examples/mlp.sh --mesh 2x2 -D B=64 --report | FileCheck %s --check-prefix=MLP
# MLP: throughput: {{[0-9.e+]+}} samples/s (64 a step: the rows of input 'x')
# RUN: %shardc %S/../../../examples/llama.sh --mesh 2x2 --report json > %t.json
# RUN: python3 -c "import json,sys; e = json.load(open(sys.argv[1]))['estimate']; t = e['throughput']; print(t['input'], t['unit'], t['per_step'], abs(t['per_s'] - t['per_step'] / (e['step_ms'] / 1e3)) <= 1e-5 * t['per_s'])" %t.json | FileCheck %s --check-prefix=JSON
# JSON: tokens tokens 1024 True
