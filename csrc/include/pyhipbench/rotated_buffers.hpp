// The rotated copies of an embedder's device buffers, made and freed by the
// core: the dirty-cold cache state's R argument sets, set 0 the embedder's own
// buffers and sets 1 .. R-1 copies of them.
//
// Lifetime: the embedder owns its originals and keeps them alive while the
// copies are used; the copies live as long as this object (it holds the
// driver). Build one LaunchPlan argument set per set() from address(s, b)
// and keep this object alive while the plan runs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
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
  // Makes `sets` - 1 copies of every buffer in `originals`, device to device in
  // `context`, each set in one allocation (each buffer 256-byte aligned in it),
  // and returns when the copies are complete. Throws std::invalid_argument for
  // `sets` 0, no buffers, or a buffer of address 0 or 0 bytes (naming which);
  // DriverError if the driver cannot allocate or copy (what was made is freed).
  RotatedBuffers(std::shared_ptr<Driver> driver, uintptr_t context, std::vector<BufferRange> originals,
                 size_t sets);

  size_t sets() const { return copies_.size() + 1; }
  size_t buffers() const { return originals_.size(); }
  // Buffer `buffer` of set `set`: set 0 is the original. Throws std::out_of_range
  // for a set or buffer past the end.
  uintptr_t address(size_t set, size_t buffer) const;

 private:
  std::vector<BufferRange> originals_;
  std::vector<size_t> offsets_;        // of each buffer in a set's allocation, bytes
  std::vector<DeviceBuffer> copies_;   // one allocation per set 1 .. sets-1
};

}  // namespace pyhipbench
