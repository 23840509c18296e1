// --memory-profile for edgeframe_bench: one step under LibTorch's profiler with memory events,
// to see where a step's peak of torch-allocated memory lies and what is alive there, instead of
// guessing it from the code (a model read off the code put the peak in the wrong place twice;
// doc/engine.md "What a layer keeps for the backward pass" gives the model this checks). Counts torch's allocations on the engine's device (CUDA: the
// caching allocator's requests; host: the CPU allocator); the Kokkos workspace is reported by
// the bench separately.
//
// Prints the peak above the step's starting level (bytes, and floats per edge), the bytes held
// when the backward pass starts (what the forward keeps for it, plus its live outputs), and the
// operators running at the peak, outermost first.
#pragma once

#include <Kokkos_Core.hpp>  // KOKKOS_ENABLE_CUDA: whose allocations count
#include <torch/csrc/autograd/profiler_kineto.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace edgeframe::profiling {

struct MemoryTimeline {
  std::int64_t peak = 0;             // bytes above the level at the step's start
  std::uint64_t peak_ns = 0;         // when
  std::int64_t at_backward = -1;     // bytes held when the first autograd backward node ran (-1: none)
  std::vector<std::string> at_peak;  // operators whose time range contains the peak, outermost first
};

// From the profiler's events: memory events (name "[memory]", nBytes > 0 allocations, < 0 frees)
// of device `want`, in time order, and the CPU operators around them.
inline MemoryTimeline memory_timeline(const std::vector<torch::autograd::profiler::KinetoEvent>& events,
                                      c10::DeviceType want) {
  struct Change {
    std::uint64_t ns;
    std::int64_t bytes;
  };
  std::vector<Change> changes;
  std::uint64_t backward_ns = UINT64_MAX;
  for (const auto& e : events) {
    const std::string name = e.name();
    if (name == "[memory]") {
      if (e.deviceType() == want) changes.push_back({e.startNs(), e.nBytes()});
    } else if (name.rfind("autograd::engine::evaluate_function", 0) == 0) {
      backward_ns = std::min<std::uint64_t>(backward_ns, e.startNs());
    }
  }
  std::stable_sort(changes.begin(), changes.end(), [](const Change& a, const Change& b) { return a.ns < b.ns; });
  MemoryTimeline t;
  std::int64_t level = 0;
  for (const auto& c : changes) {
    if (c.ns >= backward_ns && t.at_backward < 0) t.at_backward = level;
    level += c.bytes;
    if (level > t.peak) {
      t.peak = level;
      t.peak_ns = c.ns;
    }
  }
  std::vector<std::pair<std::uint64_t, std::string>> around;  // (start, name) of operators at the peak
  for (const auto& e : events) {
    const std::string name = e.name();
    if (name == "[memory]" || e.deviceType() != c10::DeviceType::CPU) continue;
    if (e.startNs() <= t.peak_ns && t.peak_ns <= e.endNs()) around.emplace_back(e.startNs(), name);
  }
  std::sort(around.begin(), around.end());
  for (const auto& [start, name] : around) t.at_peak.push_back(name);
  return t;
}

// Runs step() once under the profiler with memory events; the timeline of torch's allocations
// on the engine's device.
inline MemoryTimeline memory_timeline_of(const std::function<void()>& step) {
  using namespace torch::autograd::profiler;
  using torch::profiler::impl::ActivityType;
  using torch::profiler::impl::ProfilerState;
#ifdef KOKKOS_ENABLE_CUDA
  const c10::DeviceType want = c10::DeviceType::CUDA;
#else
  const c10::DeviceType want = c10::DeviceType::CPU;
#endif
  const std::set<ActivityType> activities{ActivityType::CPU};
  const ProfilerConfig config(ProfilerState::KINETO, /*report_input_shapes=*/false, /*profile_memory=*/true);
  prepareProfiler(config, activities);
  enableProfiler(config, activities);
  step();
  const std::unique_ptr<ProfilerResult> result = disableProfiler();
  return memory_timeline(result->events(), want);
}

// memory_timeline_of(step), printed: the peak, what the backward pass starts with, the operators
// at the peak; per edge in values of real_bytes each.
inline void memory_profile(const std::function<void()>& step, long n_edges, std::size_t real_bytes) {
  const MemoryTimeline t = memory_timeline_of(step);
  auto per_edge = [&](std::int64_t bytes) {
    return n_edges > 0 ? double(bytes) / double(real_bytes) / double(n_edges) : 0.0;
  };
  std::printf(
      "  memory profile (torch allocations on the engine's device, one step): peak %.1f MiB above the "
      "step's start = %.0f values per edge\n",
      t.peak / 1048576.0, per_edge(t.peak));
  if (t.at_backward >= 0)
    std::printf("    held when the backward pass started: %.1f MiB = %.0f values per edge\n", t.at_backward / 1048576.0,
                per_edge(t.at_backward));
  std::printf("    operators at the peak, outermost first:\n");
  for (const auto& name : t.at_peak) std::printf("      %s\n", name.c_str());
}

}  // namespace edgeframe::profiling
