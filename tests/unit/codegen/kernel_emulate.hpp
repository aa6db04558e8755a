// kernel_emulate.hpp: the CUDA device runtime on the host, for
// test_kernel_emulate, which compiles generated kernels as C++ with this
// header first and calls emu_launch for each. Not part of the library.
//
// A launch runs blocks 0 .. grid-1 one after another on the calling OS
// thread. A kernel whose threads work alone runs its threads in turn, each
// to its return. A cooperative one (block barriers, warp intrinsics,
// shared memory) runs a block's threads as fibers, one stack each from
// emu_setup's, under a round-robin scheduler: a thread runs until it waits
// at a barrier or returns, and threadIdx is set before each resume. On
// x86-64 a fiber switch is emu_fiber_switch below, which saves the
// registers a call keeps and swaps stacks; elsewhere (or with
// EMU_UCONTEXT defined) it is ucontext's swapcontext, which also saves
// and sets the signal mask, a system call each way: 5.35 million of them
// on one model of test_kernel_emulate, over half of its run.
//   __syncthreads()  block barrier; a thread that has returned counts as
//                    arrived, as on a GPU.
//   __syncwarp(), __shfl_sync, __shfl_up_sync, __shfl_down_sync,
//   __shfl_xor_sync (width honoured), __ballot_sync, __any_sync,
//   __all_sync      warp-synchronous over the 32 lanes (lane = threadIdx.x
//                    % 32): each lane deposits its value, a warp barrier,
//                    each reads its source lane's, a second warp barrier.
//                    The mask must be full and every lane of the warp live:
//                    a call after a warp-mate returned, or a return while
//                    warp-mates wait in one, fails the launch.
//   __activemask()   the lanes of the warp that have not returned.
//   atomics          plain read-modify-writes (one OS thread runs all);
//                    __threadfence() does nothing.
//   shared memory    `extern __shared__ T x[];` is rewritten by the test to
//                    `T *const x = (T *)emu_dynamic_shared;`: the launch's
//                    dynamic shared bytes, NaN bytes (0xff) at each block's
//                    start so that a read before a write shows, from a
//                    128-byte aligned base to a guard page (a kernel reading
//                    past its bytes reaches it once past the next multiple
//                    of 128). A fixed `__shared__ T x[N];` becomes a
//                    static array (one for all blocks, not re-poisoned).
//   nvcuda::wmma    16 x 16 x 16 fragments of half, __nv_bfloat16 and
//                    float: each lane's fragment holds the whole tile
//                    (num_elements 256, element e at row e / 16, column
//                    e % 16: the API leaves the mapping unspecified, so a
//                    kernel right under any mapping is right under this
//                    one). load_matrix_sync, store_matrix_sync and mma_sync
//                    are warp-synchronous as the shuffles are, and fail the
//                    launch for a pointer not 32-byte aligned or a leading
//                    dimension not a multiple of 16 bytes; store_matrix_sync
//                    writes from lane 0 alone, so that a lane reading the
//                    tile before a __syncwarp reads what was there before.
//                    mma_sync sums each element's 16 products in order in
//                    f32 (a GPU's tensor cores sum them in an order of their
//                    own).
//   ldmatrix, mma.sync  the kernels' X_MMA helpers (sh_ldsm2, sh_ldsm2t,
//                    sh_ldsm4, sh_mma_bf16, sh_mma_f16), warp-synchronous:
//                    each lane's result built from every lane's operands
//                    as the PTX ISA lays out m8n8 tiles and m16n8k16
//                    fragments (at the end of this file); sh_max_nan and
//                    sh_exp2 (max.NaN, ex2.approx.ftz) by libm's exp2f,
//                    flushing a result below 2^-126 to 0.
//   cp.async        sh_cp16, sh_cp_commit, sh_cp_wait_all: a copy lands at
//                    the first block barrier after its thread's wait, its
//                    bytes NaN from the issue until then (so a read too
//                    early, or a copy over bytes that another thread still
//                    reads, shows; stricter than a GPU, where the thread
//                    itself may read them right after its wait); a destination
//                    outside the shared memory or not 16-byte aligned, or a
//                    source not 16-byte aligned, fails the launch.
// A deadlock (no thread can run, some have not returned) fails the launch.
// A failed launch stops at once; emu_launch returns -1 with a message.
#include <cmath>
#include <cstdarg>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <type_traits>
#include <utility>
#include <ucontext.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>

