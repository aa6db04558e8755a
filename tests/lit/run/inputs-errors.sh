# Inputs and weights files that do not fit the plan: each error names the
# file and the tensor, and the declaration's place in the model, and
# nothing runs.
# RUN: %shardc %S/embed.model --mesh 2 -o %t.plan
# RUN: python3 %S/../../tools/make_st.py %t.noids other=I32[4,3]:0
# RUN: %expect 1 %shardrun %t.plan --inputs %t.noids 2>&1 | FileCheck %s --check-prefix=MISSING
# MISSING: shardrun: error: rank {{[01]}}: {{.*}}/embed.model:3:8: instruction 0 (input): {{.*}}noids: no tensor 'ids' (the file has 1 tensor{{s?}})
# RUN: python3 %S/../../tools/make_st.py %t.shape ids=I32[4,2]:0
# RUN: %expect 1 %shardrun %t.plan --inputs %t.shape 2>&1 | FileCheck %s --check-prefix=SHAPE
# SHAPE: shardrun: error: rank {{[01]}}: {{.*}}/embed.model:3:8: instruction 0 (input): {{.*}}tensor 'ids': shape [4, 2] in the file, [4, 3] expected
# RUN: python3 %S/../../tools/make_st.py %t.dtype ids=F32[4,3]:0
# RUN: %expect 1 %shardrun %t.plan --inputs %t.dtype 2>&1 | FileCheck %s --check-prefix=DTYPE
# DTYPE: shardrun: error: rank {{[01]}}: {{.*}}/embed.model:3:8: instruction 0 (input): {{.*}}tensor 'ids': dtype F32 in the file, i32 expected
# RUN: python3 %S/../../tools/make_st.py %t.w t=F32[8,3]:1 w=F32[2,2]:1
# RUN: %expect 1 %shardrun %t.plan --params %t.w 2>&1 | FileCheck %s --check-prefix=PARAM
# PARAM: shardrun: error: rank {{[01]}}: {{.*}}/embed.model:4:8: instruction 1 (param): {{.*}}tensor 't': shape [8, 3] in the file, [8, 2] expected
# RUN: printf 'not a safetensors file' > %t.junk
# RUN: %expect 1 %shardrun %t.plan --params %t.junk 2>&1 | FileCheck %s --check-prefix=JUNK
# JUNK: shardrun: error: {{.*}}junk: header length {{[0-9]+}} exceeds the file (22 bytes)
