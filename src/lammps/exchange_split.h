/* -*- c++ -*- ----------------------------------------------------------
   Where the per-layer exchange's time goes (pair_style ... timing
   detail): the split that the end-of-run report prints
   (pair_edgeframe_step.cpp), and the timer that measures it.
------------------------------------------------------------------------- */

#ifndef LMP_EDGEFRAME_EXCHANGE_SPLIT_H
#define LMP_EDGEFRAME_EXCHANGE_SPLIT_H

#include "platform.h"

#include <Kokkos_Core.hpp>

namespace LAMMPS_NS {
namespace edgeframe_glue {

  // Seconds summed over calls: reordering node rows <-> the per-atom stage (device kernels, or
  // host copies), copies between device and pinned host memory (with their byte count), and
  // the communication (LAMMPS' pack / MPI / unpack on the host or on the device, or the direct
  // swaps). host_pack is the part of comm spent in the host pack / unpack callbacks (row copies
  // and the reverse adds; the rest of comm is MPI and waiting for the partner rank); the device
  // callbacks only launch kernels and are not timed apart.
  struct ExchangeSplit {
    double reorder = 0.0, bus = 0.0, comm = 0.0;
    double bus_bytes = 0.0;
    double host_pack = 0.0;
    double host_rows = 0.0;    // rows the host pack / unpack callbacks moved
    double traces = 0.0;    // bind()'s traces and swap lists (inside "graph build")
    double binds = 0.0;    // bind() calls (the pair binds at neighbour-list builds only)
  };

  // Measures an ExchangeSplit. Measuring fences the device between the phases, so it is off
  // unless asked for; while off, every call does nothing.
  class SplitTimer {
   public:
    using Field = double ExchangeSplit::*;    // which part of the split a measurement adds to

    // A new split, measured or not (LAMMPS calls init_style once per run: the split is per run,
    // like the other timing lines).
    void start(bool on)
    {
      m_on = on;
      m_split = ExchangeSplit();
    }
    bool on() const { return m_on; }
    const ExchangeSplit &split() const { return m_split; }

    // Adds the time since the last mark to `field` (nullptr: only sets the mark), after fencing
    // the engine's execution space so that the phase's device work counts in it.
    void mark(Field field)
    {
      if (!m_on) return;
      Kokkos::DefaultExecutionSpace().fence("edgeframe::exchange timing");
      const double now = platform::walltime();
      if (field) m_split.*field += now - m_mark;
      m_mark = now;
    }
    // Adds a count (bytes, rows, binds) to `field`.
    void add(Field field, double amount)
    {
      if (m_on) m_split.*field += amount;
    }

    // Adds the wall time of its scope to one field (host work: no fence).
    class Scope {
     public:
      Scope(SplitTimer &timer, Field field) :
          m_timer(timer), m_field(field), m_t0(timer.m_on ? platform::walltime() : 0.0)
      {
      }
      ~Scope()
      {
        if (m_timer.m_on) m_timer.m_split.*m_field += platform::walltime() - m_t0;
      }
      Scope(const Scope &) = delete;
      Scope &operator=(const Scope &) = delete;

     private:
      SplitTimer &m_timer;
      Field m_field;
      double m_t0;
    };

   private:
    bool m_on = false;
    ExchangeSplit m_split;
    double m_mark = 0.0;
  };

}    // namespace edgeframe_glue
}    // namespace LAMMPS_NS

#endif
