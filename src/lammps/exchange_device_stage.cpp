#include "exchange_device_stage.h"

namespace LAMMPS_NS {
namespace edgeframe_glue {

  namespace {

    template <class T>
    using DevRows = Kokkos::View<T **, Kokkos::LayoutRight, EngineMem, Kokkos::MemoryUnmanaged>;

    // Rows of T viewed over a stage of `words` doubles per atom (the row's bytes, then padding).
    template <class T, class Word>
    DevRows<T> stage_rows(Word *stage, int n_atoms, int words)
    {
      return DevRows<T>(reinterpret_cast<T *>(stage), n_atoms, words * sizeof(double) / sizeof(T));
    }

    // f(T()) for the rows' element type T.
    template <class F>
    void with_row_type(edgeframe::RowType type, F &&f)
    {
      if (type == edgeframe::RowType::f64)
        f(double());
      else
        f(float());
    }

    // stage[atom_of_node[k]] := rows[k] for k in [begin, end).
    template <class T>
    void gather_to_atoms(const DevRows<T> &rows, const Kokkos::View<const int *, EngineMem> &atom_of_node, int begin,
                         int end, const DevRows<T> &stage, int width)
    {
      if (end <= begin) return;
      Kokkos::parallel_for(
          "edgeframe::exchange_rows_to_atoms",
          Kokkos::MDRangePolicy<EngineExec, Kokkos::Rank<2>>({begin, 0}, {end, width}),
          KOKKOS_LAMBDA(const int k, const int c) { stage(atom_of_node(k), c) = rows(k, c); });
    }

    // rows[k] := stage[atom_of_node[k]] for k in [begin, end).
    template <class T>
    void scatter_to_nodes(const DevRows<T> &stage, const Kokkos::View<const int *, EngineMem> &atom_of_node, int begin,
                          int end, const DevRows<T> &rows, int width)
    {
      if (end <= begin) return;
      Kokkos::parallel_for(
          "edgeframe::exchange_atoms_to_rows",
          Kokkos::MDRangePolicy<EngineExec, Kokkos::Rank<2>>({begin, 0}, {end, width}),
          KOKKOS_LAMBDA(const int k, const int c) { rows(k, c) = stage(atom_of_node(k), c); });
    }

    // Every atom's stage row for the reverse exchange: the sum of the gradient rows of the nodes
    // staged on it (the first, then the others added in node order, as sum_rows_to_atoms on the
    // host), zero for atoms with none.
    template <class T>
    void sum_to_atoms(const DevRows<T> &rows, const Kokkos::View<const int *, EngineMem> &sum_begin,
                      const Kokkos::View<const int *, EngineMem> &sum_nodes, int nall, const DevRows<T> &stage,
                      int width)
    {
      if (nall <= 0) return;
      Kokkos::parallel_for(
          "edgeframe::exchange_gradients_to_atoms",
          Kokkos::MDRangePolicy<EngineExec, Kokkos::Rank<2>>({0, 0}, {nall, width}),
          KOKKOS_LAMBDA(const int a, const int c) {
            const int b = sum_begin(a), e = sum_begin(a + 1);
            T v = b < e ? rows(sum_nodes(b), c) : T(0);
            for (int i = b + 1; i < e; i++) v += rows(sum_nodes(i), c);
            stage(a, c) = v;
          });
    }

    template <class T>
    void zero_rows(const DevRows<T> &rows, int begin, int end, int width)
    {
      if (end <= begin) return;
      Kokkos::parallel_for(
          "edgeframe::exchange_zero_ghost_rows",
          Kokkos::MDRangePolicy<EngineExec, Kokkos::Rank<2>>({begin, 0}, {end, width}),
          KOKKOS_LAMBDA(const int k, const int c) { rows(k, c) = T(0); });
    }

    // Rows of `words` doubles between a stage and a buffer, in engine memory:
    // buf[q] := stage[list ? list[q] : first + q] (to_buffer) or the reverse.
    void copy_stage_rows(double *dst, const double *src, const int *list, int first, int n, int words, bool to_buffer)
    {
      if (n <= 0) return;
      Kokkos::parallel_for(
          "edgeframe::exchange_device_pack", Kokkos::MDRangePolicy<EngineExec, Kokkos::Rank<2>>({0, 0}, {n, words}),
          KOKKOS_LAMBDA(const int q, const int w) {
            const std::size_t atom = std::size_t(list ? list[q] : first + q);
            if (to_buffer)
              dst[std::size_t(q) * words + w] = src[atom * words + w];
            else
              dst[atom * words + w] = src[std::size_t(q) * words + w];
          });
    }

    // stage[list[q]] += buf[q] for the rows' element type T (the list's atoms are distinct).
    template <class T>
    void add_buffer_rows(double *stage, const double *buf, const int *list, int n, int words, int width)
    {
      if (n <= 0) return;
      const int per_row = int(words * sizeof(double) / sizeof(T));
      Kokkos::parallel_for(
          "edgeframe::exchange_device_unpack_reverse",
          Kokkos::MDRangePolicy<EngineExec, Kokkos::Rank<2>>({0, 0}, {n, width}),
          KOKKOS_LAMBDA(const int q, const int c) {
            const T add = reinterpret_cast<const T *>(buf)[std::size_t(q) * per_row + c];
            reinterpret_cast<T *>(stage)[std::size_t(list[q]) * per_row + c] += add;
          });
    }

