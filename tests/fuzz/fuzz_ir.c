/* fuzz_ir.c: libFuzzer target on the textual IR parser. The input is IR
 * text. Any input may be rejected, but only with a user error; a module
 * that parses must verify and print back to text that parses to the same
 * printed form. */
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    jmp_buf oom;
    fuzz_state st;
    fuzz_init(&st, &oom);
    if (setjmp(oom)) { /* out of memory: not a finding */
        fuzz_free(&st);
        return 0;
    }
    su_src src = {"fuzz.ir", (const char *)data, size};
    st.m = ir_parse(&src, &st.diag, &oom);
    if (st.m)
        fuzz_roundtrip(&st, &oom);
    else
        fuzz_check_diag(&st.diag);
    fuzz_free(&st);
    return 0;
}
