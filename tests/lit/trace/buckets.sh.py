"""buckets.sh.py TRACE: the insert and extract events of rank 0's compute
stream in a shardc --trace file, and the longest of them."""
import json
import sys

trace = json.load(open(sys.argv[1]))
events = trace["traceEvents"] if isinstance(trace, dict) else trace
n = {"insert": 0, "extract": 0}
longest = 0.0
for e in events:
    name = e.get("name", "").split(" ")[0]
    if e.get("ph") == "X" and e.get("pid") == 0 and e.get("tid") == 0 and name in n:
        n[name] += 1
        longest = max(longest, e["dur"])
line = "insert %d extract %d" % (n["insert"], n["extract"])
if longest:
    line += " longest %.1f us" % longest
print(line)
