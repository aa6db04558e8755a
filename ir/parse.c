/* parse.c: reads the textual form that print.c writes (ir_parse). A
 * hand-written lexer and recursive descent, one function per grammar rule
 * (the rule is in the comment above it). The text comes from users and from
 * the fuzzer: it is not NUL-terminated, the lexer never reads past its end,
 * and every size is bounded before it indexes an array.
 *
 * Errors and out-of-memory both leave by longjmp to one point in
 * parse_guarded; ir_parse then frees everything the parser made (the module
 * under construction included) before it reports the error or passes the
 * out-of-memory on to the caller's jmp_buf, so nothing leaks either way. */
#include "ir.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
    MAX_IN = 64,        /* operands of one op */
    MAX_RES = 16,       /* results of one op */
    JMP_OOM = 1,        /* su_oom's longjmp value */
    JMP_ERROR = 2,
};

/* Attribute names, indexed by IR_A_* bit (the same table as print.c's). */
static const char *const attr_names[] = {
    "name", "init", "value", "axis", "keepdims", "eps", "causal",
    "perm", "shape", "dtype", "dim", "dim2", "axes",
    "lr", "momentum", "beta1", "beta2", "wd", "offset", "peer", "tag", "reduce", "bound",
    "trans", "heads_inner", "parts", "reversed",
};
/* all_reduce's operations, indexed by ir_reduce (the same table as print.c's) */
static const char *const reduce_names[IR_NREDUCE] = {"sum", "max"};
/* Attributes that may be left out (then at their zero default): reduce,
 * trans, heads_inner, parts, reversed, and an input's init. */
static unsigned optional_attrs(ir_opcode code)
{
    return IR_A_REDUCE | IR_A_TRANS | IR_A_HEADS | IR_A_PARTS | IR_A_REVERSED |
           (code == IR_INPUT ? (unsigned)IR_A_INIT : 0u);
}
enum { NATTRS = sizeof attr_names / sizeof attr_names[0] };

/* Lines come in this order; the single ones at most once. */
typedef enum { S_MESH, S_PARTITIONED, S_PIPELINE, S_OPS, S_OUTPUTS, S_UPDATES, S_TRAIN } section;
static const char *const section_names[] = {
    "'mesh'", "'partitioned'", "'pipeline'", "ops", "outputs", "updates", "'train'",
};

typedef enum { T_EOF, T_EOL, T_IDENT, T_NUM, T_VALUE, T_STRING, T_PUNCT } tok_kind;

typedef struct token {
    tok_kind kind;
    const char *s;      /* the token's text as written: "%x", "\"a\\x41\"" */
    size_t n;
    su_loc loc;
} token;

/* Values by name as written (the key points into the source text). */
typedef struct sym {
    const char *key;    /* NULL: empty */
    size_t n;
    ir_value *v;
} sym;

typedef struct symtab {
    sym *slot;
    size_t cap, n;      /* cap: a power of two, kept at most half full */
} symtab;

/* One op line, read before the op is appended (results need their types). */
typedef struct op_line {
    su_loc loc;
    int nres;
    token res[MAX_RES];         /* the result names as written */
    int nin;
    ir_value *in[MAX_IN];
    ir_attrs a;
    ir_type type[MAX_RES];
    ir_sharding sh[MAX_RES];
    int rep;
    int recompute;
    int phase;
} op_line;

typedef struct parser {
    const su_src *src;
    const char *pos, *end;
    const char *line_start;
    int line;
    token tok;          /* the current token */
    ir_module *m;
    symtab syms;
    op_line opl;        /* the op being read (too big for each op's stack) */
    int section;        /* of the last line read; -1 before the first */
    su_buf verr;        /* ir_verify's message */
    jmp_buf jb;         /* errors and out-of-memory */
    su_loc err_loc;
    char err[512];
} parser;

static SU_PRINTF(3, 4) SU_NORETURN void fail(parser *p, su_loc loc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->err, sizeof p->err, fmt, ap);
    va_end(ap);
    p->err_loc = loc;
    longjmp(p->jb, JMP_ERROR);
}

/* ---- the symbol table ---- */

static sym *sym_find(const symtab *t, const char *key, size_t n)
{
    size_t i = su_fnv_bytes(SU_FNV_BASIS, key, n) & (t->cap - 1);
    while (t->slot[i].key && (t->slot[i].n != n || memcmp(t->slot[i].key, key, n)))
        i = (i + 1) & (t->cap - 1);
    return &t->slot[i];
}

static ir_value *sym_get(const symtab *t, const char *key, size_t n)
{
    return t->cap ? sym_find(t, key, n)->v : NULL;
}

static void sym_put(parser *p, const char *key, size_t n, ir_value *v)
{
    symtab *t = &p->syms;
    if (2 * (t->n + 1) > t->cap) {
        symtab old = *t;
        size_t cap = old.cap ? old.cap * 2 : 256;
        t->slot = su_xmalloc(&p->jb, cap * sizeof *t->slot);
        t->cap = cap;
        memset(t->slot, 0, cap * sizeof *t->slot);
        for (size_t i = 0; i < old.cap; i++)
            if (old.slot[i].key)
                *sym_find(t, old.slot[i].key, old.slot[i].n) = old.slot[i];
        free(old.slot);
    }
    *sym_find(t, key, n) = (sym){key, n, v};
    t->n++;
}

/* ---- the lexer ---- */

