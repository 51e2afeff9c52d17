// What the transport raises where the Python raises something other than
// ValueError (std::invalid_argument, which nanobind turns into ValueError).
#pragma once

#include <stdexcept>
#include <string>

namespace sym {

// Receiver.take of a step never opened: the Python's flows.pop raises KeyError
struct MissingStep : std::out_of_range {
    explicit MissingStep(const std::string& step) : std::out_of_range(step) {}
};

}  // namespace sym
