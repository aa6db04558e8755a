# mlp_bf16_pp.sh: tests/models/mlp_bf16.sh's layer (bf16 params through f32
# masters, AdamW) as 4 residual layers split into pipeline stages over pp,
# 4 microbatches per step. The master and the AdamW state of each layer's
# params live on that layer's stage (`shardc --report`: each stage holds
# 12 bytes of optimizer state per param of its own, plus the step count;
# tests/unit/runtime/test_master_bind.c checks every master's stage).
# tests/CMakeLists.txt trains it on meshes with a pipeline axis against
# the same model unpipelined (tests/run_train.py --reference unpipelined)
# and PyTorch (tests/oracle/mlp_bf16.py mlp_bf16_pp).
mesh dp, pp, tp

let B = 16, D = 32, H = 64, L = 4

input  x  : f32[B, D]    shard(dp, _)
input  y  : f32[B, D]    shard(dp, _)

block mlp(x : bf16[B, D]) -> bf16[B, D] {
    param  w1 : bf16[D, H]   shard(_, tp)   = normal(0.02)
    param  b1 : bf16[H]      shard(tp)      = zeros
    param  w2 : bf16[H, D]   shard(tp, _)   = normal(0.02)
    return gelu(x @ w1 + b1) @ w2
}

h = cast(x, bf16)
repeat L as layers over pp {
    h = h + mlp(h)
}
loss = mse(cast(h, f32), y)

output loss
pipeline microbatches 4 schedule 1f1b
train loss with adamw(lr = 1e-3, beta1 = 0.9, beta2 = 0.95, eps = 1e-3, wd = 0.1)
