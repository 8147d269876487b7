// fibers.cpp: runs one kernel launch on the CPU, block after block; the threads of a block are
// fibers on this OS thread, switched only where CUDA threads can wait for one another
// (__syncthreads, warp shuffles/ballots). A barrier counts live threads, as the hardware does
// since Volta: a thread that has returned no longer holds a barrier up.
#include <sys/mman.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "ft_emu.h"
#include "ft_emu_runtime.h"

namespace ft_emu {

ThreadCtx* current = nullptr;
dim3 block_idx, block_dim, grid_dim;
unsigned char* dyn_smem = nullptr;

}  // namespace ft_emu

// x86-64 System V context switch: saves the callee-saved registers, MXCSR and the x87 control
// word on the current stack, stores the stack pointer in *from and resumes the stack `to`.
extern "C" void ft_emu_switch(void** from, void* to);
asm(R"(
.text
.globl ft_emu_switch
.type ft_emu_switch,@function
ft_emu_switch:
    pushq %rbp
    pushq %rbx
    pushq %r12
    pushq %r13
    pushq %r14
    pushq %r15
    subq $8, %rsp
    stmxcsr (%rsp)
    fnstcw 4(%rsp)
    movq %rsp, (%rdi)
    movq %rsi, %rsp
    ldmxcsr (%rsp)
    fldcw 4(%rsp)
    addq $8, %rsp
    popq %r15
    popq %r14
    popq %r13
    popq %r12
    popq %rbx
    popq %rbp
    ret
.size ft_emu_switch, .-ft_emu_switch
.section .note.GNU-stack,"",@progbits
.text
)");

