/* parser.y: the shard language's grammar (LANGUAGE.md), building the AST of
 * ast.h. A pure bison parser with locations; it stops at the first error. */
%code requires {
#include "frontend/parse.h"
typedef void *yyscan_t;
}

%code {
#include "fe_lexer.h"

static void yyerror(YYLTYPE *loc, yyscan_t scanner, fe_parse *P, const char *msg);
static su_loc L(YYLTYPE l) { return (su_loc){l.first_line, l.first_column}; }
static ast_node *node(fe_parse *P, ast_kind k, YYLTYPE l);
static bool recompute_word(fe_parse *P, const char *w, YYLTYPE l);
static ast_stmt *stmt(fe_parse *P, ast_stmt_kind k, YYLTYPE l);
static ast_item *item(fe_parse *P, const char *name, YYLTYPE l);
#define NEW(T) ((T *)su_alloc(P->arena, sizeof(T)))
/* A deep parse's stack (and a long message) lives in the AST's arena, so
 * an allocation failure that jumps out of yyparse leaks nothing. */
#define YYMALLOC(n) su_alloc(P->arena, (n))
#define YYFREE(p) ((void)(p))
/* Appends b to the list a (linked through next); lists are short. */
#define APPEND(T, a, b) ((T *)append_((void *)(a), (void *)(b), offsetof(T, next)))
static void *append_(void *a, void *b, size_t next_off);
static ast_stmt *finish_lines(ast_stmt *rev, ast_stmt *last);
}

%define api.pure full
%define api.prefix {fe_yy}
%define parse.error detailed
%locations
%param {yyscan_t scanner}
%parse-param {fe_parse *P}

%union {
    int64_t ival;
    double fval;
    const char *str;
    ir_dtype dtype;
    ast_node *node;
    ast_stmt *stmt;
    ast_item *item;
    ast_type *type;
    ast_shard *shard;
    ast_shard_entry *entry;
    ast_axis *axis;
}

%token NEWLINE "end of line"
%token MESH "mesh" LET "let" INPUT "input" PARAM "param" OUTPUT "output"
%token BLOCK "block" RETURN "return" REPEAT "repeat" AS "as" OVER "over"
%token PIPELINE "pipeline" MICROBATCHES "microbatches" SCHEDULE "schedule"
%token TRAIN "train" WITH "with" ZERO "zero" SHARD "shard" ARROW "->"
%token LE "<=" GE ">=" EQ "==" NE "!="
%token <ival> INT "integer" BOOL "boolean"
%token <fval> FLOAT "number"
%token <str> IDENT "name" STRING "string" SCHED_1F1B "1f1b"
%token <dtype> DTYPE "dtype"

%type <stmt> lines opt_stmt stmt block_body
%type <node> expr primary opt_args args arg opt_exprs exprs opt_init opt_sched_arg
%type <node> indices index
%type <str> sched_name
%type <item> mesh_axes mesh_axis let_items let_item names opt_bparams bparams bparam
%type <type> type types
%type <shard> opt_shard
%type <entry> shard_entries shard_entry
%type <axis> axis_names

%nonassoc '<' '>' LE GE EQ NE   /* comparisons: below + and -, not chained */
%left '+' '-'
%left '*' '/' '@'
%precedence UMINUS

%%

/* program: lines   (the scanner ends every file with a NEWLINE) */
program:
    lines                   { P->program = finish_lines($1, NULL); }
;

/* lines: { [stmt] NEWLINE }   (built last-first; finish_lines reverses) */
lines:
    %empty                  { $$ = NULL; }
  | lines NEWLINE           { $$ = $1; }
  | lines stmt NEWLINE      { $2->next = $1; $$ = $2; }
;

opt_stmt:
    %empty                  { $$ = NULL; }
  | stmt
;

