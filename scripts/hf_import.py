#!/usr/bin/env python3
"""hf_import.py CHECKPOINT -o OUT [--config FILE]: converts a Hugging Face
GPT-2 (GPT2LMHeadModel) or Llama (LlamaForCausalLM) checkpoint into a
weights file of examples/gpt2.sh's or examples/llama.sh's param names, for
`shardrun PLAN --params OUT`, and prints the -D flags that size the example
to the checkpoint (docs/huggingface.md).

CHECKPOINT is a folder holding config.json and model.safetensors or a
sharded model.safetensors.index.json, or one of those two files (config.json
then beside it, or given by --config). The model comes from config.json's
model_type. OUT is f32 safetensors, whatever the checkpoint's dtype (F32,
F16, BF16 or F64).

What is converted (HF name -> example name):
  GPT-2: Conv1D weights are stored [in, out], the examples' [in, out]
    layout: none is transposed. The fused attn.c_attn ([D, 3D] and its
    bias [3D]) is split into wq, wk, wv (bq, bk, bv) by thirds of its
    columns, in that order.
  Llama: nn.Linear weights are stored [out, in]; every projection (q, k, v,
    o, gate, up, down) is transposed to the examples' [in, out]. The
    query and key rows are already in the rotate-half order llama.sh's
    rotary embedding uses (Hugging Face's conversion permuted them).

What is refused (exit 1, with the reason; OUT is neither written nor
touched): anything the example cannot compute as transformers does: a
model_type other than gpt2 or llama; an LM head different from the token
embedding (both examples tie them); Llama's rope_scaling (Llama 3.1's
"llama3" scaling and the others), attention or MLP biases, an
activation other than silu, rms_norm_eps other than 1e-5, a rope_theta
that is not an integer; GPT-2's erf GELU or other activations,
layer_norm_epsilon other than 1e-5, scale_attn_by_inverse_layer_idx, cross
attention; a tensor whose shape the config contradicts (vocab_size too),
a tensor missing, and a tensor the example has no place for.

The standard library is enough (numpy, when present, only makes the
transposes faster). The file is written by tests/tools/st_io.py, all in
memory: about twice OUT's size in memory at the end.
Exit 0: written; 1: refused or unreadable; 2: bad usage.
"""
import argparse
import json
import math
import os
import struct
import sys
import tempfile
from array import array

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "tools"))
from st_io import _write_raw, st_load  # noqa: E402

try:
    import numpy as np
except ImportError:
    np = None


class Refused(Exception):
    """The checkpoint is one the examples cannot hold; the message says why."""


# ---- tensors: f32 arrays, row-major ----

def to_f32(dtype, raw):
    """The values of RAW (little-endian safetensors bytes) as array('f')."""
    out = array("f")
    if dtype == "F32":
        out.frombytes(raw)
    elif dtype == "BF16":  # a bf16 is the top half of an f32
        wide = bytearray(2 * len(raw))
        wide[2::4], wide[3::4] = raw[0::2], raw[1::2]
        out.frombytes(wide)
    elif dtype == "F16":
        n, step = len(raw) // 2, 1 << 20
        for i in range(0, n, step):  # in chunks: a tuple of every value is large
            k = min(step, n - i)
            out.extend(struct.unpack_from("<%de" % k, raw, 2 * i))
        return out
    elif dtype == "F64":
        wide = array("d")
        wide.frombytes(raw)
        if sys.byteorder == "big":
            wide.byteswap()
        return array("f", wide)
    else:
        raise Refused("dtype %s: only F32, F16, BF16 and F64 weights are read" % dtype)
    if sys.byteorder == "big":
        out.byteswap()
    return out


def transpose(a, rows, cols):
    """A [rows, cols] matrix as [cols, rows]."""
    if np is not None:
        t = np.frombuffer(a, dtype=np.float32).reshape(rows, cols).T
        return array("f", np.ascontiguousarray(t).tobytes())
    out = array("f")
    for j in range(cols):  # column j of a is row j of the result
        out.extend(a[j::cols])
    return out


def columns(a, rows, cols, lo, hi):
    """Columns [lo, hi) of a [rows, cols] matrix."""
    out = array("f")
    for i in range(rows):
        out.extend(a[i * cols + lo:i * cols + hi])
    return out


# ---- the checkpoint ----

