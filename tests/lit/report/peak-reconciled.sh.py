"""peak-reconciled.sh: each stage's peak against the sum of its parts in
--report json: params + optimizer state + (at the fullest op) activations
+ gradients + gaps, to the byte, the gaps not negative."""
import json
import sys

for path in sys.argv[1:]:
    for i, s in enumerate(json.load(open(path))["stages"]):
        m, f = s["memory"], s["fullest"]
        total = m["params"] + m["optimizer_state"] + f["activations"] + f["gradients"] + f["gaps"]
        ok = s["peak_bytes"] == total and f["gaps"] >= 0
        print("%s stage %d: %s" % (path[-6:], i, "adds up" if ok else "DOES NOT ADD UP"))
