// One force step as a CUDA graph (EvaluatorOptions::cuda_graph; doc/engine.md "CUDA graphs").
//
// A small-system step is bound by the host: about 350 torch ops and Kokkos launches, each a few
// microseconds of dispatch and autograd bookkeeping, while the GPU waits between them
// (the 512-atom L2 step, doc/performance.md). Recorded once as a CUDA graph, the whole step is
// one launch. A graph bakes in every address its kernels read and write, so it is replayed only
// while the caller's inputs stay where they were: the same edge graph (one per neighbour-list
// rebuild), the same positions view (its values may change: they are read at each replay),
// the same request. A new key runs the step eagerly once (the warm-up: workspace growth, the
// Kokkos instance of the graph's stream, cuBLAS handles and workspaces of the autograd thread),
// then captures it on the next call.
//
// Everything runs on a stream of its own (capture needs a stream other than the legacy default
// one): it waits for the caller's stream on entry and the caller's stream waits for it on exit,
// so inputs written and results read on the caller's stream are ordered as without the graph.
// Tensors made during capture live in the graph's private memory pool until the graph is reset.
#pragma once

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "ops.hpp"

#ifdef KOKKOS_ENABLE_CUDA
#include <ATen/cuda/CUDAEvent.h>
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif

namespace edgeframe::impl {

#ifdef KOKKOS_ENABLE_CUDA
// Captured: what the device part of a step returns (views into memory that a replay rewrites).
template <class Captured>
class StepGraph {
 public:
  using Key = std::vector<std::uintptr_t>;

  // step(): the device part of one step, on torch's current stream, with no host
  // synchronisation in it. Returns its result (eager, or the captured one after a replay).
  template <class Step>
  Captured run(const Key& key, Step&& step) {
    const c10::cuda::CUDAStream caller = c10::cuda::getCurrentCUDAStream();
    at::cuda::CUDAEvent inputs_ready;
    inputs_ready.record(caller);
    const c10::cuda::CUDAStreamGuard on_graph_stream(m_stream);
    inputs_ready.block(m_stream);
    if (key != m_key) {  // a new graph, positions view or request: record again
      m_graph.reset();
      m_key = key;
      m_eager_steps = 0;
    }
    Captured out;
    if (!m_graph && m_eager_steps < kEagerSteps) {
      ++m_eager_steps;
      out = step();
    } else {
      if (!m_graph) capture(std::forward<Step>(step));
      m_graph->replay();
      ++m_replays;
      out = m_captured;
    }
    at::cuda::CUDAEvent results_ready;
    results_ready.record(m_stream);
    results_ready.block(caller);
    return out;
  }

  long captures() const { return m_captures; }
  long replays() const { return m_replays; }

 private:
  // One eager step per key before the capture: whatever the first step allocates or creates
  // outside torch's pool (workspace, Kokkos instance scratch, cuBLAS workspaces) must exist
  // before capturing, or the graph would point at memory freed and reused later.
  static constexpr int kEagerSteps = 1;

  template <class Step>
  void capture(Step&& step) {
    auto graph = std::make_unique<at::cuda::CUDAGraph>();
    // Relaxed: Kokkos queries kernel attributes on first launches (not stream work, harmless).
    graph->capture_begin({0, 0}, cudaStreamCaptureModeRelaxed);
    try {
      m_captured = step();
    } catch (...) {
      try {
        graph->capture_end();  // ends the stream's capture; the partial graph is dropped
      } catch (...) {
      }
      throw;
    }
    graph->capture_end();
    m_graph = std::move(graph);
    ++m_captures;
  }

  c10::cuda::CUDAStream m_stream = c10::cuda::getStreamFromPool();
  std::unique_ptr<at::cuda::CUDAGraph> m_graph;
  Key m_key;
  Captured m_captured;
  int m_eager_steps = 0;
  long m_captures = 0, m_replays = 0;
};
#endif

// The device part of a step (what a CUDA graph can hold) and the host part after it.
struct DeviceStep {
  Result res;                            // views only; energy and virial are filled by finish()
  kk::View1<double, bridge::Exec> sums;  // [10]: virial (9), energy
  bool grad = false;
  int n_local = 0;
};
inline Result finish(const DeviceStep& d) { return finish_step(d.res, d.sums, d.n_local, d.grad); }

// The graphed steps of one evaluator (both model families): the step graph, keyed by the
// addresses of the edge graph, species and positions and by the request, and those inputs held
// so that their memory cannot be reused by newer ones while the key names their addresses.
// On host builds run() is the eager step.
class GraphedSteps {
 public:
  // device_step(): DeviceStep of (graph, positions, what), no host synchronisation inside.
  template <class DeviceStepFn>
  Result run(const AtomGraph& graph, kk::Vec3View<const double, bridge::Exec> positions, const What& what,
             DeviceStepFn&& device_step) {
#ifdef KOKKOS_ENABLE_CUDA
    if (!m_graph) m_graph = std::make_unique<StepGraph<DeviceStep>>();
    const auto& g = graph.edges;
    auto address = [](const void* p) { return reinterpret_cast<std::uintptr_t>(p); };
    const typename StepGraph<DeviceStep>::Key key = {address(g.recv.data()),
                                                     address(g.send.data()),
                                                     address(g.shift.data()),
                                                     address(g.recv_offsets.data()),
                                                     address(g.send_offsets.data()),
                                                     address(g.send_edges.data()),
                                                     address(graph.species.data()),
                                                     address(positions.data()),
                                                     std::uintptr_t(g.n_nodes),
                                                     std::uintptr_t(g.n_edges),
                                                     std::uintptr_t(graph.n_local),
                                                     std::uintptr_t(what.forces) | std::uintptr_t(what.energies) << 1 |
                                                         std::uintptr_t(what.virial) << 2 |
                                                         std::uintptr_t(what.atom_virial) << 3};
    m_graph_held = graph;
    m_positions_held = positions;
    return finish(m_graph->run(key, device_step));
#else
    (void)graph, (void)positions, (void)what;
    return finish(device_step());
#endif
  }
  // Drops the captured step (the weights it reads were replaced: model v2's set_system).
  void reset() {
#ifdef KOKKOS_ENABLE_CUDA
    if (m_graph) {
      m_captures += m_graph->captures();
      m_replays += m_graph->replays();
    }
    m_graph.reset();
    m_graph_held = AtomGraph();
    m_positions_held = {};
#endif
  }
  long captures() const {
#ifdef KOKKOS_ENABLE_CUDA
    return m_captures + (m_graph ? m_graph->captures() : 0);
#else
    return 0;
#endif
  }
  long replays() const {
#ifdef KOKKOS_ENABLE_CUDA
    return m_replays + (m_graph ? m_graph->replays() : 0);
#else
    return 0;
#endif
  }

 private:
#ifdef KOKKOS_ENABLE_CUDA
  std::unique_ptr<StepGraph<DeviceStep>> m_graph;
  AtomGraph m_graph_held;
  kk::Vec3View<const double, bridge::Exec> m_positions_held;
#endif
  long m_captures = 0, m_replays = 0;  // of graphs dropped by reset()
};

}  // namespace edgeframe::impl