static bool is_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
static bool is_digit(char c) { return c >= '0' && c <= '9'; }
static bool is_word(char c) { return is_alpha(c) || is_digit(c) || c == '.'; }
static int hex_digit(char c)
{
    return is_digit(c) ? c - '0' : (c >= 'a' && c <= 'f') ? c - 'a' + 10
         : (c >= 'A' && c <= 'F') ? c - 'A' + 10 : -1;
}

static su_loc here(const parser *p, const char *at)
{
    return (su_loc){p->line, (int)(at - p->line_start) + 1};
}

static void skip_blanks(parser *p)
{
    while (p->pos < p->end) {
        char c = *p->pos;
        if (c == ' ' || c == '\t' || c == '\r')
            p->pos++;
        else if (c == '/' && p->pos + 1 < p->end && p->pos[1] == '/')
            while (p->pos < p->end && *p->pos != '\n')
                p->pos++;
        else
            break;
    }
}

/* A number, or any word that starts like one ("1f1b", "-inf"): the parser
 * decides what it means. A sign may follow an exponent's 'e'. */
static void lex_number(parser *p)
{
    const char *q = p->pos + 1;
    while (q < p->end && (is_word(*q) || ((*q == '-' || *q == '+') && (q[-1] == 'e' || q[-1] == 'E'))))
        q++;
    p->tok.kind = T_NUM;
    p->pos = q;
}

/* value := '%' ( digit { digit } | alpha { alpha | digit | '.' } ) */
static void lex_value(parser *p)
{
    const char *name = p->pos + 1, *q = name;
    while (q < p->end && is_word(*q))
        q++;
    if (q == name)
        fail(p, p->tok.loc, "expected a value name after '%%'");
    bool number = is_digit(*name);
    for (const char *c = name; c < q; c++)
        if (number ? !is_digit(*c) : (c == name && !is_alpha(*c)))
            fail(p, p->tok.loc, "invalid value name '%.*s'", (int)(q - p->pos), p->pos);
    p->tok.kind = T_VALUE;
    p->pos = q;
}

/* string := '"' { char | '\"' | '\\' | '\x' hex hex } '"'  (on one line) */
static void lex_string(parser *p)
{
    const char *q = p->pos + 1;
    for (;;) {
        if (q >= p->end || *q == '\n')
            fail(p, p->tok.loc, "unterminated string");
        if (*q == '"')
            break;
        if (!*q)
            fail(p, here(p, q), "a string cannot hold a NUL byte");
        if (*q++ != '\\')
            continue;
        if (q < p->end && (*q == '"' || *q == '\\')) {
            q++;
        } else if (q + 2 < p->end && *q == 'x' && hex_digit(q[1]) >= 0 && hex_digit(q[2]) >= 0) {
            if (q[1] == '0' && q[2] == '0')
                fail(p, here(p, q - 1), "a string cannot hold a NUL byte");
            q += 3;
        } else
            fail(p, here(p, q - 1), "invalid escape in string");
    }
    p->tok.kind = T_STRING;
    p->pos = q + 1;
}

/* Reads the next token into p->tok. */
static void lex(parser *p)
{
    skip_blanks(p);
    token *t = &p->tok;
    t->s = p->pos;
    t->loc = here(p, p->pos);
    if (p->pos == p->end) {
        t->kind = T_EOF;
    } else if (*p->pos == '\n') {
        t->kind = T_EOL;
        p->line++;
        p->line_start = ++p->pos;
    } else if (*p->pos == '%') {
        lex_value(p);
    } else if (*p->pos == '"') {
        lex_string(p);
    } else if (is_alpha(*p->pos)) {
        while (++p->pos < p->end && is_word(*p->pos))
            ;
        t->kind = T_IDENT;
    } else if (is_digit(*p->pos) || *p->pos == '.' ||
               ((*p->pos == '-' || *p->pos == '+') && p->pos + 1 < p->end &&
                (is_word(p->pos[1])))) {
        lex_number(p);
    } else if (*p->pos && strchr("=,:{}[]()", *p->pos)) {
        t->kind = T_PUNCT;
        p->pos++;
    } else {
        unsigned char c = (unsigned char)*p->pos;
        if (c > ' ' && c < 0x7f)
            fail(p, t->loc, "unexpected character '%c'", c);
        fail(p, t->loc, "unexpected byte 0x%02x", c);
    }
    t->n = (size_t)(p->pos - t->s);
}

/* ---- token helpers ---- */

static bool is_punct(const parser *p, char c)
{
    return p->tok.kind == T_PUNCT && p->tok.s[0] == c;
}

/* Consumes the punctuation c if it comes next. */
static bool accept(parser *p, char c)
{
    if (!is_punct(p, c))
        return false;
    lex(p);
    return true;
}

static bool is_kw(const parser *p, const char *kw)
{
    return p->tok.kind == T_IDENT && strlen(kw) == p->tok.n && !memcmp(p->tok.s, kw, p->tok.n);
}

/* "end of line", or the token's text in quotes (shortened). */
static const char *describe(const token *t, char buf[64])
{
    if (t->kind == T_EOF)
        return "end of file";
    if (t->kind == T_EOL)
        return "end of line";
    if (t->n > 40)
        snprintf(buf, 64, "'%.37s...'", t->s);
    else
        snprintf(buf, 64, "'%.*s'", (int)t->n, t->s);
    return buf;
}

/* Consumes the punctuation c; `after` says where it was wanted. */
static void expect_punct(parser *p, char c, const char *after)
{
    if (!is_punct(p, c))
        fail(p, p->tok.loc, "expected '%c'%s%s", c, after ? " " : "", after ? after : "");
    lex(p);
}