    // stage[targets[t]] += sum of recv[qs[i]] for i in [group_begin[t], group_begin[t + 1]), for t
    // in [0, n_targets).
    template <class T>
    void add_groups_as(const DevRows<T> &stage, const DevRows<const T> &recv, const int *targets,
                       const int *group_begin, const int *qs, int n_targets, int width)
    {
      if (n_targets <= 0) return;
      Kokkos::parallel_for(
          "edgeframe::exchange_direct_reverse_add",
          Kokkos::MDRangePolicy<EngineExec, Kokkos::Rank<2>>({0, 0}, {n_targets, width}),
          KOKKOS_LAMBDA(const int t, const int c) {
            T v = T(0);
            for (int i = group_begin[t]; i < group_begin[t + 1]; i++) v += recv(qs[i], c);
            stage(targets[t], c) += v;
          });
    }

  }    // namespace

  void upload(DeviceInts &dst, const std::vector<int> &src, const char *label)
  {
    const int n = int(src.size());
    if (int(dst.extent(0)) < n) dst = uninitialised<DeviceInts>(label, n);
    if (n)
      Kokkos::deep_copy(Kokkos::subview(dst, std::make_pair(0, n)),
                        Kokkos::View<const int *, Kokkos::HostSpace, Kokkos::MemoryUnmanaged>(src.data(), n));
  }

  void DeviceStage::bind()
  {
    const ExchangeLayout &l = m_layout;
    const std::size_t words = std::size_t(l.nall) * l.words;
    if (m_stage.extent(0) < words)    // grown on demand, never shrunk
      m_stage = uninitialised<DeviceWords>("edgeframe::exchange stage", words);
    upload(m_atom_of_node, l.root_of_node, "edgeframe::exchange atom_of_node");
    upload(m_sum_begin, l.sum_begin, "edgeframe::exchange sum_begin");
    upload(m_sum_nodes, l.sum_nodes, "edgeframe::exchange sum_nodes");
  }

  void DeviceStage::gather_owned(void *rows) const
  {
    const ExchangeLayout &l = m_layout;
    with_row_type(l.type, [&](auto zero) {
      using T = decltype(zero);
      gather_to_atoms<T>(DevRows<T>(static_cast<T *>(rows), l.n_nodes, l.width), m_atom_of_node, 0, l.n_local,
                         stage_rows<T>(m_stage.data(), l.nall, l.words), l.width);
    });
  }

  void DeviceStage::scatter_ghosts(void *rows) const
  {
    const ExchangeLayout &l = m_layout;
    with_row_type(l.type, [&](auto zero) {
      using T = decltype(zero);
      scatter_to_nodes<T>(stage_rows<T>(m_stage.data(), l.nall, l.words), m_atom_of_node, l.n_local, l.n_nodes,
                          DevRows<T>(static_cast<T *>(rows), l.n_nodes, l.width), l.width);
    });
  }

  void DeviceStage::sum_gradients(void *rows) const
  {
    const ExchangeLayout &l = m_layout;
    with_row_type(l.type, [&](auto zero) {
      using T = decltype(zero);
      sum_to_atoms<T>(DevRows<T>(static_cast<T *>(rows), l.n_nodes, l.width), m_sum_begin, m_sum_nodes, l.nall,
                      stage_rows<T>(m_stage.data(), l.nall, l.words), l.width);
    });
  }

  void DeviceStage::scatter_owned_zero_ghosts(void *rows) const
  {
    const ExchangeLayout &l = m_layout;
    with_row_type(l.type, [&](auto zero) {
      using T = decltype(zero);
      const DevRows<T> node_rows(static_cast<T *>(rows), l.n_nodes, l.width);
      scatter_to_nodes<T>(stage_rows<T>(m_stage.data(), l.nall, l.words), m_atom_of_node, 0, l.n_local, node_rows,
                          l.width);
      zero_rows<T>(node_rows, l.n_local, l.n_nodes, l.width);
    });
  }

  void DeviceStage::pack(double *buf, const int *list, int first, int n) const
  {
    copy_stage_rows(buf, m_stage.data(), list, first, n, m_layout.words, true);
  }

  void DeviceStage::unpack(const double *buf, int first, int n) const
  {
    copy_stage_rows(m_stage.data(), buf, nullptr, first, n, m_layout.words, false);
  }

  void DeviceStage::add(const double *buf, const int *list, int n) const
  {
    const ExchangeLayout &l = m_layout;
    with_row_type(l.type, [&](auto zero) {
      using T = decltype(zero);
      add_buffer_rows<T>(m_stage.data(), buf, list, n, l.words, l.width);
    });
  }

  void DeviceStage::add_groups(const double *recv, int n_recv, const int *targets, const int *group_begin,
                               const int *qs, int n_targets) const
  {
    const ExchangeLayout &l = m_layout;
    with_row_type(l.type, [&](auto zero) {
      using T = decltype(zero);
      add_groups_as<T>(stage_rows<T>(m_stage.data(), l.nall, l.words), stage_rows<const T>(recv, n_recv, l.words),
                       targets, group_begin, qs, n_targets, l.width);
    });
  }

}    // namespace edgeframe_glue
}    // namespace LAMMPS_NS
