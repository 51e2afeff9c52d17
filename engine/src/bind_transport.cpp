// Python face of the transport part (placeholder until the part lands).
#include <nanobind/nanobind.h>

namespace nb = nanobind;

void bind_transport(nb::module_& m) {}