static void expect_kw(parser *p, const char *kw)
{
    if (!is_kw(p, kw))
        fail(p, p->tok.loc, "expected '%s'", kw);
    lex(p);
}

/* ---- numbers, strings, names ---- */

/* int := [ '-' ] digit { digit }, within int64 */
static int64_t parse_int(parser *p)
{
    const token *t = &p->tok;
    bool neg = t->kind == T_NUM && t->s[0] == '-';
    size_t i = neg;
    if (t->kind != T_NUM || i == t->n)
        fail(p, t->loc, "expected an integer");
    uint64_t limit = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX, v = 0;
    for (; i < t->n; i++) {
        if (!is_digit(t->s[i]))
            fail(p, t->loc, "expected an integer");
        unsigned d = (unsigned)(t->s[i] - '0');
        if (v > (limit - d) / 10)
            fail(p, t->loc, "integer out of range");
        v = v * 10 + d;
    }
    lex(p);
    /* -(v - 1) - 1 reaches INT64_MIN without an overflowing conversion */
    return !neg ? (int64_t)v : v ? -(int64_t)(v - 1) - 1 : 0;
}

/* An int in [lo, INT_MAX]; what names it in the message. */
static int parse_small_int(parser *p, int lo, const char *what)
{
    su_loc loc = p->tok.loc;
    int64_t v = parse_int(p);
    if (v < lo)
        fail(p, loc, "%s must be at least %d", what, lo);
    if (v > INT_MAX)
        fail(p, loc, "integer out of range");
    return (int)v;
}

/* double := NUM | IDENT, when strtod reads all of it ("0.5", "1e-05", "inf") */
static double parse_double(parser *p)
{
    const token *t = &p->tok;
    char buf[64], *end;
    if ((t->kind != T_NUM && t->kind != T_IDENT) || t->n >= sizeof buf)
        fail(p, t->loc, "expected a number");
    memcpy(buf, t->s, t->n);
    buf[t->n] = 0;
    double d = strtod(buf, &end);
    if (end != buf + t->n)
        fail(p, t->loc, "expected a number");
    lex(p);
    return d;
}

/* bool := 'true' | 'false' */
static bool parse_bool(parser *p)
{
    bool v = is_kw(p, "true");
    if (!v && !is_kw(p, "false"))
        fail(p, p->tok.loc, "expected 'true' or 'false'");
    lex(p);
    return v;
}

/* The string token's contents with the escapes undone (the lexer checked
 * them), in the module's arena. */
static char *parse_string(parser *p)
{
    const token *t = &p->tok;
    if (t->kind != T_STRING)
        fail(p, t->loc, "expected a string");
    char *out = su_alloc(&p->m->arena, t->n), *o = out;
    for (size_t i = 1; i + 1 < t->n; i++) {
        char c = t->s[i];
        if (c == '\\' && t->s[i + 1] == 'x') {
            c = (char)(hex_digit(t->s[i + 2]) * 16 + hex_digit(t->s[i + 3]));
            i += 3;
        } else if (c == '\\')
            c = t->s[++i];
        *o++ = c;
    }
    *o = 0;
    lex(p);
    return out;
}

/* axis := IDENT, the name of a mesh axis */
static int parse_axis(parser *p)
{
    const token *t = &p->tok;
    if (t->kind != T_IDENT)
        fail(p, t->loc, "expected a mesh axis name");
    int a = ir_mesh_axis(&p->m->mesh, t->s, t->n);
    if (a < 0)
        fail(p, t->loc, "unknown mesh axis '%.*s'", (int)t->n, t->s);
    lex(p);
    return a;
}

/* use := VALUE, defined on an earlier line */
static ir_value *parse_use(parser *p)
{
    const token *t = &p->tok;
    if (t->kind != T_VALUE)
        fail(p, t->loc, "expected a value");
    ir_value *v = sym_get(&p->syms, t->s + 1, t->n - 1);
    if (!v)
        fail(p, t->loc, "use of undefined value %.*s", (int)t->n, t->s);
    lex(p);
    return v;
}

/* ---- header lines ---- */

/* mesh := 'mesh' IDENT '=' int { ',' IDENT '=' int } */
static void parse_mesh(parser *p)
{
    ir_mesh *mesh = &p->m->mesh;
    mesh->loc = p->tok.loc;
    lex(p);
    do {
        const token *t = &p->tok;
        if (t->kind != T_IDENT)
            fail(p, t->loc, "expected a mesh axis name");
        if (t->n == 1 && t->s[0] == '_')
            fail(p, t->loc, "'_' cannot name a mesh axis: it means replicated");
        if (ir_mesh_axis(mesh, t->s, t->n) >= 0)
            fail(p, t->loc, "mesh axis '%.*s' is defined twice", (int)t->n, t->s);
        if (mesh->naxes == IR_MAX_AXES)
            fail(p, t->loc, "too many mesh axes (at most %d)", IR_MAX_AXES);
        const char *name = su_strndup(&p->m->arena, t->s, t->n);
        lex(p);
        expect_punct(p, '=', "after the mesh axis name");
        su_loc loc = p->tok.loc;
        int64_t size = parse_int(p);
        if (size < 1)
            fail(p, loc, "mesh axis size must be at least 1");
        mesh->name[mesh->naxes] = name;
        mesh->size[mesh->naxes++] = size;
    } while (accept(p, ','));
}

/* pipeline := 'pipeline' 'over' axis 'repeats' int 'microbatches' int
 *             'schedule' ( 'gpipe' | '1f1b' | 'interleaved' '(' int ')' ) */
