// Typed errors thrown by the engine. The LAMMPS pair styles turn them into error->all (input
// problems every rank sees alike) or error->one (problems found while computing), always
// passing the text through a "{}" placeholder.
#pragma once

#include <stdexcept>
#include <string>

namespace edgeframe {

// Something wrong with what the user gave: potential file, keyword, element, precision.
class InputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A potential file that cannot be used: truncated, not the format, bad tensors.
class FormatError : public InputError {
 public:
  using InputError::InputError;
};

// Something that went wrong while computing: non-finite results, failed allocation.
class ComputeError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace edgeframe
