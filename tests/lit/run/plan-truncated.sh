# RUN: %shardc %S/embed.model --mesh 2 -o %t.plan
# RUN: head -c 200 %t.plan > %t.short
# RUN: %expect 1 %shardrun %t.short 2>&1 | FileCheck %s
# CHECK: shardrun: error: {{.*}}.short: truncated file: the header says {{[0-9]+}} bytes, the file has 200