static void parse_pipeline(parser *p)
{
    ir_pipeline *pp = &p->m->pipe;
    lex(p);
    expect_kw(p, "over");
    pp->axis = parse_axis(p);
    expect_kw(p, "repeats");
    pp->repeats = parse_small_int(p, 1, "repeats");
    expect_kw(p, "microbatches");
    pp->microbatches = parse_small_int(p, 1, "microbatches");
    expect_kw(p, "schedule");
    pp->chunks = 1;
    const token *t = &p->tok;
    if (is_kw(p, "gpipe")) {
        pp->schedule = IR_SCHED_GPIPE;
        lex(p);
    } else if (t->kind == T_NUM && t->n == 4 && !memcmp(t->s, "1f1b", 4)) {
        pp->schedule = IR_SCHED_1F1B;
        lex(p);
    } else if (is_kw(p, "interleaved")) {
        pp->schedule = IR_SCHED_INTERLEAVED;
        lex(p);
        expect_punct(p, '(', "after 'interleaved'");
        pp->chunks = parse_small_int(p, 1, "chunks");
        expect_punct(p, ')', "after the chunks");
    } else
        fail(p, t->loc, "expected a schedule: 'gpipe', '1f1b' or 'interleaved(N)'");
    if (is_kw(p, "stage")) {
        lex(p);
        p->m->stage = parse_small_int(p, 0, "stage");
    }
}

/* ---- types and shardings ---- */

/* type := DTYPE '[' [ int { ',' int } ] ']' */
static void parse_type(parser *p, ir_type *ty)
{
    const token *t = &p->tok;
    if (t->kind != T_IDENT)
        fail(p, t->loc, "expected a type");
    if (!ir_dtype_lookup(t->s, t->n, &ty->dtype))
        fail(p, t->loc, "unknown dtype '%.*s'", (int)t->n, t->s);
    lex(p);
    expect_punct(p, '[', "after the dtype");
    ty->rank = 0;
    while (!is_punct(p, ']')) {
        if (ty->rank && !is_punct(p, ','))
            fail(p, t->loc, "expected ',' or ']' in the shape");
        if (ty->rank)
            lex(p);
        if (ty->rank == IR_MAX_RANK)
            fail(p, t->loc, "too many dimensions (at most %d)", IR_MAX_RANK);
        su_loc loc = t->loc;
        int64_t d = parse_int(p);
        if (d < 1)
            fail(p, loc, "dimension must be at least 1");
        ty->dim[ty->rank++] = d;
    }
    lex(p);
}

/* shdim := '_' | axis | '(' axis { ',' axis } ')' */
static void parse_shdim(parser *p, ir_sharding *sh, int d)
{
    if (is_kw(p, "_")) {
        lex(p);
        return;
    }
    if (!is_punct(p, '(')) {
        sh->axes[d][sh->naxes[d]++] = (uint8_t)parse_axis(p);
        return;
    }
    lex(p);
    do {
        if (sh->naxes[d] == IR_MAX_AXES)
            fail(p, p->tok.loc, "too many axes (at most %d)", IR_MAX_AXES);
        sh->axes[d][sh->naxes[d]++] = (uint8_t)parse_axis(p);
    } while (accept(p, ','));
    expect_punct(p, ')', "after the axes");
}

/* sharding := ( 'shard' | 'auto' ) '(' [ shdim { ',' shdim } ] ')'
 *             [ 'partial' '(' axis { ',' axis } ')' ] */
static void parse_sharding(parser *p, ir_sharding *sh, int rank)
{
    su_loc loc = p->tok.loc;
    sh->kind = is_kw(p, "shard") ? IR_SH_FIXED : IR_SH_AUTO;
    lex(p);
    expect_punct(p, '(', "after the sharding kind");
    int ndims = 0;
    while (!is_punct(p, ')')) {
        if (ndims)
            expect_punct(p, ',', "between the sharded dimensions");
        if (ndims == IR_MAX_RANK)
            fail(p, p->tok.loc, "too many dimensions (at most %d)", IR_MAX_RANK);
        parse_shdim(p, sh, ndims++);
    }
    lex(p);
    if (ndims != rank)
        fail(p, loc, "sharding has %d dimension%s but the type has rank %d", ndims,
             ndims == 1 ? "" : "s", rank);
    if (!is_kw(p, "partial"))
        return;
    lex(p);
    expect_punct(p, '(', "after 'partial'");
    do
        sh->partial |= (uint16_t)(1u << parse_axis(p));
    while (accept(p, ','));
    expect_punct(p, ')', "after the partial axes");
}

/* ---- attributes ---- */

/* init := 'none' | 'zeros' | 'ones' | 'normal' '(' double ')'
 *       | 'uniform' '(' double ',' double ')' | 'param' '(' string ')' */
static void parse_init(parser *p, ir_init *in, const char **param)
{
    static const char *const kinds[] = {"none", "zeros", "ones", "normal", "uniform", "param"};
    int k = 0;
    while (k < 6 && !is_kw(p, kinds[k]))
        k++;
    if (k == 6)
        fail(p, p->tok.loc, "expected an initializer: none, zeros, ones, normal(STD), "
             "uniform(LO, HI) or param(\"NAME\")");
    in->kind = (ir_init_kind)k;
    lex(p);
    if (in->kind != IR_INIT_NORMAL && in->kind != IR_INIT_UNIFORM && in->kind != IR_INIT_PARAM)
        return;
    expect_punct(p, '(', "after the initializer");
    if (in->kind == IR_INIT_PARAM) {
        *param = parse_string(p);
        expect_punct(p, ')', "after the param's name");
        return;
    }
    in->a = parse_double(p);
    if (in->kind == IR_INIT_UNIFORM) {
        expect_punct(p, ',', "between the bounds");
        in->b = parse_double(p);
    }
    expect_punct(p, ')', "after the initializer's arguments");
}

