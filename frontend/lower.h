/* lower.h: state shared by the lowering files (frontend-internal).
 *
 * Lowering walks the AST in source order, evaluates constants, unrolls
 * repeats and inlines blocks, and emits logical IR with every meaning of
 * LANGUAGE.md checked. The first error is recorded in the diagnostics and
 * unwinds through fe_fail (a longjmp): all memory is in arenas, so
 * nothing leaks on the way out. */
#ifndef SHARDC_FE_LOWER_H
#define SHARDC_FE_LOWER_H

#include "ast.h"
#include "fe.h"

/* ---- string maps (open addressing, arena-backed) ---- */

typedef struct fe_map {
    const char **keys;
    void **vals;
    int cap, n;
} fe_map;

void *fe_map_get(const fe_map *m, const char *key);
void fe_map_put(fe_map *m, su_arena *a, const char *key, void *val);

/* ---- values and symbols ---- */

/* What an expression evaluates to: a tensor, or a number not yet given a
 * dtype (a literal takes the dtype of the tensor it meets, as JAX's weak
 * types do). */
typedef struct fe_val {
    ir_value *v;        /* NULL for a number */
    double num;
    bool is_int;
} fe_val;

typedef struct fe_block {
    ast_stmt *def;
    struct fe_block *next;  /* the program's blocks, in definition order */
    bool active;            /* its body is running: a call now recurses */
    int nparams;
    const char **pnames;
    su_loc *plocs;
    ir_type *ptypes;
    int nret;               /* its results: 1, or several (-> (T1, T2, ...)) */
    bool recompute;         /* `recompute block`: its calls' ops are recomputed in the
                             * backward */
    ir_type *rets;
} fe_block;

enum { FE_MAX_RESULTS = 16 }; /* a block's results, a call's bound at once */

typedef enum { SYM_CONST, SYM_TENSOR, SYM_BLOCK } fe_sym_kind;

typedef struct fe_sym {
    fe_sym_kind kind;
    int64_t c;              /* SYM_CONST */
    fe_val val;             /* SYM_TENSOR */
    fe_block *block;        /* SYM_BLOCK */
    const ast_stmt *decl;   /* the declaring input/param/let/block, or NULL
                               for a plain assignment */
    su_loc loc;             /* where it was declared or first assigned */
} fe_sym;

typedef struct fe_scope {
    fe_map syms;
    struct fe_scope *global; /* NULL for the global scope */
    const char *block;       /* the block this scope runs, or NULL */
} fe_scope;

/* A level of parameter naming: the top level, a repetition, a block call.
 * counts: how many calls of each block this level has made so far. */
typedef struct fe_frame {
    const char *prefix;      /* "" or "layers.3.mlp."; NULL until needed */
    const struct fe_frame *parent; /* for a repetition: the enclosing frame */
    const char *rep_name;    /* for a repetition: the repeat's NAME */
    int64_t rep_index;       /*   and the repetition's index */
    fe_map counts;           /* block name -> (intptr_t) calls so far */
} fe_frame;



typedef struct fe_lower {
    su_arena *arena;         /* scratch: symbols, names (the AST's arena) */
    su_diag *diag;
    const su_src *src;
    const fe_options *opt;
    ir_module *m;
    jmp_buf fail;
    int64_t work, max_work;
    fe_scope global;
    bool *define_used;
    const ast_stmt *mesh_stmt, *pipeline_stmt, *train_stmt, *over_stmt;
    int rep;                 /* current repetition of the pipelined repeat */
    int recompute;      /* the call of a recompute block being lowered (its ops'
                         * ir_op.recompute), 0: none */
    int nrecompute;     /* such calls so far */
    int in_repeat;           /* depth of repeats being unrolled */
    fe_map param_names;      /* full parameter names made so far */
    fe_block *blocks, **blocks_tail;
    ir_module *scratch;      /* a block's trial run, freed on failure */
    int depth;               /* nesting of the expression being evaluated */
    bool trains;             /* the program has a `train` statement */
    ir_value *dropout_key;   /* the i32 key of dropout's bits, made in ... */
    ir_module *dropout_key_m; /* ... this module (a block's trial run has its own) */
    int ndropout;            /* dropout ops so far: each one's tag */
    /* Runs block b's body for a call in an expression and puts its b->nret
     * results in out: lower.c's statements, set by fe_compile. Expressions
     * reach statements only through it, so expr.c depends on scope.c alone. */
    void (*call_block)(struct fe_lower *L, fe_frame *f, const fe_block *b, ir_value **args,
                       su_loc loc, ir_value **out);
} fe_lower;

/* The frame's name prefix, made on first use (an empty repetition costs
 * no memory, so a runaway repeat count fails fast). */
const char *fe_prefix(fe_lower *L, fe_frame *f);

/* ---- scopes and errors (scope.c) ---- */

SU_NORETURN void fe_fail(fe_lower *L, su_loc loc, const char *fmt, ...) SU_PRINTF(3, 4);
/* Counts one unit of work; fails when the program unrolls too far. */
void fe_tick(fe_lower *L, su_loc loc);

fe_sym *fe_lookup(fe_lower *L, fe_scope *s, const char *name);

/* ---- expressions (expr.c) ---- */

int64_t fe_const_eval(fe_lower *L, fe_scope *s, const ast_node *n);
fe_val fe_eval(fe_lower *L, fe_scope *s, fe_frame *f, const ast_node *n);
/* The results of n, a call of a block that returns several, into out (at
 * most FE_MAX_RESULTS); their count, or 0 where n is anything else (one
 * value: evaluate it with fe_eval). */
int fe_eval_results(fe_lower *L, fe_scope *s, fe_frame *f, const ast_node *n, ir_value **out);
/* Infers the result of code on in and appends it, made at loc (the
 * current repetition's); a shape error is the user's, at loc. */
ir_value *fe_emit(fe_lower *L, ir_opcode code, ir_value **in, int nin, ir_attrs *a, su_loc loc);
/* Matches call's positional and keyword arguments to the np parameters
 * names (optional[i], or NULL for none optional) into node[] (NULL: not
 * given), with the user's errors for an unknown, extra, repeated or
 * missing argument. */
void fe_bind(fe_lower *L, const char *fn, const char *const *names, const bool *optional,
             int np, const ast_node *call, const ast_node **node);
/* A number, folded from literals and constants (for options like eps). */
double fe_number(fe_lower *L, fe_scope *s, const ast_node *n, const char *what);
/* The tensor of v; a number becomes a constant of dtype dt. */
ir_value *fe_tensor(fe_lower *L, fe_val v, ir_dtype dt, su_loc loc);
ir_type fe_type_eval(fe_lower *L, fe_scope *s, const ast_type *t, const char *what);
/* The dtype the model's t means: f32 is --dtype's where that is set. */
ir_dtype fe_dtype(const fe_lower *L, ir_dtype t);
void fe_type_str(char *out, size_t n, const ir_type *t);

/* ---- selection and routing (select.c) ---- */

/* A call of one_hot, argmax, gather, cumsum or topk (LANGUAGE.md §12),
 * made of IR ops: its results into out (topk: values, indices) and their
 * count; 0 where the call is none of them. */
int fe_select_call(fe_lower *L, fe_scope *s, fe_frame *f, const ast_node *call, ir_value **out);

#endif
