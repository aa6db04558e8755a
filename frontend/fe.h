/* fe.h: the frontend's entry point: shard-language source to logical IR
 * (global shapes, user shardings), with every meaning of LANGUAGE.md
 * checked and errors reported at their place in the source. */
#ifndef SHARDC_FE_H
#define SHARDC_FE_H

#include "../ir/ir.h"

typedef struct fe_define {
    const char *name;
    int64_t value;
} fe_define;

typedef struct fe_options {
    int nmesh;                    /* 0: use the model's mesh defaults */
    int64_t mesh[IR_MAX_AXES];    /* --mesh sizes, major to minor */
    bool mesh_too_long;           /* --mesh gave more than IR_MAX_AXES sizes */
    int ndefines;
    const fe_define *defines;     /* -D NAME=VALUE */
    int64_t max_work;             /* bound on ops made plus statements run;
                                     0: the default (5 million) */
    /* strategy overrides of the model's (shardc --zero, --schedule,
     * --microbatches): each applies only where its flag is set */
    bool zero_set;
    int zero;                     /* ZeRO stage 0..3 */
    char zero_axis[32];           /* "": the model's zero axis, else dp */
    bool schedule_set;
    int schedule;                 /* ir_schedule */
    int chunks;                   /* interleaved(V): V */
    int microbatches;             /* 0: the model's */
    bool recompute;               /* --recompute: every block a recompute block */
    bool keep_gathered;           /* --keep-gathered: ir_train.keep_gathered */
    bool unroll;                  /* --unroll: ir_pipeline.unroll */
    bool dtype_set;               /* --dtype T: every f32 the model writes (declarations,
                                   * block types, cast targets) is T */
    int dtype;                    /* ir_dtype: bf16 or f16 */
} fe_options;

/* Compiles src to a verified logical module. NULL on error, with the error
 * in diag. Allocation failures jump to *oom. */
ir_module *fe_compile(const su_src *src, const fe_options *opt, su_diag *diag, jmp_buf *oom);

#endif
