#include "timers/cupti_timer.hpp"

#include <chrono>

namespace pyhipbench {

CuptiTimer::CuptiTimer(std::shared_ptr<CudaDriver> driver, uintptr_t context, const std::string& cupti_library)
    : TimerBase<CudaDriver>("cupti", std::move(driver), context), cupti_(cupti_library) {}

CuptiTimer::~CuptiTimer() {
  session_trace_.reset();
  release_in_context([this] { destroy_events(); });
}

void CuptiTimer::open_session() {
  session_trace_ = std::make_unique<CuptiKernelTrace>(cupti_, reinterpret_cast<uintptr_t>(context_));
}

void CuptiTimer::close_session(bool checked) {
  const std::unique_ptr<CuptiKernelTrace> trace = std::move(session_trace_);  // stops tracing on every path
  if (checked && trace != nullptr) trace->finish();
}

void CuptiTimer::time(LaunchPlan& plan, size_t samples, size_t first_set, Timings& timings) {
  const CudaDriver& driver = *driver_;
  grow_event_pool(1);
  const Event done = events_[0];
  const auto stream = reinterpret_cast<Stream>(plan.config().stream);
  const size_t sets = plan.sets();
  size_t set = first_set % sets;

  LaunchPlan* clean = plan.clean_step();
  if (clean != nullptr) driver.check_plan(*clean);

  // Outside a session the run traces itself. The trace keeps only the plan's
  // function: the clean step's records are not samples.
  std::optional<CuptiKernelTrace> own_trace;
  CuptiKernelTrace& trace =
      session_trace_ != nullptr ? *session_trace_ : own_trace.emplace(cupti_, reinterpret_cast<uintptr_t>(context_));
  trace.expect(plan.function(), samples, clean != nullptr ? samples : 0);
  const auto start = std::chrono::steady_clock::now();
  for (size_t i = 0; i < samples; ++i) {
    if (clean != nullptr) {
      const Status cleaned = driver.launch(*clean, clean->args(0), stream, nullptr, nullptr);
      if (cleaned.code != 0) fail(*clean, cleaned.call, cleaned.code);
    }
    const Status status = driver.launch(plan, plan.args(set), stream, nullptr, nullptr);
    if (status.code != 0) fail(plan, status.call, status.code);
    set = set + 1 == sets ? 0 : set + 1;
  }
  timings.host_us = elapsed_us(start);
  // CUPTI's flush does not wait for the GPU: the last kernel must have ended
  // before its record is complete.
  check(plan, CudaDriver::kEventRecord, driver.event_record(done, stream));
  check(plan, CudaDriver::kEventSynchronize, driver.event_synchronize(done));
  trace.collect(plan.config(), plan.kernel_name(), timings.times_us);
  if (own_trace) own_trace->finish();
}

}  // namespace pyhipbench
