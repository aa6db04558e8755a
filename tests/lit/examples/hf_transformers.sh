# Hugging Face checkpoints against transformers itself, where
# /usr/bin/python3 has it (CI's machine does not: skipped there). The
# small random checkpoints of hf_import.sh (GPT-2 in f32 with the fused
# c_attn and Conv1D weights; Llama in bf16 in two files, 4 query heads
# over 2 key/value heads, the LM head tied) load with transformers' own
# GPT2LMHeadModel and LlamaForCausalLM (from_pretrained, float64), whose
# logits hf_import.sh.py's transcription matches (the largest difference
# printed: 0 for GPT-2, about 3e-6 for Llama, whose rotary frequencies
# transformers makes in f32). scripts/hf_import.py converts them, and
# examples/gpt2.sh and examples/llama.sh with `output logits` run from
# the converted weights on 1 rank and 2x2: their logits are transformers'
# within 1e-4.
# RUN: /usr/bin/python3 -c 'import torch, transformers' 2> /dev/null || { echo "skipped: no transformers under /usr/bin/python3"; exit 77; }
# RUN: for m in gpt2 llama; do \
# RUN:     /usr/bin/python3 %S/hf_import.sh.py make $m %t.$m && \
# RUN:     /usr/bin/python3 %S/hf_import.sh.py hf %t.$m 2> /dev/null && \
# RUN:     /usr/bin/python3 %S/../../../scripts/hf_import.py %t.$m -o %t.$m.st > %t.$m.txt && \
# RUN:     { sed '/^train /,$d' %S/../../../examples/$m.sh && echo 'output logits'; } > %t.$m.sh || exit 1; \
# RUN:     for mesh in 1x1 2x2; do \
# RUN:         %shardc %t.$m.sh $(sed -n 's/^flags: //p' %t.$m.txt) -D B=2 -D S=16 --mesh $mesh -o %t.$m.$mesh.plan && \
# RUN:         %shardrun %t.$m.$mesh.plan --quiet --params %t.$m.st --inputs %t.$m/inputs.safetensors --outputs %t.$m.$mesh.out && \
# RUN:         /usr/bin/python3 %S/hf_import.sh.py check %t.$m/want-hf.safetensors %t.$m.$mesh.out "$m $mesh against transformers" || exit 1; \
# RUN:     done; \
# RUN: done | FileCheck %s
# CHECK: GPT2LMHeadModel: transformers {{.*}}'s logits 2x16x101, max abs diff from the transcription's {{.*}}
# CHECK-NEXT: gpt2 1x1 against transformers: logits 2x16x101, max abs diff {{.*}}: within 0.0001
# CHECK-NEXT: gpt2 2x2 against transformers: logits 2x16x101, max abs diff {{.*}}: within 0.0001
# CHECK-NEXT: LlamaForCausalLM: transformers {{.*}}'s logits 2x16x128, max abs diff from the transcription's {{.*}}
# CHECK-NEXT: llama 1x1 against transformers: logits 2x16x128, max abs diff {{.*}}: within 0.0001
# CHECK-NEXT: llama 2x2 against transformers: logits 2x16x128, max abs diff {{.*}}: within 0.0001
