# Megatron sequence parallelism with --keep-gathered sends what tensor
# parallelism sends: examples/transformer.sh (L = 4) with its residual
# stream split over tp along the sequence, on 1x4. Each all-reduce of
# megatron-tp-backward-2-per-layer.sh's (8 forward, 9 backward of
# B·S·D = 262144 elements) becomes an all-gather and a reduce-scatter, and
# nothing else moves b·s·h: the backward reads the inputs the forward
# gathered for the column-parallel layers (q, k, v, the MLP's first, the
# LM head) for their weights' gradients. Without the flag it gathers them
# again where that costs less than the 9 all-to-alls and reduce-scatters
# of 65536 elements it sends instead. The one all-reduce of 5632 elements
# is the gradients of the params each rank reads from its own rows of the
# sequence (4 layers × 5 × 256 for the norms' gains and biases and the
# MLP's b2, and 2 × 256 for the final norm), summed over tp as Megatron-LM
# does. Bytes per rank: TP 26757120; SP and --keep-gathered 26790912, that
# plus 33792 for those gradients; SP alone 34262016. The kept inputs hold
# more activation memory than SP alone, less than TP (a CPU plan: lit
# compiles with SHARDC_ARCH=none). Both SP plans keep the first layer's
# attention norm's mean and rstd from the forward for its backward (the
# embeddings' x, normalised whole: 2 x 4 KB of [8, 128, 1] f32, which the
# backward had computed again from x).
# RUN: sed -e 's/^    x = x + attn(x)$/    x = (x + attn(x)) shard(dp, tp, _)/' -e 's/^    x = x + mlp(x)$/    x = (x + mlp(x)) shard(dp, tp, _)/' %S/../../../examples/transformer.sh > %t.sh
# RUN: %shardc %t.sh --mesh 1x4 --keep-gathered --report > %t.keep
# RUN: awk '/collectives \(program/ { on = 1 } on && $2 ~ /^(all_|reduce)/ { print $2, $5, $NF }' %t.keep | LC_ALL=C sort | uniq -c | FileCheck %s --check-prefix=KEEP
# RUN: FileCheck %s --check-prefix=KEEPMEM < %t.keep
# RUN: %shardc %t.sh --mesh 1x4 --report | awk '/collectives \(program/ { on = 1 } on && $2 ~ /^(all_|reduce)/ { print $2, $5, $NF }' | LC_ALL=C sort | uniq -c | FileCheck %s --check-prefix=SP
# RUN: %shardc %t.sh --mesh 1x4 --report | FileCheck %s --check-prefix=SPMEM
# RUN: %shardc %S/../../../examples/transformer.sh --mesh 1x4 --report | FileCheck %s --check-prefix=TPMEM
# KEEP:      {{^ *}}9 all_gather 262144 backward{{$}}
# KEEP-NEXT: {{^ *}}8 all_gather 262144 forward{{$}}
# KEEP-NEXT: {{^ *}}2 all_reduce 1024 forward{{$}}
# KEEP-NEXT: {{^ *}}1 all_reduce 5632 backward{{$}}
# KEEP-NEXT: {{^ *}}1 all_reduce(max) 1024 forward{{$}}
# KEEP-NEXT: {{^ *}}9 reduce_scatter 262144 backward{{$}}
# KEEP-NEXT: {{^ *}}8 reduce_scatter 262144 forward{{$}}
# KEEP-NOT:  all_to_all
# KEEPMEM:   bytes sent per rank:  26790912
# KEEPMEM:   activations             28385280
# SP:        {{^ *}}14 all_gather 262144 backward{{$}}
# SP:        {{^ *}}9 all_to_all 65536 backward{{$}}
# SP:        {{^ *}}9 reduce_scatter 65536 backward{{$}}
# SPMEM:     bytes sent per rank:  34262016
# SPMEM:     activations             23130116
# TPMEM:     bytes sent per rank:  26757120
# TPMEM:     activations             34725888
