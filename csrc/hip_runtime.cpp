// The HIP runtime (libamdhip64), resolved at run time, adapted to TimedLoop.
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>

#include "dynamic_library.hpp"
#include "timed_loop.hpp"

namespace pyhipbench {
namespace {

using hipError_t = int;
using hipFunction_t = void*;
using hipStream_t = void*;
using hipEvent_t = void*;

class HipDriver {
 public:
  using Event = hipEvent_t;
  static constexpr const char* kBackend = "hip";
  static constexpr const char* kEventCreate = "hipEventCreate";
  static constexpr const char* kEventSynchronize = "hipEventSynchronize";
  static constexpr const char* kEventElapsedTime = "hipEventElapsedTime";

  explicit HipDriver(const std::string& path)
      : library_(path, "HIP runtime", "PYHIPBENCH_HIP_LIBRARY") {
    library_.resolve(ext_module_launch_kernel_, "hipExtModuleLaunchKernel");
    library_.resolve(event_create_, "hipEventCreate");
    library_.resolve(event_record_, "hipEventRecord");
    library_.resolve(event_synchronize_, "hipEventSynchronize");
    library_.resolve(event_elapsed_time_, "hipEventElapsedTime");
    library_.resolve(event_destroy_, "hipEventDestroy");
    library_.resolve(get_error_name_, "hipGetErrorName");
    library_.resolve(get_error_string_, "hipGetErrorString");
  }

  const DynamicLibrary& library() const { return library_; }

  // hipExtModuleLaunchKernel takes global work sizes (grid x block) as 32-bit values.
  void check(const LaunchPlan& plan) const {
    const LaunchConfig& c = plan.config();
    for (int axis = 0; axis < 3; ++axis) {
      const uint64_t threads = uint64_t{c.grid[axis]} * c.block[axis];
      if (threads > UINT32_MAX) {
        throw std::invalid_argument("grid x block = " + std::to_string(threads) + " threads on axis " +
                                    "xyz"[axis] + " exceeds hipExtModuleLaunchKernel's 32-bit global size");
      }
    }
  }

  // hipErrorIllegalAddress, hipErrorLaunchTimeOut, hipErrorAssert,
  // hipErrorLaunchFailure. On ROCm a GPU memory fault usually aborts the
  // process (HSA's default) before any of these reaches the caller.
  static bool is_kernel_fault(int code) {
    return code == 700 || code == 702 || code == 710 || code == 719;
  }

  // hipExtModuleLaunchKernel records the two events around exactly this
  // dispatch. Its sizes are global work sizes (threads), not block counts; the
  // check() has made sure grid x block fits in 32 bits.
  Status launch(const LaunchPlan& plan, void** args, Event start, Event stop) {
    const LaunchConfig& c = plan.config();
    const hipError_t r = ext_module_launch_kernel_(
        reinterpret_cast<hipFunction_t>(plan.function()), c.grid[0] * c.block[0],
        c.grid[1] * c.block[1], c.grid[2] * c.block[2], c.block[0], c.block[1], c.block[2],
        c.shared_bytes, reinterpret_cast<hipStream_t>(c.stream), args, nullptr, start, stop, 0);
    return {r, "hipExtModuleLaunchKernel"};
  }

  int event_create(Event* event) { return event_create_(event); }
  int event_destroy(Event event) { return event_destroy_(event); }
  int event_record(Event event) { return event_record_(event, nullptr); }
  int event_synchronize(Event event) { return event_synchronize_(event); }
  int elapsed_ms(float* ms, Event start, Event stop) { return event_elapsed_time_(ms, start, stop); }

  DriverError error(const char* call, int code) const {
    const char* name = get_error_name_(code);
    const char* message = get_error_string_(code);
    if (name == nullptr) name = "unknown HIP error";
    if (message == nullptr) message = "no description";
    return DriverError(call, code, name, message);
  }

 private:
  DynamicLibrary library_;
  hipError_t (*ext_module_launch_kernel_)(hipFunction_t, uint32_t, uint32_t, uint32_t, uint32_t,
                                          uint32_t, uint32_t, size_t, hipStream_t, void**, void**,
                                          hipEvent_t, hipEvent_t, uint32_t);
  hipError_t (*event_create_)(hipEvent_t*);
  hipError_t (*event_record_)(hipEvent_t, hipStream_t);
  hipError_t (*event_synchronize_)(hipEvent_t);
  hipError_t (*event_elapsed_time_)(float*, hipEvent_t, hipEvent_t);
  hipError_t (*event_destroy_)(hipEvent_t);
  const char* (*get_error_name_)(hipError_t);
  const char* (*get_error_string_)(hipError_t);
};

}  // namespace

std::unique_ptr<Runtime> load_hip_runtime(const std::string& library_path) {
  const std::string path = choose_library(library_path, "PYHIPBENCH_HIP_LIBRARY", "libamdhip64.so");
  return std::make_unique<TimedLoop<HipDriver>>(std::make_unique<HipDriver>(path));
}

}  // namespace pyhipbench