/* ints := '[' [ int { ',' int } ] ']', at most IR_MAX_RANK of them */
static void parse_int_list(parser *p, int64_t *list, int *n)
{
    expect_punct(p, '[', NULL);
    *n = 0;
    while (!is_punct(p, ']')) {
        if (*n)
            expect_punct(p, ',', "or ']' in the list");
        if (*n == IR_MAX_RANK)
            fail(p, p->tok.loc, "too many entries (at most %d)", IR_MAX_RANK);
        list[(*n)++] = parse_int(p);
    }
    lex(p);
}

/* axes := '[' [ axis { ',' axis } ] ']' */
static void parse_axis_list(parser *p, ir_attrs *a)
{
    expect_punct(p, '[', NULL);
    a->naxes = 0;
    while (!is_punct(p, ']')) {
        if (a->naxes)
            expect_punct(p, ',', "or ']' in the list");
        if (a->naxes == IR_MAX_AXES)
            fail(p, p->tok.loc, "too many axes (at most %d)", IR_MAX_AXES);
        a->axes[a->naxes++] = (uint8_t)parse_axis(p);
    }
    lex(p);
}

/* heads := 'true' | 'false' | '[' name { ',' name } ']': every one of
 * code's operands and result with the heads inner, none, or those named
 * (ir_heads_name: `[v, result]`). */
static uint8_t parse_heads(parser *p, ir_opcode code)
{
    if (!is_punct(p, '['))
        return parse_bool(p) ? (uint8_t)ir_heads_all(code) : 0;
    lex(p);
    unsigned m = 0;
    while (!is_punct(p, ']')) {
        if (m)
            expect_punct(p, ',', "or ']' in the list");
        int bit = 0;
        while (bit < 8 && !(ir_heads_name(code, bit) && is_kw(p, ir_heads_name(code, bit))))
            bit++;
        if (bit == 8)
            fail(p, p->tok.loc, "expected an operand of %s (or 'result') whose heads are inner",
                 ir_ops[code].name);
        if (m & (1u << bit))
            fail(p, p->tok.loc, "'%s' is named twice", ir_heads_name(code, bit));
        m |= 1u << bit;
        lex(p);
    }
    lex(p);
    return (uint8_t)m;
}

/* attrval: the value of the attribute with bit number bit */
static void parse_attr_value(parser *p, ir_opcode code, int bit, ir_attrs *a)
{
    const token *t = &p->tok;
    switch (1 << bit) {
    case IR_A_NAME: a->name = parse_string(p); break;
    case IR_A_INIT: parse_init(p, &a->init, &a->init_param); break;
    case IR_A_VALUE: a->value = parse_double(p); break;
    case IR_A_AXIS: a->axis = parse_int(p); break;
    case IR_A_KEEPDIMS: a->keepdims = parse_bool(p); break;
    case IR_A_EPS: a->eps = parse_double(p); break;
    case IR_A_CAUSAL: a->causal = parse_bool(p); break;
    case IR_A_HEADS: a->heads_inner = parse_heads(p, code); break;
    case IR_A_PARTS: a->parts = parse_bool(p); break;
    case IR_A_REVERSED: a->reversed = parse_bool(p); break;
    case IR_A_PERM:
    case IR_A_SHAPE: parse_int_list(p, a->list, &a->nlist); break;
    case IR_A_DTYPE:
        if (t->kind != T_IDENT)
            fail(p, t->loc, "expected a dtype");
        if (!ir_dtype_lookup(t->s, t->n, &a->dtype))
            fail(p, t->loc, "unknown dtype '%.*s'", (int)t->n, t->s);
        lex(p);
        break;
    case IR_A_DIM: a->dim = parse_int(p); break;
    case IR_A_DIM2: a->dim2 = parse_int(p); break;
    case IR_A_AXES: parse_axis_list(p, a); break;
    case IR_A_LR: a->lr = parse_double(p); break;
    case IR_A_MOMENTUM: a->momentum = parse_double(p); break;
    case IR_A_BETA1: a->beta1 = parse_double(p); break;
    case IR_A_BETA2: a->beta2 = parse_double(p); break;
    case IR_A_WD: a->wd = parse_double(p); break;
    case IR_A_OFFSET: a->offset = parse_int(p); break;
    case IR_A_PEER: a->peer = parse_int(p); break;
    case IR_A_TAG: a->tag = parse_int(p); break;
    case IR_A_BOUND: a->bound = parse_int(p); break;
    case IR_A_REDUCE: {
        int k = 0;
        while (k < IR_NREDUCE && !is_kw(p, reduce_names[k]))
            k++;
        if (k == IR_NREDUCE)
            fail(p, t->loc, "expected 'sum' or 'max' for reduce");
        a->reduce = (uint8_t)k;
        lex(p);
        break;
    }
    case IR_A_TRANS:
        if (is_kw(p, "a"))
            a->trans = IR_TRANS_A;
        else if (is_kw(p, "b"))
            a->trans = IR_TRANS_B;
        else if (is_kw(p, "ab"))
            a->trans = IR_TRANS_A | IR_TRANS_B;
        else
            fail(p, t->loc, "expected 'a', 'b' or 'ab' for trans");
        lex(p);
        break;
    default: su_unreachable();
    }
}

