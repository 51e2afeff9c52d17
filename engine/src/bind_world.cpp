// Python face of the world part (placeholder until the part lands).
#include <nanobind/nanobind.h>

namespace nb = nanobind;

void bind_world(nb::module_& m) {}
