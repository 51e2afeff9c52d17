// Python face of the packet descriptor: built and read field by field, so
// tests can drive either engine with the same packets.
#include <nanobind/nanobind.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/vector.h>

#include "packet.hpp"

namespace nb = nanobind;
using namespace sym;

void bind_packet(nb::module_& m) {
    nb::enum_<Kind>(m, "Kind")
        .value("Other", Kind::Other).value("Data", Kind::Data)
        .value("Ack", Kind::Ack).value("Cnp", Kind::Cnp);
    m.attr("HEADERS") = HEADERS;
    nb::class_<Pkt>(m, "Pkt")
        .def(nb::init<>())
        .def_rw("src_ip", &Pkt::src_ip).def_rw("dst_ip", &Pkt::dst_ip)
        .def_rw("sport", &Pkt::sport).def_rw("dport", &Pkt::dport)
        .def_rw("proto", &Pkt::proto).def_rw("tos", &Pkt::tos).def_rw("ttl", &Pkt::ttl)
        .def_rw("len", &Pkt::len).def_rw("kind", &Pkt::kind)
        .def_rw("job", &Pkt::job).def_rw("rank", &Pkt::rank).def_rw("step", &Pkt::step)
        .def_rw("offset", &Pkt::offset).def_rw("length", &Pkt::length).def_rw("flags", &Pkt::flags)
        .def_rw("cum", &Pkt::cum).def_rw("echo", &Pkt::echo).def_rw("ip_flags", &Pkt::ip_flags);
}
