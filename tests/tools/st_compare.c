/* st_compare: compares the tensors of two safetensors files, for the
 * semantic tests (DESIGN.md §7).
 *
 *   st_compare EXPECTED GOT [--rtol R] [--atol A]
 *
 * Every tensor of EXPECTED must be in GOT with the same shape; elements
 * (read as f32 whatever their dtype) must satisfy |got - want| <= atol +
 * rtol * |want|. Prints, per tensor, the max absolute and relative error;
 * on a failure also the worst element. Exit 0 when all match, 1 otherwise. */
#include "support/support.h"
#include "runtime/io/tensors.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static float *read_f32(const rt_st_file *f, const rt_st_entry *e, su_status *err)
{
    int64_t n = 1, start[RT_MAX_RANK] = {0};
    for (int d = 0; d < e->type.rank; d++)
        n *= e->type.dim[d];
    int esize = rt_dtype_size(e->type.dtype);
    void *raw = malloc((size_t)(n * esize) + 1);
    float *out = malloc((size_t)n * sizeof *out + 1);
    if (!raw || !out || rt_st_read_block(f, e->name, &e->type, start, e->type.dim, raw, err) != 0) {
        if (!raw || !out)
            su_fail(err, SU_NOMEM, "out of memory");
        free(raw);
        free(out);
        return NULL;
    }
    for (int64_t i = 0; i < n; i++) {
        switch (e->type.dtype) {
        case RT_F32: out[i] = ((float *)raw)[i]; break;
        case RT_F16: out[i] = su_f16_to_f32(((uint16_t *)raw)[i]); break;
        case RT_BF16: out[i] = su_bf16_to_f32(((uint16_t *)raw)[i]); break;
        case RT_BOOL: out[i] = ((uint8_t *)raw)[i]; break;
        default: out[i] = (float)((int32_t *)raw)[i]; break;
        }
    }
    free(raw);
    return out;
}

int main(int argc, char **argv)
{
    double rtol = 1e-5, atol = 1e-6;
    const char *paths[2] = {NULL, NULL};
    int np = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--rtol") && i + 1 < argc)
            rtol = atof(argv[++i]);
        else if (!strcmp(argv[i], "--atol") && i + 1 < argc)
            atol = atof(argv[++i]);
        else if (np < 2)
            paths[np++] = argv[i];
        else
            np = 3;
    }
    if (np != 2) {
        fprintf(stderr, "usage: st_compare EXPECTED GOT [--rtol R] [--atol A]\n");
        return 2;
    }
    su_status err;
    rt_st_file *want, *got;
    if (rt_st_open(paths[0], &want, &err) != 0) {
        fprintf(stderr, "st_compare: %s\n", err.msg);
        return 1;
    }
    if (rt_st_open(paths[1], &got, &err) != 0) {
        fprintf(stderr, "st_compare: %s\n", err.msg);
        rt_st_close(want);
        return 1;
    }
    int bad = 0;
    for (int t = 0; t < want->nentries; t++) {
        const rt_st_entry *e = &want->entries[t];
        const rt_st_entry *g = rt_st_find(got, e->name);
        char ts[160], gs[160];
        rt_type_str(&e->type, ts, sizeof ts);
        if (!g) {
            printf("%s %s: missing from %s\n", e->name, ts, paths[1]);
            bad++;
            continue;
        }
        rt_type_str(&g->type, gs, sizeof gs);
        bool same = g->type.rank == e->type.rank;
        for (int d = 0; same && d < e->type.rank; d++)
            same = g->type.dim[d] == e->type.dim[d];
        if (!same) {
            printf("%s: shape %s expected, %s got\n", e->name, ts, gs);
            bad++;
            continue;
        }
        float *a = read_f32(want, e, &err), *b = a ? read_f32(got, g, &err) : NULL;
        if (!a || !b) {
            printf("%s: %s\n", e->name, err.msg);
            free(a);
            bad++;
            continue;
        }
        int64_t n = 1;
        for (int d = 0; d < e->type.rank; d++)
            n *= e->type.dim[d];
        double max_abs = 0, max_rel = 0, worst_excess = 0;
        int64_t worst = -1;
        for (int64_t i = 0; i < n; i++) {
            double diff = fabs((double)b[i] - (double)a[i]);
            double rel = diff / (fabs((double)a[i]) > 1e-30 ? fabs((double)a[i]) : 1e-30);
            if (!(diff == diff) || isinf(diff))
                diff = rel = INFINITY;
            max_abs = diff > max_abs ? diff : max_abs;
            max_rel = rel > max_rel ? rel : max_rel;
            double excess = diff - (atol + rtol * fabs((double)a[i]));
            if (excess > 0 && (worst < 0 || excess > worst_excess)) {
                worst = i;
                worst_excess = excess;
            }
        }
        printf("%s %s: max abs err %.3g, max rel err %.3g (atol %g, rtol %g): %s\n", e->name, ts,
               max_abs, max_rel, atol, rtol, worst < 0 ? "ok" : "MISMATCH");
        if (worst >= 0) {
            printf("  worst at flat index %lld: expected %.9g, got %.9g\n", (long long)worst,
                   (double)a[worst], (double)b[worst]);
            bad++;
        }
        free(a);
        free(b);
    }
    rt_st_close(want);
    rt_st_close(got);
    return bad ? 1 : 0;
}