#undef __global__
#define __global__
#undef __launch_bounds__
#define __launch_bounds__(...)
#undef __shared__
#define __shared__ static

struct emu_dim3 {
    unsigned x, y, z;
};
static emu_dim3 threadIdx, blockIdx, blockDim, gridDim;
static const int warpSize = 32;
static unsigned char *emu_dynamic_shared; // this launch's, shared_bytes long

static float __int_as_float(int x) { float f; std::memcpy(&f, &x, 4); return f; }
static int __float_as_int(float f) { int x; std::memcpy(&x, &f, 4); return x; }
static float __uint_as_float(unsigned x) { float f; std::memcpy(&f, &x, 4); return f; }
static unsigned __float_as_uint(float f) { unsigned x; std::memcpy(&x, &f, 4); return x; }
template <typename T> static T min(T a, T b) { return b < a ? b : a; }
template <typename T> static T max(T a, T b) { return a < b ? b : a; }

namespace emu {

enum { WARP = 32, MAX_THREADS = 1024 };
enum state { RUN, AT_WARP, AT_BLOCK, DONE };

#if defined(__x86_64__) && !defined(EMU_UCONTEXT)
#define EMU_SWITCH 1
// emu_fiber_switch(save, to): pushes the registers the System V ABI has a
// callee keep (rbp, rbx, r12 to r15), stores the stack pointer at *save,
// takes `to` as the stack pointer and pops what was pushed there, then
// returns to the address above it. The floating-point control words are
// left alone: no kernel changes them. A symbol of this library alone (not
// .globl).
extern "C" void emu_fiber_switch(void **save, void *to);
asm(".text\n"
    ".p2align 4\n"
    ".type emu_fiber_switch, @function\n"
    "emu_fiber_switch:\n"
    "  pushq %rbp\n  pushq %rbx\n  pushq %r12\n  pushq %r13\n  pushq %r14\n  pushq %r15\n"
    "  movq %rsp, (%rdi)\n"
    "  movq %rsi, %rsp\n"
    "  popq %r15\n  popq %r14\n  popq %r13\n  popq %r12\n  popq %rbx\n  popq %rbp\n"
    "  ret\n"
    ".size emu_fiber_switch, .-emu_fiber_switch\n");
#endif

struct fiber {
#ifdef EMU_SWITCH
    void *sp; // where emu_fiber_switch left its stack
#else
    ucontext_t uc;
#endif
    state st;
};

// One launch at a time (the test's thread), so the scheduler is global.
static struct {
    unsigned char *const *stack; // MAX_THREADS fiber stacks of stack_size bytes
    size_t stack_size;
    unsigned char *shared_end;   // dynamic shared memory ends here, at a guard page
    size_t shared_cap;
    char *msg;                   // why the launch failed
    size_t msg_size;
    void (*run)(void *);         // runs the kernel as thread threadIdx of block blockIdx
    void *arg;
    bool fibers, failed;
#ifdef EMU_SWITCH
    void *main;                  // the scheduler's stack pointer
#else
    ucontext_t main;             // the scheduler's
#endif
    fiber f[MAX_THREADS];
    unsigned n, cur;             // threads of the block, the one running
    unsigned done, at_block;     // threads returned, waiting at __syncthreads
    unsigned warp_done[MAX_THREADS / WARP], warp_at[MAX_THREADS / WARP]; // the same by warp
    unsigned long long slot[MAX_THREADS]; // the lanes' deposits
} s;

// From the running fiber to the scheduler, and back from it to fiber t.
static void to_scheduler()
{
#ifdef EMU_SWITCH
    emu_fiber_switch(&s.f[s.cur].sp, s.main);
#else
    swapcontext(&s.f[s.cur].uc, &s.main);
#endif
}

static void to_fiber(unsigned t)
{
#ifdef EMU_SWITCH
    emu_fiber_switch(&s.main, s.f[t].sp);
#else
    swapcontext(&s.main, &s.f[t].uc);
#endif
}

// cp.async's copies issued and not yet waited for, by thread (sh_cp16).
enum { CP_MAX = 64 };
static struct {
    unsigned char *dst[CP_MAX];
    const unsigned char *src[CP_MAX]; // NULL: zeros
    unsigned n, waited;               // issued; the first waited of them waited for
} cp_pending[MAX_THREADS];

// Records why the launch fails (the first reason) and, in a fiber, leaves
// it for good: the scheduler abandons the block.
static void fail(const char *fmt, ...)
{
    if (!s.failed) {
        int k = std::snprintf(s.msg, s.msg_size, "block %u, thread %u: ", blockIdx.x,
                              threadIdx.x);
        va_list ap;
        va_start(ap, fmt);
        std::vsnprintf(s.msg + k, s.msg_size - (size_t)k, fmt, ap);
        va_end(ap);
    }
    s.failed = true;
    if (s.fibers) {
        to_scheduler();
        std::abort(); // never resumed
    }
}

// A block's start: no copies pending.
static void cp_reset(void)
{
    for (unsigned t = 0; t < MAX_THREADS; t++)
        cp_pending[t].n = cp_pending[t].waited = 0;
}

// A block barrier's release: every thread's copies that it waited for land.
static void cp_land(void)
{
    for (unsigned t = 0; t < s.n; t++) {
        unsigned w = cp_pending[t].waited, n = cp_pending[t].n;
        for (unsigned k = 0; k < w; k++) {
            if (cp_pending[t].src[k])
                std::memcpy(cp_pending[t].dst[k], cp_pending[t].src[k], 16);
            else
                std::memset(cp_pending[t].dst[k], 0, 16);
        }
        for (unsigned k = w; k < n; k++) {
            cp_pending[t].dst[k - w] = cp_pending[t].dst[k];
            cp_pending[t].src[k - w] = cp_pending[t].src[k];
        }
        cp_pending[t].n = n - w;
        cp_pending[t].waited = 0;
    }
}

// Parks the running fiber in state st until a barrier sets it RUN again.
static void wait(state st)
{
    s.f[s.cur].st = st;
    to_scheduler();
}

static void release(state st, unsigned from, unsigned to)
{
    for (unsigned t = from; t < to; t++)
        if (s.f[t].st == st)
            s.f[t].st = RUN;
}

static bool cooperative(const char *what)
{
    if (!s.fibers)
        fail("%s in a kernel run as if its threads worked alone", what);
    return s.fibers;
}

static void block_barrier()
{
    if (!cooperative("__syncthreads"))
        return;
    if (++s.at_block + s.done < s.n)
        return wait(AT_BLOCK);
    s.at_block = 0; // the last to arrive goes on
    cp_land();
    release(AT_BLOCK, 0, s.n);
}

static void warp_barrier(const char *what, unsigned mask)
{
    if (!cooperative(what))
        return;
    unsigned w = s.cur / WARP;
    if (mask != 0xffffffffu)
        fail("%s with mask %#x: only full warps are emulated", what, mask);
    if (s.warp_done[w])
        fail("%s in warp %u, %u of whose lanes have returned (or do not exist)", what, w,
             s.warp_done[w]);
    if (++s.warp_at[w] < WARP)
        return wait(AT_WARP);
    s.warp_at[w] = 0;
    release(AT_WARP, w * WARP, w * WARP + WARP);
}

// Lane src's deposit, each lane depositing v.
static unsigned long long exchange(const char *what, unsigned mask, unsigned long long v,
                                   unsigned src)
{
    unsigned base = s.cur & ~(WARP - 1u);
    s.slot[s.cur] = v;
    warp_barrier(what, mask);
    unsigned long long r = s.slot[base + src % WARP];
    warp_barrier(what, mask); // no lane deposits again before every lane has read
    return r;
}

static unsigned ballot(const char *what, unsigned mask, int pred)
{
    unsigned base = s.cur & ~(WARP - 1u), r = 0;
    s.slot[s.cur] = pred != 0;
    warp_barrier(what, mask);
    for (unsigned l = 0; l < WARP; l++)
        r |= (unsigned)s.slot[base + l] << l;
    warp_barrier(what, mask);
    return r;
}

template <typename T> static unsigned long long bits(T v)
{
    static_assert(sizeof(T) <= 8, "a shuffled value fits 8 bytes");
    unsigned long long u = 0;
    std::memcpy(&u, &v, sizeof v);
    return u;
}

template <typename T> static T value(unsigned long long u)
{
    T v;
    std::memcpy(&v, &u, sizeof v);
    return v;
}

// The first lane of this lane's segment of width lanes.
static unsigned segment(const char *what, int width)
{
    if (width < 1 || width > WARP || (width & (width - 1)))
        fail("%s with width %d: not a power of 2 up to 32", what, width);
    return (threadIdx.x % WARP) & ~(unsigned)(width - 1);
}

// A thread returns: it counts as arrived at the block barrier.
static void thread_exit()
{
    unsigned w = s.cur / WARP;
    s.f[s.cur].st = DONE;
    s.done++;
    s.warp_done[w]++;
    if (s.warp_at[w])
        fail("returned while %u lanes of warp %u wait in a warp-synchronous call", s.warp_at[w],
             w);
    if (s.at_block && s.at_block + s.done == s.n) {
        s.at_block = 0;
        release(AT_BLOCK, 0, s.n);
    }
    to_scheduler();
    std::abort(); // never resumed
}

static void entry()
{
    s.run(s.arg);
    thread_exit();
}

static void deadlock()
{
    unsigned at_warp = 0;
    for (unsigned t = 0; t < s.n; t++)
        at_warp += s.f[t].st == AT_WARP;
    std::snprintf(s.msg, s.msg_size,
                  "block %u: deadlock: %u threads wait at __syncthreads, %u in warp-synchronous "
                  "calls, %u returned",
                  blockIdx.x, s.at_block, at_warp, s.done);
    s.failed = true;
}

static void run_block()
{
    s.done = s.at_block = 0;
    for (unsigned w = 0; w < (s.n + WARP - 1) / WARP; w++) {
        s.warp_at[w] = 0;
        s.warp_done[w] = w * WARP + WARP > s.n ? w * WARP + WARP - s.n : 0; // lanes past the block
    }
    for (unsigned t = 0; t < s.n; t++) {
#ifdef EMU_SWITCH
        // the stack's top, 16-aligned: six registers' zeros, then entry as
        // the address emu_fiber_switch returns to, then a return address
        // entry never uses (it never returns), so that entry starts with
        // the stack pointer 8 past a multiple of 16, as after a call
        std::uintptr_t top = ((std::uintptr_t)s.stack[t] + s.stack_size) & ~(std::uintptr_t)15;
        void **sp = (void **)(top - 64);
        for (int k = 0; k < 6; k++)
            sp[k] = nullptr;
        sp[6] = (void *)&entry;
        sp[7] = nullptr;
        s.f[t].sp = sp;
#else
        ucontext_t *uc = &s.f[t].uc;
        getcontext(uc);
        uc->uc_stack.ss_sp = s.stack[t];
        uc->uc_stack.ss_size = s.stack_size;
        uc->uc_link = &s.main;
        makecontext(uc, entry, 0);
#endif
        s.f[t].st = RUN;
    }
    while (s.done < s.n && !s.failed) {
        bool ran = false;
        for (unsigned t = 0; t < s.n && !s.failed; t++) {
            if (s.f[t].st != RUN)
                continue;
            s.cur = t;
            threadIdx = {t, 0, 0};
            to_fiber(t);
            ran = true;
        }
        if (!ran && !s.failed)
            deadlock();
    }
}

static int launch(void (*run)(void *), void *arg, unsigned grid, unsigned block,
                  unsigned shared, bool fibers)
{
    s.run = run;
    s.arg = arg;
    s.fibers = fibers;
    s.failed = false;
    s.msg[0] = 0;
    size_t span = ((size_t)shared + 127) / 128 * 128; // a base 128-byte aligned, as a GPU's
    if (block < 1 || block > MAX_THREADS || span > s.shared_cap) {
        std::snprintf(s.msg, s.msg_size, "a launch of %u threads, %u shared bytes", block, shared);
        return -1;
    }
    gridDim = {grid, 1, 1};
    blockDim = {block, 1, 1};
    emu_dynamic_shared = s.shared_end - span;
    for (unsigned b = 0; b < grid && !s.failed; b++) {
        blockIdx = {b, 0, 0};
        std::memset(emu_dynamic_shared, 0xff, span);
        emu::cp_reset();
        s.n = block;
        if (fibers) {
            run_block();
            continue;
        }
        for (unsigned t = 0; t < block && !s.failed; t++) {
            threadIdx = {t, 0, 0};
            run(arg);
        }
    }
    s.fibers = false;
    return s.failed ? -1 : 0;
}

template <typename... A, std::size_t... I>
static void call(void (*f)(A...), void **p, std::index_sequence<I...>)
{
    f(static_cast<A>(p[I])...);
}

template <typename... A> struct kernel {
    void (*f)(A...);
    void **p;
    static void run(void *self)
    {
        kernel *k = static_cast<kernel *>(self);
        call(k->f, k->p, std::index_sequence_for<A...>{});
    }
};

} // namespace emu

