# Hugging Face checkpoints into the examples (scripts/hf_import.py,
# docs/huggingface.md). hf_import.sh.py makes small random GPT-2 and Llama
# checkpoints in transformers' format and names (GPT-2: one f32 file, the
# fused c_attn, Conv1D weights [in, out], V = 101 split by no tp; Llama:
# bf16 in two files and their index, nn.Linear weights [out, in], 4 query
# heads over 2 key/value heads, the LM head tied) and their logits from a
# float64 PyTorch transcription of transformers' GPT2LMHeadModel and
# LlamaForCausalLM. hf_import.py converts them, with numpy and without it
# (the same bytes); examples/gpt2.sh and examples/llama.sh, compiled with
# the flags it prints and their `train` line turned into `output logits`,
# run from the converted weights on 1 rank, 2x2 and 1x4, and their logits
# match within 1e-4 (measured: about 7e-6, as far as PyTorch's own f32
# forward is from the float64 one). Checkpoints the examples cannot express
# are refused, exit 1, the reason given, the output file left as it was.
# RUN: /usr/bin/python3 -c 'import torch' 2> /dev/null || { echo "skipped: no torch under /usr/bin/python3"; exit 77; }
# RUN: /usr/bin/python3 %s.py make gpt2 %t.gpt2
# RUN: /usr/bin/python3 %s.py make llama %t.llama
# RUN: /usr/bin/python3 %S/../../../scripts/hf_import.py %t.gpt2 -o %t.gpt2.st | tee %t.gpt2.txt | FileCheck %s --check-prefix=GPT2
# RUN: /usr/bin/python3 %S/../../../scripts/hf_import.py %t.llama/model.safetensors.index.json -o %t.llama.st | tee %t.llama.txt | FileCheck %s --check-prefix=LLAMA
# GPT2: gpt2: 36 tensors (108096 values, from F32) written to {{.*}}.gpt2.st, as f32
# GPT2-NEXT: flags: -D D=64 -D NH=4 -D F=256 -D V=101 -D L=2 -D P=24
# LLAMA: llama: 20 tensors (69952 values, from BF16) written to {{.*}}.llama.st, as f32
# LLAMA-NEXT: flags: -D D=64 -D H=4 -D G=2 -D E=16 -D F=96 -D V=128 -D L=2 -D THETA=10000
#
# Without numpy: the standard library's conversion writes the same bytes.
# RUN: /usr/bin/python3 -c "import runpy, sys; sys.modules['numpy'] = None; sys.argv = sys.argv[1:]; runpy.run_path(sys.argv[0], run_name='__main__')" \
# RUN:     %S/../../../scripts/hf_import.py %t.gpt2 -o %t.gpt2.nonp.st > /dev/null
# RUN: /usr/bin/python3 -c "import runpy, sys; sys.modules['numpy'] = None; sys.argv = sys.argv[1:]; runpy.run_path(sys.argv[0], run_name='__main__')" \
# RUN:     %S/../../../scripts/hf_import.py %t.llama -o %t.llama.nonp.st > /dev/null
# RUN: cmp %t.gpt2.st %t.gpt2.nonp.st && cmp %t.llama.st %t.llama.nonp.st
#
# The logits, from the examples with `output logits` in place of `train`.
# RUN: sed '/^train /,$d' %S/../../../examples/gpt2.sh > %t.gpt2.sh && echo 'output logits' >> %t.gpt2.sh
# RUN: sed '/^train /,$d' %S/../../../examples/llama.sh > %t.llama.sh && echo 'output logits' >> %t.llama.sh
# RUN: for m in gpt2 llama; do for mesh in 1x1 2x2 1x4; do \
# RUN:     %shardc %t.$m.sh $(sed -n 's/^flags: //p' %t.$m.txt) -D B=2 -D S=16 --mesh $mesh -o %t.$m.$mesh.plan && \
# RUN:     %shardrun %t.$m.$mesh.plan --quiet --params %t.$m.st --inputs %t.$m/inputs.safetensors --outputs %t.$m.$mesh.out && \
# RUN:     /usr/bin/python3 %s.py check %t.$m/want.safetensors %t.$m.$mesh.out "$m $mesh" || exit 1; \
# RUN: done; done | FileCheck %s --check-prefix=LOGITS
# LOGITS: gpt2 1x1: logits 2x16x101, max abs diff {{.*}}: within 0.0001
# LOGITS-NEXT: gpt2 2x2: logits 2x16x101, max abs diff {{.*}}: within 0.0001
# LOGITS-NEXT: gpt2 1x4: logits 2x16x101, max abs diff {{.*}}: within 0.0001
# LOGITS-NEXT: llama 1x1: logits 2x16x128, max abs diff {{.*}}: within 0.0001
# LOGITS-NEXT: llama 2x2: logits 2x16x128, max abs diff {{.*}}: within 0.0001
# LOGITS-NEXT: llama 1x4: logits 2x16x128, max abs diff {{.*}}: within 0.0001
#
# Refused: GPT-2 with the erf GELU, Llama 3.1's rope scaling, a Llama LM
# head of its own. The file named by -o keeps its contents, and no
# temporary file is left beside it.
# RUN: /usr/bin/python3 %s.py make gpt2 %t.erf gelu
# RUN: /usr/bin/python3 %s.py make llama %t.scaled rope-scaling
# RUN: /usr/bin/python3 %s.py make llama %t.untied untied
# RUN: mkdir %t.out && echo keep > %t.out/w.st
# RUN: %expect 1 /usr/bin/python3 %S/../../../scripts/hf_import.py %t.erf -o %t.out/w.st 2>&1 | FileCheck %s --check-prefix=ERF
# RUN: %expect 1 /usr/bin/python3 %S/../../../scripts/hf_import.py %t.scaled -o %t.out/w.st 2>&1 | FileCheck %s --check-prefix=SCALED
# RUN: %expect 1 /usr/bin/python3 %S/../../../scripts/hf_import.py %t.untied -o %t.out/w.st 2>&1 | FileCheck %s --check-prefix=UNTIED
# RUN: { ls -A %t.out; cat %t.out/w.st; } | FileCheck %s --check-prefix=KEPT
# ERF: hf_import.py: error: activation_function = gelu: gpt2.sh's gelu is the tanh approximation
# SCALED: hf_import.py: error: rope_scaling of type llama3: llama.sh's rotary tables are unscaled
# UNTIED: hf_import.py: error: lm_head.weight differs from the token embedding
# KEPT: {{^}}w.st{{$}}
# KEPT-NEXT: {{^}}keep{{$}}
# KEPT-NOT: {{.}}
