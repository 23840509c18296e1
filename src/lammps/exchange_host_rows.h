/* -*- c++ -*- ----------------------------------------------------------
   The exchange's host row loops: node rows <-> the per-atom stage in host
   memory, and the adds of the reverse exchange. A stage row is
   stage_words doubles per LAMMPS atom holding the node row's bytes (a
   float row travels as floats, two per double: no conversion, and half the
   bytes of widening it).

   RowLoop threads only in files compiled with OpenMP: the exchange's
   files are (src/lammps/CMakeLists.txt).
------------------------------------------------------------------------- */

#ifndef LMP_EDGEFRAME_EXCHANGE_HOST_ROWS_H
#define LMP_EDGEFRAME_EXCHANGE_HOST_ROWS_H

#include "exchange.hpp"
#include "exchange_settings.h"

#include <cstddef>
#include <cstring>
#include <vector>

namespace LAMMPS_NS {
namespace edgeframe_glue {

  // OpenMP threads of the large host row loops (ExchangeSettings::threads; 1 without OpenMP).
  int host_threads(const ExchangeSettings &settings);

  // The host row loops: f(q) for q in [0, n), rows of row_bytes each, on `threads` OpenMP threads
  // when they move parallel_bytes or more (ExchangeSettings::threads). Measured on the H200
  // machines (bench/results/benchmarks-log.md, two H200s): 8 threads halve the one-rank exchange
  // of periodic images (96 -> 43 ms at 110k atoms) but do not help two ranks (91 -> 104 ms):
  // mpirun binds each rank to one core, so the threads share it. Hence 1 by default.
  struct RowLoop {
    explicit RowLoop(const ExchangeSettings &settings) :
        threads(host_threads(settings)), parallel_bytes(settings.parallel_bytes)
    {
    }
    int threads;
    std::size_t parallel_bytes;

    // Whether a loop over n rows of row_bytes runs on threads.
    bool threaded(int n, std::size_t row_bytes) const
    {
      return threads > 1 && std::size_t(n) * row_bytes >= parallel_bytes;
    }

    template <class F>
    void operator()(int n, std::size_t row_bytes, F &&f) const
    {
#ifdef _OPENMP
      if (threaded(n, row_bytes)) {
#pragma omp parallel for schedule(static) num_threads(threads)
        for (int q = 0; q < n; q++) f(q);
        return;
      }
#endif
      for (int q = 0; q < n; q++) f(q);
    }
  };

  // Node rows [begin, end) into their atoms' stage rows, byte for byte.
  void rows_to_stage(const RowLoop &for_rows, const char *rows, std::size_t row_bytes, const int *atom_of_node,
                     int begin, int end, double *stage, int stage_words);

  // Their atoms' stage rows back into node rows [begin, end).
  void stage_to_rows(const RowLoop &for_rows, const double *stage, int stage_words, const int *atom_of_node, int begin,
                     int end, char *rows, std::size_t row_bytes);

  // Stage row of atom a := the sum of the node rows sum_nodes[sum_begin[a] .. sum_begin[a + 1])
  // (the first copied, the others added in node order; zero if there are none), for every one
  // of nall atoms; the rows' element type is `type`, width values each.
  void sum_rows_to_atoms(const RowLoop &for_rows, edgeframe::RowType type, const char *rows, std::size_t row_bytes,
                         const std::vector<int> &sum_begin, const std::vector<int> &sum_nodes, int nall, double *stage,
                         int stage_words, int width);

  // in[0..n) added onto out[0..n), both the rows' element type stored in doubles' bytes (read and
  // written through memcpy: a float lvalue over double storage would break strict aliasing).
  template <class T>
  void add_row(const double *in, double *out, int n)
  {
    const char *a = reinterpret_cast<const char *>(in);
    char *b = reinterpret_cast<char *>(out);
    for (int c = 0; c < n; c++) {
      T x, y;
      std::memcpy(&x, a + c * sizeof(T), sizeof(T));
      std::memcpy(&y, b + c * sizeof(T), sizeof(T));
      y += x;
      std::memcpy(b + c * sizeof(T), &y, sizeof(T));
    }
  }

}    // namespace edgeframe_glue
}    // namespace LAMMPS_NS

#endif