// The memory the launches use, the test's: MAX_THREADS stacks of
// stack_size bytes, shared_cap bytes of dynamic shared memory ending at
// shared_end, msg_size bytes for a failure's message.
extern "C" void emu_setup(unsigned char *const *stack, size_t stack_size,
                          unsigned char *shared_end, size_t shared_cap, char *msg, size_t msg_size)
{
    emu::s.stack = stack;
    emu::s.stack_size = stack_size;
    emu::s.shared_end = shared_end;
    emu::s.shared_cap = shared_cap;
    emu::s.msg = msg;
    emu::s.msg_size = msg_size;
}

// Runs f over grid blocks of block threads with shared bytes of dynamic
// shared memory, its parameters p; fibers: as a cooperative kernel.
// 0, or -1 with the reason in emu_setup's msg.
template <typename... A>
static int emu_launch(void (*f)(A...), void **p, unsigned grid, unsigned block,
                      unsigned shared, bool fibers)
{
    emu::kernel<A...> k = {f, p};
    return emu::launch(&emu::kernel<A...>::run, &k, grid, block, shared, fibers);
}

// ---- the device functions the kernels call ----

static void __syncthreads() { emu::block_barrier(); }
static void __syncwarp(unsigned mask = 0xffffffffu) { emu::warp_barrier("__syncwarp", mask); }
static void __threadfence() {}