/* One attribute of op code; seen collects the bits given so far.
 * attr := IDENT '=' attrval */
static void parse_attr(parser *p, ir_opcode code, ir_attrs *a, unsigned *seen)
{
    const token *t = &p->tok;
    if (t->kind != T_IDENT)
        fail(p, t->loc, "expected an attribute name");
    int bit = 0;
    while (bit < NATTRS && !is_kw(p, attr_names[bit]))
        bit++;
    if (bit == NATTRS)
        fail(p, t->loc, "unknown attribute '%.*s'", (int)t->n, t->s);
    if (!(ir_ops[code].attrs & (1u << bit)))
        fail(p, t->loc, "attribute '%s' is not one of %s's attributes", attr_names[bit],
             ir_ops[code].name);
    if (*seen & (1u << bit))
        fail(p, t->loc, "attribute '%s' is given twice", attr_names[bit]);
    *seen |= 1u << bit;
    lex(p);
    expect_punct(p, '=', "after the attribute name");
    parse_attr_value(p, code, bit, a);
}

/* attrs := '{' attr { ',' attr } '}'  (required when the op has any) */
static void parse_attrs(parser *p, ir_opcode code, ir_attrs *a)
{
    unsigned seen = 0;
    bool braces = is_punct(p, '{');
    if (braces) {
        lex(p);
        do
            parse_attr(p, code, a, &seen);
        while (accept(p, ','));
        if (!is_punct(p, '}'))
            fail(p, p->tok.loc, "expected '}' after the attributes");
    }
    unsigned missing = ir_ops[code].attrs & ~seen & ~optional_attrs(code);
    for (int bit = 0; bit < NATTRS; bit++)
        if (missing & (1u << bit))
            fail(p, p->tok.loc, "missing attribute '%s' of %s", attr_names[bit], ir_ops[code].name);
    if (braces)
        lex(p);
}

/* ---- ops ---- */

/* results := VALUE { ',' VALUE } '=' */
static void parse_results(parser *p, op_line *l)
{
    do {
        const token *t = &p->tok;
        if (t->kind != T_VALUE)
            fail(p, t->loc, "expected a value");
        bool twice = sym_get(&p->syms, t->s + 1, t->n - 1) != NULL;
        for (int i = 0; i < l->nres; i++)
            twice |= l->res[i].n == t->n && !memcmp(l->res[i].s, t->s, t->n);
        if (twice)
            fail(p, t->loc, "value %.*s is defined twice", (int)t->n, t->s);
        if (l->nres == MAX_RES)
            fail(p, t->loc, "too many results (at most %d)", MAX_RES);
        l->res[l->nres++] = *t;
        lex(p);
    } while (accept(p, ','));
    expect_punct(p, '=', "after the results");
}

/* opname := IDENT, an op of the table making as many results as named */
static ir_opcode parse_opname(parser *p, const op_line *l)
{
    const token *t = &p->tok;
    if (t->kind != T_IDENT)
        fail(p, t->loc, "expected an op name");
    int code = ir_op_lookup(t->s, t->n);
    if (code < 0)
        fail(p, t->loc, "unknown op '%.*s'", (int)t->n, t->s);
    int want = ir_ops[code].nres;
    if (want != l->nres)
        fail(p, t->loc, "%s makes %d result%s, not %d", ir_ops[code].name, want,
             want == 1 ? "" : "s", l->nres);
    lex(p);
    return (ir_opcode)code;
}

/* operands := [ use { ',' use } ], as many as the op table allows */
static void parse_operands(parser *p, ir_opcode code, op_line *l, su_loc name_loc)
{
    if (p->tok.kind == T_VALUE)
        do {
            if (l->nin == MAX_IN)
                fail(p, p->tok.loc, "too many operands (at most %d)", MAX_IN);
            l->in[l->nin++] = parse_use(p);
        } while (accept(p, ','));
    const ir_opinfo *info = &ir_ops[code];
    if (l->nin < info->min_in || l->nin > info->max_in) {
        if (info->min_in == info->max_in)
            fail(p, name_loc, "%s takes %d operand%s, not %d", info->name, info->min_in,
                 info->min_in == 1 ? "" : "s", l->nin);
        fail(p, name_loc, "%s takes %d to %d operands, not %d", info->name, info->min_in,
             info->max_in, l->nin);
    }
}

/* restypes := type [ sharding ] { ',' type [ sharding ] } */
static void parse_restypes(parser *p, op_line *l)
{
    for (int r = 0; r < l->nres; r++) {
        if (r)
            expect_punct(p, ',', "between the result types");
        parse_type(p, &l->type[r]);
        if (is_kw(p, "shard") || is_kw(p, "auto"))
            parse_sharding(p, &l->sh[r], l->type[r].rank);
    }
}

/* Appends the op l describes and defines its results. */
static void emit_op(parser *p, ir_opcode code, op_line *l)
{
    ir_op *op = ir_append(p->m, code, l->in, l->nin, &l->a, l->type);
    op->loc = l->loc;
    op->rep = l->rep;
    op->recompute = l->recompute;
    op->phase = (uint8_t)l->phase;
    for (int r = 0; r < l->nres; r++) {
        const token *t = &l->res[r];
        ir_value *v = op->res[r];
        v->sh = l->sh[r];
        /* %17 is a number the printer gives, not a name */
        if (!is_digit(t->s[1]))
            v->name = su_strndup(&p->m->arena, t->s + 1, t->n - 1);
        sym_put(p, t->s + 1, t->n - 1, v);
    }
}

