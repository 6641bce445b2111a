// The CUDA driver API (libcuda), resolved at run time, adapted to TimedLoop.
#include <memory>
#include <string>

#include "dynamic_library.hpp"
#include "timed_loop.hpp"

namespace pyhipbench {
namespace {

using CUresult = int;
using CUfunction = void*;
using CUstream = void*;
using CUevent = void*;

class CudaDriver {
 public:
  using Event = CUevent;
  static constexpr const char* kBackend = "cuda";
  static constexpr const char* kEventCreate = "cuEventCreate";
  static constexpr const char* kEventSynchronize = "cuEventSynchronize";
  static constexpr const char* kEventElapsedTime = "cuEventElapsedTime";

  explicit CudaDriver(const std::string& path)
      : library_(path, "CUDA driver", "PYHIPBENCH_CUDA_LIBRARY") {
    library_.resolve(launch_kernel_, "cuLaunchKernel");
    library_.resolve(event_create_, "cuEventCreate");
    library_.resolve(event_record_, "cuEventRecord");
    library_.resolve(event_synchronize_, "cuEventSynchronize");
    library_.resolve(event_elapsed_time_, "cuEventElapsedTime");
    library_.resolve(event_destroy_, "cuEventDestroy_v2");
    library_.resolve(get_error_name_, "cuGetErrorName");
    library_.resolve(get_error_string_, "cuGetErrorString");
  }

  const DynamicLibrary& library() const { return library_; }

  void check(const LaunchPlan&) const {}  // cuLaunchKernel validates sizes itself

  // After these the context is unusable: illegal address, launch timeout,
  // assert, stack error, illegal instruction, misaligned address, invalid
  // address space, invalid PC, launch failed.
  static bool is_kernel_fault(int code) {
    return code == 700 || code == 702 || code == 710 || (code >= 714 && code <= 719);
  }

  // cuLaunchKernel has no event arguments: the events are recorded on the
  // launch's stream right before and after it.
  Status launch(const LaunchPlan& plan, void** args, Event start, Event stop) {
    const LaunchConfig& c = plan.config();
    const auto stream = reinterpret_cast<CUstream>(c.stream);
    if (CUresult r = event_record_(start, stream)) return {r, "cuEventRecord"};
    if (CUresult r = launch_kernel_(reinterpret_cast<CUfunction>(plan.function()), c.grid[0],
                                    c.grid[1], c.grid[2], c.block[0], c.block[1], c.block[2],
                                    c.shared_bytes, stream, args, nullptr)) {
      return {r, "cuLaunchKernel"};
    }
    if (CUresult r = event_record_(stop, stream)) return {r, "cuEventRecord"};
    return {0, nullptr};
  }

  int event_create(Event* event) { return event_create_(event, 0); }
  int event_destroy(Event event) { return event_destroy_(event); }
  int event_record(Event event) { return event_record_(event, nullptr); }
  int event_synchronize(Event event) { return event_synchronize_(event); }
  int elapsed_ms(float* ms, Event start, Event stop) { return event_elapsed_time_(ms, start, stop); }

  DriverError error(const char* call, int code) const {
    const char* name = nullptr;
    const char* message = nullptr;
    if (get_error_name_(code, &name) != 0 || name == nullptr) name = "unknown CUDA error";
    if (get_error_string_(code, &message) != 0 || message == nullptr) message = "no description";
    return DriverError(call, code, name, message);
  }

 private:
  DynamicLibrary library_;
  CUresult (*launch_kernel_)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                             unsigned, unsigned, CUstream, void**, void**);
  CUresult (*event_create_)(CUevent*, unsigned);
  CUresult (*event_record_)(CUevent, CUstream);
  CUresult (*event_synchronize_)(CUevent);
  CUresult (*event_elapsed_time_)(float*, CUevent, CUevent);
  CUresult (*event_destroy_)(CUevent);
  CUresult (*get_error_name_)(CUresult, const char**);
  CUresult (*get_error_string_)(CUresult, const char**);
};

}  // namespace

std::unique_ptr<Runtime> load_cuda_runtime(const std::string& library_path) {
  const std::string path = choose_library(library_path, "PYHIPBENCH_CUDA_LIBRARY", "libcuda.so.1");
  return std::make_unique<TimedLoop<CudaDriver>>(std::make_unique<CudaDriver>(path));
}

}  // namespace pyhipbench
