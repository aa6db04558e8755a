/* parse.h: the state shared by the flex scanner and the bison parser
 * (frontend-internal). */
#ifndef SHARDC_FE_PARSE_H
#define SHARDC_FE_PARSE_H

#include "ast.h"

typedef struct fe_parse {
    su_arena *arena;        /* the AST's home */
    su_diag *diag;
    const su_src *src;
    ast_stmt *program;      /* the result */
    /* scanner state */
    int line, col;          /* position of the next byte */
    int depth;              /* open ( and [: newlines inside are spaces */
    su_loc open[64];        /* where the outermost open brackets are */
    char open_ch[64];
    bool last_nl;           /* the last token was a NEWLINE (or none yet) */
} fe_parse;

/* Scans and parses P->src into P->program. Returns false with the error in
 * P->diag. */
bool fe_parse_source(fe_parse *P);

#endif