template <typename T> static T __shfl_sync(unsigned mask, T v, int src, int width = warpSize)
{
    unsigned lo = emu::segment("__shfl_sync", width);
    return emu::value<T>(
        emu::exchange("__shfl_sync", mask, emu::bits(v), lo + ((unsigned)src & (width - 1))));
}

template <typename T>
static T __shfl_up_sync(unsigned mask, T v, unsigned delta, int width = warpSize)
{
    unsigned lane = threadIdx.x % warpSize, lo = emu::segment("__shfl_up_sync", width);
    unsigned src = lane >= lo + delta ? lane - delta : lane;
    return emu::value<T>(emu::exchange("__shfl_up_sync", mask, emu::bits(v), src));
}

template <typename T>
static T __shfl_down_sync(unsigned mask, T v, unsigned delta, int width = warpSize)
{
    unsigned lane = threadIdx.x % warpSize, lo = emu::segment("__shfl_down_sync", width);
    unsigned src = lane + delta < lo + (unsigned)width ? lane + delta : lane;
    return emu::value<T>(emu::exchange("__shfl_down_sync", mask, emu::bits(v), src));
}

// A lane past its segment reads its own value; one before it, that lane's.
template <typename T>
static T __shfl_xor_sync(unsigned mask, T v, int lane_mask, int width = warpSize)
{
    unsigned lane = threadIdx.x % warpSize, lo = emu::segment("__shfl_xor_sync", width);
    unsigned src = lane ^ (unsigned)lane_mask;
    src = src < lo + (unsigned)width ? src : lane;
    return emu::value<T>(emu::exchange("__shfl_xor_sync", mask, emu::bits(v), src));
}

