# An unknown option is a usage error: exit 2 and a message on stderr.
# RUN: %expect 2 %shardc --no-such-flag 2>&1 | FileCheck %s
# RUN: not %shardc --no-such-flag 2> /dev/null
# CHECK: {{^}}shardc: error: unknown option '--no-such-flag'
