// cuda_emu.h: run CUDA kernels on the CPU, for tests without a GPU (notes/cuda_contract.md).
//
// Compiled with g++ -std=c++17 -DFX_EMULATION, this header supplies what a generated kernel may
// use (the contract's list, plus a few common intrinsics): the qualifiers, the builtins
// threadIdx/blockIdx/blockDim/gridDim/warpSize, barriers, warp shuffles and votes, atomics,
// math functions <cmath> lacks, __half/__nv_bfloat16 and the vector types.
//
// Execution model. Every CUDA thread is a fiber on its own small stack (a hand-written stack
// switch on x86-64, ucontext elsewhere) with a guard page below it; one scheduler in the
// calling OS thread runs the fibers in a fixed order, so runs are deterministic. A fiber runs
// until it reaches a barrier:
//   __syncthreads()       waits until every thread of the block has arrived;
//   warp operations       (__shfl*_sync, __syncwarp, __ballot/__any/__all_sync) wait until every
//                         lane of the warp has arrived (the existing lanes of a partial last
//                         warp), then exchange values through per-lane slots;
//   fx_emu::grid_sync()   waits until every thread of the grid has arrived (cooperative only).
// A normal launch runs blocks one after another; a cooperative launch runs all threads of all
// blocks at once, each block with its own shared memory. Atomics are plain read-modify-write:
// one OS thread runs every fiber and a fiber only switches at a barrier.
//
// Errors are reported, never hung on: when no fiber can run and some have not finished (a
// barrier some threads never reach, or reach after others exited), the launch stops with a
// "deadlock" message. Invalid memory accesses, stack overflows and integer division by zero
// are caught (SIGSEGV/SIGBUS/SIGFPE) and reported with the thread that made them. The error text
// goes back to the caller of fx_emu::detail::launch (emulate.py raises it as EmulationError).
// A misaligned vector access through the prelude's fx_load_vec / fx_store_vec is reported too
// (fx_emu::check_vector_alignment), since a GPU faults on it where a CPU does not.
//
// Stricter than a GPU on purpose, so bugs show up here rather than later:
//   - every thread of a block must reach each __syncthreads() (threads that returned early do
//     not count as arrived, as the CUDA programming guide requires);
//   - dynamic shared memory starts filled with 0xCD bytes, and its end is followed by a guard
//     page, so reading unwritten shared memory gives garbage and running off its end faults;
//   - a shuffle reading a lane that does not exist (past the end of a partial last warp)
//     returns 0xCD bytes;
//   - warp operations accept only masks naming every existing lane of the warp.
// Not emulated: memory-model effects (no fiber observes another's writes out of order),
// spin-waiting on another block in a normal launch (it would loop: blocks run in sequence).
#pragma once
#ifndef FX_CUDA_EMU_H
#define FX_CUDA_EMU_H

#include <math.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <memory>
#include <type_traits>
#include <utility>
#include <vector>

// -- qualifiers ---------------------------------------------------------------------------------

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __noinline__ __attribute__((noinline))
#define __align__(n) __attribute__((aligned(n)))
#define __launch_bounds__(...)
#define __constant__
// Static shared arrays would be shared by all blocks of a cooperative launch; the contract
// allows dynamic shared memory only (FX_SHARED_MEMORY).
#define __shared__                                                                           \
  static_assert(false, "static __shared__ arrays are not emulated: use FX_SHARED_MEMORY");  \
  static

// -- vector types -------------------------------------------------------------------------------

#define FX_EMU_VECTOR_TYPES(T, name, align2, align4)                                          \
  struct name##1 { T x; };                                                                   \
  struct __attribute__((aligned(align2))) name##2 { T x, y; };                               \
  struct name##3 { T x, y, z; };                                                             \
  struct __attribute__((aligned(align4))) name##4 { T x, y, z, w; };                         \
  inline name##1 make_##name##1(T x) { return {x}; }                                         \
  inline name##2 make_##name##2(T x, T y) { return {x, y}; }                                 \
  inline name##3 make_##name##3(T x, T y, T z) { return {x, y, z}; }                         \
  inline name##4 make_##name##4(T x, T y, T z, T w) { return {x, y, z, w}; }

FX_EMU_VECTOR_TYPES(signed char, char, 2, 4)
FX_EMU_VECTOR_TYPES(unsigned char, uchar, 2, 4)
FX_EMU_VECTOR_TYPES(short, short, 4, 8)
FX_EMU_VECTOR_TYPES(unsigned short, ushort, 4, 8)
FX_EMU_VECTOR_TYPES(int, int, 8, 16)
FX_EMU_VECTOR_TYPES(unsigned int, uint, 8, 16)
FX_EMU_VECTOR_TYPES(long, long, 16, 16)
FX_EMU_VECTOR_TYPES(unsigned long, ulong, 16, 16)
FX_EMU_VECTOR_TYPES(long long, longlong, 16, 16)
FX_EMU_VECTOR_TYPES(unsigned long long, ulonglong, 16, 16)
FX_EMU_VECTOR_TYPES(float, float, 8, 16)
FX_EMU_VECTOR_TYPES(double, double, 16, 16)
#undef FX_EMU_VECTOR_TYPES

struct dim3 {
  unsigned int x, y, z;
  constexpr dim3(unsigned int vx = 1, unsigned int vy = 1, unsigned int vz = 1)
      : x(vx), y(vy), z(vz) {}
};

constexpr int warpSize = 32;

// -- the scheduler --------------------------------------------------------------------------------

