#include "pyhipbench/call_plan.hpp"

#include <stdexcept>
#include <type_traits>

#include "cuda_driver.hpp"
#include "hip_driver.hpp"

namespace pyhipbench {

CallPlan::CallPlan(std::string name, std::function<void()> call, uintptr_t stream, bool graph_launch_only)
    : name_(std::move(name)), call_(std::move(call)), stream_(stream), graph_launch_only_(graph_launch_only) {
  if (!call_) throw std::invalid_argument("a call plan needs a call, got none");
}

void CallPlan::set_clean_step(std::unique_ptr<LaunchPlan> step) {
  if (step != nullptr) check_clean_step(*step);
  clean_step_ = std::move(step);
}

namespace {

// The executable graph a graph call replays, freed in its context with the last copy of the call.
template <class VendorDriver>
class GraphExecutable {
 public:
  GraphExecutable(std::shared_ptr<VendorDriver> driver, uintptr_t context, typename VendorDriver::Graph graph)
      : driver_(std::move(driver)), context_(VendorDriver::context(context)) {
    typename VendorDriver::CurrentContext current(*driver_, context_);
    const Status status = driver_->graph_instantiate(&exec_, graph);
    if (status.code != 0) throw driver_->error(status.call, status.code);
  }
  ~GraphExecutable() {
    try {
      typename VendorDriver::CurrentContext current(*driver_, context_);
      driver_->graph_exec_destroy(exec_);
    } catch (const DriverError&) {  // the context is gone (a fault), and the graph with it
    }
  }
  GraphExecutable(const GraphExecutable&) = delete;
  GraphExecutable& operator=(const GraphExecutable&) = delete;

  void launch(typename VendorDriver::Stream stream) const {
    const Status status = driver_->graph_launch(exec_, stream);
    if (status.code != 0) throw driver_->error(status.call, status.code);
  }

 private:
  std::shared_ptr<VendorDriver> driver_;
  typename VendorDriver::Context context_;
  typename VendorDriver::GraphExec exec_ = nullptr;
};

template <class VendorDriver>
std::unique_ptr<CallPlan> graph_call(std::shared_ptr<VendorDriver> driver, uintptr_t context,
                                     typename VendorDriver::Graph graph, uintptr_t stream, std::string name) {
  auto exec = std::make_shared<GraphExecutable<VendorDriver>>(std::move(driver), context, graph);
  const auto on = reinterpret_cast<typename VendorDriver::Stream>(stream);
  return std::make_unique<CallPlan>(
      std::move(name), [exec, on] { exec->launch(on); }, stream, /*graph_launch_only=*/true);
}

template <class VendorDriver>
std::unique_ptr<CallPlan> captured_call(std::shared_ptr<VendorDriver> driver, uintptr_t context, uintptr_t stream,
                                        const std::function<void()>& call, std::string name) {
  if (stream == 0) {
    throw std::invalid_argument(
        "stream=0: the legacy default stream cannot be captured; expected a stream the "
        "call issues its work on");
  }
  const auto on = reinterpret_cast<typename VendorDriver::Stream>(stream);
  typename VendorDriver::Graph graph = nullptr;
  {
    typename VendorDriver::CurrentContext current(*driver, VendorDriver::context(context));
    Status status = driver->begin_capture(on);
    if (status.code != 0) throw driver->error(status.call, status.code);
    try {
      call();
    } catch (...) {
      driver->end_capture(on, &graph);  // ends the capture; the graph, if any, is discarded
      if (graph != nullptr) driver->graph_destroy(graph);
      throw;
    }
    status = driver->end_capture(on, &graph);
    if (status.code != 0) {
      if (graph != nullptr) driver->graph_destroy(graph);
      throw driver->error(status.call, status.code);
    }
  }
  struct DestroyGraph {
    VendorDriver& driver;
    typename VendorDriver::Graph graph;
    ~DestroyGraph() { driver.graph_destroy(graph); }  // the executable is a copy
  } destroy{*driver, graph};
  return graph_call(std::move(driver), context, graph, stream, std::move(name));
}

template <class Make>
auto for_vendor(const std::shared_ptr<Driver>& driver, Make make) {
  if (auto cuda = std::dynamic_pointer_cast<CudaDriver>(driver)) return make(std::move(cuda));
  if (auto hip = std::dynamic_pointer_cast<HipDriver>(driver)) return make(std::move(hip));
  throw std::invalid_argument("a driver from load_driver was expected, got " +
                              std::string(driver == nullptr ? "none" : "backend '" + driver->backend() + "'"));
}

}  // namespace

std::unique_ptr<CallPlan> make_graph_call(std::shared_ptr<Driver> driver, uintptr_t context, uintptr_t graph,
                                          uintptr_t stream, std::string name) {
  if (graph == 0) throw std::invalid_argument("graph=0: expected a captured graph's handle");
  return for_vendor(driver, [&](auto vendor) {
    using Vendor = typename decltype(vendor)::element_type;
    return graph_call(std::move(vendor), context, reinterpret_cast<typename Vendor::Graph>(graph), stream,
                      std::move(name));
  });
}

std::unique_ptr<CallPlan> capture_call(std::shared_ptr<Driver> driver, uintptr_t context, uintptr_t stream,
                                       const std::function<void()>& call, std::string name) {
  return for_vendor(
      driver, [&](auto vendor) { return captured_call(std::move(vendor), context, stream, call, std::move(name)); });
}

}  // namespace pyhipbench
