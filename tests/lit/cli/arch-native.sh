# --arch native: the local GPU's architecture (device 0's compute
# capability, from the driver). Where there is none (a machine without a
# driver, a stub libcuda, no device) it is a usage error that says why,
# and no plan is written; with one, the plan's cubins are for it alone.
# RUN: rm -f %t.plan
# RUN: %shardc %S/../../../examples/mlp.sh --mesh 2x2 --arch native -o %t.plan > %t.out 2>&1; echo "exit $?" >> %t.out
# RUN: FileCheck %s < %t.out
# RUN: grep -qE "^exit (0|2)$" %t.out
# RUN: if grep -q "exit 2" %t.out; then test ! -e %t.plan; else test -s %t.plan; fi
# CHECK: {{^(shardc: error: --arch native: .+|exit 0)$}}
