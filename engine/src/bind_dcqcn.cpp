// Python face of the dcqcn part (placeholder until the part lands).
#include <nanobind/nanobind.h>

namespace nb = nanobind;

void bind_dcqcn(nb::module_& m) {}
