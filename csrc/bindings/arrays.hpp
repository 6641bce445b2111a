// Samples between the core's vectors and numpy's float64 arrays, µs.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

namespace pyhipbench::bindings {

using TimesArray = pybind11::array_t<double, pybind11::array::c_style | pybind11::array::forcecast>;

inline std::vector<double> as_vector(const TimesArray& times) {
  if (times.ndim() != 1) {
    throw std::invalid_argument("times of " + std::to_string(times.ndim()) + " dimensions: expected one, µs");
  }
  return std::vector<double>(times.data(), times.data() + times.size());
}

inline pybind11::array_t<double> as_array(const std::vector<double>& times) {
  pybind11::array_t<double> out(static_cast<pybind11::ssize_t>(times.size()));
  std::copy(times.begin(), times.end(), out.mutable_data());
  return out;
}

}  // namespace pyhipbench::bindings
