#!/usr/bin/env python3
"""edit_index.py SRC DST CODE: copies the checkpoint in SRC (the step
folder SRC/latest names, or SRC itself when it has no pointer) to the
folder DST, a step folder of its own, and runs the Python statement CODE
on its index.json, loaded as j, writing it back: a damaged checkpoint for
the error tests."""
import json
import os
import shutil
import sys

src, dst, code = sys.argv[1:4]
if os.path.exists(f"{src}/latest"):
    with open(f"{src}/latest") as f:
        src = f"{src}/{f.read().strip()}"
shutil.copytree(src, dst)
with open(f"{dst}/index.json") as f:
    j = json.load(f)
exec(code)
with open(f"{dst}/index.json", "w") as f:
    json.dump(j, f, indent=1)
