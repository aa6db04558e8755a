"""fused-arena.py UNFUSED.json FUSED.json BOUND: each stage's most live
activation bytes with kernels (memory.activations of `shardc --report json`
with an --arch) are at most BOUND times those without (--arch none); prints
both per stage, and the arenas (peak_bytes), which also hold the gaps the
best-fit placement leaves between buffers."""
import json
import sys

unfused, fused = (json.load(open(p))["stages"] for p in sys.argv[1:3])
bound = float(sys.argv[3])
bad = 0
for s, (u, f) in enumerate(zip(unfused, fused)):
    ua, fa = u["memory"]["activations"], f["memory"]["activations"]
    ok = fa <= bound * ua
    bad += not ok
    print(f"stage {s}: {ua} bytes of activations without kernels, {fa} with: "
          f"{'ok' if ok else 'more than %g times' % bound} "
          f"(arena {u['peak_bytes']} and {f['peak_bytes']})")
sys.exit(1 if bad or len(unfused) != len(fused) else 0)
