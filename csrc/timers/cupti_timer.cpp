#include "timers/cupti_timer.hpp"

#include <algorithm>
#include <chrono>

namespace pyhipbench {

CuptiTimer::CuptiTimer(std::shared_ptr<CudaDriver> driver, uintptr_t context, const std::string& cupti_library)
    : TimerBase<CudaDriver>("cupti", std::move(driver), context), cupti_(cupti_library) {}

CuptiTimer::~CuptiTimer() {
  session_trace_.reset();
  session_call_trace_.reset();
  release_in_context([this] { release_pool_and_probe(); });
}

void CuptiTimer::open_session() { session_open_ = true; }

void CuptiTimer::close_session(bool checked) {
  session_open_ = false;
  // Stop tracing on every path, then report what failed.
  const std::unique_ptr<CuptiKernelTrace> kernels = std::move(session_trace_);
  const std::unique_ptr<CuptiCallTrace> calls = std::move(session_call_trace_);
  if (checked && kernels != nullptr) kernels->finish();
  if (checked && calls != nullptr) calls->finish();
}

void CuptiTimer::time(LaunchPlan& plan, size_t samples, size_t first_set, Timings& timings) {
  const CudaDriver& driver = *driver_;
  grow_event_pool(1);
  const Event done = events_[0];
  const auto stream = reinterpret_cast<Stream>(plan.stream());
  const size_t sets = plan.sets();
  size_t set = first_set % sets;

  // What each sample launches, in order: the clean step (its records are not
  // samples), then the chain.
  std::vector<const KernelLaunch*> cycle;
  if (LaunchPlan* clean = plan.clean_step()) {
    driver.check_plan(*clean);
    cycle.push_back(&clean->kernel(0));
  }
  const size_t first_kernel = cycle.size();
  for (size_t k = 0; k < plan.kernels(); ++k) cycle.push_back(&plan.kernel(k));

  // In a session the trace lives for the whole measurement; otherwise the run traces itself.
  std::unique_ptr<CuptiKernelTrace> own_trace;
  if (session_open_ && session_trace_ == nullptr) {
    session_call_trace_.reset();
    session_trace_ = std::make_unique<CuptiKernelTrace>(cupti_, reinterpret_cast<uintptr_t>(context_));
  }
  if (!session_open_) own_trace = std::make_unique<CuptiKernelTrace>(cupti_, reinterpret_cast<uintptr_t>(context_));
  CuptiKernelTrace& trace = session_open_ ? *session_trace_ : *own_trace;
  stamp_clock(false, stream, plan.name());  // before expect(): not one of the run's launches
  trace.expect(samples * cycle.size());
  const auto start = std::chrono::steady_clock::now();
  for (size_t i = 0; i < samples; ++i) {
    prepare_sample(plan, set, stream);
    launch_chain_or_fail(plan, set, stream);
    set = set + 1 == sets ? 0 : set + 1;
  }
  timings.host_us = elapsed_us(start);
  trace.work_issued();
  if (clock_probed()) trace.skip_next_launch();
  stamp_clock(true, stream, plan.name());
  // CUPTI's flush does not wait for the GPU: the last kernel must have ended
  // before its record is complete.
  check(plan, CudaDriver::kEventRecord, driver.event_record(done, stream));
  wait_for(done, plan.name());
  std::vector<uint64_t> start_ns, end_ns;
  trace.collect(cycle, "kernel '" + plan.name() + "'", start_ns, end_ns);
  if (own_trace) own_trace->finish();

  const size_t kernels = plan.kernels();
  timings.times_us.resize(samples);
  if (kernels > 1) {
    timings.kernel_times_us.resize(samples * kernels);
    timings.span_us.resize(samples);
  }
  for (size_t i = 0; i < samples; ++i) {
    const size_t base = i * cycle.size() + first_kernel;
    double sum_us = 0;
    for (size_t k = 0; k < kernels; ++k) {
      const double us = static_cast<double>(end_ns[base + k] - start_ns[base + k]) / 1000.0;
      sum_us += us;
      if (kernels > 1) timings.kernel_times_us[i * kernels + k] = us;
    }
    timings.times_us[i] = sum_us;
    if (kernels > 1) {
      const uint64_t first = *std::min_element(start_ns.begin() + base, start_ns.begin() + base + kernels);
      const uint64_t last = *std::max_element(end_ns.begin() + base, end_ns.begin() + base + kernels);
      timings.span_us[i] = static_cast<double>(last - first) / 1000.0;
    }
  }
}

void CuptiTimer::time(CallPlan& call, size_t samples, Timings& timings) {
  const CudaDriver& driver = *driver_;
  const auto stream = reinterpret_cast<Stream>(call.stream());
  const auto traced_context = reinterpret_cast<uintptr_t>(context_);
  std::unique_ptr<CuptiCallTrace> own_trace;
  if (session_open_ &&
      (session_call_trace_ == nullptr || session_call_trace_->graph_launch_only() != call.graph_launch_only())) {
    session_trace_.reset();
    session_call_trace_.reset();
    session_call_trace_ = std::make_unique<CuptiCallTrace>(cupti_, traced_context, call.graph_launch_only());
  }
  if (!session_open_) own_trace = std::make_unique<CuptiCallTrace>(cupti_, traced_context, call.graph_launch_only());
  CuptiCallTrace& trace = session_open_ ? *session_call_trace_ : *own_trace;
  trace.expect(samples);
  stamp_clock(false, stream, call.name());  // outside every call: not attributed to one
  const auto start = std::chrono::steady_clock::now();
  for (size_t i = 0; i < samples; ++i) {
    count_call(call.name(), nullptr);
    prepare_call(call, stream);
    trace.open(i);
    struct Close {
      CuptiCallTrace& trace;
      ~Close() { trace.close(); }
    } close{trace};
    call.call();
  }
  timings.host_us = elapsed_us(start);
  trace.work_issued();
  stamp_clock(true, stream, call.name());
  // The call may have used any stream of the context: wait for them all. An
  // event on the legacy default stream follows the work of every blocking
  // stream, and waiting for it sees an interrupt; the context's
  // synchronisation then covers the non-blocking streams.
  grow_event_pool(1);
  const int recorded = driver.event_record(events_[0], nullptr);
  if (recorded != 0) fail(call.name(), CudaDriver::kEventRecord, recorded);
  wait_for(events_[0], call.name(), "call");
  const int synchronized = driver.cuCtxSynchronize();
  if (synchronized != 0) fail(call.name(), "cuCtxSynchronize", synchronized);
  timings.activities = trace.collect("call '" + call.name() + "'");
  if (own_trace) own_trace->finish();

  timings.times_us.assign(samples, 0);
  timings.span_us.assign(samples, 0);
  std::vector<uint64_t> first(samples, UINT64_MAX), last(samples, 0);
  std::vector<size_t> kernels(samples, 0), others(samples, 0);
  for (const Activity& a : timings.activities) {
    if (a.kind != Activity::Kind::kernel) {
      ++others[a.sample];
      continue;
    }
    ++kernels[a.sample];
    timings.times_us[a.sample] += static_cast<double>(a.end_ns - a.start_ns) / 1000.0;
    first[a.sample] = std::min(first[a.sample], a.start_ns);
    last[a.sample] = std::max(last[a.sample], a.end_ns);
  }
  for (size_t i = 0; i < samples; ++i) {
    if (kernels[i] == 0) {
      throw MeasurementError("call " + std::to_string(i) + " of '" + call.name() + "' launched no kernel" +
                             (others[i] != 0 ? " (only " + std::to_string(others[i]) + " memcpy/memset)" : "") +
                             ": the cupti timer times the kernels a call launches; expected a callable that "
                             "launches GPU kernels from this thread");
    }
    timings.span_us[i] = static_cast<double>(last[i] - first[i]) / 1000.0;
  }
}

}  // namespace pyhipbench
