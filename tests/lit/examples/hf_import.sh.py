"""hf_import.sh's checkpoints and reference logits, and the comparison.

  make gpt2|llama DIR [VARIANT]  a small random checkpoint in Hugging Face's
      format and names in DIR (config.json with transformers' keys; GPT-2:
      model.safetensors, f32, "transformer." names, the fused c_attn and
      Conv1D weights [in, out], the causal-mask buffers; Llama: bf16 in two
      files with model.safetensors.index.json, nn.Linear weights [out,
      in], the LM head tied), DIR/inputs.safetensors (tokens, targets) and
      DIR/want.safetensors: the logits, in float64, of a PyTorch
      transcription of transformers' GPT2LMHeadModel or LlamaForCausalLM
      forward. A VARIANT is a checkpoint hf_import.py must refuse (no
      logits): gelu (GPT-2 with the erf GELU), rope-scaling (Llama 3.1's
      llama3 scaling), untied (Llama with its own LM head).
  hf DIR  (needs transformers) loads DIR, as make wrote it, with
      transformers' own GPT2LMHeadModel or LlamaForCausalLM
      (from_pretrained, in float64) and writes its logits of
      DIR/inputs.safetensors to DIR/want-hf.safetensors; prints the
      largest difference from the transcription's (want.safetensors).
  check WANT GOT LABEL  prints the largest absolute difference of the
      logits, and whether it is within 1e-4.

Needs torch (Debian's python3-torch under /usr/bin/python3).
"""
import json
import math
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools"))
from st_io import _write_raw, st_read  # noqa: E402

B, S = 2, 16          # the batch the test runs: -D B=2 -D S=16
TOL = 1e-4            # max |shardrun - reference| of an f32 logit
PT = {"format": "pt"}  # a checkpoint file's metadata, as save_pretrained writes it


def raw(t):
    """A tensor's bytes as safetensors stores them, and its dtype's name."""
    t = t.contiguous()
    if t.dtype == torch.bfloat16:
        return "BF16", t.view(torch.int16).numpy().tobytes()
    names = {torch.float32: "F32", torch.float64: "F64", torch.int32: "I32"}
    return names[t.dtype], t.numpy().tobytes()


def save(path, tensors, metadata=None):
    entries = []
    for name, t in tensors.items():
        dt, data = raw(t)
        entries.append((name, dt, list(t.shape), data))
    _write_raw(path, entries, metadata)


# ---- transformers' forward passes, transcribed ----

def layer_norm(x, w, b, eps):
    return torch.nn.functional.layer_norm(x, (x.shape[-1],), w, b, eps)


def gpt2_forward(sd, c, ids):
    """GPT2LMHeadModel.forward (no cache, no padding, dropout off)."""
    D, NH = c["n_embd"], c["n_head"]
    HD = D // NH
    n = ids.shape[1]
    p = "transformer."
    conv1d = lambda x, name: torch.addmm(sd[name + ".bias"], x.reshape(-1, x.shape[-1]),
                                         sd[name + ".weight"]).view(*x.shape[:-1], -1)
    heads = lambda t: t.view(*t.shape[:-1], NH, HD).permute(0, 2, 1, 3)
    h = sd[p + "wte.weight"][ids] + sd[p + "wpe.weight"][torch.arange(0, n)]
    for i in range(c["n_layer"]):
        q = p + "h.%d." % i
        residual = h
        x = layer_norm(h, sd[q + "ln_1.weight"], sd[q + "ln_1.bias"], c["layer_norm_epsilon"])
        query, key, value = conv1d(x, q + "attn.c_attn").split(D, dim=2)
        query, key, value = heads(query), heads(key), heads(value)
        w = torch.matmul(query, key.transpose(-1, -2))
        w = w / torch.full([], value.size(-1) ** 0.5, dtype=w.dtype)
        mask = sd[q + "attn.bias"].bool()[:, :, :n, :n]
        w = torch.where(mask, w, torch.full([], torch.finfo(w.dtype).min, dtype=w.dtype))
        w = torch.nn.functional.softmax(w, dim=-1)
        a = torch.matmul(w, value).permute(0, 2, 1, 3).contiguous().view(*x.shape[:-1], D)
        h = conv1d(a, q + "attn.c_proj") + residual
        residual = h
        x = layer_norm(h, sd[q + "ln_2.weight"], sd[q + "ln_2.bias"], c["layer_norm_epsilon"])
        x = conv1d(x, q + "mlp.c_fc")
        x = 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi)
                                        * (x + 0.044715 * torch.pow(x, 3.0))))   # gelu_new
        h = residual + conv1d(x, q + "mlp.c_proj")
    h = layer_norm(h, sd[p + "ln_f.weight"], sd[p + "ln_f.bias"], c["layer_norm_epsilon"])
    return torch.nn.functional.linear(h, sd[p + "wte.weight"])   # lm_head, tied to wte


