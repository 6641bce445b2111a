// The reference for bench/launch_overhead.py: the loop a C++ tuner would write
// by hand against libcuda, making the same calls as pyhipbench's CUDA loop
// (cuEventRecord, cuLaunchKernel, cuEventRecord per iteration, one sync).
// Built as a shared library and called in the same process, on the same
// context and function, so only the loops differ.
#include <cuda.h>

#include <chrono>

extern "C" {

// Host µs to issue `iterations` launches of `function` (no arguments, 1x1),
// or a negative CUresult on failure. `events` holds 2 * iterations events.
double plain_loop(CUfunction function, CUevent* events, int iterations) {
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < iterations; ++i) {
    if (CUresult r = cuEventRecord(events[2 * i], nullptr)) return -r;
    if (CUresult r = cuLaunchKernel(function, 1, 1, 1, 1, 1, 1, 0, nullptr, nullptr, nullptr)) return -r;
    if (CUresult r = cuEventRecord(events[2 * i + 1], nullptr)) return -r;
  }
  const auto issued = std::chrono::steady_clock::now();
  if (CUresult r = cuEventSynchronize(events[2 * iterations - 1])) return -r;
  return std::chrono::duration<double, std::micro>(issued - start).count();
}

int create_events(CUevent* events, int count) {
  for (int i = 0; i < count; ++i) {
    if (CUresult r = cuEventCreate(&events[i], 0)) return r;
  }
  return 0;
}

}  // extern "C"