namespace fx_emu {
namespace detail {

// Fiber contexts. On x86-64 a switch saves the callee-saved registers and the FP control words
// on the old stack and swaps stack pointers: about 30 times faster than swapcontext, which
// makes a system call (the signal mask) on every switch, and barrier-heavy kernels switch a
// lot. Elsewhere ucontext does the same job.
#if defined(__x86_64__)
struct Context {
  void* stack_pointer = nullptr;
};

__attribute__((naked, noinline)) inline void switch_context(Context* /*from*/, Context* /*to*/) {
  asm volatile(
      "pushq %rbp\n\t"
      "pushq %rbx\n\t"
      "pushq %r12\n\t"
      "pushq %r13\n\t"
      "pushq %r14\n\t"
      "pushq %r15\n\t"
      "subq $8, %rsp\n\t"
      "stmxcsr (%rsp)\n\t"
      "fnstcw 4(%rsp)\n\t"
      "movq %rsp, (%rdi)\n\t"
      "movq (%rsi), %rsp\n\t"
      "ldmxcsr (%rsp)\n\t"
      "fldcw 4(%rsp)\n\t"
      "addq $8, %rsp\n\t"
      "popq %r15\n\t"
      "popq %r14\n\t"
      "popq %r13\n\t"
      "popq %r12\n\t"
      "popq %rbx\n\t"
      "popq %rbp\n\t"
      "ret\n\t");
}

// A context that starts `entry` (which must never return) on the given stack: the frame
// switch_context pops, with entry as its return address.
inline void start_context(Context* context, unsigned char* stack, size_t size, void (*entry)()) {
  uintptr_t top = (reinterpret_cast<uintptr_t>(stack) + size) & ~uintptr_t(15);
  uint64_t* frame = reinterpret_cast<uint64_t*>(top);
  *--frame = 0;                                   // entry's return address: none
  *--frame = reinterpret_cast<uint64_t>(entry);   // popped by ret
  for (int i = 0; i < 6; ++i) *--frame = 0;       // rbp, rbx, r12-r15
  *--frame = 0x1F80ull | (0x037Full << 32);       // default MXCSR, x87 control word
  context->stack_pointer = frame;
}
inline void prepare_contexts(Context*, size_t) {}
#else
struct Context {
  ucontext_t context;
};
inline void switch_context(Context* from, Context* to) {
  swapcontext(&from->context, &to->context);
}
inline void start_context(Context* context, unsigned char* stack, size_t size, void (*entry)()) {
  context->context.uc_stack.ss_sp = stack;
  context->context.uc_stack.ss_size = size;
  context->context.uc_link = nullptr;
  makecontext(&context->context, entry, 0);
}
// getcontext once per fiber (it records the signal mask and FP state); start_context then
// re-targets the context for every block that reuses the fiber.
inline void prepare_contexts(Context* contexts, size_t count) {
  for (size_t i = 0; i < count; ++i) getcontext(&contexts[i].context);
}
#endif

enum class Wait : unsigned char { Running, Block, Warp, Grid, Done };
enum class WarpOp : unsigned char { Sync, Shuffle, Vote };

struct Fiber;

struct Warp {
  unsigned lanes = 0;    // 32, or fewer for the last warp of a block
  unsigned arrived = 0;  // lanes waiting at the current warp operation
  Fiber* fibers[32] = {};
  WarpOp op[32] = {};
  unsigned char size[32] = {};  // bytes of the shuffled value
  int source[32] = {};          // lane to read, after CUDA's width/clamping rules
  uint64_t value[32] = {};
  uint64_t result[32] = {};
  const char* what[32] = {};
};

struct Block {
  uint3 index{};
  unsigned threads = 0;
  unsigned arrived = 0;  // threads waiting at __syncthreads()
  Fiber* first = nullptr;
  std::vector<Warp> warps;
  unsigned char* shared = nullptr;  // dynamic shared memory, filled with 0xCD
  unsigned char* shared_guard = nullptr;
};

struct Fiber {
  Context context;
  uint3 thread_index{};
  Block* block = nullptr;
  Warp* warp = nullptr;
  unsigned lane = 0;
  Wait wait = Wait::Running;
};

constexpr size_t kStackBytes = 128 * 1024;
constexpr size_t kFillByte = 0xCD;

struct Launch {
  const char* kernel = "";
  dim3 grid, block;
  size_t shared_bytes = 0;
  bool cooperative = false;
  void (*invoke)(void**) = nullptr;
  void** args = nullptr;

  Context scheduler;
  std::vector<Fiber> fibers;
  std::vector<Block> blocks;
  std::deque<Fiber*> ready;
  unsigned long long grid_threads = 0, grid_arrived = 0;

  size_t page = 4096;
  unsigned char* stacks = nullptr;  // fibers.size() stacks, each above a guard page
  size_t stacks_bytes = 0;
  std::vector<std::pair<unsigned char*, size_t>> shared_maps;

  sigjmp_buf fault_jump;
  bool failed = false;
  char error[4096] = {};