stmt:
    /* mesh AXIS [= N], ... */
    MESH mesh_axes          { $$ = stmt(P, ST_MESH, @1); $$->items = $2; }
    /* let NAME = EXPR, ... */
  | LET let_items           { $$ = stmt(P, ST_LET, @1); $$->items = $2; }
    /* input NAME : TYPE [SHARDING] */
  | INPUT IDENT ':' type opt_shard {
        $$ = stmt(P, ST_INPUT, @1);
        $$->name = $2; $$->name_loc = L(@2); $$->type = $4; $$->shard = $5;
    }
    /* param NAME : TYPE [SHARDING] [= INIT] */
  | PARAM IDENT ':' type opt_shard opt_init {
        $$ = stmt(P, ST_PARAM, @1);
        $$->name = $2; $$->name_loc = L(@2); $$->type = $4; $$->shard = $5; $$->expr = $6;
    }
    /* output NAME, ... */
  | OUTPUT names            { $$ = stmt(P, ST_OUTPUT, @1); $$->items = $2; }
    /* NAME = EXPR [SHARDING] */
  | IDENT '=' expr opt_shard {
        $$ = stmt(P, ST_ASSIGN, @1);
        $$->name = $1; $$->name_loc = L(@1); $$->expr = $3; $$->shard = $4;
    }
    /* NAME, NAME, ... = CALL: the results of a call that returns several */
  | IDENT ',' names '=' expr opt_shard {
        $$ = stmt(P, ST_ASSIGN, @1);
        $$->name = $1; $$->name_loc = L(@1); $$->expr = $5; $$->shard = $6;
        $$->items = item(P, $1, @1); $$->items->next = $3;
    }
    /* block NAME(PARAM : TYPE, ...) -> TYPE { ... } */
  | BLOCK IDENT '(' opt_bparams ')' ARROW type block_body {
        $$ = stmt(P, ST_BLOCK, @1);
        $$->name = $2; $$->name_loc = L(@2); $$->items = $4; $$->type = $7; $$->body = $8;
    }
    /* block NAME(PARAM : TYPE, ...) -> (TYPE, TYPE, ...) { ... }: several results */
  | BLOCK IDENT '(' opt_bparams ')' ARROW '(' types ')' block_body {
        $$ = stmt(P, ST_BLOCK, @1);
        $$->name = $2; $$->name_loc = L(@2); $$->items = $4; $$->type = $8; $$->body = $10;
    }
    /* recompute block ...: the same, its values recomputed in the backward
     * (`recompute` is a name, not a reserved word, so version 0 programs
     * that use it keep compiling) */
  | IDENT BLOCK IDENT '(' opt_bparams ')' ARROW type block_body {
        if (!recompute_word(P, $1, @1))
            YYERROR;
        $$ = stmt(P, ST_BLOCK, @1); $$->recompute = true;
        $$->name = $3; $$->name_loc = L(@3); $$->items = $5; $$->type = $8; $$->body = $9;
    }
  | IDENT BLOCK IDENT '(' opt_bparams ')' ARROW '(' types ')' block_body {
        if (!recompute_word(P, $1, @1))
            YYERROR;
        $$ = stmt(P, ST_BLOCK, @1); $$->recompute = true;
        $$->name = $3; $$->name_loc = L(@3); $$->items = $5; $$->type = $9; $$->body = $11;
    }
    /* return EXPR, ... */
  | RETURN exprs            { $$ = stmt(P, ST_RETURN, @1); $$->expr = $2; }
    /* repeat N as NAME [over AXIS] { ... } */
  | REPEAT expr AS IDENT block_body {
        $$ = stmt(P, ST_REPEAT, @1);
        $$->expr = $2; $$->name = $4; $$->name_loc = L(@4); $$->body = $5;
    }
  | REPEAT expr AS IDENT OVER IDENT block_body {
        $$ = stmt(P, ST_REPEAT, @1);
        $$->expr = $2; $$->name = $4; $$->name_loc = L(@4);
        $$->axis = $6; $$->axis_loc = L(@6); $$->body = $7;
    }
    /* pipeline microbatches M schedule NAME [(V)] */
  | PIPELINE MICROBATCHES expr SCHEDULE sched_name opt_sched_arg {
        $$ = stmt(P, ST_PIPELINE, @1);
        $$->expr = $3; $$->name = $5; $$->name_loc = L(@5); $$->expr2 = $6;
    }
    /* train LOSS with OPTIMIZER[(OPTION = VALUE, ...)] [zero K over AXIS] */
  | TRAIN IDENT WITH primary {
        $$ = stmt(P, ST_TRAIN, @1);
        $$->name = $2; $$->name_loc = L(@2); $$->expr = $4;
    }
  | TRAIN IDENT WITH primary ZERO expr OVER IDENT {
        $$ = stmt(P, ST_TRAIN, @1);
        $$->name = $2; $$->name_loc = L(@2); $$->expr = $4;
        $$->expr2 = $6; $$->axis = $8; $$->axis_loc = L(@8);
    }