/* op := [ results ] opname operands [ attrs ] [ ':' restypes ] [ 'rep' int ]
 *       [ 'recompute' int ] [ 'phase' ( 'backward' | 'optimizer' ) ]
 * (the ':' part is there exactly when the op has results) */
static void parse_op(parser *p)
{
    op_line *l = &p->opl;
    memset(l, 0, sizeof *l);
    l->loc = p->tok.loc;
    l->rep = -1;
    if (p->tok.kind == T_VALUE)
        parse_results(p, l);
    su_loc name_loc = p->tok.loc;
    ir_opcode code = parse_opname(p, l);
    parse_operands(p, code, l, name_loc);
    bool has_attrs = is_punct(p, '{');
    parse_attrs(p, code, &l->a);
    if (l->nres) {
        expect_punct(p, ':', has_attrs ? "after the attributes" : "after the operands");
        parse_restypes(p, l);
    }
    if (is_kw(p, "rep")) {
        lex(p);
        l->rep = parse_small_int(p, 0, "rep");
    }
    if (is_kw(p, "recompute")) {
        lex(p);
        l->recompute = parse_small_int(p, 1, "recompute");
    }
    if (is_kw(p, "phase")) {
        lex(p);
        if (is_kw(p, "backward"))
            l->phase = IR_PH_BACKWARD;
        else if (is_kw(p, "optimizer"))
            l->phase = IR_PH_OPTIMIZER;
        else
            fail(p, p->tok.loc, "expected 'backward' or 'optimizer' after 'phase'");
        lex(p);
    }
    emit_op(p, code, l);
}

/* ---- trailing lines ---- */

/* output := 'output' STRING '=' use */
static void parse_output(parser *p)
{
    su_loc loc = p->tok.loc;
    lex(p);
    su_loc at = p->tok.loc;
    const char *name = parse_string(p);
    for (int i = 0; i < p->m->outputs.n; i++)
        if (!strcmp(IR_OUTPUT(p->m, i)->name, name))
            fail(p, at, "\"%s\" is already an output (line %d)", name,
                 IR_OUTPUT(p->m, i)->loc.line);
    expect_punct(p, '=', "after the output's name");
    ir_add_output(p->m, name, parse_use(p), loc);
}

/* update := 'update' use '=' use [ 'grad' use ] */
static void parse_update(parser *p)
{
    lex(p);
    ir_value *src = parse_use(p);
    expect_punct(p, '=', "after the updated value");
    ir_value *v = parse_use(p), *grad = NULL;
    if (is_kw(p, "grad")) {
        lex(p);
        grad = parse_use(p);
    }
    ir_add_update(p->m, src, v, grad);
}

/* hyper := IDENT '=' double, the one called name */
static double parse_hyper(parser *p, const char *name, char sep)
{
    expect_kw(p, name);
    expect_punct(p, '=', NULL);
    double d = parse_double(p);
    expect_punct(p, sep, sep == ',' ? "between the hyperparameters" : "after the hyperparameters");
    return d;
}

/* optimizer := 'sgd' '(' 'lr' '=' double ',' 'momentum' '=' double ',' 'wd' '=' double
 *                  [',' 'clip' '=' double] [schedule] ')'
 *            | 'adamw' '(' 'lr' '=' double ',' 'beta1' '=' double ','
 *                   'beta2' '=' double ',' 'eps' '=' double ',' 'wd' '=' double
 *                   [',' 'clip' '=' double] [schedule] ')'
 * schedule := ',' 'warmup' '=' double ',' 'decay' '=' ('none' | 'cosine' | 'linear')
 *             ',' 'steps' '=' double ',' 'min_lr' '=' double */
static void parse_optimizer(parser *p, ir_train *t)
{
    bool sgd = is_kw(p, "sgd");
    if (!sgd && !is_kw(p, "adamw"))
        fail(p, p->tok.loc, "expected an optimizer: 'sgd' or 'adamw'");
    lex(p);
    expect_punct(p, '(', "after the optimizer");
    t->opt = sgd ? IR_OPT_SGD : IR_OPT_ADAMW;
    t->lr = parse_hyper(p, "lr", ',');
    if (sgd)
        t->momentum = parse_hyper(p, "momentum", ',');
    else {
        t->beta1 = parse_hyper(p, "beta1", ',');
        t->beta2 = parse_hyper(p, "beta2", ',');
        t->eps = parse_hyper(p, "eps", ',');
    }
    expect_kw(p, "wd");
    expect_punct(p, '=', NULL);
    t->wd = parse_double(p);
    bool sched = false;
    if (is_punct(p, ',')) {
        lex(p);
        sched = true;
        if (is_kw(p, "clip")) { /* optional */
            su_loc loc = p->tok.loc;
            lex(p);
            expect_punct(p, '=', NULL);
            t->clip = parse_double(p);
            if (!(t->clip > 0) || !isfinite(t->clip))
                fail(p, loc, "clip must be a positive number");
            sched = is_punct(p, ',');
            if (sched)
                lex(p);
        }
    }
    if (!sched) {
        expect_punct(p, ')', "after the hyperparameters");
        return;
    }
    /* optional: the schedule, all four */
    t->warmup = parse_hyper(p, "warmup", ',');
    expect_kw(p, "decay");
    expect_punct(p, '=', NULL);
    su_loc dloc = p->tok.loc;
    if (!is_kw(p, "none") && !is_kw(p, "cosine") && !is_kw(p, "linear"))
        fail(p, dloc, "expected a decay: 'none', 'cosine' or 'linear'");
    t->decay = is_kw(p, "cosine") ? IR_DECAY_COSINE
               : is_kw(p, "linear") ? IR_DECAY_LINEAR : IR_DECAY_NONE;
    lex(p);
    expect_punct(p, ',', "between the hyperparameters");
    t->steps = parse_hyper(p, "steps", ',');
    t->min_lr = parse_hyper(p, "min_lr", ')');
}

