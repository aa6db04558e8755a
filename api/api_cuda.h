/* api_cuda.h: the CUDA outputs of shardc_program_emit (api_cuda.c). */
#ifndef SHARDC_API_CUDA_H
#define SHARDC_API_CUDA_H
#include "shardc.h"
#include "ir/ir.h"

/* `--emit fused-ir` (what = "fused-ir") or `--emit cuda` ("cuda") of the
 * n programs progs (a pipeline's stages, or one partitioned module) with
 * their groups fusion (the pipeline's fuse pass; NULL when it did not run:
 * they are made here the same way), for the architectures arch (narchs 0:
 * the default; -1: none, and the kernels are printed without targets).
 * *text is malloc'd. */
struct pass_fusion;
shardc_status api_emit_kernels(ir_module *const *progs, const struct pass_fusion *fusion, int n,
                               const char *what, const int *arch, int narchs, char **text,
                               size_t *len, char **error);

#endif