;

/* block_body: '{' lines [stmt] '}' */
block_body:
    '{' lines opt_stmt '}'  { $$ = finish_lines($2, $3); }
;

mesh_axes:
    mesh_axis
  | mesh_axes ',' mesh_axis { $$ = APPEND(ast_item, $1, $3); }
;

mesh_axis:
    IDENT                   { $$ = item(P, $1, @1); }
  | IDENT '=' expr          { $$ = item(P, $1, @1); $$->value = $3; }
;

let_items:
    let_item
  | let_items ',' let_item  { $$ = APPEND(ast_item, $1, $3); }
;

let_item:
    IDENT '=' expr          { $$ = item(P, $1, @1); $$->value = $3; }
;

names:
    IDENT                   { $$ = item(P, $1, @1); }
  | names ',' IDENT         { $$ = APPEND(ast_item, $1, item(P, $3, @3)); }
;

opt_bparams:
    %empty                  { $$ = NULL; }
  | bparams
;

bparams:
    bparam
  | bparams ',' bparam      { $$ = APPEND(ast_item, $1, $3); }
;

bparam:
    IDENT ':' type          { $$ = item(P, $1, @1); $$->type = $3; }
;

/* type: DTYPE '[' [EXPR, ...] ']' */
type:
    DTYPE '[' opt_exprs ']' {
        $$ = NEW(ast_type); $$->dtype = $1; $$->dims = $3; $$->loc = L(@1);
    }
;

types:
    type
  | types ',' type          { $$ = APPEND(ast_type, $1, $3); }
;

/* sharding: shard(ENTRY, ...), ENTRY: _ | AXIS | (AXIS, ...) */
opt_shard:
    %empty                  { $$ = NULL; }
  | SHARD '(' ')'           { $$ = NEW(ast_shard); $$->loc = L(@1); }
  | SHARD '(' shard_entries ')' {
        $$ = NEW(ast_shard); $$->loc = L(@1); $$->entries = $3;
        for (ast_shard_entry *e = $3; e; e = e->next)
            $$->nentries++;
    }
;

shard_entries:
    shard_entry
  | shard_entries ',' shard_entry { $$ = APPEND(ast_shard_entry, $1, $3); }
;

shard_entry:
    IDENT {
        $$ = NEW(ast_shard_entry); $$->loc = L(@1);
        if (strcmp($1, "_") != 0) {
            $$->axes = NEW(ast_axis); $$->axes->name = $1; $$->axes->loc = L(@1);
        }
    }
  | '(' axis_names ')'      { $$ = NEW(ast_shard_entry); $$->loc = L(@1); $$->axes = $2; }
;

axis_names:
    IDENT                   { $$ = NEW(ast_axis); $$->name = $1; $$->loc = L(@1); }
  | axis_names ',' IDENT {
        ast_axis *a = NEW(ast_axis); a->name = $3; a->loc = L(@3);
        $$ = APPEND(ast_axis, $1, a);
    }
;

opt_init:
    %empty                  { $$ = NULL; }
  | '=' primary             { $$ = $2; }
;

/* a schedule's name: gpipe, interleaved, or 1f1b, which the lexer gives its
 * own token so that it can never name anything else */
sched_name:
    IDENT
  | SCHED_1F1B
;