  ~Launch() {
    if (stacks) munmap(stacks, stacks_bytes);
    for (auto& map : shared_maps) munmap(map.first, map.second);
  }
};

// The fiber running now and its launch. Plain globals, not thread_local: the builtins read them
// on every access, and emulate.py runs one launch at a time per process.
inline Launch* g_launch = nullptr;
inline Fiber* g_current = nullptr;

inline void describe_thread(char* out, size_t len, const Fiber* f) {
  snprintf(out, len, "thread (%u,%u,%u) of block (%u,%u,%u)", f->thread_index.x,
           f->thread_index.y, f->thread_index.z, f->block->index.x, f->block->index.y,
           f->block->index.z);
}

// Stops the launch from inside a fiber: the scheduler sees `failed` and never resumes it.
[[noreturn]] inline void fail(const char* format, ...) {
  Launch* launch = g_launch;
  char where[160];
  describe_thread(where, sizeof where, g_current);
  int used = snprintf(launch->error, sizeof launch->error, "kernel '%s', %s: ", launch->kernel,
                      where);
  va_list args;
  va_start(args, format);
  vsnprintf(launch->error + used, sizeof launch->error - size_t(used), format, args);
  va_end(args);
  launch->failed = true;
  switch_context(&g_current->context, &launch->scheduler);
  abort();  // the scheduler never resumes a failed fiber
}

inline void yield(Wait wait) {
  Fiber* self = g_current;
  self->wait = wait;
  switch_context(&self->context, &g_launch->scheduler);
}

inline void release(Fiber* first, size_t count, Wait wait) {
  for (size_t i = 0; i < count; ++i) {
    if (first[i].wait == wait) {
      first[i].wait = Wait::Running;
      g_launch->ready.push_back(&first[i]);
    }
  }
}

inline void sync_block() {
  Block* block = g_current->block;
  if (++block->arrived < block->threads) {
    yield(Wait::Block);
    return;
  }
  block->arrived = 0;
  release(block->first, block->threads, Wait::Block);
}

inline void sync_grid() {
  Launch* launch = g_launch;
  if (!launch->cooperative) {
    fail("deadlock: fx_grid_sync() in a launch that is not cooperative; blocks of a normal "
         "launch need not be resident at once, so the grid barrier can never complete. Launch "
         "the kernel with cooperative=True.");
  }
  if (++launch->grid_arrived < launch->grid_threads) {
    yield(Wait::Grid);
    return;
  }
  launch->grid_arrived = 0;
  release(launch->fibers.data(), launch->fibers.size(), Wait::Grid);
}

inline void finish_warp_operation(Warp* warp) {
  for (unsigned lane = 1; lane < warp->lanes; ++lane) {
    if (warp->op[lane] != warp->op[0] || warp->size[lane] != warp->size[0]) {
      fail("lanes of one warp reached different warp operations: lane 0 is at %s (%u "
           "bytes), lane %u at %s (%u bytes); every lane must reach the same one",
           warp->what[0], unsigned(warp->size[0]), lane, warp->what[lane],
           unsigned(warp->size[lane]));
    }
  }
  if (warp->op[0] == WarpOp::Shuffle) {
    for (unsigned lane = 0; lane < warp->lanes; ++lane) {
      int source = warp->source[lane];
      warp->result[lane] = source >= 0 && unsigned(source) < warp->lanes
                               ? warp->value[source]
                               : 0xCDCDCDCDCDCDCDCDull;
    }
  } else if (warp->op[0] == WarpOp::Vote) {
    uint64_t ballot = 0;
    for (unsigned lane = 0; lane < warp->lanes; ++lane) {
      if (warp->value[lane] != 0) ballot |= uint64_t(1) << lane;
    }
    for (unsigned lane = 0; lane < warp->lanes; ++lane) warp->result[lane] = ballot;
  }
}

inline uint64_t warp_rendezvous(const char* what, unsigned mask, WarpOp op, uint64_t value,
                                unsigned size, int source) {
  Fiber* self = g_current;
  Warp* warp = self->warp;
  unsigned needed = warp->lanes == 32 ? 0xffffffffu : (1u << warp->lanes) - 1u;
  if ((mask & needed) != needed) {
    fail("%s with mask 0x%08x: the emulator supports only masks naming every lane of the warp "
         "(0x%08x here)", what, mask, needed);
  }
  unsigned lane = self->lane;
  warp->op[lane] = op;
  warp->size[lane] = static_cast<unsigned char>(size);
  warp->source[lane] = source;
  warp->value[lane] = value;
  warp->what[lane] = what;
  if (++warp->arrived < warp->lanes) {
    yield(Wait::Warp);
  } else {
    warp->arrived = 0;
    finish_warp_operation(warp);
    for (unsigned i = 0; i < warp->lanes; ++i) {
      Fiber* lane_fiber = warp->fibers[i];
      if (lane_fiber != self && lane_fiber->wait == Wait::Warp) {
        lane_fiber->wait = Wait::Running;
        g_launch->ready.push_back(lane_fiber);
      }
    }
  }
  return warp->result[lane];
}

template <typename T>
T shuffle(const char* what, unsigned mask, T value, int source_lane, int width) {
  static_assert(std::is_trivially_copyable<T>::value && sizeof(T) <= 8,
                "warp shuffles take values of at most 8 bytes");
  if (width <= 0 || width > 32 || (width & (width - 1)) != 0) {
    fail("%s with width %d: the width must be a power of two from 1 to 32", what, width);
  }
  uint64_t bits = 0;
  std::memcpy(&bits, &value, sizeof(T));
  uint64_t exchanged =
      warp_rendezvous(what, mask, WarpOp::Shuffle, bits, sizeof(T), source_lane);
  T result;
  std::memcpy(&result, &exchanged, sizeof(T));
  return result;
}

inline int lane_id() { return static_cast<int>(g_current->lane); }

inline void fiber_main() {
  g_launch->invoke(g_launch->args);
  g_current->wait = Wait::Done;
  switch_context(&g_current->context, &g_launch->scheduler);
  abort();  // the scheduler never resumes a finished fiber
}

// Runs ready fibers until none is left; returns false when one failed.
inline bool run_ready_fibers(Launch* launch) {
  while (!launch->ready.empty()) {
    Fiber* fiber = launch->ready.front();
    launch->ready.pop_front();
    g_current = fiber;
    switch_context(&launch->scheduler, &fiber->context);
    if (launch->failed) return false;
  }
  g_current = nullptr;
  return true;
}

// After the ready queue ran dry: every thread finished, or the launch is deadlocked.
inline bool check_all_finished(Launch* launch, Block* blocks, size_t block_count) {
  int described = 0;
  size_t used = 0;
  char* out = launch->error;
  size_t len = sizeof launch->error;
  for (size_t b = 0; b < block_count; ++b) {
    Block& block = blocks[b];
    unsigned counts[5] = {};
    const Fiber* first_of[5] = {};
    for (unsigned t = 0; t < block.threads; ++t) {
      const Fiber* fiber = block.first + t;
      int kind = static_cast<int>(fiber->wait);
      if (counts[kind]++ == 0) first_of[kind] = fiber;
    }
    if (counts[int(Wait::Done)] == block.threads) continue;
    if (described == 0) {
      used += snprintf(out + used, len - used,
                       "deadlock in kernel '%s': no thread can make progress, yet not all "
                       "finished.",
                       launch->kernel);
    }
    if (++described > 4) {
      used += snprintf(out + used, len - used, " (more blocks alike)");
      break;
    }
    used += snprintf(out + used, len - used, " Block (%u,%u,%u) of %u threads:", block.index.x,
                     block.index.y, block.index.z, block.threads);
    static const char* const kWhere[5] = {"run", "wait at __syncthreads()",
                                          "wait at a warp operation (shuffle, vote, __syncwarp)",
                                          "wait at fx_grid_sync()", "exited"};
    for (int kind = 1; kind < 5; ++kind) {
      if (counts[kind] == 0) continue;
      const Fiber* f = first_of[kind];
      used += snprintf(out + used, len - used, " %u %s (first: thread (%u,%u,%u));",
                       counts[kind], kWhere[kind], f->thread_index.x, f->thread_index.y,
                       f->thread_index.z);
    }
    if (used >= len) break;
  }
  if (described == 0) return true;
  if (used < len) {
    snprintf(out + used, len - used,
             " Every thread of a block must reach each __syncthreads(), every lane of a warp "
             "each warp operation, and every thread of the grid each fx_grid_sync(); a barrier "
             "inside a branch not all threads take, or after an early return, never completes.");
  }
  launch->failed = true;
  return false;
}

// -- faults: invalid accesses and stack overflows become errors, not a dead Python ---------------

inline thread_local Launch* t_faulting_launch = nullptr;
inline struct sigaction g_previous_actions[3];
constexpr int kFaultSignals[3] = {SIGSEGV, SIGBUS, SIGFPE};

inline void chain_to_previous(int signal, siginfo_t* info, void* context) {
  for (int i = 0; i < 3; ++i) {
    if (kFaultSignals[i] != signal) continue;
    struct sigaction& previous = g_previous_actions[i];
    if (previous.sa_flags & SA_SIGINFO) {
      previous.sa_sigaction(signal, info, context);
    } else if (previous.sa_handler == SIG_DFL) {
      sigaction(signal, &previous, nullptr);  // the fault repeats, now with the default action
    } else if (previous.sa_handler != SIG_IGN) {
      previous.sa_handler(signal);
    }
  }
}

inline void on_fault(int signal, siginfo_t* info, void* context) {
  Launch* launch = t_faulting_launch;
  if (launch == nullptr) {
    chain_to_previous(signal, info, context);
    return;
  }
  unsigned char* address = static_cast<unsigned char*>(info->si_addr);
  char where[160] = "the emulator's scheduler";
  if (g_current != nullptr) describe_thread(where, sizeof where, g_current);
  const char* what = signal == SIGFPE ? "an arithmetic fault (integer division by zero?)"
                                      : "an invalid memory access";
  char detail[200] = "";
  if (signal != SIGFPE) {
    snprintf(detail, sizeof detail, " at address %p", static_cast<void*>(address));
    if (launch->stacks != nullptr && address >= launch->stacks &&
        address < launch->stacks + launch->stacks_bytes) {
      snprintf(detail, sizeof detail, ": stack overflow (each thread has %zu KiB of stack; "
               "large local arrays?)", kStackBytes / 1024);
    }
    for (Block& block : launch->blocks) {
      if (block.shared_guard != nullptr && address >= block.shared_guard &&
          address < block.shared_guard + launch->page) {
        snprintf(detail, sizeof detail, " just past the end of block (%u,%u,%u)'s dynamic "
                 "shared memory (%zu bytes were launched)", block.index.x, block.index.y,
                 block.index.z, launch->shared_bytes);
      }
    }
  }
  snprintf(launch->error, sizeof launch->error, "kernel '%s', %s: %s%s", launch->kernel, where,
           what, detail);
  launch->failed = true;
  siglongjmp(launch->fault_jump, 1);
}

// Installs the fault handlers (on an alternate stack, so a stack overflow can be reported) for
// the lifetime of one launch, restoring what was there before.
class FaultGuard {
 public:
  explicit FaultGuard(Launch* launch) : alternate_(64 * 1024) {
    stack_t stack{};
    stack.ss_sp = alternate_.data();
    stack.ss_size = alternate_.size();
    sigaltstack(&stack, &previous_stack_);
    struct sigaction action {};
    action.sa_sigaction = on_fault;
    action.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER;
    sigemptyset(&action.sa_mask);
    for (int i = 0; i < 3; ++i) sigaction(kFaultSignals[i], &action, &g_previous_actions[i]);
    t_faulting_launch = launch;
  }
  ~FaultGuard() {
    t_faulting_launch = nullptr;
    for (int i = 0; i < 3; ++i) sigaction(kFaultSignals[i], &g_previous_actions[i], nullptr);
    sigaltstack(&previous_stack_, nullptr);
  }
  FaultGuard(const FaultGuard&) = delete;
  FaultGuard& operator=(const FaultGuard&) = delete;

