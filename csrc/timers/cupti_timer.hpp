// The `cupti` timer (CUDA only): each launch's kernel duration on the GPU, from
// CUPTI's kernel activity records (end - start), one sample per launch.
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
  void open_session() override;
  void close_session(bool checked) override;

  CuptiLibrary cupti_;
  std::unique_ptr<CuptiKernelTrace> session_trace_;  // while a session is open
};

}  // namespace pyhipbench