/* train := 'train' use [ 'with' optimizer ] [ 'zero' int 'over' axis ]
 *          [ 'keep' 'gathered' ] */
static void parse_train(parser *p)
{
    ir_train *t = &p->m->train;
    lex(p);
    t->loss = parse_use(p);
    if (is_kw(p, "with")) {
        lex(p);
        parse_optimizer(p, t);
    }
    if (is_kw(p, "zero")) {
        lex(p);
        su_loc loc = p->tok.loc;
        int64_t zero = parse_int(p);
        if (zero < 1 || zero > 3)
            fail(p, loc, "zero stage must be 1, 2 or 3");
        t->zero = (int)zero;
        expect_kw(p, "over");
        t->zero_axis = parse_axis(p);
    }
    if (is_kw(p, "keep")) {
        lex(p);
        expect_kw(p, "gathered");
        t->keep_gathered = true;
    }
}

/* ---- the module ---- */

/* Checks that a line of section s may come now. */
static void enter_section(parser *p, section s)
{
    bool single = s != S_OPS && s != S_OUTPUTS && s != S_UPDATES;
    if ((int)s < p->section && p->section < (int)(sizeof section_names / sizeof *section_names))
        fail(p, p->tok.loc, "%s must come before %s", section_names[s], section_names[p->section]);
    if (single && (int)s == p->section)
        fail(p, p->tok.loc, "duplicate %s line", section_names[s]);
    p->section = (int)s;
}

/* line := mesh | 'partitioned' | pipeline | op | output | update | train */
static void parse_line(parser *p)
{
    if (is_kw(p, "mesh")) {
        enter_section(p, S_MESH);
        parse_mesh(p);
    } else if (is_kw(p, "partitioned")) {
        enter_section(p, S_PARTITIONED);
        p->m->partitioned = true;
        lex(p);
    } else if (is_kw(p, "pipeline")) {
        enter_section(p, S_PIPELINE);
        parse_pipeline(p);
    } else if (is_kw(p, "output")) {
        enter_section(p, S_OUTPUTS);
        parse_output(p);
    } else if (is_kw(p, "update")) {
        enter_section(p, S_UPDATES);
        parse_update(p);
    } else if (is_kw(p, "train")) {
        enter_section(p, S_TRAIN);
        parse_train(p);
    } else if (p->tok.kind == T_VALUE || p->tok.kind == T_IDENT) {
        enter_section(p, S_OPS);
        parse_op(p);
    } else
        fail(p, p->tok.loc, "expected an op or a declaration, found %s",
             describe(&p->tok, (char[64]){0}));
}

/* module := { [ line ] EOL } [ line ] EOF */
static void parse_module(parser *p)
{
    lex(p);
    while (p->tok.kind != T_EOF) {
        if (p->tok.kind != T_EOL)
            parse_line(p);
        if (p->tok.kind == T_EOL)
            lex(p);
        else if (p->tok.kind != T_EOF)
            fail(p, p->tok.loc, "expected end of line, found %s", describe(&p->tok, (char[64]){0}));
    }
}

static void verify(parser *p)
{
    int bad;
    if (ir_verify_at(p->m, &p->verr, &bad))
        return;
    size_t n = p->verr.len;
    while (n && p->verr.s[n - 1] == '\n')
        n--;
    su_loc loc = bad >= 0 ? IR_OP(p->m, bad)->loc : (su_loc){0, 0};
    fail(p, loc, "invalid IR: %.*s", (int)n, n ? p->verr.s : "");
}

/* Parses and verifies; 0 on success, else JMP_OOM or JMP_ERROR. The
 * setjmp is here and p lives in ir_parse's frame, so p's contents are
 * still valid after the longjmp. */
static int parse_guarded(parser *p)
{
    switch (setjmp(p->jb)) {
    case 0: break;
    case JMP_OOM: return JMP_OOM;
    default: return JMP_ERROR;
    }
    p->m = ir_module_new(&p->jb);
    parse_module(p);
    verify(p);
    return 0;
}

ir_module *ir_parse(const su_src *whole, su_diag *diag, jmp_buf *oom)
{
    su_src text = *whole, *src = &text; /* without a byte order mark */
    if (!su_src_prepare(&text, diag))
        return NULL;
    parser p;
    memset(&p, 0, sizeof p);
    p.src = src;
    p.pos = p.line_start = src->text;
    p.end = src->text + src->len;
    p.line = 1;
    p.section = -1;
    su_buf_init(&p.verr, &p.jb);
    int r = parse_guarded(&p);
    free(p.syms.slot);
    su_buf_free(&p.verr);
    if (r) {
        ir_module_free(p.m);
        if (r == JMP_OOM)
            su_oom(oom);
        su_error_at(diag, src, p.err_loc, "%s", p.err);
        return NULL;
    }
    /* From here on the caller's jmp_buf catches the module's allocations. */
    p.m->oom = oom;
    p.m->arena.oom = oom;
    return p.m;
}