def find_files(path, config):
    """(config path, [safetensors files], weight_map or None) of CHECKPOINT."""
    if not os.path.exists(path):
        raise Refused("%s: no such folder or file" % path)
    if os.path.isdir(path):
        folder = path
        index = os.path.join(path, "model.safetensors.index.json")
        single = os.path.join(path, "model.safetensors")
        if os.path.exists(index):
            path = index
        elif os.path.exists(single):
            path = single
        else:
            raise Refused("%s holds neither model.safetensors nor model.safetensors.index.json "
                          "(pytorch_model.bin is not read: save the model with "
                          "safe_serialization=True)" % folder)
    folder = os.path.dirname(os.path.abspath(path))
    config = config or os.path.join(folder, "config.json")
    if path.endswith(".json"):
        with open(path) as f:
            weight_map = json.load(f)["weight_map"]
        files = sorted(set(weight_map.values()))
        return config, [os.path.join(folder, name) for name in files], weight_map
    return config, [path], None


def load(files, weight_map):
    """{name: (dtype, shape, array('f'))} of every tensor of FILES, one
    file in memory at a time."""
    tensors = {}
    for path in files:
        header, blob = st_load(path)
        view = memoryview(blob)
        for name, e in header.items():
            if weight_map is not None and weight_map.get(name) != os.path.basename(path):
                continue  # the index places it elsewhere
            lo, hi = e["data_offsets"]
            if e["dtype"] in ("BOOL", "U8", "I8", "I16", "I32", "I64"):
                tensors[name] = (e["dtype"], e["shape"], None)  # buffers: masks, positions
            else:
                tensors[name] = (e["dtype"], e["shape"], to_f32(e["dtype"], view[lo:hi]))
        del view, blob
    if weight_map is not None:
        missing = sorted(set(weight_map) - set(tensors))
        if missing:
            raise Refused("the index names tensors its files lack: %s" % ", ".join(missing[:5]))
    return tensors


class Mapper:
    """Takes the checkpoint's tensors by name, checking each shape, and
    collects the example's tensors in the order written."""

    def __init__(self, tensors, prefix):
        self.tensors = {(n[len(prefix):] if n.startswith(prefix) else n): t
                        for n, t in tensors.items()}
        self.out = []

    def take(self, name, shape):
        if name not in self.tensors:
            raise Refused("the checkpoint has no tensor %s" % name)
        dtype, got, values = self.tensors.pop(name)
        if list(got) != list(shape):
            raise Refused("%s has shape %s, but config.json makes it %s" % (name, got, shape))
        if values is None:
            raise Refused("%s is %s, not a float tensor" % (name, dtype))
        return values

    def put(self, name, shape, values):
        assert len(values) == math.prod(shape)
        self.out.append((name, shape, values))

    def tied_head(self, table, shape, tied):
        """lm_head.weight, if there, must be the embedding (both examples
        tie them); without it, the config must say tied."""
        if "lm_head.weight" in self.tensors:
            if self.take("lm_head.weight", shape) != table:
                raise Refused("lm_head.weight differs from the token embedding: the example "
                              "ties its LM head to the embedding (transpose of it), so an "
                              "untied head cannot be expressed")
        elif not tied:
            raise Refused("tie_word_embeddings is false and the checkpoint has no "
                          "lm_head.weight: transformers would make a random head")

    def leftover(self, ignored):
        rest = sorted(n for n in self.tensors if not any(n.endswith(s) for s in ignored))
        if rest:
            raise Refused("tensors the example has no place for: %s%s"
                          % (", ".join(rest[:5]), " and %d more" % (len(rest) - 5)
                             if len(rest) > 5 else ""))


# ---- the models ----

def need(cond, message):
    if not cond:
        raise Refused(message)


def eps_is(cfg, key, want, default):
    eps = cfg.get(key, default)
    need(abs(eps - want) <= 1e-12, "%s = %g: the example's norms use eps %g" % (key, eps, want))


