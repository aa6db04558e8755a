# Outputs gathered to full shape: the same file from 1 rank and from 2,
# and the values are the table's rows picked by the ids, times ones.
# RUN: python3 %S/../../tools/make_st.py %t.in ids=I32[4,3]:0,1,2,3,4,5,6,7,1,2,3,4
# RUN: python3 %S/../../tools/make_st.py %t.w t=F32[8,2]:0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15 w=F32[2,2]:1
# RUN: %shardc %S/embed.model --mesh 1 -o %t.1.plan
# RUN: %shardc %S/embed.model --mesh 2 -o %t.2.plan
# RUN: %shardrun %t.1.plan --quiet --inputs %t.in --params %t.w --outputs %t.1.out
# RUN: %shardrun %t.2.plan --quiet --inputs %t.in --params %t.w --outputs %t.2.out
# RUN: cmp %t.1.out %t.2.out
# RUN: python3 -c "import json,struct,sys; b=open(sys.argv[1],'rb').read(); n=struct.unpack('<Q',b[:8])[0]; h=json.loads(b[8:8+n]); print(h['e']['shape'], struct.unpack('<24f', b[8+n:8+n+96]))" %t.2.out | FileCheck %s
# id k gives row [2k, 2k+1], and @ ones gives [4k+1, 4k+1]
# CHECK: [4, 3, 2] (1.0, 1.0, 5.0, 5.0, 9.0, 9.0, 13.0, 13.0, 17.0, 17.0, 21.0, 21.0, 25.0, 25.0, 29.0, 29.0, 5.0, 5.0, 9.0, 9.0, 13.0, 13.0, 17.0, 17.0)
