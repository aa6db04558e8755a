"""compare_strategies.py: three parallel strategies for one model, compared
from their reports, in Python (a notebook's cells, one after another).

    PYTHONPATH=python python3 examples/compare_strategies.py [OUT.svg]

Compiles examples/transformer.sh for 8 ranks as data parallelism, tensor
parallelism and both with ZeRO-1, prints a table of the estimated step,
memory and bytes sent per rank, and writes a bar chart (SVG, no plotting
library needed) to OUT.svg (default strategies.svg). Nothing runs: the
figures are the compiler's estimate on the h100 profile."""
import sys

import shardc

# ---- the model and the strategies ----
MODEL = "examples/transformer.sh"
SIZES = {"B": 32, "S": 512, "D": 1024, "NH": 16, "V": 32768, "L": 8}
STRATEGIES = {
    "data parallel (8x1)": dict(mesh="8x1"),
    "tensor parallel (1x8)": dict(mesh="1x8"),
    "2x4, ZeRO-1": dict(mesh="2x4", zero=1),
}

# ---- compile each and read its report ----
rows = []
for name, opts in STRATEGIES.items():
    rep = shardc.compile(path=MODEL, defines=SIZES, arch="none", hw="h100", **opts).report()
    est, stage = rep["estimate"], rep["stages"][0]
    rows.append({"strategy": name, "step_ms": est["step_ms"],
                 "peak_gib": stage["peak_bytes"] / 2**30,
                 "sent_gb": stage["bytes_sent"] / 1e9,
                 "tokens_s": est.get("throughput", {}).get("per_s", 0)})

# ---- the table ----
print(f"{'strategy':24} {'step ms':>9} {'peak GiB':>9} {'sent GB':>8} {'tokens/s':>10}")
for r in rows:
    print(f"{r['strategy']:24} {r['step_ms']:9.1f} {r['peak_gib']:9.2f} {r['sent_gb']:8.2f} "
          f"{r['tokens_s']:10.0f}")

# ---- the plot: estimated step time per strategy, memory as a label ----
out = sys.argv[1] if len(sys.argv) > 1 else "strategies.svg"
w, bar, gap = 520, 28, 14
top = max(r["step_ms"] for r in rows)
svg = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{len(rows) * (bar + gap) + 40}"'
       ' font-family="sans-serif" font-size="12">',
       '<text x="10" y="18">estimated step (ms) on h100; peak memory per rank</text>']
for i, r in enumerate(rows):
    y = 30 + i * (bar + gap)
    length = (w - 220) * r["step_ms"] / top
    svg.append(f'<text x="10" y="{y + bar * 0.65}">{r["strategy"]}</text>')
    svg.append(f'<rect x="170" y="{y}" width="{length:.1f}" height="{bar}" fill="#4878a8"/>')
    svg.append(f'<text x="{175 + length:.1f}" y="{y + bar * 0.65}">{r["step_ms"]:.0f} ms, '
               f'{r["peak_gib"]:.1f} GiB</text>')
svg.append("</svg>")
with open(out, "w") as f:
    f.write("\n".join(svg) + "\n")
print(f"wrote {out}")
