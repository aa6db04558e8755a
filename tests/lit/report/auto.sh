# shardc --auto: the search over strategies for 4 ranks on the small GPT
# (meshes 1x4, 2x2, 4x1; ZeRO 0-3 where dp > 1; --recompute on and off;
# --keep-gathered, which changes none of them: nothing gathered is read again)
# under a 40 MiB limit, its winner checked against a brute-force loop over
# `--report json` of every such strategy (auto.sh.py), and its CSV and SVG.
# RUN: %shardc %S/../../../examples/transformer.sh --auto 4 --mem-limit 40MiB --auto-csv %t.csv --auto-svg %t.svg --top 3 > %t.out
# RUN: FileCheck %s < %t.out
# RUN: python3 %s.py %shardc %S/../../../examples/transformer.sh 4 41943040 %t.csv | FileCheck %s --check-prefix=BRUTE
# RUN: FileCheck %s --check-prefix=SVG < %t.svg
# The compiles run on several threads; on one, or on five, the output is
# the same, byte for byte (the candidates recorded in one order).
# RUN: env SHARDC_AUTO_JOBS=1 %shardc %S/../../../examples/transformer.sh --auto 4 --mem-limit 40MiB --auto-csv %t.1.csv --top 3 > %t.1.out
# RUN: env SHARDC_AUTO_JOBS=5 %shardc %S/../../../examples/transformer.sh --auto 4 --mem-limit 40MiB --auto-csv %t.5.csv --top 3 > %t.5.out
# RUN: cmp %t.out %t.1.out && cmp %t.out %t.5.out && cmp %t.csv %t.1.csv && cmp %t.csv %t.5.csv
# With the residual stream split along the sequence (sequence parallelism)
# --keep-gathered changes the plan, and under 45 MiB it wins: 1x4 keeping
# the gathered inputs sends 26790912 bytes per rank in 40.5 MiB, against
# 34262016 in 35.7 MiB without (the brute force agrees).
# RUN: sed -e 's/^    x = x + attn(x)$/    x = (x + attn(x)) shard(dp, tp, _)/' -e 's/^    x = x + mlp(x)$/    x = (x + mlp(x)) shard(dp, tp, _)/' %S/../../../examples/transformer.sh > %t.sp.sh
# RUN: %shardc %t.sp.sh --auto 4 --mem-limit 45MiB --auto-csv %t.sp.csv --top 2 | FileCheck %s --check-prefix=SP
# RUN: python3 %s.py %shardc %t.sp.sh 4 47185920 %t.sp.csv | FileCheck %s --check-prefix=SPBRUTE
# SP: 1 {{ *}}1.158 {{ *}}40.5 MiB {{.*}} dp=1 tp=4 zero 0 keep-gathered {{ *}}0 {{ *}}26790912
# SP-NEXT: 2 {{ *}}1.399 {{ *}}35.7 MiB {{.*}} dp=1 tp=4 zero 0 {{ *}}0 {{ *}}34262016
# SP: 1 {{ *}}shardc {{.*}}sp.sh --mesh 1x4 --zero 0 --keep-gathered --mem-limit 45MiB -o model.plan
# SPBRUTE: the same winner: 1x4 zero 0 recompute 0 keep-gathered 1,
# SPBRUTE-NEXT: the same fitting set and figures as the CSV
# RUN: %expect 2 %shardc %S/../../../examples/transformer.sh --auto 4 --mesh 2x2 2>&1 | FileCheck %s --check-prefix=MESH
# RUN: %expect 2 %shardc %S/../../../examples/transformer.sh --auto 0 2>&1 | FileCheck %s --check-prefix=ZERO
# RUN: %expect 1 %shardc %S/../../../examples/transformer.sh --auto 4 --mem-limit 1MiB > %t.none
# RUN: FileCheck %s --check-prefix=NONE < %t.none
# CHECK: # --auto 4: {{.*}}transformer.sh, 17 strategies compiled: 6 within the memory limit (40.0 MiB), 11 over it, 2 more pruned as over it, 0 do not compile
# CHECK: rank {{ *}}step ms {{ *}}memory bubble  strategy
# CHECK: 1 {{.*}} dp={{[124]}} tp={{[124]}} zero {{[0-3]}}
# CHECK: 1    shardc {{.*}}transformer.sh --mesh {{.*}} -o model.plan
# BRUTE: brute force: 18 strategies, 6 within 41943040 bytes
# BRUTE-NEXT: the same winner: {{.*}}
# BRUTE-NEXT: the same fitting set and figures as the CSV
# SVG: <svg xmlns="http://www.w3.org/2000/svg"
# SVG: --mem-limit
# SVG: best:
# MESH: shardc: error: --auto chooses the mesh, --zero, --schedule, --microbatches, --recompute and --keep-gathered and prints its table: it takes no --mesh
# ZERO: shardc: error: --auto '0': expected a rank count, 1 to 2^20
# NONE: no strategy fits the memory limit