def rms_norm(x, w, eps):
    dtype = x.dtype
    x = x.to(torch.float32) if dtype != torch.float64 else x
    variance = x.pow(2).mean(-1, keepdim=True)
    return w * (x * torch.rsqrt(variance + eps)).to(dtype)


def rotate_half(x):
    x1, x2 = x[..., :x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def llama_forward(sd, c, ids):
    """LlamaForCausalLM.forward (no cache, no padding, eager attention)."""
    H, G, D = c["num_attention_heads"], c["num_key_value_heads"], c["hidden_size"]
    E = c.get("head_dim") or D // H
    eps, n, dtype = c["rms_norm_eps"], ids.shape[1], sd["model.embed_tokens.weight"].dtype
    # LlamaRotaryEmbedding ("default"): inv_freq and the angles in f32
    inv_freq = 1.0 / (c["rope_theta"] ** (torch.arange(0, E, 2, dtype=torch.int64).float() / E))
    position_ids = torch.arange(0, n)[None, :]
    freqs = (inv_freq[None, :, None].float() @ position_ids[:, None, :].float()).transpose(1, 2)
    emb = torch.cat((freqs, freqs), dim=-1)
    cos, sin = emb.cos().to(dtype)[:, None], emb.sin().to(dtype)[:, None]   # unsqueeze_dim 1
    mask = torch.full((n, n), torch.finfo(dtype).min, dtype=dtype).triu(1)
    linear = lambda x, name: torch.nn.functional.linear(x, sd[name + ".weight"])
    h = sd["model.embed_tokens.weight"][ids]
    for i in range(c["num_hidden_layers"]):
        p = "model.layers.%d." % i
        residual = h
        x = rms_norm(h, sd[p + "input_layernorm.weight"], eps)
        q = linear(x, p + "self_attn.q_proj").view(B, n, -1, E).transpose(1, 2)
        k = linear(x, p + "self_attn.k_proj").view(B, n, -1, E).transpose(1, 2)
        v = linear(x, p + "self_attn.v_proj").view(B, n, -1, E).transpose(1, 2)
        q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
        rep = H // G   # repeat_kv: key/value head j serves query heads j*rep .. j*rep+rep-1
        k = k[:, :, None].expand(B, G, rep, n, E).reshape(B, G * rep, n, E)
        v = v[:, :, None].expand(B, G, rep, n, E).reshape(B, G * rep, n, E)
        w = torch.matmul(q, k.transpose(2, 3)) * E ** -0.5 + mask
        w = torch.nn.functional.softmax(w, dim=-1, dtype=torch.float64 if dtype == torch.float64
                                        else torch.float32).to(q.dtype)
        a = torch.matmul(w, v).transpose(1, 2).contiguous().reshape(B, n, -1)
        h = residual + linear(a, p + "self_attn.o_proj")
        residual = h
        x = rms_norm(h, sd[p + "post_attention_layernorm.weight"], eps)
        x = torch.nn.functional.silu(linear(x, p + "mlp.gate_proj")) * linear(x, p + "mlp.up_proj")
        h = residual + linear(x, p + "mlp.down_proj")
    h = rms_norm(h, sd["model.norm.weight"], eps)
    head = sd.get("lm_head.weight", sd["model.embed_tokens.weight"])   # tied
    return torch.nn.functional.linear(h, head)


# ---- the checkpoints ----

def gpt2_checkpoint(g, variant):
    D, NH, F, V, L, P = 64, 4, 256, 101, 2, 24   # V prime: the vocabulary split by no tp
    c = {"activation_function": "gelu" if variant == "gelu" else "gelu_new",
         "architectures": ["GPT2LMHeadModel"], "attn_pdrop": 0.1, "bos_token_id": V - 1,
         "embd_pdrop": 0.1, "eos_token_id": V - 1, "initializer_range": 0.02,
         "layer_norm_epsilon": 1e-05, "model_type": "gpt2", "n_ctx": P, "n_embd": D,
         "n_head": NH, "n_inner": None, "n_layer": L, "n_positions": P,
         "reorder_and_upcast_attn": False, "resid_pdrop": 0.1,
         "scale_attn_by_inverse_layer_idx": False, "scale_attn_weights": True,
         "summary_activation": None, "summary_first_dropout": 0.1, "summary_proj_to_labels": True,
         "summary_type": "cls_index", "summary_use_proj": True, "torch_dtype": "float32",
         "transformers_version": "4.44.0", "use_cache": True, "vocab_size": V}
    n = lambda *shape, std=1.0: torch.randn(*shape, generator=g) * std
    p = "transformer."
    sd = {p + "wte.weight": n(V, D, std=0.5), p + "wpe.weight": n(P, D, std=0.5)}
    for i in range(L):
        q = p + "h.%d." % i
        sd.update({q + "ln_1.weight": 1 + n(D, std=0.1), q + "ln_1.bias": n(D, std=0.1),
                   q + "attn.bias": torch.tril(torch.ones(P, P)).view(1, 1, P, P),  # the mask
                   q + "attn.c_attn.weight": n(D, 3 * D, std=D ** -0.5),   # Conv1D [in, out]
                   q + "attn.c_attn.bias": n(3 * D, std=0.1),
                   q + "attn.c_proj.weight": n(D, D, std=D ** -0.5),
                   q + "attn.c_proj.bias": n(D, std=0.1),
                   q + "ln_2.weight": 1 + n(D, std=0.1), q + "ln_2.bias": n(D, std=0.1),
                   q + "mlp.c_fc.weight": n(D, F, std=D ** -0.5),
                   q + "mlp.c_fc.bias": n(F, std=0.1),
                   q + "mlp.c_proj.weight": n(F, D, std=F ** -0.5),
                   q + "mlp.c_proj.bias": n(D, std=0.1)})
    sd.update({p + "ln_f.weight": 1 + n(D, std=0.1), p + "ln_f.bias": n(D, std=0.1)})
    return c, sd, V


def llama_checkpoint(g, variant):
    D, H, G, F, V, L = 64, 4, 2, 96, 128, 2
    c = {"architectures": ["LlamaForCausalLM"], "attention_bias": False,
         "attention_dropout": 0.0, "bos_token_id": 1, "eos_token_id": 2, "head_dim": D // H,
         "hidden_act": "silu", "hidden_size": D, "initializer_range": 0.02,
         "intermediate_size": F, "max_position_embeddings": 64, "mlp_bias": False,
         "model_type": "llama", "num_attention_heads": H, "num_hidden_layers": L,
         "num_key_value_heads": G, "pretraining_tp": 1, "rms_norm_eps": 1e-05,
         "rope_scaling": None, "rope_theta": 10000.0, "tie_word_embeddings": True,
         "torch_dtype": "bfloat16", "transformers_version": "4.44.0", "use_cache": True,
         "vocab_size": V}
    if variant == "rope-scaling":
        c["rope_scaling"] = {"factor": 8.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                             "original_max_position_embeddings": 8192, "rope_type": "llama3"}
    n = lambda *shape, std=1.0: (torch.randn(*shape, generator=g) * std).to(torch.bfloat16)
    E = D // H
    sd = {"model.embed_tokens.weight": n(V, D, std=0.5)}
    for i in range(L):
        p = "model.layers.%d." % i
        sd.update({p + "input_layernorm.weight": 1 + n(D, std=0.1),
                   p + "self_attn.q_proj.weight": n(H * E, D, std=D ** -0.5),   # [out, in]
                   p + "self_attn.k_proj.weight": n(G * E, D, std=D ** -0.5),
                   p + "self_attn.v_proj.weight": n(G * E, D, std=D ** -0.5),
                   p + "self_attn.o_proj.weight": n(D, H * E, std=(H * E) ** -0.5),
                   p + "post_attention_layernorm.weight": 1 + n(D, std=0.1),
                   p + "mlp.gate_proj.weight": n(F, D, std=D ** -0.5),
                   p + "mlp.up_proj.weight": n(F, D, std=D ** -0.5),
                   p + "mlp.down_proj.weight": n(D, F, std=F ** -0.5)})
    sd["model.norm.weight"] = 1 + n(D, std=0.1)
    if variant == "untied":
        c["tie_word_embeddings"] = False
        sd["lm_head.weight"] = n(V, D, std=0.5)
    return c, sd, V


def make(model, folder, variant):
    g = torch.Generator().manual_seed(21 if model == "gpt2" else 22)
    c, sd, V = (gpt2_checkpoint if model == "gpt2" else llama_checkpoint)(g, variant)
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(c, f, indent=2, sort_keys=True)
    if model == "gpt2":
        save(os.path.join(folder, "model.safetensors"), sd, PT)
    else:   # two shards and their index, as save_pretrained(max_shard_size=...) writes
        names = list(sd)
        parts = {"model-00001-of-00002.safetensors": names[:len(names) // 2],
                 "model-00002-of-00002.safetensors": names[len(names) // 2:]}
        for file, part in parts.items():
            save(os.path.join(folder, file), {k: sd[k] for k in part}, PT)
        total = sum(t.numel() * t.element_size() for t in sd.values())
        index = {"metadata": {"total_size": total},
                 "weight_map": {k: file for file, part in parts.items() for k in part}}
        with open(os.path.join(folder, "model.safetensors.index.json"), "w") as f:
            json.dump(index, f, indent=2)
    if variant:
        return
    tokens = torch.randint(0, V, (B, S), generator=g, dtype=torch.int32)
    targets = torch.randint(0, V, (B, S), generator=g, dtype=torch.int32)
    save(os.path.join(folder, "inputs.safetensors"), {"tokens": tokens, "targets": targets})
    wide = {k: t.to(torch.float64) for k, t in sd.items()}
    forward = gpt2_forward if model == "gpt2" else llama_forward
    with torch.no_grad():
        logits = forward(wide, c, tokens.long())
    save(os.path.join(folder, "want.safetensors"), {"logits": logits})


def hf(folder):
    import transformers
    with open(os.path.join(folder, "config.json")) as f:
        arch = json.load(f)["architectures"][0]
    cls = getattr(transformers, arch)
    torch.set_default_dtype(torch.float64)  # transformers 4.36's Llama mask is made in it
    model = cls.from_pretrained(folder, torch_dtype=torch.float64).eval()
    _, shape, ids = st_read(os.path.join(folder, "inputs.safetensors"))["tokens"]
    tokens = torch.tensor(ids, dtype=torch.long).view(*shape)
    with torch.no_grad():
        logits = model(tokens).logits
    save(os.path.join(folder, "want-hf.safetensors"), {"logits": logits})
    _, _, want = st_read(os.path.join(folder, "want.safetensors"))["logits"]
    err = max(abs(a - b) for a, b in zip(logits.flatten().tolist(), want))
    print("%s: transformers %s's logits %s, max abs diff from the transcription's %.3g"
          % (arch, transformers.__version__, "x".join(map(str, logits.shape)), err))


def check(want_path, got_path, label):
    _, shape, want = st_read(want_path)["logits"]
    _, got_shape, got = st_read(got_path)["logits"]
    if got_shape != shape:
        print("%s: logits of shape %s, want %s" % (label, got_shape, shape))
        return
    err = max(abs(a - b) for a, b in zip(got, want))
    top = max(abs(b) for b in want)
    print("%s: logits %s, max abs diff %.3g (|logit| up to %.3g): %s %g"
          % (label, "x".join(map(str, shape)), err, top,
             "within" if err <= TOL else "NOT within", TOL))


if __name__ == "__main__":
    if sys.argv[1] == "make":
        make(sys.argv[2], sys.argv[3], sys.argv[4] if len(sys.argv) > 4 else None)
    elif sys.argv[1] == "hf":
        hf(sys.argv[2])
    else:
        check(sys.argv[2], sys.argv[3], sys.argv[4])
