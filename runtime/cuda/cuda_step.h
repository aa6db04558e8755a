/* cuda_step.h: what the CUDA backend (cuda.h) decides about a step without
 * a GPU, so that it is tested on machines without one: which instructions
 * run on the device and which on the host (where a CUDA graph must split),
 * and what the kernels' error words mean.
 *
 * Graphs (`shardrun --graph`, rt_session_opts.graph): the first run of a
 * rank is eager; the next captures each span of device work into a graph
 * (cuStreamBeginCapture on the compute stream .. cuStreamEndCapture,
 * cuGraphInstantiate) and launches it; every later run launches the graphs.
 * In those runs params and states are not loaded (they stay on the device),
 * so their sources do nothing, and a constant is a memset on the device.
 * An input is device work too: the host reads it before the run starts,
 * into a page-locked block at a place of its own, and the graph copies it
 * in from there (so a leading step dim's batch k reaches the same device
 * buffer the graph reads); one made from the seed is the init kernel, one
 * bound in CUDA memory a device copy, and the graphs are captured again
 * when an input's source changes. What the host must do splits the step:
 * i32 arithmetic (the CPU backend on host copies) and collectives, sends and
 * receives through the host communicator (`local`, `mpi`). The spans
 * between them are captured, the host instructions run between the graph
 * launches as without --graph. With `--comm nccl` the collectives, sends
 * and receives are in the spans: captured with the comm stream joined to
 * the capture (each op after an event of the compute stream, the compute
 * stream waiting on the last op's event before the span ends), NCCL's
 * kernels and the re-layout copies become nodes of the graph. A run that
 * reloads params and states (one was bound again, a checkpoint resumed)
 * runs eagerly; the graphs stay, the buffers they use do not move.
 *
 * Error words: a kernel that can meet an id outside its table or a label
 * outside its classes (embedding, embedding_grad, cross_entropy,
 * cross_entropy_grad: codegen/cuda.h) makes that row NaN and records the
 * lowest such index in its module's `__device__ unsigned long long
 * sh_error`: 0 when all is well, else (0xffffffff - index) << 32 | the id's
 * 32 bits. */
#ifndef SHARDC_RT_CUDA_STEP_H
#define SHARDC_RT_CUDA_STEP_H
#include "runtime/plan/plan.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Per instruction of stage st: the kernel whose group holds it, -1 none
 * (malloc'd; NULL when out of memory). */
int32_t *rt_cuda_kernel_map(const rt_plan *p, int st);

/* An instruction on i32 and bool only (index arithmetic, and moves of
 * masks), which the backend runs by the CPU backend on host copies where
 * no kernel of the plan runs it (the fusion pass's groups and the kernels
 * of single ops take the i32 ops the examples have, division included). */
bool rt_cuda_on_host(const rt_instr *in);

/* A const's element as the bits of its dtype (the session's fill_const:
 * the value rounded to f32, then to f16 or bf16; truncated for i32), in
 * *bytes (2 or 4) bytes: the backend fills the buffer with a memset. */
uint32_t rt_cuda_const_word(const rt_instr *in, int *bytes);

/* What instruction i of stage st does in a run that loads no params
 * (kernel_at: rt_cuda_kernel_map's): */
typedef enum {
    RT_STEP_IDLE,   /* nothing: a group's instruction other than its anchor,
                     * a param or state source, a copy onto itself */
    RT_STEP_DEVICE, /* only queues work on the compute stream: a kernel at
                     * its anchor, a device copy, a cuBLASLt matmul, a
                     * const (a memset), an input (a copy or the init
                     * kernel: its host part is done before the run) */
    RT_STEP_HOST,   /* waits for the stream and works on the host: i32
                     * arithmetic, a collective, send or recv through the
                     * host communicator */
} rt_step_role;
/* comm_on_device: collectives, sends and receives are queued on the device
 * (`--comm nccl`: on the comm stream, joined to the compute stream by
 * events), so they are device work; false: through the host. */
rt_step_role rt_cuda_step_role(const rt_plan *p, int st, const int32_t *kernel_at, int i,
                               bool comm_on_device);

/* A span of instructions [first, end) captured as one graph: it starts
 * and ends with a device instruction and holds no host one. */
typedef struct rt_graph_span {
    int32_t first, end;
} rt_graph_span;

/* The spans of stage st: every device instruction in exactly one, each as
 * long as it can be (only host instructions between two spans), in
 * program order. out has room for ninstr / 2 + 1 spans. Returns their
 * number, or -1 when out of memory. */
int32_t rt_cuda_graph_spans(const rt_plan *p, int st, bool comm_on_device, rt_graph_span *out);

/* The error word a kernel records for index `index` (< 0xffffffff) and id
 * (the device's formula). */
uint64_t rt_cuda_error_word(int64_t index, int32_t id);
/* The index and id of a non-zero word; false for 0 (no error). */
bool rt_cuda_error_decode(uint64_t word, int64_t *index, int32_t *id);

/* The instruction of kernel k that checks its ids, labels or divisors
 * (embedding, embedding_grad, cross_entropy, cross_entropy_grad,
 * check_ids, check_labels, div of i32), -1 none. */
int32_t rt_cuda_checked_instr(const rt_plan *p, const rt_kernel *k);

/* The message for kernel k's non-zero error word, the CPU backend's for
 * the same case after the place: "stage 0, instruction 3 (embedding,
 * kernel k12_embedding): embedding id 9 at index 5 is outside the table's
 * 8 rows", or "... (cross_entropy, kernel k7_cross_entropy):
 * cross_entropy label 10 at index 2 is outside the 10 classes (0..9)", or
 * "... (div, kernel k4_div): div: i32 division by zero at result index 3". */
void rt_cuda_error_message(const rt_plan *p, int32_t k, uint64_t word, char *buf, size_t n);

#endif