def gpt2(cfg, tensors):
    """GPT2LMHeadModel -> examples/gpt2.sh. Returns (tensors, flags, notes)."""
    act = cfg.get("activation_function", "gelu_new")
    need(act in ("gelu_new", "gelu_pytorch_tanh", "gelu_fast"),
         "activation_function = %s: gpt2.sh's gelu is the tanh approximation "
         "(gelu_new, gelu_pytorch_tanh, gelu_fast)" % act)
    eps_is(cfg, "layer_norm_epsilon", 1e-5, 1e-5)
    need(cfg.get("scale_attn_weights", True), "scale_attn_weights = false: gpt2.sh's "
         "attention scales by 1/sqrt(head width)")
    need(not cfg.get("scale_attn_by_inverse_layer_idx", False),
         "scale_attn_by_inverse_layer_idx: gpt2.sh's layers share one attention scale")
    need(not cfg.get("add_cross_attention", False), "add_cross_attention: gpt2.sh has none")
    D, NH, L, V = cfg["n_embd"], cfg["n_head"], cfg["n_layer"], cfg["vocab_size"]
    P = cfg.get("n_positions", cfg.get("n_ctx"))
    F = cfg.get("n_inner") or 4 * D
    need(D % NH == 0, "n_embd = %d does not divide into n_head = %d heads" % (D, NH))
    m = Mapper(tensors, "transformer.")
    wte = m.take("wte.weight", [V, D])
    m.put("wte", [V, D], wte)
    m.put("wpe", [P, D], m.take("wpe.weight", [P, D]))
    for i in range(L):
        h, o = "h.%d." % i, "layers.%d." % i
        m.put(o + "attn.ln_g", [D], m.take(h + "ln_1.weight", [D]))
        m.put(o + "attn.ln_b", [D], m.take(h + "ln_1.bias", [D]))
        qkv = m.take(h + "attn.c_attn.weight", [D, 3 * D])   # Conv1D: [in, out]
        bqkv = m.take(h + "attn.c_attn.bias", [3 * D])
        for k, part in enumerate("qkv"):
            m.put(o + "attn.w" + part, [D, D], columns(qkv, D, 3 * D, k * D, (k + 1) * D))
            m.put(o + "attn.b" + part, [D], bqkv[k * D:(k + 1) * D])
        m.put(o + "attn.wo", [D, D], m.take(h + "attn.c_proj.weight", [D, D]))
        m.put(o + "attn.bo", [D], m.take(h + "attn.c_proj.bias", [D]))
        m.put(o + "mlp.ln_g", [D], m.take(h + "ln_2.weight", [D]))
        m.put(o + "mlp.ln_b", [D], m.take(h + "ln_2.bias", [D]))
        m.put(o + "mlp.w1", [D, F], m.take(h + "mlp.c_fc.weight", [D, F]))
        m.put(o + "mlp.b1", [F], m.take(h + "mlp.c_fc.bias", [F]))
        m.put(o + "mlp.w2", [F, D], m.take(h + "mlp.c_proj.weight", [F, D]))
        m.put(o + "mlp.b2", [D], m.take(h + "mlp.c_proj.bias", [D]))
    m.put("lnf_g", [D], m.take("ln_f.weight", [D]))
    m.put("lnf_b", [D], m.take("ln_f.bias", [D]))
    m.tied_head(wte, [V, D], cfg.get("tie_word_embeddings", True))
    m.leftover([".attn.bias", ".attn.masked_bias"])  # the causal mask's buffers
    flags = [("D", D), ("NH", NH), ("F", F), ("V", V), ("L", L), ("P", P)]
    notes = ["S at most P = %d" % P, "tp must divide NH = %d and F = %d" % (NH, F)]
    return m.out, flags, notes


def llama(cfg, tensors):
    """LlamaForCausalLM -> examples/llama.sh. Returns (tensors, flags, notes)."""
    scaling = cfg.get("rope_scaling")
    kind = (scaling or {}).get("rope_type", (scaling or {}).get("type", "default"))
    need(kind == "default", "rope_scaling of type %s: llama.sh's rotary tables are "
         "unscaled (THETA^(-2i/E) at every position)" % kind)
    act = cfg.get("hidden_act", "silu")
    need(act == "silu", "hidden_act = %s: llama.sh's MLP is SwiGLU (silu)" % act)
    need(not cfg.get("attention_bias", False), "attention_bias: llama.sh's attention "
         "projections have no biases")
    need(not cfg.get("mlp_bias", False), "mlp_bias: llama.sh's MLP has no biases")
    eps_is(cfg, "rms_norm_eps", 1e-5, 1e-6)
    theta = cfg.get("rope_theta", 10000.0)
    need(float(theta).is_integer(), "rope_theta = %g: llama.sh's THETA is an integer" % theta)
    D, H, L = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_hidden_layers"]
    G, F, V = cfg.get("num_key_value_heads") or H, cfg["intermediate_size"], cfg["vocab_size"]
    E = cfg.get("head_dim") or D // H
    need(cfg.get("head_dim") or D % H == 0,
         "hidden_size = %d does not divide into %d heads" % (D, H))
    need(H % G == 0, "%d query heads do not share %d key/value heads evenly" % (H, G))
    m = Mapper(tensors, "model.")
    emb = m.take("embed_tokens.weight", [V, D])
    m.put("emb", [V, D], emb)
    for i in range(L):
        h, o = "layers.%d." % i, "layers.%d." % i
        for proj in ("q", "k", "v", "o"):
            need(h + "self_attn.%s_proj.bias" % proj not in m.tensors,
                 "%sself_attn.%s_proj.bias: llama.sh's attention has no biases" % (h, proj))
        # nn.Linear weights are [out, in]: each transposed to [in, out]
        m.put(o + "attn.norm", [D], m.take(h + "input_layernorm.weight", [D]))
        m.put(o + "attn.wq", [D, H * E], transpose(m.take(h + "self_attn.q_proj.weight",
                                                          [H * E, D]), H * E, D))
        m.put(o + "attn.wk", [D, G * E], transpose(m.take(h + "self_attn.k_proj.weight",
                                                          [G * E, D]), G * E, D))
        m.put(o + "attn.wv", [D, G * E], transpose(m.take(h + "self_attn.v_proj.weight",
                                                          [G * E, D]), G * E, D))
        m.put(o + "attn.wo", [H * E, D], transpose(m.take(h + "self_attn.o_proj.weight",
                                                          [D, H * E]), D, H * E))
        m.put(o + "mlp.norm", [D], m.take(h + "post_attention_layernorm.weight", [D]))
        for ours, theirs in (("w1", "gate_proj"), ("w3", "up_proj")):
            m.put(o + "mlp." + ours, [D, F],
                  transpose(m.take(h + "mlp.%s.weight" % theirs, [F, D]), F, D))
        m.put(o + "mlp.w2", [F, D], transpose(m.take(h + "mlp.down_proj.weight", [D, F]), D, F))
    m.put("norm", [D], m.take("norm.weight", [D]))
    m.tied_head(emb, [V, D], cfg.get("tie_word_embeddings", False))
    m.leftover([".rotary_emb.inv_freq"])  # a buffer transformers recomputes
    flags = [("D", D), ("H", H), ("G", G), ("E", E), ("F", F), ("V", V), ("L", L),
             ("THETA", int(theta))]
    notes = ["S at most max_position_embeddings = %s" % cfg.get("max_position_embeddings"),
             "tp must divide H = %d, G * E = %d, F = %d and V = %d" % (H, G * E, F, V)]
    return m.out, flags, notes


