#include "exchange_host_rows.h"

#include <algorithm>

namespace LAMMPS_NS {
namespace edgeframe_glue {

  int host_threads(const ExchangeSettings &settings)
  {
#ifdef _OPENMP
    return std::max(1, settings.threads);
#else
    (void) settings;
    return 1;
#endif
  }

  void rows_to_stage(const RowLoop &for_rows, const char *rows, std::size_t row_bytes, const int *atom_of_node,
                     int begin, int end, double *stage, int stage_words)
  {
    for_rows(end - begin, row_bytes, [&](int q) {
      const int k = begin + q;
      std::memcpy(stage + std::size_t(atom_of_node[k]) * stage_words, rows + k * row_bytes, row_bytes);
    });
  }

  void stage_to_rows(const RowLoop &for_rows, const double *stage, int stage_words, const int *atom_of_node, int begin,
                     int end, char *rows, std::size_t row_bytes)
  {
    for_rows(end - begin, row_bytes, [&](int q) {
      const int k = begin + q;
      std::memcpy(rows + k * row_bytes, stage + std::size_t(atom_of_node[k]) * stage_words, row_bytes);
    });
  }

  namespace {

    template <class T>
    void sum_rows_as(const RowLoop &for_rows, const char *rows, std::size_t row_bytes,
                     const std::vector<int> &sum_begin, const std::vector<int> &sum_nodes, int nall, double *stage,
                     int stage_words, int width)
    {
      for_rows(nall, std::size_t(stage_words) * sizeof(double), [&](int a) {
        double *out = stage + std::size_t(a) * stage_words;
        const int b = sum_begin[a], e = sum_begin[a + 1];
        if (b == e) {
          std::memset(out, 0, std::size_t(stage_words) * sizeof(double));
          return;
        }
        std::memcpy(out, rows + std::size_t(sum_nodes[b]) * row_bytes, row_bytes);
        for (int i = b + 1; i < e; i++)
          add_row<T>(reinterpret_cast<const double *>(rows + std::size_t(sum_nodes[i]) * row_bytes), out, width);
      });
    }

  }    // namespace

  void sum_rows_to_atoms(const RowLoop &for_rows, edgeframe::RowType type, const char *rows, std::size_t row_bytes,
                         const std::vector<int> &sum_begin, const std::vector<int> &sum_nodes, int nall, double *stage,
                         int stage_words, int width)
  {
    if (type == edgeframe::RowType::f64)
      sum_rows_as<double>(for_rows, rows, row_bytes, sum_begin, sum_nodes, nall, stage, stage_words, width);
    else
      sum_rows_as<float>(for_rows, rows, row_bytes, sum_begin, sum_nodes, nall, stage, stage_words, width);
  }

}    // namespace edgeframe_glue
}    // namespace LAMMPS_NS
