/* fuzz_frontend.c: libFuzzer target on the frontend. The input is
 * shard-language source. Any input may be rejected, but only with a user
 * error; a module that comes back must verify and survive the textual IR
 * round trip. */
#include "frontend/fe.h"
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
    su_src src = {"fuzz.sh", (const char *)data, size};
    /* bounds the work of `repeat 1000000000` and the like */
    fe_options opt = {.max_work = 200000};
    st.m = fe_compile(&src, &opt, &st.diag, &oom);
    if (st.m)
        fuzz_roundtrip(&st, &oom);
    else
        fuzz_check_diag(&st.diag);
    fuzz_free(&st);
    return 0;
}
