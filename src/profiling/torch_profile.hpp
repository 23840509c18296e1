// --torch-profile for edgeframe_bench: run a few steps under LibTorch's Kineto profiler and print
// where the GPU's time goes, grouped by what the kernels are (GEMMs, edgeframe's Kokkos kernels,
// torch's elementwise / cat / reduction / copy passes) and the heaviest kernels by name. The
// Kokkos kernel-callback split cannot do this: it sees only Kokkos launches and puts every torch
// kernel (and the GPU's idle time) into one "LibTorch + glue" line.
//
// It also lists the torch operators that fill or copy (aten::zeros / fill_ / zero_ / copy_) by
// input shape, from the CPU-side operator events (recorded on GPU builds as well): which
// tensors are zero-filled or copied per step, the first thing to read about the "copies /
// fills" and many "elementwise" kernels.
//
// On a host build the profiler records CPU operators instead (nested, so the sums overlap):
// enough to check that the option works, not a profile worth reading.
#pragma once

#include <torch/csrc/autograd/profiler_kineto.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace edgeframe::profiling {

// The family of a GPU kernel, from its (mangled or demangled) name.
inline std::string kernel_family(const std::string& name) {
  auto has = [&](const char* s) { return name.find(s) != std::string::npos; };
  if (has("cuda_parallel_launch")) return "edgeframe Kokkos kernels";
  if (has("gemm") || has("cutlass") || has("xmma") || has("Kernel2") || has("sm90_") || has("cublas")) return "GEMMs";
  if (has("CatArray") || has("cat_")) return "torch cat";
  if (has("reduce")) return "torch reductions";
  if (has("Memcpy") || has("Memset") || has("copy") || has("FillFunctor")) return "copies / fills";
  if (has("elementwise") || has("vectorized")) return "torch elementwise";
  if (has("index")) return "torch index/gather";
  return "other";
}

// Runs step() reps times under the profiler; step_s is the unprofiled step time (for the share
// of the step the device was busy).
inline void profile_steps(int reps, double step_s, const std::function<void()>& step, const std::string& trace_path) {
  using namespace torch::autograd::profiler;
  using torch::profiler::impl::ActivityType;
  using torch::profiler::impl::ProfilerState;
#ifdef KOKKOS_ENABLE_CUDA
  const std::set<ActivityType> activities{ActivityType::CPU, ActivityType::CUDA};
  const c10::DeviceType want = c10::DeviceType::CUDA;
#else
  const std::set<ActivityType> activities{ActivityType::CPU};
  const c10::DeviceType want = c10::DeviceType::CPU;
#endif
  const ProfilerConfig config(ProfilerState::KINETO, /*report_input_shapes=*/true);
  prepareProfiler(config, activities);
  enableProfiler(config, activities);
  for (int r = 0; r < reps; ++r) step();
  const std::unique_ptr<ProfilerResult> result = disableProfiler();
  if (!trace_path.empty()) result->save(trace_path);

  std::map<std::string, std::pair<double, int>> by_name, by_family;  // seconds, launches
  // The torch operators that fill or copy (the "copies / fills" and many "elementwise" GPU
  // kernels), by input shapes: which tensors get zero-filled or copied, and how often.
  std::map<std::string, std::pair<double, int>> fills;  // values touched per step, calls
  for (const auto& e : result->events()) {
    if (e.deviceType() != c10::DeviceType::CPU || !e.hasShapes()) continue;
    const std::string op = e.name();
    if (op != "aten::zeros" && op != "aten::fill_" && op != "aten::copy_" && op != "aten::zero_" &&
        op != "aten::zeros_like")
      continue;
    std::string key = op + " ";
    double values = 0;
    for (const auto& shape : e.shapes()) {
      if (shape.empty()) continue;
      double n = 1;
      key += "[";
      for (std::size_t d = 0; d < shape.size(); ++d) {
        key += (d ? "," : "") + std::to_string(shape[d]);
        n *= double(shape[d]);
      }
      key += "]";
      values = std::max(values, n);
      if (op == "aten::zeros") break;  // its "shapes" are the size argument's
    }
    auto& f = fills[key];
    f.first += values;
    f.second += 1;
  }
  double busy = 0;
  int events = 0;
  for (const auto& e : result->events()) {
    if (e.deviceType() != want) continue;
    const double s = e.durationNs() * 1e-9;
    std::string name = e.name();
    auto& n = by_name[name.size() > 90 ? name.substr(0, 87) + "..." : name];
    n.first += s;
    n.second += 1;
    auto& f = by_family[kernel_family(name)];
    f.first += s;
    f.second += 1;
    busy += s;
    ++events;
  }
  std::printf("  torch profile (%s events, per step): device busy %.2f ms of the %.2f ms step (%.0f %%), %d events\n",
              want == c10::DeviceType::CUDA ? "GPU" : "CPU operator, nested", 1e3 * busy / reps, 1e3 * step_s,
              100 * busy / reps / step_s, events / reps);
  std::vector<std::pair<std::string, std::pair<double, int>>> families(by_family.begin(), by_family.end()),
      names(by_name.begin(), by_name.end());
  auto heavier = [](const auto& a, const auto& b) { return a.second.first > b.second.first; };
  std::sort(families.begin(), families.end(), heavier);
  std::sort(names.begin(), names.end(), heavier);
  std::printf("    %-28s %10s %8s\n", "family", "ms/step", "launches");
  for (const auto& [f, v] : families)
    std::printf("    %-28s %10.2f %8d\n", f.c_str(), 1e3 * v.first / reps, v.second / reps);
  std::vector<std::pair<std::string, std::pair<double, int>>> fill_list(fills.begin(), fills.end());
  std::sort(fill_list.begin(), fill_list.end(), heavier);
  std::printf("    %-70s %14s %8s\n", "fill / copy operators by input shape", "Mvalues/step", "calls");
  for (std::size_t k = 0; k < std::min<std::size_t>(fill_list.size(), 20); ++k)
    std::printf("    %-70s %14.2f %8d\n", fill_list[k].first.substr(0, 70).c_str(),
                1e-6 * fill_list[k].second.first / reps, fill_list[k].second.second / reps);
  std::printf("    %-90s %10s %8s\n", "heaviest kernels", "ms/step", "launches");
  for (std::size_t k = 0; k < std::min<std::size_t>(names.size(), 30); ++k)
    std::printf("    %-90s %10.3f %8d\n", names[k].first.c_str(), 1e3 * names[k].second.first / reps,
                names[k].second.second / reps);
}

}  // namespace edgeframe::profiling
