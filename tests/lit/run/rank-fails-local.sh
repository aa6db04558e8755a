# An id outside the table fails one rank; the others stop instead of
# waiting, and the message names the rank, the place in the model (the
# embedding's line and column), the instruction and the id.
# RUN: %shardc %S/embed.model --mesh 2 -o %t.plan
# RUN: python3 %S/../../tools/make_st.py %t.in ids=I32[4,3]:0,1,2,3,4,5,6,7,1,2,3,9
# RUN: %expect 1 %shardrun %t.plan --inputs %t.in 2>&1 | FileCheck %s
# CHECK: shardrun: error: rank 1: {{.*}}/embed.model:6:5: instruction 3 (embedding): embedding id 9 at index 5 is outside the table's 8 rows
