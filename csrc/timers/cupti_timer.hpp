// The `cupti` timer (CUDA only): each kernel's duration on the GPU, from
// CUPTI's kernel activity records (end - start). A plan's sample is its
// chain: the sum of its kernels' durations (and, for a chain of several, each
// kernel's own and the span from the first start to the last end). A call's
// sample is the sum of the kernels it issued, attributed by CUPTI correlation
// (CuptiCallTrace), with its memcpys and memsets listed beside.
//
// No event surrounds a launch: the records carry the GPU's own start and end,
// and one event after the last launch is all the host waits on. Tracing is on
// only while run() issues its launches (csrc/cupti.hpp, CuptiKernelTrace), or
// for a whole Timer::Session (one measurement's chunks: subscribed and enabled
// once, each run only flushes and reads), so other timers in the process pay
// nothing for it.
#pragma once

#include <memory>
#include <optional>

#include "cuda_driver.hpp"
#include "cupti.hpp"
#include "timers/timer_support.hpp"

namespace pyhipbench {

class CuptiTimer final : public TimerBase<CudaDriver> {
 public:
  // `cupti_library`: libcupti's path; empty: $PYHIPBENCH_CUPTI_LIBRARY, else
  // the usual names and toolkit folders (CuptiLibrary).
  CuptiTimer(std::shared_ptr<CudaDriver> driver, uintptr_t context, const std::string& cupti_library = "");
  ~CuptiTimer() override;

  const CuptiLibrary& cupti() const { return cupti_; }

 private:
  // One CUPTI trace at a time per process (CuptiKernelTrace).
  void time(LaunchPlan& plan, size_t samples, size_t first_set, Timings& timings) override;
  void time(CallPlan& call, size_t samples, Timings& timings) override;
  void open_session() override;
  void close_session(bool checked) override;

  CuptiLibrary cupti_;
  // While a session is open, the trace of the kind its first run needed;
  // a run of the other kind closes it and opens its own.
  std::unique_ptr<CuptiKernelTrace> session_trace_;
  std::unique_ptr<CuptiCallTrace> session_call_trace_;
  bool session_open_ = false;
};

}  // namespace pyhipbench
