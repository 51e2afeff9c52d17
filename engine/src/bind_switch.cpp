// Python face of the switch part (placeholder until the part lands).
#include <nanobind/nanobind.h>

namespace nb = nanobind;

void bind_switch(nb::module_& m) {}
