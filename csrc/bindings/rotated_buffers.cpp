// pyhipbench._core.RotatedBuffers: the R - 1 copies of device buffers.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "bindings/bindings.hpp"
#include "pyhipbench/driver.hpp"
#include "pyhipbench/rotated_buffers.hpp"

namespace py = pybind11;

namespace pyhipbench::bindings {

void bind_rotated_buffers(py::module_& m) {
  py::class_<RotatedBuffers>(m, "RotatedBuffers",
                             "The R - 1 rotated copies of device buffers, in one allocation "
                             "(pyhipbench/rotated_buffers.hpp); freed by free() or when collected.")
      .def(py::init([](std::shared_ptr<Driver> driver, uintptr_t context,
                       const std::vector<std::pair<uintptr_t, size_t>>& buffers, size_t sets) {
             std::vector<BufferRange> originals;
             originals.reserve(buffers.size());
             for (const auto& [address, bytes] : buffers) originals.push_back({address, bytes});
             py::gil_scoped_release release;  // the copies wait for the device
             return std::make_unique<RotatedBuffers>(std::move(driver), context, std::move(originals), sets);
           }),
           py::arg("driver"), py::arg("context"), py::arg("buffers"), py::arg("sets"),
           "Copies each (device address, bytes) of `buffers` into sets 1 .. `sets` - 1, device to device in "
           "`context` (CUDA: a CUcontext handle; HIP: a device ordinal); returns when they are complete.")
      .def_property_readonly("sets", &RotatedBuffers::sets, "argument sets: R, or 1 once freed")
      .def_property_readonly("buffers", &RotatedBuffers::buffers)
      .def_property_readonly("set_stride_bytes", &RotatedBuffers::set_stride_bytes,
                             "bytes from one copy set to the next (each buffer 256-byte aligned)")
      .def("address", &RotatedBuffers::address, py::arg("set"), py::arg("buffer"),
           "Buffer `buffer`'s device address in set `set` (set 0: the original).")
      .def("free", &RotatedBuffers::free, "Frees the copies now; set 0, the originals, remains.");
}

}  // namespace pyhipbench::bindings