MODELS = {"gpt2": ("examples/gpt2.sh", gpt2), "llama": ("examples/llama.sh", llama)}


# ---- writing ----

def write(path, tensors):
    """Writes TENSORS to PATH through a temporary file beside it, renamed
    over PATH once complete: a failure leaves PATH as it was."""
    raws = []
    for name, shape, values in tensors:
        if sys.byteorder == "big":
            values = array("f", values)
            values.byteswap()
        raws.append((name, "F32", shape, memoryview(values).cast("B")))
    folder = os.path.dirname(os.path.abspath(path))
    try:
        fd, tmp = tempfile.mkstemp(dir=folder, prefix="." + os.path.basename(path) + ".")
    except OSError as e:
        raise Refused("cannot write %s: %s" % (path, e.strerror))
    os.close(fd)
    try:
        _write_raw(tmp, raws)
        mask = os.umask(0)  # mkstemp made it 0600: give it a new file's mode
        os.umask(mask)
        os.chmod(tmp, 0o666 & ~mask)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def main(argv):
    ap = argparse.ArgumentParser(prog="hf_import.py", description=__doc__.split("\n\n")[0])
    ap.add_argument("checkpoint", help="folder, model.safetensors or its index .json")
    ap.add_argument("-o", "--output", required=True, help="the weights file to write")
    ap.add_argument("--config", help="config.json (default: beside the checkpoint)")
    args = ap.parse_args(argv[1:])
    try:
        config, files, weight_map = find_files(args.checkpoint, args.config)
        with open(config) as f:
            cfg = json.load(f)
        kind = cfg.get("model_type")
        need(kind in MODELS, "model_type = %s: only gpt2 (GPT2LMHeadModel) and llama "
             "(LlamaForCausalLM) are imported" % kind)
        example, convert = MODELS[kind]
        tensors = load(files, weight_map)
        dtypes = sorted({t[0] for t in tensors.values() if t[2] is not None})
        out, flags, notes = convert(cfg, tensors)
        write(args.output, out)
    except Refused as e:
        print("hf_import.py: error: %s" % e, file=sys.stderr)
        return 1
    except KeyError as e:
        print("hf_import.py: error: no %s in config.json or the index" % e, file=sys.stderr)
        return 1
    except (OSError, ValueError) as e:  # unreadable or malformed files
        print("hf_import.py: error: %s: %s" % (type(e).__name__, e), file=sys.stderr)
        return 1
    values = sum(len(t[2]) for t in out)
    defines = " ".join("-D %s=%d" % f for f in flags)
    print("%s: %d tensors (%d values, from %s) written to %s, as f32"
          % (kind, len(out), values, "/".join(dtypes), args.output))
    print("flags: %s" % defines)
    print("then: shardc %s %s -D B=... -D S=... --mesh DPxTP -o %s.plan"
          % (example, defines, kind))
    print("      shardrun %s.plan --params %s" % (kind, args.output))
    print("note: %s; dp must divide B" % "; ".join(notes))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
