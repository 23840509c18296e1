/* -*- c++ -*- ----------------------------------------------------------
   The per-atom stage in the engine's memory, for the transports whose node
   rows live there (CUDA builds always; exchange_stage yes on CPU builds;
   LAMMPS-KOKKOS' device communication): [nall, words] doubles, one row
   per LAMMPS atom holding the node row's bytes, its device kernels, and
   the node maps uploaded at each bind. The reordering between node rows
   and the stage runs on the device; in between, each transport fills the
   stage's ghost rows (forward) or adds them onto their owners (reverse).
------------------------------------------------------------------------- */

#ifndef LMP_EDGEFRAME_EXCHANGE_DEVICE_STAGE_H
#define LMP_EDGEFRAME_EXCHANGE_DEVICE_STAGE_H

#include "exchange_transport.h"

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

namespace LAMMPS_NS {
namespace edgeframe_glue {

  using EngineExec = Kokkos::DefaultExecutionSpace;
  using EngineMem = EngineExec::memory_space;
  constexpr bool kEngineMemoryIsHost = Kokkos::SpaceAccessibility<Kokkos::HostSpace, EngineMem>::accessible;
  using DeviceWords = Kokkos::View<double *, EngineMem>;
  using DeviceInts = Kokkos::View<int *, EngineMem>;
  using PinnedWords = Kokkos::View<double *, Kokkos::SharedHostPinnedSpace>;

  // A view of n elements, not zeroed (every element is written before it is read).
  template <class V>
  V uninitialised(const std::string &label, std::size_t n)
  {
    return V(Kokkos::view_alloc(Kokkos::WithoutInitializing, label), n);
  }

  // A host vector into a device view of at least its size (grown on demand, never shrunk).
  void upload(DeviceInts &dst, const std::vector<int> &src, const char *label);

  // count doubles of dst from src, at word offsets (one contiguous copy; deep_copy fences).
  template <class Dst, class Src>
  void copy_span(const Dst &dst, std::size_t dst_at, const Src &src, std::size_t src_at, std::size_t count)
  {
    if (count == 0) return;
    Kokkos::deep_copy(Kokkos::subview(dst, std::make_pair(dst_at, dst_at + count)),
                      Kokkos::subview(src, std::make_pair(src_at, src_at + count)));
  }

  class DeviceStage {
   public:
    explicit DeviceStage(const ExchangeLayout &layout) : m_layout(layout) {}

    // At each bind: the stage grown to the layout's [nall, words] (never shrunk), the node maps
    // (root_of_node, sum_begin, sum_nodes) uploaded.
    void bind();
    const DeviceWords &view() const { return m_stage; }    // [nall * words]
    double *data() const { return m_stage.data(); }

    // Forward: owned node rows -> their atoms' stage rows; `swaps` fill the stage's ghost rows;
    // ghost node rows <- their roots' stage rows (ghosts made by swaps to this rank are never
    // filled). No clearing: the swaps read owned atoms' rows (written here) and ghosts received
    // by earlier swaps; every ghost row is overwritten by its swap.
    template <class Swaps>
    void forward(const edgeframe::NodeRows &h, SplitTimer &timer, Swaps &&swaps) const
    {
      timer.mark(nullptr);
      gather_owned(h.data);
      timer.mark(&ExchangeSplit::reorder);
      swaps();
      scatter_ghosts(h.data);
      EngineExec().fence("edgeframe::exchange forward");    // the engine reads the rows on its own stream
      timer.mark(&ExchangeSplit::reorder);
    }

    // Reverse: every atom's stage row := the sum of the gradient rows staged on it (zero for
    // atoms that only relay or were made by swaps to this rank); `swaps` add the ghost rows onto
    // their owners' along the swaps backwards; owned node rows <- their stage rows, ghost node
    // rows := 0.
    template <class Swaps>
    void reverse(const edgeframe::NodeRows &grad, SplitTimer &timer, Swaps &&swaps) const
    {
      timer.mark(nullptr);
      sum_gradients(grad.data);
      timer.mark(&ExchangeSplit::reorder);
      swaps();
      scatter_owned_zero_ghosts(grad.data);
      EngineExec().fence("edgeframe::exchange reverse");
      timer.mark(&ExchangeSplit::reorder);
    }

    // Stage rows and a buffer in engine memory, words doubles per row: buf[q] := stage row
    // (list ? list[q] : first + q) for q in [0, n).
    void pack(double *buf, const int *list, int first, int n) const;
    // Stage row first + q := buf[q].
    void unpack(const double *buf, int first, int n) const;
    // Stage row list[q] += buf[q], in the rows' element type (the list's atoms are distinct).
    void add(const double *buf, const int *list, int n) const;
    // Stage row targets[t] += the sum of rows qs[group_begin[t] .. group_begin[t + 1]) of recv
    // [n_recv, words], for t in [0, n_targets) (distinct targets: no races).
    void add_groups(const double *recv, int n_recv, const int *targets, const int *group_begin, const int *qs,
                    int n_targets) const;

   private:
    // The node rows are [n_nodes, width] of the layout's type (an idle rank's empty rows carry
    // no type of their own).
    void gather_owned(void *rows) const;
    void scatter_ghosts(void *rows) const;
    void sum_gradients(void *rows) const;
    void scatter_owned_zero_ghosts(void *rows) const;

    const ExchangeLayout &m_layout;
    DeviceWords m_stage;
    DeviceInts m_atom_of_node, m_sum_begin, m_sum_nodes;    // layout.root_of_node, sum_begin, sum_nodes
  };

}    // namespace edgeframe_glue
}    // namespace LAMMPS_NS

#endif
