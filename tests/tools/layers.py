#!/usr/bin/env python3
"""layers.py ROOT: the library's folders include only the ones below them
(docs/design.md, "Layout"); ctest house/layers.

Each #include "..." of a .c or .h file of the library that names a file of
the tree (from ROOT, or from the including file's folder) is checked
against the table below: a folder may include itself and what it lists.
Generated headers (the parser's) and system headers are not files of the
tree and are skipped. Prints each include out of place as FILE:LINE and
exits 1 if there is any."""
import os
import re
import sys

BELOW = {
    "support": [],
    "ir": ["support"],
    "frontend": ["support", "ir"],
    "passes": ["support", "ir"],
    "runtime/plan": ["support"],
    "runtime/cuda": ["support", "runtime/plan"],
    "runtime/cpu": ["support", "runtime/plan"],
    "runtime/io": ["support", "runtime/plan"],
    "runtime/comm": ["support", "runtime/plan", "runtime/cuda"],
    "runtime/exec": ["support", "runtime/plan", "runtime/cuda", "runtime/cpu", "runtime/io",
                     "runtime/comm"],
    "codegen": ["support", "ir", "passes", "runtime/plan", "runtime/cuda"],
    "api": ["support", "ir", "frontend", "passes", "codegen", "runtime/plan", "runtime/cuda",
            "runtime/cpu", "runtime/io", "runtime/comm", "runtime/exec", "include"],
    "tools": ["include"],
}


def folder(path):
    """The table's folder a tree path belongs to, or None."""
    parts = path.split("/")
    key = "/".join(parts[:2]) if parts[0] == "runtime" and len(parts) > 2 else parts[0]
    return key if key in BELOW or key == "include" else None


def main(argv):
    if len(argv) != 2:
        sys.exit("usage: layers.py ROOT")
    root = os.path.realpath(argv[1])
    bad = files = 0
    for top in BELOW:
        base = os.path.join(root, top)
        for dirpath, _, names in os.walk(base):
            for name in sorted(names):
                if not name.endswith((".c", ".h")):
                    continue
                path = os.path.relpath(os.path.join(dirpath, name), root)
                if folder(path) != top:
                    continue  # runtime/README.md's neighbours are in their own rooms
                files += 1
                with open(os.path.join(root, path), encoding="utf-8") as f:
                    for n, line in enumerate(f, 1):
                        m = re.match(r'\s*#\s*include\s+"([^"]+)"', line)
                        if not m:
                            continue
                        inc = m.group(1)
                        cands = [inc, os.path.normpath(os.path.join(os.path.dirname(path), inc))]
                        target = next((c for c in cands if os.path.isfile(os.path.join(root, c))),
                                      None)
                        if target is None:
                            continue
                        to = folder(target)
                        if to is None or to == top or to in BELOW[top]:
                            continue
                        print(f"{path}:{n}: {top}/ includes {target}, of {to}/, which is not "
                              f"below it (docs/design.md, Layout)")
                        bad += 1
    if files == 0:
        sys.exit(f"layers.py: no sources under {root}")
    print(f"layers: {files} files, {bad} includes out of place")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
