#!/usr/bin/env python3
"""edit_index.py SRC DST CODE: copies the checkpoint folder SRC to DST and
runs the Python statement CODE on its index.json, loaded as j, writing it
back: a damaged checkpoint for the error tests."""
import json
import shutil
import sys

src, dst, code = sys.argv[1:4]
shutil.copytree(src, dst)
with open(f"{dst}/index.json") as f:
    j = json.load(f)
exec(code)
with open(f"{dst}/index.json", "w") as f:
    json.dump(j, f, indent=1)
