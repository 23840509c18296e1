/* -*- c++ -*- ----------------------------------------------------------
   Turns the engine's typed exceptions into LAMMPS errors (STYLE.md §11):
   input problems every rank sees alike -> error->all, problems found while
   computing on one rank -> error->one. The text always goes through "{}".
------------------------------------------------------------------------- */

#ifndef LMP_EDGEFRAME_LAMMPS_ERRORS_H
#define LMP_EDGEFRAME_LAMMPS_ERRORS_H

#include "error.h"

#include "errors.hpp"

#include <c10/util/Exception.h>

#include <exception>
#include <new>
#include <string>

namespace LAMMPS_NS {
namespace edgeframe_glue {

  enum class Scope { ALL, ONE };

  // Runs fn(); any exception becomes error->all / error->one with `where` as prefix.
  template <class Fn>
  void call_engine(Error *error, Scope scope, const char *file, int line, const std::string &where, Fn &&fn)
  {
    auto fail = [&](const std::string &what) {
      if (scope == Scope::ALL)
        error->all(file, line, "{}: {}", where, what);
      else
        error->one(file, line, "{}: {}", where, what);
    };
    // What to change after an allocation failure; the allocator's own text follows it.
    const std::string oom = "out of memory while evaluating the model; give each GPU or rank fewer atoms "
                            "(more MPI ranks / GPUs, a smaller box), lower 'memory_budget' (activations auto), use "
                            "'activations stream edge_chunk N' (model v2) or 'activations recompute edge_chunk N', "
                            "run with PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True in the environment (LibTorch "
                            "then keeps fewer unusable blocks), or use a smaller model. ";
    try {
      fn();
    } catch (const c10::OutOfMemoryError &e) {    // torch's CUDA caching allocator
      fail(oom + e.what_without_backtrace());
    } catch (const c10::Error &e) {
      fail(e.what_without_backtrace());    // LibTorch errors: the message without a C++ backtrace
    } catch (const std::bad_alloc &e) {    // host new
      fail(oom + e.what());
    } catch (const std::exception &e) {
      // Kokkos 5 reports a failed allocation (CudaSpace, HostSpace) as std::runtime_error
      // "Kokkos ERROR: ... failed to allocate ...": give it the same advice.
      const std::string what = e.what();
      const bool kokkos_oom = what.find("Kokkos") != std::string::npos && what.find("allocate") != std::string::npos;
      fail(kokkos_oom ? oom + what : what);
    }
  }

}    // namespace edgeframe_glue
}    // namespace LAMMPS_NS

#endif