namespace {

constexpr size_t kStackBytes = 128 * 1024;

enum class Wait { None, Block, Warp, Done };

struct Fiber {
    ft_emu::ThreadCtx ctx;
    void* sp = nullptr;
    unsigned char* stack = nullptr;  // lowest usable byte (a guard page lies below)
    Wait wait = Wait::None;
    unsigned gen = 0;  // generation of the barrier being waited on
};

struct Barrier {
    unsigned alive = 0, arrived = 0, gen = 0;
    void arrive_or_release() {
        if (arrived > 0 && arrived == alive) {
            arrived = 0;
            ++gen;
        }
    }
};

struct Warp {
    Barrier barrier;
    unsigned long long slot[32];
};

struct BlockState {
    std::vector<Fiber> fibers;
    Barrier block;
    std::vector<Warp> warps;
    void* sched_sp = nullptr;
    ft_emu::KernelFn fn = nullptr;
    void** params = nullptr;
    Fiber* running = nullptr;
};

BlockState state;

void yield_to_scheduler(Fiber* f) { ft_emu_switch(&f->sp, state.sched_sp); }

// First code a fiber runs: the kernel body, then retire and hand back for good.
[[noreturn]] void fiber_main() {
    Fiber* f = state.running;
    state.fn(state.params);
    f->wait = Wait::Done;
    state.block.alive--;
    state.block.arrive_or_release();
    Warp& w = state.warps[f->ctx.linear / 32];
    w.barrier.alive--;
    w.barrier.arrive_or_release();
    ft_emu_switch(&f->sp, state.sched_sp);
    std::abort();  // a finished fiber is never resumed
}

// Stack of a fresh fiber, laid out as ft_emu_switch leaves a suspended one.
void* initial_stack(unsigned char* stack) {
    uintptr_t top = ((uintptr_t)(stack + kStackBytes)) & ~(uintptr_t)15;
    auto* p = (uint64_t*)top;
    *--p = 0;                         // fiber_main's (never used) return address
    *--p = (uint64_t)&fiber_main;     // where ft_emu_switch's `ret` goes
    for (int r = 0; r < 6; ++r) *--p = 0;  // rbp rbx r12 r13 r14 r15
    uint32_t csr;
    uint16_t cw;
    asm volatile("stmxcsr %0" : "=m"(csr));
    asm volatile("fnstcw %0" : "=m"(cw));
    --p;
    std::memcpy(p, &csr, 4);
    std::memcpy((char*)p + 4, &cw, 2);
    return p;
}

void ensure_fibers(size_t n) {
    while (state.fibers.size() < n) {
        const size_t page = (size_t)sysconf(_SC_PAGESIZE);
        void* m = mmap(nullptr, kStackBytes + page, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (m == MAP_FAILED) {
            std::fprintf(stderr, "ft_emu: cannot map a fiber stack\n");
            std::abort();
        }
        mprotect(m, page, PROT_NONE);  // overflow faults instead of corrupting a neighbour
        Fiber f;
        f.stack = (unsigned char*)m + page;
        state.fibers.push_back(f);
    }
}

Fiber* me() { return state.running; }

}  // namespace

namespace ft_emu {

// Arrive at barrier `b`; the last live thread to arrive releases the others.
static void arrive(Barrier& b, Wait kind) {
    Fiber* f = me();
    b.arrived++;
    if (b.arrived == b.alive) {
        b.arrived = 0;
        ++b.gen;
        return;
    }
    f->wait = kind;
    f->gen = b.gen;
    yield_to_scheduler(f);
}

void sync_block() { arrive(state.block, Wait::Block); }

void sync_warp() { arrive(state.warps[me()->ctx.linear / 32].barrier, Wait::Warp); }

void warp_exchange(const void* v, void* out, unsigned size, int src_lane) {
    Fiber* f = me();
    Warp& w = state.warps[f->ctx.linear / 32];
    const unsigned l = f->ctx.linear & 31u;
    std::memcpy(&w.slot[l], v, size);
    sync_warp();
    const unsigned first = (f->ctx.linear / 32) * 32;
    // A lane past the block's end (partial warp) reads its own value, as an inactive source.
    const unsigned src = first + (unsigned)src_lane < state.fibers.size() &&
                                 (unsigned)src_lane < 32
                             ? (unsigned)src_lane
                             : l;
    std::memcpy(out, &w.slot[src], size);
    sync_warp();
}

}  // namespace ft_emu

unsigned __ballot_sync(unsigned, int pred) {
    Fiber* f = me();
    Warp& w = state.warps[f->ctx.linear / 32];
    const unsigned l = f->ctx.linear & 31u;
    w.slot[l] = pred ? 1 : 0;
    ft_emu::sync_warp();
    unsigned r = 0;
    for (unsigned k = 0; k < 32; ++k) r |= (w.slot[k] == 1 ? 1u : 0u) << k;
    ft_emu::sync_warp();
    return r;
}

namespace ft_emu {

std::string run_launch(KernelFn fn, void** params, dim3 grid, dim3 block, unsigned smem_bytes) {
    const unsigned long long nthreads = (unsigned long long)block.x * block.y * block.z;
    if (nthreads == 0 || nthreads > 1024 || grid.x == 0 || grid.y == 0 || grid.z == 0 ||
        grid.y > 65535 || grid.z > 65535) {
        return "invalid launch configuration";
    }
    static std::vector<unsigned char> smem;
    smem.assign(smem_bytes + 16, 0xff);  // uninitialised shared memory reads as NaN / -1
    dyn_smem = smem.data();
    block_dim = block;
    grid_dim = grid;
    ensure_fibers(nthreads);
    state.fn = fn;
    state.params = params;
    const unsigned nwarps = (unsigned)((nthreads + 31) / 32);
    state.warps.resize(nwarps);
    for (unsigned bz = 0; bz < grid.z; ++bz)
        for (unsigned by = 0; by < grid.y; ++by)
            for (unsigned bx = 0; bx < grid.x; ++bx) {
                block_idx = dim3{bx, by, bz};
                state.block = Barrier{(unsigned)nthreads, 0, 0};
                for (unsigned w = 0; w < nwarps; ++w) {
                    const unsigned lanes = (unsigned)std::min<unsigned long long>(
                        32, nthreads - (unsigned long long)w * 32);
                    state.warps[w].barrier = Barrier{lanes, 0, 0};
                }
                for (unsigned t = 0; t < nthreads; ++t) {
                    Fiber& f = state.fibers[t];
                    f.ctx.linear = t;
                    f.ctx.tid = dim3{t % block.x, (t / block.x) % block.y, t / (block.x * block.y)};
                    f.wait = Wait::None;
                    f.sp = initial_stack(f.stack);
                }
                unsigned done = 0;
                while (done < nthreads) {
                    bool progressed = false;
                    done = 0;
                    for (unsigned t = 0; t < nthreads; ++t) {
                        Fiber& f = state.fibers[t];
                        if (f.wait == Wait::Done) {
                            ++done;
                            continue;
                        }
                        if (f.wait == Wait::Block && f.gen == state.block.gen) continue;
                        if (f.wait == Wait::Warp &&
                            f.gen == state.warps[t / 32].barrier.gen)
                            continue;
                        f.wait = Wait::None;
                        state.running = &f;
                        current = &f.ctx;
                        ft_emu_switch(&state.sched_sp, f.sp);
                        progressed = true;
                        if (f.wait == Wait::Done) ++done;
                    }
                    if (!progressed && done < nthreads) {
                        return "deadlock: threads of block (" + std::to_string(bx) + "," +
                               std::to_string(by) + "," + std::to_string(bz) +
                               ") wait at barriers that the others never reach";
                    }
                }
            }
    current = nullptr;
    state.running = nullptr;
    return "";
}

}  // namespace ft_emu
