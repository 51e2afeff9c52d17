// The Python module: each part of the engine adds its classes here.
#include <nanobind/nanobind.h>

namespace nb = nanobind;

void bind_switch(nb::module_& m);
void bind_dcqcn(nb::module_& m);

NB_MODULE(_engine, m) {
    m.doc() = "Symphony testbed packet engine (C++)";
    m.attr("ABI") = 1;
    bind_switch(m);
    bind_dcqcn(m);
}
