# A plan too big for this machine is the plan's fault, not a bug: shardrun
# exits 1 (an error in the input; 3 would be an internal error), naming what
# does not fit and its size. Here 2^45 f32 elements a tensor: 128 TiB, more
# than a process's address space. An output gathered whole does not fit
# before anything runs; an arena does not fit at the first step (the
# output, a sum over rows, is small). The allocator may return null under
# AddressSanitizer too (it aborts on a huge request by default).
# RUN: printf 'mesh dp\ninput x : f32[4194304, 8388608] shard(dp, _)\ny = x * 2.0\noutput y\n' > %t.out.sh
# RUN: %shardc %t.out.sh --mesh 2 --arch none -o %t.out.plan
# RUN: %expect 1 env ASAN_OPTIONS=$ASAN_OPTIONS:allocator_may_return_null=1 %shardrun %t.out.plan --quiet 2>&1 | FileCheck %s --check-prefix=OUT
# OUT: shardrun: error: output 'y' gathered to its full shape is 128.00 TiB: more memory than this machine gives
# RUN: printf 'mesh dp\ninput x : f32[4194304, 8388608] shard(dp, _)\ny = sum(x * 2.0, axis = 1)\noutput y\n' > %t.arena.sh
# RUN: %shardc %t.arena.sh --mesh 2 --arch none -o %t.arena.plan
# RUN: %expect 1 env ASAN_OPTIONS=$ASAN_OPTIONS:allocator_may_return_null=1 %shardrun %t.arena.plan --quiet 2>&1 | FileCheck %s --check-prefix=ARENA
# ARENA: shardrun: error: rank {{[01]}}: the plan's arena of 128.00 TiB (shardc --report's peak per rank) does not fit in this machine's memory: Cannot allocate memory
