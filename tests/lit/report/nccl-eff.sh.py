"""nccl-eff.sh.py OUT.log: an all_reduce_perf log as nccl-tests prints it,
for 8 ranks inside a node, from a known link: 10 us of latency, 450 GB/s,
and an efficiency of 0.3 up to 1e5 bytes sent, 0.85 from 1e8, log-linear
between (eff below). Sizes 8 B to 1 GiB, doubling."""
import math
import sys


def eff(sent):
    x = min(max(math.log10(sent), 5.0), 8.0)
    return 0.3 + (x - 5.0) / 3.0 * 0.55


def time_us(size):
    sent = size * 2 * 7 / 8
    return 10.0 + sent / (450e9 * eff(sent)) * 1e6


with open(sys.argv[1], "w") as f:
    f.write("# nThread 1 nGpus 1 minBytes 8 maxBytes 1073741824 step: 2(factor) warmup iters: 5 "
            "iters: 20 agg iters: 1 validation: 1 graph: 0\n#\n# Using devices\n")
    for r in range(8):
        f.write("#  Rank %2d Group  0 Pid  %5d on    node0 device  %d [0x%02x] NVIDIA H100\n"
                % (r, 100 + r, r, r))
    f.write("#\n#%62s%35s\n" % ("out-of-place", "in-place"))
    f.write("#       size         count      type   redop    root     time   algbw   busbw #wrong"
            "     time   algbw   busbw #wrong\n")
    f.write("#        (B)    (elements)                               (us)  (GB/s)  (GB/s)      "
            "      (us)  (GB/s)  (GB/s)       \n")
    f.write("node0:1:2 [0] NCCL INFO comm 0x5555 rank 0 nranks 8 cudaDev 0 - Init COMPLETE\n")
    size = 8
    while size <= 1 << 30:
        t = time_us(size)
        alg = size / t / 1e3
        bus = alg * 2 * 7 / 8
        f.write("%12d  %12d     float     sum      -1  %7.2f  %6.2f  %6.2f      0  %7.2f  %6.2f  "
                "%6.2f      0\n" % (size, size // 4, t, alg, bus, t, alg, bus))
        size *= 2
    f.write("# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 123.4\n#\n")
