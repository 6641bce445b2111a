#include "pyhipbench/timer.hpp"

#include <stdexcept>

#include "cuda_driver.hpp"
#include "hip_driver.hpp"
#include "timers/event_timer.hpp"

namespace pyhipbench {

namespace {

template <class VendorDriver>
std::unique_ptr<Timer> make_vendor_timer(const std::string& name, std::shared_ptr<VendorDriver> driver,
                                         uintptr_t context) {
  if (name == "events") return std::make_unique<EventTimer<VendorDriver>>(std::move(driver), context);
  throw std::invalid_argument("unknown timer '" + name + "' for the " + driver->backend() +
                              " backend; expected 'events'");
}

}  // namespace

std::unique_ptr<Timer> make_timer(const std::string& name, std::shared_ptr<Driver> driver,
                                  uintptr_t context) {
  if (driver == nullptr) throw std::invalid_argument("make_timer needs a driver, got none");
  if (auto cuda = std::dynamic_pointer_cast<CudaDriver>(driver)) {
    return make_vendor_timer(name, std::move(cuda), context);
  }
  if (auto hip = std::dynamic_pointer_cast<HipDriver>(driver)) {
    return make_vendor_timer(name, std::move(hip), context);
  }
  throw std::invalid_argument("make_timer: a driver of backend '" + driver->backend() +
                              "', which has no timers; expected one from load_driver");
}

}  // namespace pyhipbench
