# A NUL byte anywhere in a model (code, a comment, a string; also in
# textual IR) is one error at its line and column, with the line (the NUL
# shown as a space) and a caret, and nothing else: no second "shardc:
# error:" prefix, no line cut at the NUL.
# RUN: printf 'mesh dp\ninput x : f32[4, 8]\ny = x \000 2\noutput y\n' > %t.code.sh
# RUN: %expect 1 %shardc %t.code.sh --mesh 2 --emit ir -o %t.ir 2>&1 | FileCheck %s --check-prefix=CODE --implicit-check-not=error
# RUN: test ! -e %t.ir
# CODE: {{^[^ ]*}}t.code.sh:3:7: error: unexpected NUL byte (0x00): a model is UTF-8 text{{$}}
# CODE-NEXT: {{^}}y = x   2{{$}}
# CODE-NEXT: {{^}}      ^{{$}}
# RUN: printf 'mesh dp\n# a comment \000 here\ninput x : f32[4, 8]\noutput x\n' > %t.comment.sh
# RUN: %expect 1 %shardc %t.comment.sh --mesh 2 2>&1 | FileCheck %s --check-prefix=COMMENT --implicit-check-not=error
# COMMENT: {{^[^ ]*}}t.comment.sh:2:13: error: unexpected NUL byte (0x00): a model is UTF-8 text{{$}}
# COMMENT-NEXT: {{^}}# a comment   here{{$}}
# COMMENT-NEXT: {{^}}            ^{{$}}
# RUN: printf 'mesh dp\nlet s = "a\000b"\n' > %t.string.sh
# RUN: %expect 1 %shardc %t.string.sh --mesh 2 2>&1 | FileCheck %s --check-prefix=STRING --implicit-check-not=error
# STRING: {{^[^ ]*}}t.string.sh:2:11: error: unexpected NUL byte (0x00): a model is UTF-8 text{{$}}
# STRING-NEXT: {{^}}let s = "a b"{{$}}
# STRING-NEXT: {{^}}          ^{{$}}
# RUN: %shardc %S/../../../examples/mlp.sh --emit ir > %t.m.ir
# RUN: python3 -c "import sys; d = open(sys.argv[1], 'rb').read(); i = d.index(b'\n') + 5; open(sys.argv[2], 'wb').write(d[:i] + b'\0' + d[i:])" %t.m.ir %t.nul.ir
# RUN: %expect 1 %shardc %t.nul.ir 2>&1 | FileCheck %s --check-prefix=IR --implicit-check-not=error
# IR: {{^[^ ]*}}t.nul.ir:2:5: error: unexpected NUL byte (0x00): a model is UTF-8 text{{$}}
# IR-NEXT: {{^}}%x =  input {{.*}}{{$}}
# IR-NEXT: {{^}}    ^{{$}}
