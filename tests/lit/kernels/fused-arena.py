"""fused-arena.py UNFUSED.json FUSED.json BOUND: each stage's arena with
kernels (peak_bytes of `shardc --report json` with an --arch) is at most
BOUND times the arena without (--arch none); prints both per stage."""
import json
import sys

unfused, fused = (json.load(open(p))["stages"] for p in sys.argv[1:3])
bound = float(sys.argv[3])
bad = 0
for s, (u, f) in enumerate(zip(unfused, fused)):
    ok = f["peak_bytes"] <= bound * u["peak_bytes"]
    bad += not ok
    print(f"stage {s}: {u['peak_bytes']} bytes without kernels, {f['peak_bytes']} with: "
          f"{'ok' if ok else 'more than %g times' % bound}")
sys.exit(1 if bad or len(unfused) != len(fused) else 0)