static unsigned __ballot_sync(unsigned mask, int pred)
{
    return emu::ballot("__ballot_sync", mask, pred);
}
static int __any_sync(unsigned mask, int pred)
{
    return emu::ballot("__any_sync", mask, pred) != 0;
}
static int __all_sync(unsigned mask, int pred)
{
    return emu::ballot("__all_sync", mask, pred) == 0xffffffffu;
}

static unsigned __activemask()
{
    unsigned base = threadIdx.x & ~(warpSize - 1u), m = 0;
    for (unsigned l = 0; l < (unsigned)warpSize && base + l < blockDim.x; l++)
        m |= (unsigned)(!emu::s.fibers || emu::s.f[base + l].st != emu::DONE) << l;
    return m;
}

// Bit scans, as CUDA's: __ffs is the 1-based position of the lowest set
// bit (0 for none).
static int __ffs(int x) { return x ? __builtin_ctz((unsigned)x) + 1 : 0; }
static int __popc(unsigned x) { return __builtin_popcount(x); }

// One OS thread runs every thread: atomics are plain read-modify-writes.
namespace emu {
typedef unsigned long long ull;
template <typename T> static T add(T *p, T v) { T o = *p; *p = o + v; return o; }
template <typename T> static T cas(T *p, T c, T v) { T o = *p; *p = o == c ? v : o; return o; }
template <typename T> static T exch(T *p, T v) { T o = *p; *p = v; return o; }
template <typename T> static T max(T *p, T v) { T o = *p; *p = v > o ? v : o; return o; }
} // namespace emu
static int atomicAdd(int *p, int v) { return emu::add(p, v); }
static unsigned atomicAdd(unsigned *p, unsigned v) { return emu::add(p, v); }
static emu::ull atomicAdd(emu::ull *p, emu::ull v) { return emu::add(p, v); }
static float atomicAdd(float *p, float v) { return emu::add(p, v); }
static double atomicAdd(double *p, double v) { return emu::add(p, v); }
static unsigned atomicInc(unsigned *p, unsigned v)
{
    unsigned o = *p;
    *p = o >= v ? 0 : o + 1;
    return o;
}
static int atomicCAS(int *p, int c, int v) { return emu::cas(p, c, v); }
static unsigned atomicCAS(unsigned *p, unsigned c, unsigned v) { return emu::cas(p, c, v); }
static emu::ull atomicCAS(emu::ull *p, emu::ull c, emu::ull v) { return emu::cas(p, c, v); }
static int atomicExch(int *p, int v) { return emu::exch(p, v); }
static unsigned atomicExch(unsigned *p, unsigned v) { return emu::exch(p, v); }
static emu::ull atomicExch(emu::ull *p, emu::ull v) { return emu::exch(p, v); }
static float atomicExch(float *p, float v) { return emu::exch(p, v); }
static int atomicMax(int *p, int v) { return emu::max(p, v); }
static unsigned atomicMax(unsigned *p, unsigned v) { return emu::max(p, v); }
static emu::ull atomicMax(emu::ull *p, emu::ull v) { return emu::max(p, v); }

