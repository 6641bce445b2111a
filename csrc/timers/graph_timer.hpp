// The `graph` timer: N chains captured into one graph (CUDA graph / HIP
// graph), the rotation unrolled inside it, replayed between one event pair.
//
// Chain k of a graph that starts on set g launches on set (g + k) mod R, with
// that set's own kernelParams: a graph that replays one set would time a warm
// cache under a rotating name. A sample is the graph's time / N, so launch
// gaps between kernels are those of the graph's dispatch, not the host's.
//
// Built by stream capture, not by adding kernel nodes: the captured launches
// are the very calls the events timer makes (the same driver.launch(), the
// same kernelParams arrays), and no struct layout has to be mirrored
// (CUDA_KERNEL_NODE_PARAMS changed between CUDA 11 and 12, and HIP's
// hipGraphAddKernelNode takes a host function, not a module's hipFunction_t).
// Capture runs on a non-blocking stream of the timer's own, in thread-local
// mode; the graph is launched on the plan's stream.
//
// Graphs are instantiated before the timed loop and cached for the last plan
// run (key: the plan's id), one per starting set the run needs: sample j
// starts on set (first_set + j N) mod R, so N a multiple of R needs one graph.
// A run on another plan frees the previous plan's graphs first.
#pragma once

#include <chrono>
#include <stdexcept>
#include <vector>

#include "timers/timer_support.hpp"

namespace pyhipbench {

template <class Driver>
class GraphTimer final : public TimerBase<Driver> {
  using Base = TimerBase<Driver>;
  using GraphExec = typename Driver::GraphExec;
  using Graph = typename Driver::Graph;

 public:
  GraphTimer(std::shared_ptr<Driver> driver, uintptr_t context, size_t nodes)
      : Base("graph", std::move(driver), context, nodes), nodes_(nodes) {}

  ~GraphTimer() override {
    this->release_in_context([this] {
      destroy_graphs();
      if (capture_stream_ != nullptr) this->driver_->stream_destroy(capture_stream_);
      this->release_pool_and_probe();
    });
  }

 private:
  void time(LaunchPlan& plan, size_t samples, size_t first_set, Timings& timings) override {
    const Driver& driver = *this->driver_;
    const size_t sets = plan.sets();
    if (plan.id() != cached_plan_) {
      destroy_graphs();
      execs_.assign(sets, nullptr);
      cached_plan_ = plan.id();
    }
    // Every starting set this run needs, built now: nothing is made while timing.
    size_t start_set = first_set % sets;
    const size_t step = nodes_ % sets;
    for (size_t j = 0; j < samples && j < sets; ++j) {  // the starts repeat within R samples
      if (execs_[start_set] == nullptr) execs_[start_set] = instantiate(plan, start_set);
      start_set = (start_set + step) % sets;
    }
    this->grow_event_pool(2 * samples);
    const auto stream = reinterpret_cast<typename Base::Stream>(plan.stream());
    const auto* events = this->events_.data();
    const GraphExec* execs = execs_.data();
    start_set = first_set % sets;

    this->stamp_clock(false, stream, plan.name());
    const auto start = std::chrono::steady_clock::now();
    for (size_t j = 0; j < samples; ++j) {
      this->count_launch(plan.name(), stream);
      int status = driver.event_record(events[2 * j], stream);
      if (status != 0) this->fail(plan.name(), Driver::kEventRecord, status);
      const Status launched = driver.graph_launch(execs[start_set], stream);
      if (launched.code != 0) this->fail(plan.name(), launched.call, launched.code);
      status = driver.event_record(events[2 * j + 1], stream);
      if (status != 0) this->fail(plan.name(), Driver::kEventRecord, status);
      start_set += step;
      if (start_set >= sets) start_set -= sets;
    }
    timings.host_us = Base::elapsed_us(start);
    this->stamp_clock(true, stream, plan.name());
    timings.times_us = this->read_event_pairs(plan.name(), samples, nodes_);
  }

  // Captures nodes_ chains, set (start_set + k) mod R each, into an
  // executable graph. The capture always ends, even after a failed launch, so
  // the stream is left usable.
  GraphExec instantiate(LaunchPlan& plan, size_t start_set) {
    const Driver& driver = *this->driver_;
    if (capture_stream_ == nullptr) this->check(plan, driver.capture_stream_create(&capture_stream_));
    this->check(plan, driver.begin_capture(capture_stream_));
    Status launched{0, nullptr};
    size_t set = start_set, failed = 0;
    for (size_t k = 0; k < nodes_ && launched.code == 0; ++k) {
      launched = this->launch_chain(plan, set, capture_stream_, nullptr, nullptr, failed);
      set = set + 1 == plan.sets() ? 0 : set + 1;
    }
    Graph graph = nullptr;
    const Status ended = driver.end_capture(capture_stream_, &graph);
    if (launched.code != 0 || ended.code != 0) {
      if (graph != nullptr) driver.graph_destroy(graph);
      if (launched.code != 0) this->fail(plan.kernel(failed).kernel_name(), launched.call, launched.code);
      this->check(plan, ended);
    }
    GraphExec exec = nullptr;
    const Status instantiated = driver.graph_instantiate(&exec, graph);
    driver.graph_destroy(graph);  // the executable graph is a copy
    this->check(plan, instantiated);
    return exec;
  }

  void destroy_graphs() {
    for (GraphExec exec : execs_) {
      if (exec != nullptr) this->driver_->graph_exec_destroy(exec);
    }
    execs_.clear();
    cached_plan_ = 0;
  }

  const size_t nodes_;
  typename Base::Stream capture_stream_ = nullptr;
  uint64_t cached_plan_ = 0;      // the plan execs_ were built from (ids start at 1)
  std::vector<GraphExec> execs_;  // per starting set, null until built
};

}  // namespace pyhipbench
