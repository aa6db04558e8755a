# The --version line; also checks the runner's %t.
# RUN: %shardc --version | FileCheck %s
# RUN: %shardc --version > %t && \
# RUN:   FileCheck %s < %t
# CHECK: {{^}}shardc 0.1.0{{$}}