// ---- nvcuda::wmma (see the file comment) ----
namespace nvcuda {
namespace wmma {
struct matrix_a {};
struct matrix_b {};
struct accumulator {};
struct row_major {};
struct col_major {};
enum layout_t { mem_row_major, mem_col_major };

template <typename Use, int M, int N, int K, typename T, typename Layout = void> struct fragment {
    static_assert(M == 16 && N == 16 && K == 16, "the emulator has 16 x 16 x 16 fragments only");
    enum { num_elements = 256 };
    T x[256];
};

static float wf(float v) { return v; }
static float wf(__half v) { return __half2float(v); }
static float wf(__nv_bfloat16 v) { return __bfloat162float(v); }

template <typename T> static void check(const char *what, const T *p, unsigned ldm)
{
    emu::warp_barrier(what, 0xffffffffu);
    if ((std::uintptr_t)p % 32)
        emu::fail("%s: the pointer %p is not 32-byte aligned", what, (const void *)p);
    if (ldm * sizeof(T) % 16)
        emu::fail("%s: a leading dimension of %u elements of %zu bytes, not a multiple of 16 "
                  "bytes", what, ldm, sizeof(T));
}

template <typename T> static void load(T *x, const T *p, unsigned ldm, bool row)
{
    for (int r = 0; r < 16; r++)
        for (int c = 0; c < 16; c++)
            x[r * 16 + c] = row ? p[r * ldm + c] : p[c * ldm + r];
}

template <typename Use, typename T, typename L>
static void load_matrix_sync(fragment<Use, 16, 16, 16, T, L> &f, const T *p, unsigned ldm)
{
    check("wmma::load_matrix_sync", p, ldm);
    load(f.x, p, ldm, std::is_same<L, row_major>::value);
}

template <typename T>
static void load_matrix_sync(fragment<accumulator, 16, 16, 16, T> &f, const T *p, unsigned ldm,
                             layout_t layout)
{
    check("wmma::load_matrix_sync", p, ldm);
    load(f.x, p, ldm, layout == mem_row_major);
}

template <typename T>
static void store_matrix_sync(T *p, const fragment<accumulator, 16, 16, 16, T> &f, unsigned ldm,
                              layout_t layout)
{
    check("wmma::store_matrix_sync", (const T *)p, ldm);
    if (threadIdx.x % 32)
        return;
    for (int r = 0; r < 16; r++)
        for (int c = 0; c < 16; c++)
            (layout == mem_row_major ? p[r * ldm + c] : p[c * ldm + r]) = f.x[r * 16 + c];
}

template <typename Use, typename T, typename L>
static void fill_fragment(fragment<Use, 16, 16, 16, T, L> &f, T v)
{
    for (int e = 0; e < 256; e++)
        f.x[e] = v;
}

template <typename T, typename LA, typename LB>
static void mma_sync(fragment<accumulator, 16, 16, 16, float> &d,
                     const fragment<matrix_a, 16, 16, 16, T, LA> &a,
                     const fragment<matrix_b, 16, 16, 16, T, LB> &b,
                     const fragment<accumulator, 16, 16, 16, float> &c)
{
    emu::warp_barrier("wmma::mma_sync", 0xffffffffu);
    float out[256];
    for (int r = 0; r < 16; r++)
        for (int n = 0; n < 16; n++) {
            float acc = c.x[r * 16 + n];
            for (int k = 0; k < 16; k++)
                acc += wf(a.x[r * 16 + k]) * wf(b.x[k * 16 + n]);
            out[r * 16 + n] = acc;
        }
    std::memcpy(d.x, out, sizeof out);
}
} // namespace wmma
} // namespace nvcuda

