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

}  // namespace pyhipbench