 private:
  std::vector<char> alternate_;
  stack_t previous_stack_{};
};

// -- memory ---------------------------------------------------------------------------------------

inline size_t round_up(size_t value, size_t to) { return (value + to - 1) / to * to; }

inline bool allocate_stacks(Launch* launch, size_t count) {
  size_t each = kStackBytes + launch->page;
  launch->stacks_bytes = each * count;
  void* map = mmap(nullptr, launch->stacks_bytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (map == MAP_FAILED) {
    launch->stacks = nullptr;
    return false;
  }
  launch->stacks = static_cast<unsigned char*>(map);
  for (size_t i = 0; i < count; ++i) mprotect(launch->stacks + i * each, launch->page, PROT_NONE);
  return true;
}

// The block's shared memory ends (rounded to 16 bytes) where a PROT_NONE page begins.
inline bool allocate_shared(Launch* launch, Block* block) {
  size_t data = round_up(launch->shared_bytes == 0 ? 16 : launch->shared_bytes, launch->page);
  size_t total = data + launch->page;
  void* map = mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (map == MAP_FAILED) return false;
  unsigned char* base = static_cast<unsigned char*>(map);
  launch->shared_maps.emplace_back(base, total);
  mprotect(base + data, launch->page, PROT_NONE);
  block->shared_guard = base + data;
  block->shared = base + data - round_up(launch->shared_bytes, 16);
  return true;
}

inline void prepare_block(Launch* launch, Block* block, Fiber* first, uint3 index) {
  const dim3& dims = launch->block;
  block->index = index;
  block->threads = dims.x * dims.y * dims.z;
  block->arrived = 0;
  block->first = first;
  block->warps.assign((block->threads + 31) / 32, Warp{});
  std::memset(block->shared, int(kFillByte), round_up(launch->shared_bytes, 16));
  size_t each = kStackBytes + launch->page;
  for (unsigned t = 0; t < block->threads; ++t) {
    Fiber* fiber = first + t;
    size_t stack_index = size_t(fiber - launch->fibers.data());
    fiber->thread_index = {t % dims.x, (t / dims.x) % dims.y, t / (dims.x * dims.y)};
    fiber->block = block;
    fiber->warp = &block->warps[t / 32];
    fiber->lane = t % 32;
    fiber->warp->fibers[fiber->lane] = fiber;
    fiber->warp->lanes = fiber->lane + 1;
    fiber->wait = Wait::Running;
    start_context(&fiber->context, launch->stacks + stack_index * each + launch->page,
                  kStackBytes, fiber_main);
    launch->ready.push_back(fiber);
  }
}

inline uint3 block_index(const dim3& grid, unsigned long long linear) {
  return {unsigned(linear % grid.x), unsigned((linear / grid.x) % grid.y),
          unsigned(linear / (unsigned long long)(grid.x) / grid.y)};
}

inline bool check_launch(Launch* launch) {
  const dim3& g = launch->grid;
  const dim3& b = launch->block;
  const char* problem = nullptr;
  if (b.x == 0 || b.y == 0 || b.z == 0 || g.x == 0 || g.y == 0 || g.z == 0) {
    problem = "every grid and block dimension must be at least 1";
  } else if (b.x > 1024 || b.y > 1024 || b.z > 64 ||
             (unsigned long long)b.x * b.y * b.z > 1024) {
    problem = "a block has at most 1024 threads (x, y <= 1024, z <= 64)";
  } else if (g.x > 2147483647u || g.y > 65535 || g.z > 65535) {
    problem = "the grid is at most (2^31-1, 65535, 65535) blocks";
  } else if (launch->shared_bytes > 227 * 1024) {
    problem = "dynamic shared memory is at most 227 KiB per block";
  }
  if (problem == nullptr) return true;
  snprintf(launch->error, sizeof launch->error,
           "bad launch of kernel '%s' with grid (%u,%u,%u), block (%u,%u,%u), %zu bytes of "
           "shared memory: %s",
           launch->kernel, g.x, g.y, g.z, b.x, b.y, b.z, launch->shared_bytes, problem);
  return false;
}

// Runs a whole grid; returns 0, or 1 with the message in `error`.
inline int run_grid(Launch* launch, char* error, size_t error_len) {
  auto report = [&](int code) {
    if (error_len > 0) snprintf(error, error_len, "%s", launch->error);
    g_launch = nullptr;
    g_current = nullptr;
    return code;
  };
  if (!check_launch(launch)) return report(1);
  launch->page = size_t(sysconf(_SC_PAGESIZE));
  const unsigned long long threads_per_block =
      (unsigned long long)launch->block.x * launch->block.y * launch->block.z;
  const unsigned long long block_count =
      (unsigned long long)launch->grid.x * launch->grid.y * launch->grid.z;
  launch->grid_threads = threads_per_block * block_count;
  size_t fibers = launch->cooperative ? size_t(launch->grid_threads) : size_t(threads_per_block);
  size_t blocks = launch->cooperative ? size_t(block_count) : 1;
  launch->fibers.resize(fibers);
  launch->blocks.resize(blocks);
  bool allocated = allocate_stacks(launch, fibers);
  for (size_t b = 0; allocated && b < blocks; ++b) {
    allocated = allocate_shared(launch, &launch->blocks[b]);
  }
  if (!allocated) {
    snprintf(launch->error, sizeof launch->error,
             "kernel '%s': cannot map memory for %zu thread stacks and %zu shared memory blocks",
             launch->kernel, fibers, blocks);
    return report(1);
  }
  for (Fiber& fiber : launch->fibers) prepare_contexts(&fiber.context, 1);

  g_launch = launch;
  FaultGuard guard(launch);
  if (sigsetjmp(launch->fault_jump, 1) != 0) return report(1);
  if (launch->cooperative) {
    for (size_t b = 0; b < blocks; ++b) {
      prepare_block(launch, &launch->blocks[b], &launch->fibers[b * threads_per_block],
                    block_index(launch->grid, b));
    }
    if (!run_ready_fibers(launch)) return report(1);
    if (!check_all_finished(launch, launch->blocks.data(), blocks)) return report(1);
    return report(0);
  }
  for (unsigned long long b = 0; b < block_count; ++b) {
    prepare_block(launch, &launch->blocks[0], launch->fibers.data(),
                  block_index(launch->grid, b));
    if (!run_ready_fibers(launch)) return report(1);
    if (!check_all_finished(launch, launch->blocks.data(), 1)) return report(1);
  }
  return report(0);
}

template <auto Kernel, typename... P, size_t... I>
void invoke_with(void (*)(P...), void** args, std::index_sequence<I...>) {
  Kernel(static_cast<P>(args[I])...);
}

template <typename F> struct KernelTraits;
template <typename... P> struct KernelTraits<void (*)(P...)> {
  static_assert((std::is_pointer<P>::value && ...),
                "kernel parameters must all be pointers (notes/cuda_contract.md)");
  static constexpr int arity = sizeof...(P);
  template <auto Kernel> static void invoke(void** args) {
    invoke_with<Kernel>(Kernel, args, std::index_sequence_for<P...>{});
  }
  // Per parameter: the size of the pointee (0 for void) and whether it is const.
  static int describe(long long* element_sizes, int* is_const, int capacity) {
    long long sizes[] = {0, element_size<P>()...};
    int consts[] = {0, int(std::is_const<std::remove_pointer_t<P>>::value)...};
    for (int i = 0; i < arity && i < capacity; ++i) {
      element_sizes[i] = sizes[i + 1];
      is_const[i] = consts[i + 1];
    }
    return arity;
  }
  template <typename Q> static constexpr long long element_size() {
    using T = std::remove_cv_t<std::remove_pointer_t<Q>>;
    if constexpr (std::is_void<T>::value) {
      return 0;
    } else {
      return sizeof(T);
    }
  }
};

// The generated launcher of each kernel calls these two (see emulate.py).
template <auto Kernel>
int launch(const char* name, void** args, int gx, int gy, int gz, int bx, int by, int bz,
           size_t shared_bytes, int cooperative, char* error, size_t error_len) {
  using Traits = KernelTraits<decltype(Kernel)>;
  auto state = std::make_unique<Launch>();
  state->kernel = name;
  state->grid = dim3(unsigned(gx), unsigned(gy), unsigned(gz));
  state->block = dim3(unsigned(bx), unsigned(by), unsigned(bz));
  if (gx < 0 || gy < 0 || gz < 0 || bx < 0 || by < 0 || bz < 0) state->grid = dim3(0, 0, 0);
  state->shared_bytes = shared_bytes;
  state->cooperative = cooperative != 0;
  state->invoke = &Traits::template invoke<Kernel>;
  state->args = args;
  return run_grid(state.get(), error, error_len);
}

template <auto Kernel>
int describe_parameters(long long* element_sizes, int* is_const, int capacity) {
  return KernelTraits<decltype(Kernel)>::describe(element_sizes, is_const, capacity);
}

inline const uint3& current_thread_index() { return g_current->thread_index; }
inline const uint3& current_block_index() { return g_current->block->index; }
inline const dim3& current_block_dim() { return g_launch->block; }
inline const dim3& current_grid_dim() { return g_launch->grid; }

}  // namespace detail

// The block's dynamic shared memory: 16-byte aligned, the size the launch gave, 0xCD-filled.
inline unsigned char* block_shared_memory() { return detail::g_current->block->shared; }

// Grid-wide barrier; only a cooperative launch can complete it.
inline void grid_sync() { detail::sync_grid(); }

// A vector load or store of `bytes` bytes at `address` (the prelude's fx_load_vec and
// fx_store_vec): a GPU faults with "misaligned address" unless the address is a multiple of
// the access size, while the CPU would not notice, so the launch stops here with that error.
inline void check_vector_alignment(const void* address, size_t bytes, const char* access) {
  size_t misalignment = reinterpret_cast<uintptr_t>(address) % bytes;
  if (misalignment == 0) return;
  detail::fail("misaligned address: a %zu-byte vector %s at %p is %zu bytes past a multiple of "
               "%zu (a GPU faults on it)", bytes, access, address, misalignment, bytes);
}

}  // namespace fx_emu

// -- builtins -----------------------------------------------------------------------------------

#define threadIdx (::fx_emu::detail::current_thread_index())
#define blockIdx (::fx_emu::detail::current_block_index())
#define blockDim (::fx_emu::detail::current_block_dim())
#define gridDim (::fx_emu::detail::current_grid_dim())

// -- barriers, warp operations --------------------------------------------------------------------

inline void __syncthreads() { fx_emu::detail::sync_block(); }
inline void __syncwarp(unsigned mask = 0xffffffffu) {
  fx_emu::detail::warp_rendezvous("__syncwarp", mask, fx_emu::detail::WarpOp::Sync, 0, 0, 0);
}
inline void __threadfence() {}
inline void __threadfence_block() {}
inline unsigned __activemask() {
  unsigned lanes = fx_emu::detail::g_current->warp->lanes;
  return lanes == 32 ? 0xffffffffu : (1u << lanes) - 1u;
}

template <typename T>
inline T __shfl_sync(unsigned mask, T value, int source_lane, int width = warpSize) {
  int lane = fx_emu::detail::lane_id();
  int source = (lane & ~(width - 1)) + (source_lane & (width - 1));
  return fx_emu::detail::shuffle("__shfl_sync", mask, value, source, width);
}
template <typename T>
inline T __shfl_up_sync(unsigned mask, T value, unsigned delta, int width = warpSize) {
  int lane = fx_emu::detail::lane_id();
  int source = (lane & (width - 1)) >= int(delta) ? lane - int(delta) : lane;
  return fx_emu::detail::shuffle("__shfl_up_sync", mask, value, source, width);
}
template <typename T>
inline T __shfl_down_sync(unsigned mask, T value, unsigned delta, int width = warpSize) {
  int lane = fx_emu::detail::lane_id();
  int source = (lane & (width - 1)) + int(delta) < width ? lane + int(delta) : lane;
  return fx_emu::detail::shuffle("__shfl_down_sync", mask, value, source, width);
}
template <typename T>
inline T __shfl_xor_sync(unsigned mask, T value, int lane_mask, int width = warpSize) {
  int lane = fx_emu::detail::lane_id();
  int source = lane ^ lane_mask;
  if ((source & ~(width - 1)) != (lane & ~(width - 1))) source = lane;
  return fx_emu::detail::shuffle("__shfl_xor_sync", mask, value, source, width);
}

inline unsigned __ballot_sync(unsigned mask, int predicate) {
  return unsigned(fx_emu::detail::warp_rendezvous("__ballot_sync", mask,
                                                  fx_emu::detail::WarpOp::Vote,
                                                  predicate != 0, 1, 0));
}
inline int __all_sync(unsigned mask, int predicate) {
  unsigned ballot = __ballot_sync(mask, predicate);
  return ballot == __activemask();
}
inline int __any_sync(unsigned mask, int predicate) { return __ballot_sync(mask, predicate) != 0; }

// -- atomics: plain read-modify-write (fibers switch only at barriers) ----------------------------

#define FX_EMU_ATOMIC(name, T, update)                 \
  inline T name(T* address, T value) {                 \
    T old = *address;                                  \
    *address = (update);                               \
    return old;                                        \
  }
#define FX_EMU_ATOMIC_INTEGER(T)                                          \
  FX_EMU_ATOMIC(atomicAdd, T, static_cast<T>(old + value))                \
  FX_EMU_ATOMIC(atomicSub, T, static_cast<T>(old - value))                \
  FX_EMU_ATOMIC(atomicExch, T, value)                                     \
  FX_EMU_ATOMIC(atomicMax, T, old > value ? old : value)                  \
  FX_EMU_ATOMIC(atomicMin, T, old < value ? old : value)                  \
  FX_EMU_ATOMIC(atomicAnd, T, static_cast<T>(old & value))                \
  FX_EMU_ATOMIC(atomicOr, T, static_cast<T>(old | value))                 \
  FX_EMU_ATOMIC(atomicXor, T, static_cast<T>(old ^ value))                \
  inline T atomicCAS(T* address, T compare, T value) {                    \
    T old = *address;                                                     \
    if (old == compare) *address = value;                                 \
    return old;                                                           \
  }
FX_EMU_ATOMIC_INTEGER(int)
FX_EMU_ATOMIC_INTEGER(unsigned int)
FX_EMU_ATOMIC_INTEGER(long long)
FX_EMU_ATOMIC_INTEGER(unsigned long long)
FX_EMU_ATOMIC(atomicAdd, float, old + value)
FX_EMU_ATOMIC(atomicAdd, double, old + value)
FX_EMU_ATOMIC(atomicExch, float, value)
FX_EMU_ATOMIC(atomicExch, double, value)
#undef FX_EMU_ATOMIC_INTEGER
#undef FX_EMU_ATOMIC

inline unsigned short atomicCAS(unsigned short* address, unsigned short compare,
                                unsigned short value) {
  unsigned short old = *address;
  if (old == compare) *address = value;
  return old;
}
inline unsigned atomicInc(unsigned* address, unsigned limit) {
  unsigned old = *address;
  *address = old >= limit ? 0u : old + 1u;
  return old;
}
inline unsigned atomicDec(unsigned* address, unsigned limit) {
  unsigned old = *address;
  *address = (old == 0u || old > limit) ? limit : old - 1u;
  return old;
}

template <typename T> inline T __ldg(const T* address) { return *address; }

// -- bit reinterpretation and integer intrinsics ------------------------------------------------

namespace fx_emu {
namespace detail {
template <typename To, typename From> inline To bit_cast(From value) {
  static_assert(sizeof(To) == sizeof(From), "bit_cast between types of different sizes");
  To result;
  std::memcpy(&result, &value, sizeof(To));
  return result;
}
}  // namespace detail
}  // namespace fx_emu

inline int __float_as_int(float x) { return fx_emu::detail::bit_cast<int>(x); }
inline unsigned __float_as_uint(float x) { return fx_emu::detail::bit_cast<unsigned>(x); }
inline float __int_as_float(int x) { return fx_emu::detail::bit_cast<float>(x); }
inline float __uint_as_float(unsigned x) { return fx_emu::detail::bit_cast<float>(x); }
inline long long __double_as_longlong(double x) { return fx_emu::detail::bit_cast<long long>(x); }
inline double __longlong_as_double(long long x) { return fx_emu::detail::bit_cast<double>(x); }
inline int __double2hiint(double x) { return int(__double_as_longlong(x) >> 32); }
inline int __double2loint(double x) { return int(__double_as_longlong(x) & 0xffffffff); }
inline double __hiloint2double(int hi, int lo) {
  return __longlong_as_double((long long)((unsigned long long)(unsigned)hi << 32 | (unsigned)lo));
}

inline int __popc(unsigned x) { return __builtin_popcount(x); }
inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
inline int __clz(int x) { return x == 0 ? 32 : __builtin_clz(unsigned(x)); }
inline int __clzll(long long x) { return x == 0 ? 64 : __builtin_clzll((unsigned long long)x); }
inline int __ffs(int x) { return __builtin_ffs(x); }
inline int __ffsll(long long x) { return __builtin_ffsll(x); }
inline unsigned __brev(unsigned x) {
  unsigned r = 0;
  for (int i = 0; i < 32; ++i) r |= ((x >> i) & 1u) << (31 - i);
  return r;
}
inline unsigned long long __brevll(unsigned long long x) {
  return (unsigned long long)__brev(unsigned(x)) << 32 | __brev(unsigned(x >> 32));
}
inline int __mul24(int x, int y) { return ((x << 8) >> 8) * ((y << 8) >> 8); }
inline unsigned __umul24(unsigned x, unsigned y) { return (x & 0xffffff) * (y & 0xffffff); }
inline int __mulhi(int x, int y) { return int(((long long)x * y) >> 32); }
inline unsigned __umulhi(unsigned x, unsigned y) {
  return unsigned(((unsigned long long)x * y) >> 32);
}
inline long long __mul64hi(long long x, long long y) {
  return (long long)(((__int128)x * y) >> 64);
}
inline unsigned long long __umul64hi(unsigned long long x, unsigned long long y) {
  return (unsigned long long)(((unsigned __int128)x * y) >> 64);
}
inline unsigned __byte_perm(unsigned x, unsigned y, unsigned s) {
  unsigned long long bytes = (unsigned long long)y << 32 | x;
  unsigned r = 0;
  for (int i = 0; i < 4; ++i) {
    unsigned selected = (s >> (4 * i)) & 7;
    r |= unsigned((bytes >> (selected * 8)) & 0xff) << (8 * i);
  }
  return r;
}
inline unsigned __funnelshift_l(unsigned lo, unsigned hi, unsigned shift) {
  unsigned long long both = (unsigned long long)hi << 32 | lo;
  return unsigned((both << (shift & 31)) >> 32);
}
inline unsigned __funnelshift_r(unsigned lo, unsigned hi, unsigned shift) {
  unsigned long long both = (unsigned long long)hi << 32 | lo;
  return unsigned(both >> (shift & 31));
}

// -- math the CUDA API has and <cmath> lacks -----------------------------------------------------

// CUDA's global min/max accept mixed arithmetic types.
template <typename A, typename B,
          typename = std::enable_if_t<std::is_arithmetic<A>::value && std::is_arithmetic<B>::value>>
inline std::common_type_t<A, B> max(A a, B b) {
  using C = std::common_type_t<A, B>;
  return C(a) > C(b) ? C(a) : C(b);
}
template <typename A, typename B,
          typename = std::enable_if_t<std::is_arithmetic<A>::value && std::is_arithmetic<B>::value>>
inline std::common_type_t<A, B> min(A a, B b) {
  using C = std::common_type_t<A, B>;
  return C(a) < C(b) ? C(a) : C(b);
}
inline unsigned umax(unsigned a, unsigned b) { return a > b ? a : b; }
inline unsigned umin(unsigned a, unsigned b) { return a < b ? a : b; }
inline long long llmax(long long a, long long b) { return a > b ? a : b; }
inline long long llmin(long long a, long long b) { return a < b ? a : b; }
inline unsigned long long ullmax(unsigned long long a, unsigned long long b) {
  return a > b ? a : b;
}
inline unsigned long long ullmin(unsigned long long a, unsigned long long b) {
  return a < b ? a : b;
}

inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
inline double rsqrt(double x) { return 1.0 / sqrt(x); }
inline float rsqrt(float x) { return rsqrtf(x); }
inline float rcbrtf(float x) { return 1.0f / cbrtf(x); }
inline double rcbrt(double x) { return 1.0 / cbrt(x); }
inline float rhypotf(float x, float y) { return 1.0f / hypotf(x, y); }
inline double rhypot(double x, double y) { return 1.0 / hypot(x, y); }
inline float fdividef(float x, float y) { return x / y; }
inline float __fdividef(float x, float y) { return x / y; }
inline float __saturatef(float x) { return x != x ? 0.0f : fminf(fmaxf(x, 0.0f), 1.0f); }
// The fast intrinsics are approximations on the GPU; the emulator computes them exactly, so
// tests comparing with a tolerance hold on both.
inline float __expf(float x) { return expf(x); }
inline float __exp10f(float x) { return exp10f(x); }
inline float __logf(float x) { return logf(x); }
inline float __log2f(float x) { return log2f(x); }
inline float __log10f(float x) { return log10f(x); }
inline float __sinf(float x) { return sinf(x); }
inline float __cosf(float x) { return cosf(x); }
inline float __tanf(float x) { return tanf(x); }
inline float __powf(float x, float y) { return powf(x, y); }
inline void __sincosf(float x, float* s, float* c) { sincosf(x, s, c); }
inline float __frcp_rn(float x) { return 1.0f / x; }
inline float __fsqrt_rn(float x) { return sqrtf(x); }
inline float __fadd_rn(float x, float y) { return x + y; }
inline float __fsub_rn(float x, float y) { return x - y; }
inline float __fmul_rn(float x, float y) { return x * y; }
inline float __fdiv_rn(float x, float y) { return x / y; }
inline float __fmaf_rn(float x, float y, float z) { return fmaf(x, y, z); }
inline double __dadd_rn(double x, double y) { return x + y; }
inline double __dmul_rn(double x, double y) { return x * y; }
inline double __fma_rn(double x, double y, double z) { return fma(x, y, z); }
inline float sinpif(float x) { return float(sin(M_PI * double(x))); }
inline float cospif(float x) { return float(cos(M_PI * double(x))); }
inline double sinpi(double x) { return sin(M_PI * x); }
inline double cospi(double x) { return cos(M_PI * x); }
inline void sincospif(float x, float* s, float* c) { *s = sinpif(x); *c = cospif(x); }

inline int __float2int_rn(float x) { return int(nearbyintf(x)); }
inline int __float2int_rz(float x) { return int(x); }
inline int __float2int_rd(float x) { return int(floorf(x)); }
inline int __float2int_ru(float x) { return int(ceilf(x)); }
inline unsigned __float2uint_rn(float x) { return unsigned(nearbyintf(x)); }
inline long long __float2ll_rn(float x) { return (long long)nearbyintf(x); }
inline float __int2float_rn(int x) { return float(x); }
inline float __uint2float_rn(unsigned x) { return float(x); }
inline float __double2float_rn(double x) { return float(x); }
inline int __double2int_rn(double x) { return int(nearbyint(x)); }
inline int __double2int_rz(double x) { return int(x); }

namespace fx_emu {
namespace detail {
// erfinv in double: a first guess refined by Newton steps on erf.
inline double erfinv(double y) {
  if (y != y || y < -1.0 || y > 1.0) return NAN;
  if (y == 1.0) return INFINITY;
  if (y == -1.0) return -INFINITY;
  if (y == 0.0) return y;
  double w = -log((1.0 - y) * (1.0 + y));
  double x;  // M. Giles' single-precision approximation, as a starting point
  if (w < 5.0) {
    w -= 2.5;
    double p = 2.81022636e-08;
    p = 3.43273939e-07 + p * w; p = -3.5233877e-06 + p * w; p = -4.39150654e-06 + p * w;
    p = 0.00021858087 + p * w; p = -0.00125372503 + p * w; p = -0.00417768164 + p * w;
    p = 0.246640727 + p * w; p = 1.50140941 + p * w;
    x = p * y;
  } else {
    w = sqrt(w) - 3.0;
    double p = -0.000200214257;
    p = 0.000100950558 + p * w; p = 0.00134934322 + p * w; p = -0.00367342844 + p * w;
    p = 0.00573950773 + p * w; p = -0.0076224613 + p * w; p = 0.00943887047 + p * w;
    p = 1.00167406 + p * w; p = 2.83297682 + p * w;
    x = p * y;
  }
  for (int i = 0; i < 4; ++i) {
    double step = (erf(x) - y) / (2.0 / sqrt(M_PI) * exp(-x * x));
    x -= step;
    if (fabs(step) <= 1e-17 * fabs(x)) break;
  }
  return x;
}
// erfcinv(q) = erfinv(1 - q), solved on erfc directly so small q keeps its precision.
inline double erfcinv(double q) {
  if (q != q || q < 0.0 || q > 2.0) return NAN;
  if (q == 0.0) return INFINITY;
  if (q == 2.0) return -INFINITY;
  if (q > 0.5 && q < 1.5) return erfinv(1.0 - q);
  bool upper = q > 1.0;  // erfc(-x) = 2 - erfc(x)
  double target = upper ? 2.0 - q : q;
  double x = sqrt(-log(target));  // rough: erfc(x) ~ exp(-x^2)
  for (int i = 0; i < 100; ++i) {
    // Newton on log(erfc(x)) - log(target): well-scaled even where erfc underflows slowly.
    double value = erfc(x);
    double derivative = -2.0 / sqrt(M_PI) * exp(-x * x) / value;
    double step = (log(value) - log(target)) / derivative;
    x -= step;
    if (fabs(step) <= 1e-16 * fabs(x)) break;
  }
  return upper ? -x : x;
}
}  // namespace detail
}  // namespace fx_emu

inline float erfinvf(float x) { return float(fx_emu::detail::erfinv(x)); }
inline double erfinv(double x) { return fx_emu::detail::erfinv(x); }
inline float erfcinvf(float x) { return float(fx_emu::detail::erfcinv(x)); }
inline double erfcinv(double x) { return fx_emu::detail::erfcinv(x); }
inline float normcdff(float x) { return float(0.5 * erfc(-double(x) / M_SQRT2)); }
inline double normcdf(double x) { return 0.5 * erfc(-x / M_SQRT2); }
inline float normcdfinvf(float p) { return float(-M_SQRT2 * fx_emu::detail::erfcinv(2.0 * p)); }
inline double normcdfinv(double p) { return -M_SQRT2 * fx_emu::detail::erfcinv(2.0 * p); }
inline float erfcxf(float x) { return float(exp(double(x) * x) * erfc(double(x))); }
inline double erfcx(double x) { return exp(x * x) * erfc(x); }

// -- 16-bit floats -------------------------------------------------------------------------------

namespace fx_emu {
namespace detail {
// float -> IEEE binary16, round to nearest even; NaN -> 0x7fff as CUDA's __float2half_rn.
inline unsigned short float_to_half_bits(float value) {
  uint32_t x = bit_cast<uint32_t>(value);
  uint32_t u = x & 0x7fffffffu;
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t result, remainder;
  if (u >= 0x7f800000u) {
    return static_cast<unsigned short>(u == 0x7f800000u ? (sign | 0x7c00u) : 0x7fffu);
  } else if (u > 0x477fefffu) {  // rounds to infinity
    result = sign | 0x7bffu;
    remainder = 0x80000000u;
  } else if (u >= 0x38800000u) {  // normal
    remainder = u << 19;
    result = sign | ((u - 0x38000000u) >> 13);
  } else if (u < 0x33000001u) {  // rounds to zero
    remainder = u;
    result = sign;
  } else {  // subnormal
    uint32_t exponent = u >> 23;
    uint32_t shift = 0x7eu - exponent;
    uint32_t mantissa = (u & 0x7fffffu) | 0x800000u;
    remainder = mantissa << (32 - shift);
    result = sign | (mantissa >> shift);
  }
  if (remainder > 0x80000000u || (remainder == 0x80000000u && (result & 1u))) ++result;
  return static_cast<unsigned short>(result);
}
inline float half_bits_to_float(unsigned short h) {
  uint32_t sign = uint32_t(h & 0x8000u) << 16;
  uint32_t exponent = (h >> 10) & 0x1fu;
  uint32_t mantissa = h & 0x3ffu;
  if (exponent == 0x1f) return bit_cast<float>(sign | 0x7f800000u | (mantissa << 13));
  if (exponent == 0) {
    float magnitude = float(mantissa) * 0x1p-24f;  // exact
    return sign ? -magnitude : magnitude;
  }
  return bit_cast<float>(sign | ((exponent + 112u) << 23) | (mantissa << 13));
}
// float -> bfloat16, round to nearest even; NaN -> 0x7fff as CUDA's __float2bfloat16_rn.
inline unsigned short float_to_bfloat16_bits(float value) {
  uint32_t u = bit_cast<uint32_t>(value);
  if ((u & 0x7fffffffu) > 0x7f800000u) return 0x7fffu;
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<unsigned short>(u >> 16);
}
inline float bfloat16_bits_to_float(unsigned short b) { return bit_cast<float>(uint32_t(b) << 16); }
}  // namespace detail
}  // namespace fx_emu

// Both types store their bits and compute in float: for +, -, *, / and sqrt, rounding the float
// result once more gives the correctly rounded 16-bit result (float has >= 2p+2 bits).
#define FX_EMU_HALF_TYPE(Type, to_bits, from_bits)                                              \
  struct Type {                                                                                \
    unsigned short __x;                                                                        \
    Type() = default;                                                                          \
    Type(float f) : __x(fx_emu::detail::to_bits(f)) {}                                        \
    /* other arithmetic types convert through float (a double rounds twice) */                 \
    template <typename A, typename = std::enable_if_t<std::is_arithmetic<A>::value>>          \
    Type(A a) : __x(fx_emu::detail::to_bits(float(a))) {}                                     \
    operator float() const { return fx_emu::detail::from_bits(__x); }                         \
    Type& operator+=(Type o) { return *this = Type(float(*this) + float(o)); }                 \
    Type& operator-=(Type o) { return *this = Type(float(*this) - float(o)); }                 \
    Type& operator*=(Type o) { return *this = Type(float(*this) * float(o)); }                 \
    Type& operator/=(Type o) { return *this = Type(float(*this) / float(o)); }                 \
  };                                                                                           \
  inline Type operator+(Type a, Type b) { return Type(float(a) + float(b)); }                  \
  inline Type operator-(Type a, Type b) { return Type(float(a) - float(b)); }                  \
  inline Type operator*(Type a, Type b) { return Type(float(a) * float(b)); }                  \
  inline Type operator/(Type a, Type b) { return Type(float(a) / float(b)); }                  \
  inline Type operator-(Type a) {                                                              \
    Type r;                                                                                    \
    r.__x = static_cast<unsigned short>(a.__x ^ 0x8000u);                                      \
    return r;                                                                                  \
  }                                                                                            \
  inline Type operator+(Type a) { return a; }                                                  \
  inline bool operator==(Type a, Type b) { return float(a) == float(b); }                      \
  inline bool operator!=(Type a, Type b) { return float(a) != float(b); }                      \
  inline bool operator<(Type a, Type b) { return float(a) < float(b); }                        \
  inline bool operator<=(Type a, Type b) { return float(a) <= float(b); }                      \
  inline bool operator>(Type a, Type b) { return float(a) > float(b); }                        \
  inline bool operator>=(Type a, Type b) { return float(a) >= float(b); }                      \
  inline Type __hadd(Type a, Type b) { return a + b; }                                         \
  inline Type __hsub(Type a, Type b) { return a - b; }                                         \
  inline Type __hmul(Type a, Type b) { return a * b; }                                         \
  inline Type __hdiv(Type a, Type b) { return a / b; }                                         \
  inline Type __hneg(Type a) { return -a; }                                                    \
  inline Type __habs(Type a) {                                                                 \
    Type r;                                                                                    \
    r.__x = static_cast<unsigned short>(a.__x & 0x7fffu);                                      \
    return r;                                                                                  \
  }                                                                                            \
  inline Type __hfma(Type a, Type b, Type c) {                                                 \
    return Type(float(double(float(a)) * float(b) + float(c)));                                \
  }                                                                                            \
  inline Type __hmax(Type a, Type b) { return float(a) > float(b) || b != b ? a : b; }        \
  inline Type __hmin(Type a, Type b) { return float(a) < float(b) || b != b ? a : b; }        \
  inline bool __heq(Type a, Type b) { return a == b; }                                         \
  inline bool __hne(Type a, Type b) { return a != b; }                                         \
  inline bool __hlt(Type a, Type b) { return a < b; }                                          \
  inline bool __hle(Type a, Type b) { return a <= b; }                                         \
  inline bool __hgt(Type a, Type b) { return a > b; }                                          \
  inline bool __hge(Type a, Type b) { return a >= b; }                                         \
  inline bool __hisnan(Type a) { return float(a) != float(a); }                                \
  inline int __hisinf(Type a) {                                                                \
    float f = a;                                                                               \
    return std::isinf(f) ? (f < 0 ? -1 : 1) : 0;                                               \
  }                                                                                            \
  inline Type hsqrt(Type a) { return Type(sqrtf(float(a))); }                                  \
  inline Type hrsqrt(Type a) { return Type(1.0f / sqrtf(float(a))); }                          \
  inline Type hexp(Type a) { return Type(expf(float(a))); }                                    \
  inline Type hlog(Type a) { return Type(logf(float(a))); }                                    \
  inline Type htanh(Type a) { return Type(tanhf(float(a))); }                                  \
  inline Type hfloor(Type a) { return Type(floorf(float(a))); }                                \
  inline Type hceil(Type a) { return Type(ceilf(float(a))); }

FX_EMU_HALF_TYPE(__half, float_to_half_bits, half_bits_to_float)
FX_EMU_HALF_TYPE(__nv_bfloat16, float_to_bfloat16_bits, bfloat16_bits_to_float)
#undef FX_EMU_HALF_TYPE

typedef __half half;
typedef __nv_bfloat16 nv_bfloat16;

inline __half __float2half_rn(float f) { return __half(f); }
inline __half __float2half(float f) { return __half(f); }
inline float __half2float(__half h) { return float(h); }
inline __nv_bfloat16 __float2bfloat16_rn(float f) { return __nv_bfloat16(f); }
inline __nv_bfloat16 __float2bfloat16(float f) { return __nv_bfloat16(f); }
inline float __bfloat162float(__nv_bfloat16 b) { return float(b); }
inline unsigned short __half_as_ushort(__half h) { return h.__x; }
inline short __half_as_short(__half h) { return short(h.__x); }
inline __half __ushort_as_half(unsigned short bits) {
  __half h;
  h.__x = bits;
  return h;
}
inline __half __short_as_half(short bits) { return __ushort_as_half((unsigned short)bits); }
inline unsigned short __bfloat16_as_ushort(__nv_bfloat16 b) { return b.__x; }
inline short __bfloat16_as_short(__nv_bfloat16 b) { return short(b.__x); }
inline __nv_bfloat16 __ushort_as_bfloat16(unsigned short bits) {
  __nv_bfloat16 b;
  b.__x = bits;
  return b;
}
inline __nv_bfloat16 __short_as_bfloat16(short bits) {
  return __ushort_as_bfloat16((unsigned short)bits);
}

#endif  // FX_CUDA_EMU_H