// ---- PTX's ldmatrix and mma.sync m16n8k16 (codegen's X_MMA helpers) ----
// The kernels' sh_ldsm2, sh_ldsm2t, sh_ldsm4, sh_mma_bf16 and sh_mma_f16,
// warp-synchronous as the shuffles: each lane deposits its operands, and
// each builds its result from every lane's as the PTX ISA lays them out.
// ldmatrix fails the launch for a row address outside the dynamic shared
// memory or not 16-byte aligned. mma sums each element's 16 products in
// order in f32, from the accumulator's value (a GPU's tensor cores sum them
// in an order of their own).
#define SH_EMULATED 1
namespace emu {
static unsigned char gather_slot[MAX_THREADS][64];

// Every lane's n bytes (at most 64) from mine into all[32][n], this warp's.
static void gather(const char *what, const void *mine, size_t n, void *all)
{
    unsigned base = s.cur & ~(WARP - 1u);
    std::memcpy(gather_slot[s.cur], mine, n);
    warp_barrier(what, 0xffffffffu);
    for (unsigned l = 0; l < WARP; l++)
        std::memcpy((unsigned char *)all + l * n, gather_slot[base + l], n);
    warp_barrier(what, 0xffffffffu);
}

// m 8 x 8 matrices of 16-bit values, lane 8 i + j giving row j of matrix i.
static void ldmatrix(unsigned *r, int m, bool trans, const void *p)
{
    const unsigned char *row[WARP];
    gather("ldmatrix", &p, sizeof p, row);
    for (int i = 0; i < 8 * m; i++)
        if (row[i] < emu_dynamic_shared || row[i] + 16 > s.shared_end || (std::uintptr_t)row[i] % 16)
            fail("ldmatrix: lane %d's row address %p is not 16-byte aligned in the shared memory",
                 i, (const void *)row[i]);
    unsigned lane = threadIdx.x % WARP, a = lane / 4, b = 2 * (lane % 4);
    for (int i = 0; i < m; i++) {
        std::uint16_t x[2];
        for (int k = 0; k < 2; k++)
            std::memcpy(&x[k], trans ? row[8 * i + b + k] + 2 * a : row[8 * i + a] + 2 * (b + k), 2);
        r[i] = x[0] | (unsigned)x[1] << 16;
    }
}

static float half_bits(std::uint16_t x, bool bf16)
{
    if (bf16)
        return __uint_as_float((unsigned)x << 16);
    __half_raw h;
    h.x = x;
    return __half2float(__half(h));
}

static void mma(float (&c)[4], const unsigned (&a)[4], unsigned b0, unsigned b1, bool bf16)
{
    struct frag {
        unsigned a[4], b[2];
        float c[4];
    } mine = {{a[0], a[1], a[2], a[3]}, {b0, b1}, {c[0], c[1], c[2], c[3]}}, all[WARP];
    gather("mma.sync", &mine, sizeof mine, all);
    float A[16][16], B[16][8], C[16][8];
    for (int l = 0; l < WARP; l++) {
        int g = l / 4, t = 2 * (l % 4);
        for (int k = 0; k < 2; k++) {
            int sh = 16 * k;
            A[g][t + k] = half_bits((std::uint16_t)(all[l].a[0] >> sh), bf16);
            A[g + 8][t + k] = half_bits((std::uint16_t)(all[l].a[1] >> sh), bf16);
            A[g][t + 8 + k] = half_bits((std::uint16_t)(all[l].a[2] >> sh), bf16);
            A[g + 8][t + 8 + k] = half_bits((std::uint16_t)(all[l].a[3] >> sh), bf16);
            B[t + k][g] = half_bits((std::uint16_t)(all[l].b[0] >> sh), bf16);
            B[t + 8 + k][g] = half_bits((std::uint16_t)(all[l].b[1] >> sh), bf16);
            C[g][t + k] = all[l].c[k];
            C[g + 8][t + k] = all[l].c[2 + k];
        }
    }
    unsigned lane = threadIdx.x % WARP;
    int g = lane / 4, t = 2 * (lane % 4);
    for (int e = 0; e < 4; e++) {
        int row = g + (e >= 2 ? 8 : 0), col = t + (e & 1);
        float acc = C[row][col];
        for (int k = 0; k < 16; k++)
            acc += A[row][k] * B[k][col];
        c[e] = acc;
    }
}

// cp.async: a copy lands at the first block barrier after its thread's wait
// (sh_cp_wait_all), and its 16 bytes are NaN bytes from the issue until
// then, so that a read of them before the wait and a barrier, by any
// thread, or a copy into bytes that another thread still reads, shows in
// the results. (A GPU lets the thread itself read them right after its
// wait; no kernel here does.)
static void cp_issue(void *dst, const void *src, bool full)
{
    unsigned char *d = (unsigned char *)dst;
    if (d < emu_dynamic_shared || d + 16 > s.shared_end || (std::uintptr_t)d % 16)
        fail("cp.async: destination %p is not 16-byte aligned in the shared memory", dst);
    if (full && (std::uintptr_t)src % 16)
        fail("cp.async: source %p is not 16-byte aligned", src);
    if (cp_pending[s.cur].n == CP_MAX)
        fail("cp.async: more than %d copies before a wait", (int)CP_MAX);
    unsigned k = cp_pending[s.cur].n++;
    cp_pending[s.cur].dst[k] = d;
    cp_pending[s.cur].src[k] = full ? (const unsigned char *)src : nullptr;
    std::memset(d, 0xff, 16);
}

static void cp_wait(void) { cp_pending[s.cur].waited = cp_pending[s.cur].n; }
} // namespace emu

