// A callable to time: whatever GPU work one call issues is one sample.
//
// The call runs on the timer's thread with the timer's context current. Its
// stream is where the timer puts what it issues around a call: the clean step
// before it, and (events timer) the event pair around it; work the call issues
// on other streams is ordered with neither, and the events timer does not see
// it (the cupti timer does: it attributes work by API call, not by stream).
//
// A captured graph is a call too (make_graph_call): each call replays the
// graph, so the host cost per sample is one graph launch.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "pyhipbench/driver.hpp"
#include "pyhipbench/export.hpp"
#include "pyhipbench/launch_plan.hpp"

namespace pyhipbench {

class PYHIPBENCH_API CallPlan {
 public:
  // `call`: issues one sample's GPU work; what it throws leaves run() as is.
  // `graph_launch_only`: the call issues nothing but one graph launch (a
  // graph call), so a tracer need follow that one API call alone.
  CallPlan(std::string name, std::function<void()> call, uintptr_t stream, bool graph_launch_only = false);
  virtual ~CallPlan() = default;
  CallPlan(const CallPlan&) = delete;
  CallPlan& operator=(const CallPlan&) = delete;

  const std::string& name() const { return name_; }
  uintptr_t stream() const { return stream_; }
  void call() { call_(); }
  bool graph_launch_only() const { return graph_launch_only_; }

  // An untimed launch before each call, on the call's stream: the clean-cold
  // clean step, as LaunchPlan::set_clean_step takes it.
  void set_clean_step(std::unique_ptr<LaunchPlan> step);
  LaunchPlan* clean_step() const { return clean_step_.get(); }

 private:
  std::string name_;
  std::function<void()> call_;
  uintptr_t stream_;
  bool graph_launch_only_;
  std::unique_ptr<LaunchPlan> clean_step_;
};

// A call that replays graph `graph` (a CUgraph / hipGraph_t as an integer, for
// example one captured by torch.cuda.graph) on `stream`: the graph is
// instantiated here, in `context`, and the executable freed with the plan.
// The graph itself stays the caller's. Throws DriverError if instantiating fails.
PYHIPBENCH_API std::unique_ptr<CallPlan> make_graph_call(std::shared_ptr<Driver> driver, uintptr_t context,
                                                         uintptr_t graph, uintptr_t stream, std::string name);

// Captures what `call` issues on `stream` (a stream of the caller's, not the
// legacy default stream, which cannot be captured) into a graph, in
// thread-local capture mode, and returns the graph as a call
// (make_graph_call). The capture always ends, even when `call` throws (which
// is then rethrown); throws DriverError if the capture fails (the call used
// another stream, or did something a capture refuses).
PYHIPBENCH_API std::unique_ptr<CallPlan> capture_call(std::shared_ptr<Driver> driver, uintptr_t context,
                                                      uintptr_t stream, const std::function<void()>& call,
                                                      std::string name);

}  // namespace pyhipbench
