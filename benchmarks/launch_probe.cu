// What launching a kernel costs on this GPU, from C++ (the host side of XLA's runtime and of
// PyTorch's launches is C++ too): the figures compiler/target/launch.py models. One JSON object on
// stdout; `benchmarks/gpu_campaign.py --steps launch` builds and runs it (nvcc from the toolkit
// or the pip wheel; libcudart linked statically), and benchmarks/launch_calibration.py fits the
// launch terms from it.
//
//   alone          an empty kernel between two CUDA events on an idle stream (as the GPU runner
//                  times a kernel alone, but from C++ rather than Python)
//   stream_empty   N empty kernels launched back to back: per kernel, the host's issue interval
//                  or the GPU's gap, whichever is longer
//   stream_spin    N kernels that each spin for SPIN_NS on the GPU's global timer, back to back:
//                  the host keeps ahead, so per kernel = the kernel's own time + the GPU's gap
//                  between two dependent kernels; every kernel records its start and end on the
//                  global timer, so its own time is measured, not assumed
//   graph_empty,   the same two sequences captured once into a CUDA graph and replayed
//   graph_spin
//   issue          the host's wall-clock time per cudaLaunchKernel call of the empty sequence
//
// Each figure is the median over REPEATS timed runs after WARMUP runs.
//
// Usage: launch_probe [N] [SPIN_NS] [REPEATS]   (defaults 1000, 10000, 15)

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include <cuda_runtime.h>

static const int WARMUP = 3;

// Prints a JSON error naming the call that failed, and exits 1.
#define CHECK(call)                                                                       \
  do {                                                                                    \
    cudaError_t status_ = (call);                                                         \
    if (status_ != cudaSuccess) {                                                         \
      std::printf("{\"error\": \"%s: %s\"}\n", #call, cudaGetErrorString(status_));        \
      std::exit(1);                                                                       \
    }                                                                                     \
  } while (0)

__device__ __forceinline__ unsigned long long global_timer_ns() {
  unsigned long long now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  return now;
}

__global__ void empty_kernel() {}

// Spins until `spin_ns` have passed on the global timer; thread 0 records when it started and
// ended (stamps[2 * index], stamps[2 * index + 1]).
__global__ void spin_kernel(unsigned long long spin_ns, unsigned long long *stamps, int index) {
  unsigned long long start = global_timer_ns();
  while (global_timer_ns() - start < spin_ns) {
  }
  if (threadIdx.x == 0) {
    stamps[2 * index] = start;
    stamps[2 * index + 1] = global_timer_ns();
  }
}

static double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  size_t middle = values.size() / 2;
  return values.size() % 2 ? values[middle] : (values[middle - 1] + values[middle]) / 2;
}

// Median time in microseconds of `launch` between two events on `stream`.
template <typename Launch>
static double event_time_us(cudaStream_t stream, int repeats, Launch launch) {
  cudaEvent_t start, end;
  CHECK(cudaEventCreate(&start));
  CHECK(cudaEventCreate(&end));
  std::vector<double> samples;
  for (int run = 0; run < WARMUP + repeats; ++run) {
    CHECK(cudaStreamSynchronize(stream));
    CHECK(cudaEventRecord(start, stream));
    launch();
    CHECK(cudaEventRecord(end, stream));
    CHECK(cudaEventSynchronize(end));
    float ms = 0;
    CHECK(cudaEventElapsedTime(&ms, start, end));
    if (run >= WARMUP) samples.push_back(ms * 1e3);
  }
  CHECK(cudaEventDestroy(start));
  CHECK(cudaEventDestroy(end));
  return median(samples);
}

static void launch_empties(cudaStream_t stream, int count) {
  for (int k = 0; k < count; ++k) empty_kernel<<<1, 32, 0, stream>>>();
}

static void launch_spins(cudaStream_t stream, int count, unsigned long long spin_ns,
                         unsigned long long *stamps) {
  for (int k = 0; k < count; ++k) spin_kernel<<<1, 32, 0, stream>>>(spin_ns, stamps, k);
}

// The sequence `record` launches, captured into an executable graph.
template <typename Record>
static cudaGraphExec_t capture(cudaStream_t stream, Record record) {
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
  record();
  CHECK(cudaStreamEndCapture(stream, &graph));
  CHECK(cudaGraphInstantiate(&exec, graph, 0));
  CHECK(cudaGraphDestroy(graph));
  return exec;
}

