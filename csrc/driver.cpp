#include "pyhipbench/driver.hpp"

#include <stdexcept>

#include "cuda_driver.hpp"
#include "hip_driver.hpp"

namespace pyhipbench {

std::shared_ptr<Driver> load_driver(const std::string& backend, const std::string& library_path) {
  if (backend == "cuda") return std::make_shared<CudaDriver>(library_path);
  if (backend == "hip") return std::make_shared<HipDriver>(library_path);
  throw std::invalid_argument("unknown backend '" + backend + "'; expected 'cuda' or 'hip'");
}

LaunchLimits launch_limits(const std::string& backend) {
  if (backend == "cuda") return CudaDriver::limits();
  if (backend == "hip") return HipDriver::limits();
  throw std::invalid_argument("unknown backend '" + backend + "'; expected 'cuda' or 'hip'");
}

DeviceBuffer::DeviceBuffer(std::shared_ptr<Driver> driver, uintptr_t context, size_t bytes)
    : driver_(std::move(driver)), context_(context), bytes_(bytes) {
  if (driver_ == nullptr) throw std::invalid_argument("DeviceBuffer needs a driver, got none");
  if (bytes == 0) throw std::invalid_argument("a device buffer of 0 bytes: expected at least 1 byte");
  address_ = driver_->allocate(context, bytes);
}

DeviceBuffer::~DeviceBuffer() { release(); }

DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept
    : driver_(std::move(other.driver_)), context_(other.context_), address_(other.address_), bytes_(other.bytes_) {
  other.address_ = 0;
  other.bytes_ = 0;
}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    release();
    driver_ = std::move(other.driver_);
    context_ = other.context_;
    address_ = other.address_;
    bytes_ = other.bytes_;
    other.address_ = 0;
    other.bytes_ = 0;
  }
  return *this;
}

void DeviceBuffer::release() noexcept {
  if (address_ != 0) driver_->deallocate(context_, address_);
  address_ = 0;
}

}  // namespace pyhipbench
