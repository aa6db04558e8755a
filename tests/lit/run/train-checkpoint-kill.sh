# A save killed at any point (kill -9, 5 times, most inside a save) leaves
# the last complete checkpoint resumable, at the step of a save that
# completed, and holding that step's values (tests/tools/kill_saves.sh).
# RUN: %shardc %S/train-tp.model --mesh 2x2 -o %t.plan
# RUN: bash %S/../../tools/kill_saves.sh %shardrun %t.plan %t.ck 5 | FileCheck %s
# CHECK: try 1: killed after step {{[0-9]+}} (saved {{[0-9]+}}, a save in progress: {{[01]}}): resumed at step
# CHECK: try 5: killed
# CHECK-NEXT: 5 kills: each left a checkpoint that resumes at a completed save's step
