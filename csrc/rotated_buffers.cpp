#include "pyhipbench/rotated_buffers.hpp"

#include <stdexcept>
#include <string>

namespace pyhipbench {

namespace {
// Both drivers align allocations to at least this; each copy keeps it, so a
// kernel sees the same alignment in every set.
constexpr size_t kBufferAlignment = 256;
}  // namespace

RotatedBuffers::RotatedBuffers(std::shared_ptr<Driver> driver, uintptr_t context,
                               std::vector<BufferRange> originals, size_t sets)
    : originals_(std::move(originals)) {
  if (driver == nullptr) throw std::invalid_argument("RotatedBuffers needs a driver, got none");
  if (sets == 0) throw std::invalid_argument("sets=0: expected at least 1 argument set (1 = no copies)");
  if (originals_.empty()) throw std::invalid_argument("no buffers to rotate: expected at least one");
  size_t set_bytes = 0;
  for (size_t b = 0; b < originals_.size(); ++b) {
    const BufferRange& original = originals_[b];
    if (original.address == 0 || original.bytes == 0) {
      throw std::invalid_argument("buffer " + std::to_string(b) + " (address " +
                                  std::to_string(original.address) + ", " + std::to_string(original.bytes) +
                                  " bytes): expected a device address and a size above 0 bytes");
    }
    const size_t aligned = (original.bytes + kBufferAlignment - 1) / kBufferAlignment * kBufferAlignment;
    if (aligned < original.bytes || set_bytes + aligned < set_bytes) {
      throw std::invalid_argument("buffer " + std::to_string(b) + " of " + std::to_string(original.bytes) +
                                  " bytes: the set's size overflows size_t");
    }
    offsets_.push_back(set_bytes);
    set_bytes += aligned;
  }
  copies_.reserve(sets - 1);
  for (size_t s = 1; s < sets; ++s) {
    DeviceBuffer& copy = copies_.emplace_back(driver, context, set_bytes);
    for (size_t b = 0; b < originals_.size(); ++b) {
      driver->copy(context, copy.address() + offsets_[b], originals_[b].address, originals_[b].bytes);
    }
  }
}

uintptr_t RotatedBuffers::address(size_t set, size_t buffer) const {
  if (set >= sets() || buffer >= buffers()) {
    throw std::out_of_range("set " + std::to_string(set) + ", buffer " + std::to_string(buffer) +
                            ": expected a set below " + std::to_string(sets()) + " and a buffer below " +
                            std::to_string(buffers()));
  }
  return set == 0 ? originals_[buffer].address : copies_[set - 1].address() + offsets_[buffer];
}

}  // namespace pyhipbench
