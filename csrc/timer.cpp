#include "pyhipbench/timer.hpp"

#include <stdexcept>

#include "cuda_driver.hpp"
#include "hip_driver.hpp"
#include "timers/cupti_timer.hpp"
#include "timers/event_timer.hpp"

namespace pyhipbench {

namespace {

// `expected`: the timers the backend has, for the error message.
template <class VendorDriver>
std::unique_ptr<Timer> make_vendor_timer(const std::string& name, std::shared_ptr<VendorDriver> driver,
                                         uintptr_t context, const std::string& expected) {
  if (name == "events") return std::make_unique<EventTimer<VendorDriver>>(std::move(driver), context);
  if (name == "cupti") {
    throw std::invalid_argument("the cupti timer reads NVIDIA's CUPTI: the " + driver->backend() +
                                " backend has no cupti timer; expected " + expected);
  }
  throw std::invalid_argument("unknown timer '" + name + "' for the " + driver->backend() +
                              " backend; expected " + expected);
}

}  // namespace

std::unique_ptr<Timer> make_timer(const std::string& name, std::shared_ptr<Driver> driver,
                                  uintptr_t context) {
  if (driver == nullptr) throw std::invalid_argument("make_timer needs a driver, got none");
  if (auto cuda = std::dynamic_pointer_cast<CudaDriver>(driver)) {
    if (name == "cupti") return std::make_unique<CuptiTimer>(std::move(cuda), context);
    return make_vendor_timer(name, std::move(cuda), context, "'events' or 'cupti'");
  }
  if (auto hip = std::dynamic_pointer_cast<HipDriver>(driver)) {
    return make_vendor_timer(name, std::move(hip), context, "'events'");
  }
  throw std::invalid_argument("make_timer: a driver of backend '" + driver->backend() +
                              "', which has no timers; expected one from load_driver");
}

}  // namespace pyhipbench
