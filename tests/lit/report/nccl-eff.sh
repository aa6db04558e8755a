# bench/nccl_eff.py: a profile whose collectives take the link efficiency
# an nccl-tests log measured, by the bytes they send (docs/hw/README.md).
#
# The log (nccl-eff.sh.py) is all_reduce_perf's on 8 ranks of a made-up
# node: 10 us latency, 450 GB/s, an efficiency of 0.3 up to 1e5 bytes sent
# rising log-linearly to 0.85 from 1e8. Its points, one a decade of bytes
# sent (size x busbw / algbw = 1.75 size), rise to 0.85 where the link
# does; the rows no longer than the latency are left out, and said so.
# RUN: python3 %s.py %t.log
# RUN: python3 %S/../../../bench/nccl_eff.py --profile %S/../../../docs/hw/h100.json --link intra -o %t.json %t.log 2> %t.err
# RUN: FileCheck %s --check-prefix=PROF < %t.json
# RUN: FileCheck %s --check-prefix=SKIP < %t.err
# PROF: "intra_bw": 450000000000.0,
# PROF: "intra_eff": {{\[\[}}896.0, {{[0-9.]+}}], {{.*}}, [324400.0, 0.4291], [3670000.0, 0.6076], [29360000.0, 0.7739], [332200000.0, 0.85], [1879000000.0, 0.85]],
# PROF: "calibrated_by": "nccl_eff.py --profile {{.*}}h100.json --link intra -o {{.*}}.json {{.*}}.log"
# SKIP: nccl_eff.py: 6 row(s) no longer than intra_lat_s left out
#
# shardc reads it: the Megatron MLP's all_reduce on 1x8 (458752 bytes
# sent) takes what the made-up link takes for it, 12.420 us, within 2%.
# RUN: %shardc %S/../../../examples/mlp.sh --mesh 1x8 --hw %t.json --trace %t-t.json
# RUN: python3 -c "import json, math; e = [v for v in json.load(open('%t-t.json'))['traceEvents'] if v.get('cat') == 'collective' and v['args']['bytes_sent'] == 458752][0]; x = min(max(math.log10(458752), 5), 8); want = 10 + 458752 / (450e9 * (0.3 + (x - 5) / 3 * 0.55)) * 1e6; print('within 2 percent:', abs(e['dur'] - want) <= 0.02 * want, round(want, 3))" | FileCheck %s --check-prefix=EST
# EST: within 2 percent: True 12.42
#
# Across nodes (--link inter: inter_bw, inter_lat_s), the calibration of
# an earlier one kept in calibrated_by; bad logs and profiles are errors.
# The made-up node's link is faster than h100's 50 GB/s across nodes: the
# points are held at 1, and said so.
# RUN: python3 %S/../../../bench/nccl_eff.py --profile %t.json --link inter %t.log 2> %t.ierr | FileCheck %s --check-prefix=INTER
# RUN: FileCheck %s --check-prefix=HELD < %t.ierr
# INTER: "intra_eff": {{\[\[}}896.0,
# INTER: "inter_eff": {{\[\[}}{{.*}}, 1.0]]
# INTER: "calibrated_by": "nccl_eff.py {{.*}} --link intra {{.*}}; nccl_eff.py {{.*}} --link inter
# HELD: nccl_eff.py: around {{.*}} bytes the link reached {{.*}}x inter_bw: held at 1
# RUN: printf '# nothing measured\n' > %t.empty
# RUN: %expect 1 python3 %S/../../../bench/nccl_eff.py --profile %t.json --link intra %t.empty 2>&1 | FileCheck %s --check-prefix=EMPTY
# EMPTY: nccl_eff.py: {{.*}}.empty: no nccl-tests rows
# RUN: sed 's/^\(  *1048576 .*\)  0  \(.*\)/\1  3  \2/' %t.log > %t.wrong
# RUN: %expect 1 python3 %S/../../../bench/nccl_eff.py --profile %t.json --link intra %t.wrong 2>&1 | FileCheck %s --check-prefix=WRONG
# WRONG: nccl_eff.py: {{.*}}.wrong:{{[0-9]+}}: 3 wrong results at 1048576 bytes: not a measurement to keep
# RUN: printf '{"name": "x"}\n' > %t.bad.json
# RUN: %expect 1 python3 %S/../../../bench/nccl_eff.py --profile %t.bad.json --link intra %t.log 2>&1 | FileCheck %s --check-prefix=BADPROF
# BADPROF: nccl_eff.py: {{.*}}.bad.json: needs intra_bw and intra_lat_s