opt_sched_arg:
    %empty                  { $$ = NULL; }
  | '(' expr ')'            { $$ = $2; }
;

/* expr: expr ('+' | '-' | '*' | '/' | '@') expr | '-' expr | primary
 *     | expr ('<' | '<=' | '>' | '>=' | '==' | '!=') expr
 * (a comparison's op is 'l' for <=, 'g' for >=, 'e' for ==, 'n' for !=) */
expr:
    expr '<' expr           { $$ = node(P, AST_BINARY, @2); $$->op = '<'; $$->lhs = $1; $$->rhs = $3; }
  | expr LE expr            { $$ = node(P, AST_BINARY, @2); $$->op = 'l'; $$->lhs = $1; $$->rhs = $3; }
  | expr '>' expr           { $$ = node(P, AST_BINARY, @2); $$->op = '>'; $$->lhs = $1; $$->rhs = $3; }
  | expr GE expr            { $$ = node(P, AST_BINARY, @2); $$->op = 'g'; $$->lhs = $1; $$->rhs = $3; }
  | expr EQ expr            { $$ = node(P, AST_BINARY, @2); $$->op = 'e'; $$->lhs = $1; $$->rhs = $3; }
  | expr NE expr            { $$ = node(P, AST_BINARY, @2); $$->op = 'n'; $$->lhs = $1; $$->rhs = $3; }
  | expr '+' expr           { $$ = node(P, AST_BINARY, @2); $$->op = '+'; $$->lhs = $1; $$->rhs = $3; }
  | expr '-' expr           { $$ = node(P, AST_BINARY, @2); $$->op = '-'; $$->lhs = $1; $$->rhs = $3; }
  | expr '*' expr           { $$ = node(P, AST_BINARY, @2); $$->op = '*'; $$->lhs = $1; $$->rhs = $3; }
  | expr '/' expr           { $$ = node(P, AST_BINARY, @2); $$->op = '/'; $$->lhs = $1; $$->rhs = $3; }
  | expr '@' expr           { $$ = node(P, AST_BINARY, @2); $$->op = '@'; $$->lhs = $1; $$->rhs = $3; }
  | '-' expr %prec UMINUS   { $$ = node(P, AST_NEG, @1); $$->lhs = $2; }
  | primary
;

/* primary: literal | NAME | NAME '(' [ARG, ...] ')' | '(' expr ')' | '[' [expr, ...] ']' | DTYPE
 *        | primary '[' INDEX, ... ']' */
primary:
    INT                     { $$ = node(P, AST_INT, @1); $$->ival = $1; }
  | FLOAT                   { $$ = node(P, AST_FLOAT, @1); $$->fval = $1; }
  | BOOL                    { $$ = node(P, AST_BOOL, @1); $$->ival = $1; }
  | STRING                  { $$ = node(P, AST_STRING, @1); $$->str = $1; }
  | DTYPE                   { $$ = node(P, AST_DTYPE, @1); $$->dtype = $1; }
  | IDENT                   { $$ = node(P, AST_NAME, @1); $$->str = $1; }
  | IDENT '(' opt_args ')'  { $$ = node(P, AST_CALL, @1); $$->str = $1; $$->args = $3; }
  | '(' expr ')'            { $$ = $2; }
  | '[' opt_exprs ']'       { $$ = node(P, AST_LIST, @1); $$->args = $2; }
    /* indexing: x[i, a:b, :, -1] (LANGUAGE.md §12) */
  | primary '[' indices ']' { $$ = node(P, AST_INDEX, @2); $$->lhs = $1; $$->args = $3; }
;
/* index: EXPR | [EXPR] ':' [EXPR]; an AST_SLICE with ival 0 for an
 * integer (lhs), 1 for a range (lhs, rhs: the bounds, NULL when omitted) */
indices:
    index
  | indices ',' index       { $$ = APPEND(ast_node, $1, $3); }
