/* ast.h: the syntax tree the grammar builds (frontend-internal).
 *
 * Nodes and statements live in the parse's arena and link through `next`
 * into lists. Every node carries the location of the token that names it
 * (an operator, a call's name, an identifier) so errors can point there. */
#ifndef SHARDC_FE_AST_H
#define SHARDC_FE_AST_H

#include "../ir/ir.h"

typedef enum {
    AST_INT,     /* ival */
    AST_FLOAT,   /* fval */
    AST_BOOL,    /* ival 0/1 */
    AST_STRING,  /* str */
    AST_NAME,    /* str */
    AST_DTYPE,   /* dtype */
    AST_BINARY,  /* op in "+-*" "/@", lhs, rhs */
    AST_NEG,     /* lhs */
    AST_CALL,    /* str = callee, args = list of expressions or AST_KWARG */
    AST_KWARG,   /* str = key, lhs = value */
    AST_LIST,    /* args = elements */
    AST_INDEX,   /* lhs[args]: args = AST_SLICE entries */
    AST_SLICE,   /* ival 0: the integer index lhs; 1: the range lhs:rhs (NULL: omitted) */
} ast_kind;

typedef struct ast_node ast_node;
struct ast_node {
    ast_kind kind;
    su_loc loc;
    int op;
    int64_t ival;
    double fval;
    const char *str;
    ir_dtype dtype;
    ast_node *lhs, *rhs;
    ast_node *args;
    ast_node *next;
};

/* One shard(...) entry: the axes splitting a dimension ("_": none). */
typedef struct ast_axis {
    const char *name;
    su_loc loc;
    struct ast_axis *next;
} ast_axis;

typedef struct ast_shard_entry {
    ast_axis *axes;        /* NULL for "_" */
    su_loc loc;
    struct ast_shard_entry *next;
} ast_shard_entry;

typedef struct ast_shard {
    ast_shard_entry *entries;
    int nentries;
    su_loc loc;            /* the "shard" keyword */
} ast_shard;

typedef struct ast_type {
    ir_dtype dtype;
    ast_node *dims;        /* constant expressions */
    su_loc loc;
    struct ast_type *next; /* a block's next result type */
} ast_type;

/* A name with an optional expression: mesh axes (`dp = 2`), let items,
 * block parameters (with a type), output names. */
typedef struct ast_item {
    const char *name;
    su_loc loc;
    ast_node *value;
    ast_type *type;
    struct ast_item *next;
} ast_item;

typedef enum {
    ST_MESH, ST_LET, ST_INPUT, ST_PARAM, ST_OUTPUT, ST_ASSIGN, ST_BLOCK,
    ST_RETURN, ST_REPEAT, ST_PIPELINE, ST_TRAIN,
} ast_stmt_kind;

typedef struct ast_stmt ast_stmt;
struct ast_stmt {
    ast_stmt_kind kind;
    su_loc loc;            /* the statement's first token */
    const char *name;      /* input/param/assign target, block, repeat's NAME,
                              train's loss, pipeline's schedule */
    su_loc name_loc;
    ast_item *items;       /* mesh axes, let items, output names, block params, an
                              assignment's names when it binds several */
    ast_type *type;        /* input/param type, block result types (a list) */
    ast_shard *shard;      /* optional annotation */
    ast_node *expr;        /* assignment value, return values (a list), param init, repeat
                              count, microbatches, train's optimizer call */
    ast_node *expr2;       /* schedule argument (interleaved V), zero K */
    const char *axis;      /* repeat's `over AXIS`, train's `zero K over AXIS` */
    su_loc axis_loc;
    ast_stmt *body;        /* block and repeat bodies */
    bool recompute;        /* a `recompute block` */
    ast_stmt *next;
};

#endif
