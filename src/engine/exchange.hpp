// Per-layer exchange of node features between an atom's owner and its ghost copies (issue #8),
// as the engine sees it: an interface the caller implements (the LAMMPS pair style with its
// forward / reverse communication, a test with a plain owner table). No torch, no LAMMPS, no
// MPI here.
//
// Contract, per Evaluator::compute() call with What::exchange set, for a model of T layers:
//   - forward() is called T-1 times, once before each layer t = 1..T-1 reads the features
//     (layer 0 reads the species embedding, which ghosts compute themselves), in layer order;
//   - then reverse() is called T-1 times, in reverse layer order (the backward pass), also when
//     nothing needs a gradient or the rank has no edges (then with zero rows), so that every
//     MPI rank makes the same sequence of collective calls.
// Rows are the features h [N, D, C] of the graph's nodes as [N, D*C] (D = (L+1)^2), row-major,
// in the compute dtype, in Kokkos::DefaultExecutionSpace's memory (host memory on CPU builds),
// and already fenced (the caller may read them on the host after a deep copy).
#pragma once

#include <cstddef>

namespace edgeframe {

enum class RowType { f32, f64 };

struct NodeRows {
  void* data = nullptr;  // [rows, width] row-major, contiguous
  RowType type = RowType::f64;
  int rows = 0;   // nodes N of the graph (owned first: 0..n_local-1)
  int width = 0;  // D * C
  std::size_t element_size() const { return type == RowType::f64 ? sizeof(double) : sizeof(float); }
};

class NodeExchange {
 public:
  virtual ~NodeExchange() = default;
  // Forward communication: every ghost row := its owner's row (owned rows unchanged).
  virtual void forward(const NodeRows& h) = 0;
  // Reverse communication, the adjoint of forward(): every owner row += the rows of all its
  // ghost copies (on any rank), then every ghost row := 0.
  virtual void reverse(const NodeRows& grad) = 0;
};

}  // namespace edgeframe
