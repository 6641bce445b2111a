// The rotated copies of an embedder's device buffers, made and freed by the
// core: the dirty-cold cache state's R argument sets, set 0 the embedder's own
// buffers and sets 1 .. R-1 copies of them. Python's bench() makes its copies
// with this class too.
//
// Layout: all R - 1 copy sets live in one device allocation. Copy set s
// occupies [(s - 1) * set_stride_bytes(), s * set_stride_bytes()), each buffer
// at its own offset in it, 256-byte aligned, so a kernel sees the same
// alignment in every set.
//
// Cost: one allocation and B + ceil(log2(R - 1)) device-to-device copies for
// B buffers (none for R = 1): the B originals into copy set 1, then the sets
// filled so far into as many more, doubling. A tiny set that needs thousands of
// copies to span the last-level cache costs a dozen copies, not thousands.
//
// Lifetime: the embedder owns its originals and keeps them alive while the
// copies are used; the copies live until free() or destruction (this object
// holds the driver). Build one LaunchPlan argument set per set from
// address(s, b) and keep the copies alive while the plan runs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "pyhipbench/driver.hpp"
#include "pyhipbench/export.hpp"

namespace pyhipbench {

// A device buffer the embedder owns: its address and size in bytes.
struct BufferRange {
  uintptr_t address = 0;
  size_t bytes = 0;
};

class PYHIPBENCH_API RotatedBuffers {
 public:
  // The alignment of each buffer in a copy set, bytes: what both drivers
  // align allocations to at least, enough for any vector access.
  static constexpr size_t kAlignmentBytes = 256;

  // Makes `sets` - 1 copies of every buffer in `originals`, device to device in
  // `context` (the originals may come from any allocator of the same driver),
  // and returns when the copies are complete. Throws std::invalid_argument for
  // `sets` 0, no buffers, a buffer of address 0 or 0 bytes (naming which), or
  // sizes whose total overflows size_t; DriverError if the driver cannot
  // allocate or copy (what was made is freed).
  RotatedBuffers(std::shared_ptr<Driver> driver, uintptr_t context, std::vector<BufferRange> originals, size_t sets);

  // The argument sets: R, or 1 once free() has run.
  size_t sets() const { return sets_; }
  size_t buffers() const { return originals_.size(); }
  // Bytes from one copy set to the next: each buffer's size rounded up to
  // kAlignmentBytes, summed.
  size_t set_stride_bytes() const { return set_stride_bytes_; }
  // Buffer `buffer` of set `set`: set 0 is the original. Throws std::out_of_range
  // for a set or buffer past the end.
  uintptr_t address(size_t set, size_t buffer) const;

  // Frees the copies now rather than on destruction; only set 0 (the
  // originals) remains. A second call frees nothing. A driver that fails the
  // free has lost the context (a sticky fault) and the memory with it, so
  // there is nothing to report.
  void free() noexcept;

 private:
  std::vector<BufferRange> originals_;
  std::vector<size_t> offsets_;  // of each buffer in a copy set, bytes
  size_t set_stride_bytes_ = 0;
  size_t sets_ = 1;
  std::optional<DeviceBuffer> copies_;  // sets 1 .. R-1, one after another; none for R = 1
};

}  // namespace pyhipbench
