// The Python module: each part of the engine adds its classes here.
#include <nanobind/nanobind.h>

namespace nb = nanobind;

void bind_packet(nb::module_& m);
void bind_switch(nb::module_& m);
void bind_transport(nb::module_& m);
void bind_world(nb::module_& m);

NB_MODULE(_engine, m) {
    m.doc() = "Symphony testbed packet engine (C++)";
    bind_packet(m);
    bind_switch(m);
    bind_transport(m);
    bind_world(m);
}
