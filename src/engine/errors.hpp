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

// A non-finite energy, force or virial. node(): the first node (lowest index) whose per-atom
// energy (owned nodes only) or force is non-finite, -1 if none is; the caller maps it to an atom.
// summary(): what was non-finite, e.g. "non-finite energy (nan eV)"; detail(): that node's
// energy and force; count(): how many nodes have a non-finite energy or force.
class NonFiniteError : public ComputeError {
 public:
  NonFiniteError(const std::string& summary, int node, int count, const std::string& detail)
      : ComputeError(
            "edgeframe: " + summary +
            (node >= 0 ? "; first node with a non-finite energy or force: " + std::to_string(node) + " (" + detail + ")"
                       : std::string("; no single node's energy or force is non-finite"))),
        m_summary(summary),
        m_detail(detail),
        m_node(node),
        m_count(count) {}
  const std::string& summary() const { return m_summary; }
  const std::string& detail() const { return m_detail; }
  int node() const { return m_node; }
  int count() const { return m_count; }

 private:
  std::string m_summary, m_detail;
  int m_node, m_count;
};

}  // namespace edgeframe