// The mean time each spin kernel of the last run spent on the GPU, in microseconds.
static double spin_device_us(unsigned long long *stamps, int count) {
  std::vector<unsigned long long> host(2 * count);
  CHECK(cudaMemcpy(host.data(), stamps, host.size() * sizeof(unsigned long long),
                   cudaMemcpyDeviceToHost));
  double total = 0;
  for (int k = 0; k < count; ++k) total += double(host[2 * k + 1] - host[2 * k]);
  return total / count / 1e3;
}

int main(int argc, char **argv) {
  int count = argc > 1 ? std::atoi(argv[1]) : 1000;
  unsigned long long spin_ns = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 10000;
  int repeats = argc > 3 ? std::atoi(argv[3]) : 15;
  if (count < 2 || repeats < 1) {
    std::printf("{\"error\": \"usage: launch_probe [N >= 2] [SPIN_NS] [REPEATS >= 1]\"}\n");
    return 2;
  }
  int spins = std::max(2, count / 5);  // spin kernels take SPIN_NS each: fewer of them

  int device_count = 0;
  CHECK(cudaGetDeviceCount(&device_count));
  cudaDeviceProp properties;
  CHECK(cudaGetDeviceProperties(&properties, 0));
  cudaStream_t stream;
  CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  unsigned long long *stamps;
  CHECK(cudaMalloc(&stamps, 2 * spins * sizeof(unsigned long long)));

  double alone = event_time_us(stream, repeats, [&] { launch_empties(stream, 1); });
  double stream_empty = event_time_us(stream, repeats, [&] { launch_empties(stream, count); });
  double stream_spin = event_time_us(stream, repeats,
                                     [&] { launch_spins(stream, spins, spin_ns, stamps); });
  double stream_spin_device = spin_device_us(stamps, spins);

  cudaGraphExec_t empties = capture(stream, [&] { launch_empties(stream, count); });
  cudaGraphExec_t spinners = capture(stream, [&] { launch_spins(stream, spins, spin_ns, stamps); });
  double graph_empty = event_time_us(stream, repeats,
                                     [&] { CHECK(cudaGraphLaunch(empties, stream)); });
  double graph_spin = event_time_us(stream, repeats,
                                    [&] { CHECK(cudaGraphLaunch(spinners, stream)); });
  double graph_spin_device = spin_device_us(stamps, spins);

  std::vector<double> issue;
  for (int run = 0; run < WARMUP + repeats; ++run) {
    CHECK(cudaStreamSynchronize(stream));
    auto start = std::chrono::steady_clock::now();
    launch_empties(stream, count);
    auto end = std::chrono::steady_clock::now();
    if (run >= WARMUP)
      issue.push_back(std::chrono::duration<double, std::micro>(end - start).count() / count);
  }
  CHECK(cudaStreamSynchronize(stream));

  int driver = 0, runtime = 0;
  CHECK(cudaDriverGetVersion(&driver));
  CHECK(cudaRuntimeGetVersion(&runtime));
  std::printf(
      "{\"gpu\": \"%s\", \"driver\": %d, \"runtime\": %d, \"kernels\": %d, \"spin_kernels\": %d,"
      " \"spin_ns\": %llu, \"repeats\": %d,\n"
      " \"alone_us\": %.4f, \"issue_us\": %.4f,\n"
      " \"stream\": {\"empty_per_kernel_us\": %.4f, \"spin_per_kernel_us\": %.4f,"
      " \"spin_device_us\": %.4f, \"gap_us\": %.4f},\n"
      " \"graph\": {\"empty_per_kernel_us\": %.4f, \"spin_per_kernel_us\": %.4f,"
      " \"spin_device_us\": %.4f, \"gap_us\": %.4f}}\n",
      properties.name, driver, runtime, count, spins, spin_ns, repeats, alone, median(issue),
      stream_empty / count, stream_spin / spins, stream_spin_device,
      stream_spin / spins - stream_spin_device, graph_empty / count, graph_spin / spins,
      graph_spin_device, graph_spin / spins - graph_spin_device);

  CHECK(cudaGraphExecDestroy(empties));
  CHECK(cudaGraphExecDestroy(spinners));
  CHECK(cudaFree(stamps));
  CHECK(cudaStreamDestroy(stream));
  return 0;
}
