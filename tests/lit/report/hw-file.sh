# --hw FILE.json: a hardware profile of one's own, in the form of the
# built-in ones, which docs/hw/ holds: each file gives the same report as
# its name. A slower link makes the step slower; --mem-limit hw takes the
# file's memory; a bad profile is an error that names the field.
# RUN: %shardc %S/../../../examples/pipeline.sh --mesh 2x2x2 --hw a100 --report json > %t.a
# RUN: %shardc %S/../../../examples/pipeline.sh --mesh 2x2x2 --hw %S/../../../docs/hw/a100.json --report json | diff - %t.a
# RUN: %shardc %S/../../../examples/pipeline.sh --mesh 2x2x2 --hw h100 --report json > %t.h
# RUN: %shardc %S/../../../examples/pipeline.sh --mesh 2x2x2 --hw %S/../../../docs/hw/h100.json --report json | diff - %t.h
# RUN: %shardc %S/../../../examples/pipeline.sh --mesh 2x2x2 --hw h200 --report json > %t.2
# RUN: %shardc %S/../../../examples/pipeline.sh --mesh 2x2x2 --hw %S/../../../docs/hw/h200.json --report json | diff - %t.2
# RUN: sed -e 's/"name": "h100"/"name": "slow"/' -e 's/"intra_bw": .*/"intra_bw": 4500000000.0,/' -e 's/"mem_bytes": .*/"mem_bytes": 1000000/' %S/../../../docs/hw/h100.json > %t.slow.json
# RUN: %shardc %S/../../../examples/pipeline.sh --mesh 2x2x2 --hw %t.slow.json --report json > %t.s
# RUN: python3 -c "import json,sys; a=json.load(open(sys.argv[1]))['estimate']; b=json.load(open(sys.argv[2]))['estimate']; print(b['hardware'], 'slower' if b['step_ms'] > a['step_ms'] else 'NOT slower')" %t.h %t.s | FileCheck %s --check-prefix=SLOW
# SLOW: slow slower
# RUN: %expect 1 %shardc %S/../../../examples/mlp.sh --mesh 2x2 --hw %t.slow.json --mem-limit hw -o %t.plan 2>&1 | FileCheck %s --check-prefix=MEM
# MEM: error: the plan needs {{.*}} over --mem-limit 976.6 KiB
# RUN: sed 's/"link_eff": .*/"link_eff": 1.5,/' %S/../../../docs/hw/h100.json > %t.eff.json
# RUN: %expect 1 %shardc %S/../../../examples/mlp.sh --hw %t.eff.json 2>&1 | FileCheck %s --check-prefix=EFF
# EFF: eff.json: "link_eff" must be a positive number of at most 1
# RUN: grep -v '"mem_bw"' %S/../../../docs/hw/h100.json > %t.miss.json
# RUN: %expect 1 %shardc %S/../../../examples/mlp.sh --hw %t.miss.json 2>&1 | FileCheck %s --check-prefix=MISS
# MISS: miss.json: "mem_bw" must be a positive number
# RUN: echo '[1, 2]' > %t.arr.json
# RUN: %expect 1 %shardc %S/../../../examples/mlp.sh --hw %t.arr.json 2>&1 | FileCheck %s --check-prefix=ARR
# ARR: arr.json: not a JSON object
# A syntax error is named at its line and column (the file is the user's
# to edit), and so is text after the object.
# RUN: printf '{\n  "name": "x",\n  "mem_bw" 3e12\n}\n' > %t.colon.json
# RUN: %expect 1 %shardc %S/../../../examples/mlp.sh --hw %t.colon.json 2>&1 | FileCheck %s --check-prefix=COLON
# COLON: error: --hw {{.*}}colon.json:3:12: not valid JSON here
# RUN: printf '{"name": "x"} junk' > %t.junk.json
# RUN: %expect 1 %shardc %S/../../../examples/mlp.sh --hw %t.junk.json 2>&1 | FileCheck %s --check-prefix=JUNK
# JUNK: error: --hw {{.*}}junk.json:1:15: text after the JSON object
# RUN: printf '{"name": "x"}\n\0' > %t.nul.json
# RUN: %expect 1 %shardc %S/../../../examples/mlp.sh --hw %t.nul.json 2>&1 | FileCheck %s --check-prefix=NUL
# NUL: error: --hw {{.*}}nul.json:2:1: text after the JSON object
# RUN: %expect 1 %shardc %S/../../../examples/mlp.sh --hw %t.none.json 2>&1 | FileCheck %s --check-prefix=NONE
# NONE: none.json: cannot open: No such file or directory
# The per-class efficiencies are optional; when given they must be sound.
# RUN: sed 's/"mem_bytes": \(.*\)$/"mem_bytes": \1,\n  "matmul_eff": [[1e12, 0.5], [1e9, 0.2]]/' %S/../../../docs/hw/h100.json > %t.order.json
# RUN: %expect 1 %shardc %S/../../../examples/mlp.sh --hw %t.order.json 2>&1 | FileCheck %s --check-prefix=ORDER
# ORDER: order.json: "matmul_eff" point 2: its FLOPs must be above the point before
# RUN: sed 's/"mem_bytes": \(.*\)$/"mem_bytes": \1,\n  "matmul_eff": [[1e9, 1.2]]/' %S/../../../docs/hw/h100.json > %t.point.json
# RUN: %expect 1 %shardc %S/../../../examples/mlp.sh --hw %t.point.json 2>&1 | FileCheck %s --check-prefix=POINT
# POINT: point.json: "matmul_eff" point 1 must be [FLOPs, fraction]: a positive number, then one of at most 1
# RUN: sed 's/"mem_bytes": \(.*\)$/"mem_bytes": \1,\n  "matmul_eff": []/' %S/../../../docs/hw/h100.json > %t.empty.json
# RUN: %expect 1 %shardc %S/../../../examples/mlp.sh --hw %t.empty.json 2>&1 | FileCheck %s --check-prefix=EMPTY
# EMPTY: empty.json: "matmul_eff" must be a list of 1 to 16 [FLOPs, fraction] pairs
# RUN: sed 's/"mem_bytes": \(.*\)$/"mem_bytes": \1,\n  "attention_eff": "fast"/' %S/../../../docs/hw/h100.json > %t.attn.json
# RUN: %expect 1 %shardc %S/../../../examples/mlp.sh --hw %t.attn.json 2>&1 | FileCheck %s --check-prefix=ATTN
# ATTN: attn.json: "attention_eff" must be a positive number of at most 1
# "mem_eff_by_class": an object of kernel classes, each a fraction.
# RUN: sed 's/"mem_bytes": \(.*\)$/"mem_bytes": \1,\n  "mem_eff_by_class": {"rows": 0.5}/' %S/../../../docs/hw/h100.json > %t.kc.json
# RUN: %expect 1 %shardc %S/../../../examples/mlp.sh --hw %t.kc.json 2>&1 | FileCheck %s --check-prefix=KCNAME
# KCNAME: kc.json: "mem_eff_by_class": 'rows' is no kernel class (the classes: elementwise, transpose, column, row, embedding, embedding_grad, cross_entropy, optimizer)
# RUN: sed 's/"mem_bytes": \(.*\)$/"mem_bytes": \1,\n  "mem_eff_by_class": {"row": 0.5, "optimizer": 0}/' %S/../../../docs/hw/h100.json > %t.kc0.json
# RUN: %expect 1 %shardc %S/../../../examples/mlp.sh --hw %t.kc0.json 2>&1 | FileCheck %s --check-prefix=KCZERO
# KCZERO: kc0.json: "mem_eff_by_class": "optimizer" must be a positive number of at most 1
# RUN: sed 's/"mem_bytes": \(.*\)$/"mem_bytes": \1,\n  "mem_eff_by_class": [0.5]/' %S/../../../docs/hw/h100.json > %t.kcl.json
# RUN: %expect 1 %shardc %S/../../../examples/mlp.sh --hw %t.kcl.json 2>&1 | FileCheck %s --check-prefix=KCLIST
# KCLIST: kcl.json: "mem_eff_by_class" must be an object of kernel classes and fractions
# intra_eff and inter_eff: tables by bytes, as matmul_eff is by FLOPs.
# RUN: sed 's/"mem_bytes": \(.*\)$/"mem_bytes": \1,\n  "inter_eff": [[1e6, 0.5], [1e3, 0.2]]/' %S/../../../docs/hw/h100.json > %t.inter.json
# RUN: %expect 1 %shardc %S/../../../examples/mlp.sh --hw %t.inter.json 2>&1 | FileCheck %s --check-prefix=INTER
# INTER: inter.json: "inter_eff" point 2: its bytes must be above the point before
# RUN: sed 's/"mem_bytes": \(.*\)$/"mem_bytes": \1,\n  "intra_eff": [[1e6]]/' %S/../../../docs/hw/h100.json > %t.intra.json
# RUN: %expect 1 %shardc %S/../../../examples/mlp.sh --hw %t.intra.json 2>&1 | FileCheck %s --check-prefix=INTRA
# INTRA: intra.json: "intra_eff" point 1 must be [bytes, fraction]: a positive number, then one of at most 1
# calibrated_by, when there, is a string (what measured the profile).
# RUN: sed 's/"mem_bytes": \(.*\)$/"mem_bytes": \1,\n  "calibrated_by": 7/' %S/../../../docs/hw/h100.json > %t.by.json
# RUN: %expect 1 %shardc %S/../../../examples/mlp.sh --hw %t.by.json 2>&1 | FileCheck %s --check-prefix=BY
# BY: by.json: "calibrated_by" must be a string of at most 4095 characters
