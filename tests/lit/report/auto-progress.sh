# shardc --auto on a terminal: standard error counts each round's compiles
# (the meshes and ZeRO stages, then their schedules and options), and the
# line is cleared before the table; when standard error is not a terminal
# it stays empty. script(1) gives the search a terminal; where it cannot
# (no pseudo-terminal), the test is skipped.
# RUN: script -qec true /dev/null > /dev/null 2>&1 || { echo "skipped: no pseudo-terminal"; exit 77; }
# RUN: script -qec "%shardc %S/../../../examples/transformer.sh --auto 4 --mem-limit 40MiB --top 1" /dev/null > %t.tty
# RUN: FileCheck %s < %t.tty
# RUN: %shardc %S/../../../examples/transformer.sh --auto 4 --mem-limit 40MiB --top 1 2> %t.quiet > /dev/null
# RUN: test ! -s %t.quiet
# CHECK: shardc: --auto: meshes and ZeRO stages: {{[1-9]}} of 9 compiled, 0:{{[0-9][0-9]}}, about {{[0-9]+}}:{{[0-9][0-9]}} left
# CHECK: shardc: --auto: meshes and ZeRO stages: 9 of 9 compiled
# CHECK: shardc: --auto: their schedules and options: 16 of 16 compiled, 0:{{[0-9][0-9]}}{{.}}{{.}}[K# --auto 4:
