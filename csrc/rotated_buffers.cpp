#include "pyhipbench/rotated_buffers.hpp"

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <string>

namespace pyhipbench {

RotatedBuffers::RotatedBuffers(std::shared_ptr<Driver> driver, uintptr_t context, std::vector<BufferRange> originals,
                               size_t sets)
    : originals_(std::move(originals)) {
  if (driver == nullptr) throw std::invalid_argument("RotatedBuffers needs a driver, got none");
  if (sets == 0) throw std::invalid_argument("sets=0: expected at least 1 argument set (1 = no copies)");
  if (originals_.empty()) throw std::invalid_argument("no buffers to rotate: expected at least one");
  constexpr size_t kMaxBytes = std::numeric_limits<size_t>::max();
  for (size_t b = 0; b < originals_.size(); ++b) {
    const BufferRange& original = originals_[b];
    if (original.address == 0 || original.bytes == 0) {
      throw std::invalid_argument("buffer " + std::to_string(b) + " (address " + std::to_string(original.address) +
                                  ", " + std::to_string(original.bytes) +
                                  " bytes): expected a device address and a size above 0 bytes");
    }
    if (original.bytes > kMaxBytes - (kAlignmentBytes - 1)) {
      throw std::invalid_argument("buffer " + std::to_string(b) + " of " + std::to_string(original.bytes) +
                                  " bytes: its aligned size overflows size_t");
    }
    const size_t aligned = (original.bytes + kAlignmentBytes - 1) / kAlignmentBytes * kAlignmentBytes;
    if (set_stride_bytes_ > kMaxBytes - aligned) {
      throw std::invalid_argument("buffer " + std::to_string(b) + " of " + std::to_string(original.bytes) +
                                  " bytes: the set's size overflows size_t");
    }
    offsets_.push_back(set_stride_bytes_);
    set_stride_bytes_ += aligned;
  }
  const size_t copy_sets = sets - 1;
  if (copy_sets > kMaxBytes / set_stride_bytes_) {
    throw std::invalid_argument("sets=" + std::to_string(sets) + " of " + std::to_string(set_stride_bytes_) +
                                " bytes: the copies' size overflows size_t");
  }
  if (copy_sets == 0) return;
  const uintptr_t base = copies_.emplace(driver, context, copy_sets * set_stride_bytes_).address();
  for (size_t b = 0; b < originals_.size(); ++b) {
    driver->copy(context, base + offsets_[b], originals_[b].address, originals_[b].bytes);
  }
  // Every later set is a copy of set 1, and the filled sets are contiguous:
  // one copy doubles them, so R sets need about log2(R) copies, not B x (R - 1).
  for (size_t filled = 1; filled < copy_sets;) {
    const size_t count = std::min(filled, copy_sets - filled);
    driver->copy(context, base + filled * set_stride_bytes_, base, count * set_stride_bytes_);
    filled += count;
  }
  sets_ = sets;
}

uintptr_t RotatedBuffers::address(size_t set, size_t buffer) const {
  if (set >= sets() || buffer >= buffers()) {
    throw std::out_of_range("set " + std::to_string(set) + ", buffer " + std::to_string(buffer) +
                            ": expected a set below " + std::to_string(sets()) + " and a buffer below " +
                            std::to_string(buffers()));
  }
  if (set == 0) return originals_[buffer].address;
  return copies_->address() + (set - 1) * set_stride_bytes_ + offsets_[buffer];
}

void RotatedBuffers::free() noexcept {
  copies_.reset();
  sets_ = 1;
}

}  // namespace pyhipbench