static void sh_cp16(void *dst, const void *src, bool full) { emu::cp_issue(dst, src, full); }
static void sh_cp_commit(void) {}
static void sh_cp_wait_all(void) { emu::cp_wait(); }

static void sh_ldsm2(unsigned &r0, unsigned &r1, const void *p)
{
    unsigned r[2];
    emu::ldmatrix(r, 2, false, p);
    r0 = r[0], r1 = r[1];
}
static void sh_ldsm2t(unsigned &r0, unsigned &r1, const void *p)
{
    unsigned r[2];
    emu::ldmatrix(r, 2, true, p);
    r0 = r[0], r1 = r[1];
}
static void sh_ldsm4(unsigned (&r)[4], const void *p) { emu::ldmatrix(r, 4, false, p); }
static void sh_mma_bf16(float (&c)[4], const unsigned (&a)[4], unsigned b0, unsigned b1)
{
    emu::mma(c, a, b0, b1, true);
}
static void sh_mma_f16(float (&c)[4], const unsigned (&a)[4], unsigned b0, unsigned b1)
{
    emu::mma(c, a, b0, b1, false);
}
static float sh_max_nan(float a, float b) { return a != a || b != b ? NAN : a > b ? a : b; }
static float sh_exp2(float x)
{
    float r = exp2f(x);
    return r < 1.17549435e-38f ? 0.0f : r; // ex2.approx.ftz flushes a result below 2^-126
}