;
index:
    expr                    { $$ = node(P, AST_SLICE, @1); $$->lhs = $1; }
  | ':'                     { $$ = node(P, AST_SLICE, @1); $$->ival = 1; }
  | expr ':'                { $$ = node(P, AST_SLICE, @1); $$->ival = 1; $$->lhs = $1; }
  | ':' expr                { $$ = node(P, AST_SLICE, @1); $$->ival = 1; $$->rhs = $2; }
  | expr ':' expr           { $$ = node(P, AST_SLICE, @1); $$->ival = 1; $$->lhs = $1; $$->rhs = $3; }
;

/* a trailing comma is allowed, as in Python */
opt_args:
    %empty                  { $$ = NULL; }
  | args
  | args ','                { $$ = $1; }
;

args:
    arg
  | args ',' arg            { $$ = APPEND(ast_node, $1, $3); }
;

arg:
    expr
  | IDENT '=' expr          { $$ = node(P, AST_KWARG, @1); $$->str = $1; $$->lhs = $3; }
;

opt_exprs:
    %empty                  { $$ = NULL; }
  | exprs
  | exprs ','               { $$ = $1; }
;

exprs:
    expr
  | exprs ',' expr          { $$ = APPEND(ast_node, $1, $3); }
;

%%

static void yyerror(YYLTYPE *loc, yyscan_t scanner, fe_parse *P, const char *msg)
{
    (void)scanner;
    if (!strcmp(msg, "memory exhausted")) /* bison's stack: deep nesting */
        msg = "the expression is nested too deeply";
    su_error_at(P->diag, P->src, L(*loc), "%s", msg);
}

/* The word before `block`: only `recompute` may stand there. */
static bool recompute_word(fe_parse *P, const char *w, YYLTYPE l)
{
    if (!strcmp(w, "recompute"))
        return true;
    su_error_at(P->diag, P->src, L(l), "unexpected name '%s' before 'block' (only 'recompute' "
                "may stand there)", w);
    return false;
}
static ast_node *node(fe_parse *P, ast_kind k, YYLTYPE l)
{
    ast_node *n = NEW(ast_node);
    n->kind = k;
    n->loc = L(l);
    return n;
}

static ast_stmt *stmt(fe_parse *P, ast_stmt_kind k, YYLTYPE l)
{
    ast_stmt *s = NEW(ast_stmt);
    s->kind = k;
    s->loc = L(l);
    return s;
}

static ast_item *item(fe_parse *P, const char *name, YYLTYPE l)
{
    ast_item *it = NEW(ast_item);
    it->name = name;
    it->loc = L(l);
    return it;
}

static void *append_(void *a, void *b, size_t next_off)
{
    if (!a)
        return b;
    char *p = a;
    while (*(void **)(p + next_off))
        p = *(void **)(p + next_off);
    *(void **)(p + next_off) = b;
    return a;
}

/* Statement lists grow at the front (long files stay linear); this puts
 * them back in source order and adds the final statement, if any. */
static ast_stmt *finish_lines(ast_stmt *rev, ast_stmt *last)
{
    ast_stmt *out = last;
    while (rev) {
        ast_stmt *next = rev->next;
        rev->next = out;
        out = rev;
        rev = next;
    }
    return out;
}

typedef struct parse_run {
    fe_parse *P;
    yyscan_t scanner;
    int rc;
} parse_run;

static void parse(void *arg)
{
    parse_run *r = arg;
    r->P->line = r->P->col = 1;
    r->P->depth = 0;
    r->P->last_nl = true;
    fe_yy_scan_bytes(r->P->src->text, (int)r->P->src->len, r->scanner);
    r->rc = fe_yyparse(r->scanner, r->P);
}

/* The scanner is freed here after an allocation failure too (its memory
 * is the arena's: lexer.l). */
bool fe_parse_source(fe_parse *P)
{
    jmp_buf *oom = P->arena->oom;
    parse_run r = {.P = P};
    if (fe_yylex_init_extra(P, &r.scanner))
        su_oom(oom);
    bool done = su_guarded(oom, parse, &r);
    fe_yylex_destroy(r.scanner); /* its buffers too */
    if (!done)
        su_oom(oom);
    return r.rc == 0 && P->diag->nerrors == 0;
}
