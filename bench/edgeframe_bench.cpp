// Micro-benchmark of the engine (not a test): full-size random-weight models of the L2 and L3
// shapes (DESIGN.md §2) on diamond boxes of three sizes. For each case it times
// Evaluator::compute (energy + forces + virial) and, through Kokkos profiling callbacks, every
// labelled kernel inside it; per kernel it prints time per step, the compulsory bytes moved
// (every array each kernel must read or write, once), the achieved bandwidth and, where the
// kernel does arithmetic worth counting, the FLOP rate. The time not spent in Kokkos kernels is
// LibTorch (GEMMs, activations, autograd bookkeeping).
//
//   edgeframe_bench [--shape L2|L3|all] [--cells 4,6,8] [--reps N] [--precision fp64|fp32|tf32|bf16|tf32x3]
//                   [--activations auto|keep|recompute|stream [--edge-chunk N]] [--memory-budget GB]
//                   [--forces-out PREFIX] [--torch-profile [--trace FILE]] [--memory-profile]
// The step time is measured twice: without fences (what a run sees) and with a fence around each
// kernel (the per-kernel split). --forces-out writes PREFIX.<shape>.<cells> (raw doubles [N, 3]).
// --torch-profile adds a third pass under LibTorch's profiler: GPU time per kernel family and the
// heaviest kernels (torch_profile.hpp); --trace FILE also saves its Chrome trace.
// --memory-profile runs one more step with the profiler's memory events: the peak of torch's
// allocations, what the backward pass starts with, and the operators at the peak (torch_memory.hpp).
//
// Case mode (tools/gate.py, the multi-scale gate of issue #7): one given model and structure,
//   edgeframe_bench --case FILE --potential FILE.safetensors [--precision P] [--activations A]
//                   [--memory-budget GB] [--cuda-graph] [--reps N] [--warmup N] [--forces-out FILE]
// prints one line "RESULT {json}" (median step time, peak memory, energy) and writes the
// forces as raw little-endian doubles [N, 3]. The case file is written by tools/gate.py.
// --cuda-graph: EvaluatorOptions::cuda_graph (the first warm-up step runs eagerly, the second
// is captured, every later step is a replay; the JSON counts captures and replays).
// --activations: EvaluatorOptions::activations, auto (the default) | keep | recompute | stream
// (model v2; --recompute is recompute); --memory-budget GB (1e9 bytes): auto's budget (default: the device's free memory).
// The JSON names the plan the step ran with and the memory model's predicted peak.
// --torch-profile in case mode: after the RESULT line, the fenced split of the Kokkos kernels by
// label and the torch profile; --memory-profile: the memory profile (both as above).
#include <Kokkos_Core.hpp>
#include <algorithm>
#include <array>
#include <fstream>
#include <stdexcept>
#ifdef KOKKOS_ENABLE_CUDA
#include <c10/cuda/CUDACachingAllocator.h>
#endif
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "band_layout.hpp"
#include "evaluator.hpp"
#include "potential.hpp"
#include "torch_memory.hpp"
#include "torch_profile.hpp"

namespace {

using namespace edgeframe;
using Clock = std::chrono::steady_clock;

// ---- per-kernel timing through the Kokkos tools interface -----------------------------------
struct KernelTimes {
  std::map<std::string, double> seconds;
  std::map<std::string, int> calls;
  std::map<std::uint64_t, std::pair<std::string, Clock::time_point>> open;
  std::uint64_t next = 0;
  bool on = false;
};
KernelTimes g_times;

// On a device backend a launch returns before the kernel has run: the profile pass fences
// before (so queued torch work is not counted) and after each kernel. Those fences serialise
// the step, which is why the step time is measured in a separate pass without callbacks.
// "Without callbacks" must mean none registered: Kokkos itself calls Kokkos::fence() before
// every callback of a registered tool (tool_requirements.requires_global_fencing, true unless a
// tool says otherwise), whatever the callback does: callbacks left registered for the whole run
// would put two device-wide fences around each Kokkos launch of every "unfenced" step.
void fence_if_device() {
  if constexpr (!std::is_same_v<Exec::memory_space, Kokkos::HostSpace>) Kokkos::fence("edgeframe_bench: profile");
}
void begin_kernel(const char* name, std::uint32_t, std::uint64_t* id) {
  *id = g_times.next++;
  if (!g_times.on) return;
  fence_if_device();
  g_times.open[*id] = {name, Clock::now()};
}
void end_kernel(std::uint64_t id) {
  auto it = g_times.open.find(id);
  if (it == g_times.open.end()) return;
  fence_if_device();
  g_times.seconds[it->second.first] += std::chrono::duration<double>(Clock::now() - it->second.second).count();
  g_times.calls[it->second.first] += 1;
  g_times.open.erase(it);
}
// The per-kernel pass: callbacks registered (and timing on) for the guard's lifetime only.
struct KernelTimingPass {
  KernelTimingPass() {
    g_times = KernelTimes{};
    g_times.on = true;
    Kokkos::Tools::Experimental::set_begin_parallel_for_callback(begin_kernel);
    Kokkos::Tools::Experimental::set_end_parallel_for_callback(end_kernel);
  }
  ~KernelTimingPass() {
    Kokkos::Tools::Experimental::set_begin_parallel_for_callback(nullptr);
    Kokkos::Tools::Experimental::set_end_parallel_for_callback(nullptr);
    g_times.on = false;
  }
  KernelTimingPass(const KernelTimingPass&) = delete;
  KernelTimingPass& operator=(const KernelTimingPass&) = delete;
};

// ---- random full-size model -------------------------------------------------------------------
Potential random_potential(const std::string& shape, unsigned seed) {
  Potential pot;
  pot.path = "random-" + shape;
  pot.dtype = "float64";
  ModelConfig& c = pot.config;
  c.species = {"C", "Cu"};
  c.e0 = {-1.0, -2.0};
  c.lmax = shape == "L2" ? 2 : 3;
  c.mmax = 1;
  c.channels = 128;
  c.hidden_channels = 128;
  c.ffn_channels = 256;
  c.layers = 4;
  c.r_cut = shape == "L2" ? 5.0 : 6.0;
  c.n_rbf = 8;
  c.envelope_p = 5;
  c.edge_emb = 16;
  c.radial_hidden = 64;
  c.readout_hidden = 64;
  c.avg_neighbors = shape == "L2" ? 60.0 : 100.0;
  c.norm_eps = 1e-6;
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal;
  for (const auto& [name, dims] : parameter_shapes(c)) {
    TensorData t;
    t.shape = dims;
    std::size_t count = 1;
    for (auto d : dims) count *= std::size_t(d);
    t.values.resize(count);
    const bool scale = name.find("scale") != std::string::npos, bias = name.find("bias") != std::string::npos;
    const double fan_in = double(dims.back());
    for (auto& v : t.values) v = scale ? 1.0 : bias ? 0.0 : normal(rng) / std::sqrt(fan_in);
    pot.tensors.emplace_back(name, std::move(t));
  }
  return pot;
}

// ---- diamond box and its neighbour pairs ----------------------------------------------------------
struct Box {
  std::vector<double> x;  // [N*3]
  double side;            // cubic, Angstrom
};

Box diamond(int cells, unsigned seed) {
  const double a = 3.567;
  const double basis[8][3] = {{0, 0, 0},       {0, .5, .5},     {.5, 0, .5},     {.5, .5, 0},
                              {.25, .25, .25}, {.25, .75, .75}, {.75, .25, .75}, {.75, .75, .25}};
  Box b;
  b.side = a * cells;
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> rattle(0.0, 0.05);
  for (int i = 0; i < cells; ++i)
    for (int j = 0; j < cells; ++j)
      for (int k = 0; k < cells; ++k)
        for (const auto& p : basis) {
          b.x.push_back((i + p[0]) * a + rattle(rng));
          b.x.push_back((j + p[1]) * a + rattle(rng));
          b.x.push_back((k + p[2]) * a + rattle(rng));
        }
  return b;
}

// Half list by minimum image (the box side is more than twice the cutoff here).
void half_pairs(const Box& b, double cutoff, std::vector<int>& pi, std::vector<int>& pj, std::vector<double>& shift) {
  const int N = int(b.x.size() / 3);
  for (int i = 0; i < N; ++i)
    for (int j = i + 1; j < N; ++j) {
      double d2 = 0, s[3];
      for (int k = 0; k < 3; ++k) {
        const double d = b.x[3 * j + k] - b.x[3 * i + k];
        s[k] = -b.side * std::round(d / b.side);
        d2 += (d + s[k]) * (d + s[k]);
      }
      if (d2 < cutoff * cutoff) {
        pi.push_back(i);
        pj.push_back(j);
        shift.insert(shift.end(), s, s + 3);
      }
    }
}

// Compulsory traffic and arithmetic per kernel label, per step, for E edges, N nodes.
struct Cost {
  double bytes = 0, flops = 0;
};

std::map<std::string, Cost> kernel_costs(const ModelConfig& c, double E, double N, std::size_t real, bool trimmed) {
  const int L = c.lmax, M = c.mmax, C = c.channels, D = c.num_coeffs();
  const double B = kk::band_size(L, M);
  const int T = c.layers;
  std::map<std::string, Cost> m;
  m["edgeframe::edge_vectors"] = {E * (2 * 4 + 3 * 8 + 3 * 8) + 0, 0};
  m["edgeframe::wigner_band_grad"] = {E * (3 * 8 + 4 * B * real), 0};
  m["edgeframe::radial"] = {E * (3 * 8 + c.n_rbf * (real + 8) + real + 8), E * c.n_rbf * 20};
  // Per layer, with the band rows each kernel works on there (src/engine/evaluator.cpp
  // edge_parts: the first layer packs degree 0 and unrotates the m = 0 rows, the last packs the
  // m = 0 rows and unrotates degree 0, both gate the m = 0 rows; `trimmed` false: every layer
  // whole, Evaluator::trims_first_and_last_layers). Of a part (l, mm): B its band entries, K its
  // rows, G its multiplier rows, Dn the node rows it reads or writes.
  auto add = [&](const char* name, double bytes, double flops) {
    m[name].bytes += bytes;
    m[name].flops += flops;
  };
  const double H = c.hidden_channels;
  for (int t = 0; t < T; ++t) {
    const bool first = trimmed && t == 0, last = trimmed && t == T - 1;
    auto part = [&](int l_, int m_) {
      double rot_macs = 0;  // sum_l (2k+1)(2l+1): multiply-adds of one rotation, per channel
      for (int l = 0; l <= l_; ++l) rot_macs += (2 * kk::band_k(l, m_) + 1) * (2 * l + 1);
      return std::array<double, 5>{double(kk::band_size(l_, m_)), double(kk::band_rows(l_, m_)),
                                   double(kk::gate_rows(l_, m_)), double(kk::n_coeffs(l_)), rot_macs};
    };
    // if / else, not nested conditionals: nvcc 13.0's front end crashed on such a choice.
    std::array<double, 5> pack = part(L, M), unrot = part(L, M);
    if (first) {
      pack = part(0, M);
      unrot = part(L, 0);
    }
    if (last) {
      if (!first) pack = part(L, 0);
      unrot = part(0, M);
    }
    const auto [Bp, Kp, Gp, Dp, rp] = pack;
    const auto [Bu, Ku, Gu, Du, ru] = unrot;
    (void)Gu;
    add("edgeframe::edge_frame_pack", E * (2 * Dp * C + Bp + Gp * 2 * C + Kp * 2 * C) * real + E * 8,
        E * (2 * rp * 2 * C + Kp * 2 * C));
    add("edgeframe::edge_frame_pack_backward_edge", E * (2 * Dp * C + Bp + 2 * Gp * 2 * C + Kp * 2 * C + Bp) * real,
        E * (2 * 2 * rp * 2 * C + Kp * 2 * C * 2));
    if (t > 0)  // layer 0's input does not depend on the positions: no node pass
      add("edgeframe::edge_frame_pack_backward_node", (2 * E * (Bp + Gp * 2 * C + Kp * 2 * C) + N * Dp * C) * real,
          2 * E * rp * 2 * C * 2);
    add("edgeframe::unrotate_aggregate", (E * (Ku * C + Bu + 1) + N * Du * C) * real, E * ru * C * 2);
    add("edgeframe::unrotate_aggregate_backward", E * (Du * C + 2 * Ku * C + 2 * Bu + 2) * real, E * 3 * ru * C * 2);
    // The gate (sigmoids computed in the kernel, as on devices): the forward reads z's Kg rows
    // and L gate rows and writes Kg rows; the backward also reads the rows' gradient and writes
    // z's gradient (Kg + L rows).
    const double Kg = kk::band_rows(L, first || last ? 0 : M);
    add("edgeframe::so2_gate", E * H * (Kg + L + Kg) * real, E * H * Kg);
    add("edgeframe::so2_gate_backward", E * H * (2 * (Kg + L) + Kg) * real, E * H * (3 * Kg + 3 * L));
  }
  m["edgeframe::wigner_band_backward"] = {E * (B * real + 3 * B * real + 3 * 8), E * B * 3 * 2};
  m["edgeframe::radial_backward"] = {E * (3 * 8 + c.n_rbf * (real + 8) + real + 8 + 3 * 8), E * c.n_rbf * 2};
  m["edgeframe::node_forces"] = {2 * E * 6 * 8 + N * (3 + 9) * 8, 2 * E * 12};
  // RMS norms: 2T - 1 over all D rows (layer norms, feed-forward norms but the last), 2 over
  // row 0 only (last feed-forward, readout); forward reads h and writes, backward reads h and
  // the gradient and writes.
  const double norm_elems = ((2 * T - 1) * D + 2) * N * C;
  m["edgeframe::rms_norm"] = {norm_elems * 2 * real, norm_elems * 3};
  m["edgeframe::rms_norm_backward"] = {norm_elems * 3 * real, norm_elems * 6};
  return m;
}

// Forces as N*3 raw little-endian doubles (--forces-out), for comparing two runs.
void write_forces(const std::string& path, const Result& res, int N) {
  auto hf = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), res.forces);
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(hf.data()), sizeof(double) * std::size_t(N) * 3);
  if (!out) throw std::runtime_error("cannot write forces to " + path);
}

// ---- case mode -------------------------------------------------------------------------------
// Case file (little-endian): "EFCASE1\0", int64 N, int64 P, double x[N*3], int32 species[N],
// int32 i[P], int32 j[P], double shift[P*3] (Cartesian, Angstrom): P directed edges i <- j.
struct CaseData {
  std::vector<double> x, shift;
  std::vector<int> species, i, j;
};

CaseData read_case(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open case file " + path);
  char magic[8];
  std::int64_t n = 0, p = 0;
  in.read(magic, 8);
  in.read(reinterpret_cast<char*>(&n), 8);
  in.read(reinterpret_cast<char*>(&p), 8);
  if (!in || std::string(magic, 7) != "EFCASE1" || n <= 0 || p < 0 || n > (1 << 28) || p > (1LL << 31))
    throw std::runtime_error("not an edgeframe case file: " + path);
  CaseData c;
  c.x.resize(n * 3);
  c.species.resize(n);
  c.i.resize(p);
  c.j.resize(p);
  c.shift.resize(p * 3);
  in.read(reinterpret_cast<char*>(c.x.data()), 8 * n * 3);
  in.read(reinterpret_cast<char*>(c.species.data()), 4 * n);
  in.read(reinterpret_cast<char*>(c.i.data()), 4 * p);
  in.read(reinterpret_cast<char*>(c.j.data()), 4 * p);
  in.read(reinterpret_cast<char*>(c.shift.data()), 8 * p * 3);
  if (!in) throw std::runtime_error("case file " + path + " is truncated");
  return c;
}

// The case in the engine's memory space.
struct DeviceCase {
  kk::Vec3View<double, Exec> x, shift;
  kk::View1<int, Exec> i, j, species;
};

DeviceCase upload(const CaseData& c) {
  const int N = int(c.species.size()), P = int(c.i.size());
  DeviceCase d{kk::Vec3View<double, Exec>("x", N), kk::Vec3View<double, Exec>("shift", P), kk::View1<int, Exec>("i", P),
               kk::View1<int, Exec>("j", P), kk::View1<int, Exec>("species", N)};
  auto hx = Kokkos::create_mirror_view(d.x);
  auto hs = Kokkos::create_mirror_view(d.shift);
  auto hi = Kokkos::create_mirror_view(d.i);
  auto hj = Kokkos::create_mirror_view(d.j);
  auto hsp = Kokkos::create_mirror_view(d.species);
  for (int a = 0; a < N; ++a) {
    hsp(a) = c.species[a];
    for (int k = 0; k < 3; ++k) hx(a, k) = c.x[3 * a + k];
  }
  for (int q = 0; q < P; ++q) {
    hi(q) = c.i[q];
    hj(q) = c.j[q];
    for (int k = 0; k < 3; ++k) hs(q, k) = c.shift[3 * q + k];
  }
  Kokkos::deep_copy(d.x, hx);
  Kokkos::deep_copy(d.shift, hs);
  Kokkos::deep_copy(d.i, hi);
  Kokkos::deep_copy(d.j, hj);
  Kokkos::deep_copy(d.species, hsp);
  return d;
}

// Bytes the engine holds at its peak: torch's allocator peak (reset before the timed steps)
// plus the Kokkos workspace, the graph and the edge chunks' graphs, which torch does not see.
void torch_reset_peak() {
#ifdef KOKKOS_ENABLE_CUDA
  c10::cuda::CUDACachingAllocator::resetPeakStats(0);
#endif
}

// The most bytes torch's caching allocator has reserved from the device since the last reset
// (reserved - allocated at the peak: what its pool held unused there, the share that the
// automatic plan's device budget keeps back, memory_plan.hpp usable_device_bytes); host: 0.
std::size_t torch_reserved_peak() {
#ifdef KOKKOS_ENABLE_CUDA
  const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(0);
  return std::size_t(stats.reserved_bytes[static_cast<std::size_t>(c10::CachingAllocator::StatType::AGGREGATE)].peak);
#else
  return 0;
#endif
}

// What case mode runs after its timed steps: the fenced per-kernel split of the Kokkos kernels
// (--torch-profile; the Kokkos labels name edgeframe's kernels, which the torch profile shows as
// mangled cuda_parallel_launch names), the torch profile, the memory profile.
struct CaseProfiles {
  bool torch_profile = false, memory_profile = false;
  std::string trace_path;
};

void print_kernel_split(int reps, double step) {
  double kernels = 0;
  std::printf("  Kokkos kernels, a fence around each (step with the fences: %.2f ms)\n", 1e3 * step);
  std::printf("    %-58s %10s %7s %8s\n", "kernel", "ms/step", "share", "calls");
  for (const auto& [name, s] : g_times.seconds) {
    kernels += s / reps;
    std::printf("    %-58s %10.3f %6.1f%% %8d\n", name.substr(0, 58).c_str(), 1e3 * s / reps, 100 * s / reps / step,
                g_times.calls[name] / reps);
  }
  std::printf("    %-58s %10.3f %6.1f%%\n", "LibTorch + glue (step - kernels)", 1e3 * (step - kernels),
              100 * (step - kernels) / step);
}

int run_case_mode(const std::string& case_path, const std::string& potential_path, EvaluatorOptions options, int reps,
                  int warmup, const std::string& forces_out, const CaseProfiles& profiles) {
  const Precision prec = options.precision;
  const Potential pot = read_potential(potential_path);
  const CaseData c = read_case(case_path);
  const int N = int(c.species.size());
  // A case file holds the species indices of the potential it was made for (bench/v2_cases.py:
  // model v2's Z - 1); another potential's species list may not reach them.
  pot.check_species_indices(c.species.data(), c.species.size(),
                            "case file " + case_path + " (make the case for this potential)");
  const DeviceCase d = upload(c);
  const auto& x = d.x;
  Evaluator ev(pot, options);
  if (pot.format_version == kFormatVersionV2) {  // model v2: the default task, the case's composition
    SystemInputs in;
    in.atoms_per_z.assign(pot.v2.max_num_elements, 0.0);
    for (int s : c.species) in.atoms_per_z[s + 1] += 1.0;  // v2 species index = Z - 1
    std::fprintf(stderr, "%s\n", ev.set_system(in).c_str());
  }
  const auto t_graph = Clock::now();
  const AtomGraph graph = make_graph({d.i, d.j, d.shift, false}, d.x, d.species, N, pot.config.r_cut);
  Kokkos::fence();
  const double graph_s = std::chrono::duration<double>(Clock::now() - t_graph).count();
  const int E = graph.edges.n_edges;
  What what;
  what.virial = true;
  Result res;
  try {
    for (int w = 0; w < std::max(1, warmup); ++w) res = ev.compute(graph, x, what);
  } catch (const std::exception&) {  // the plan the failed step ran (an out-of-memory step's record)
    const ActivationPlan& plan = ev.activation_plan();
    std::fprintf(stderr, "edgeframe_bench: the first step failed under the plan '%s' (predicted peak %.3e bytes%s)\n",
                 plan.describe().c_str(), plan.predicted_bytes, plan.fits ? "" : ", over the budget");
    throw;
  }
  // The peak of the timed steps. With --cuda-graph every tensor of a step was allocated during
  // the capture (a warm-up step) in the graph's private pool and a replay allocates nothing: the
  // peak then covers the warm-up steps, i.e. the eager step and the capture.
  if (!options.cuda_graph) torch_reset_peak();
  std::vector<double> times;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = Clock::now();
    res = ev.compute(graph, x, what);  // returns after the energy reached the host: synchronous
    times.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
  }
  const std::size_t graph_bytes = std::size_t(E) * (4 * 3 + 24) + std::size_t(N + 1) * 8;
  const std::size_t peak =
      Evaluator::torch_device_peak_bytes() + ev.workspace_bytes() + graph_bytes + ev.edge_chunk_bytes();
  std::vector<double> sorted = times;
  std::sort(sorted.begin(), sorted.end());
  const double median = sorted[sorted.size() / 2];
  if (!forces_out.empty()) write_forces(forces_out, res, N);
  std::string ts;
  for (double t : times) {
    if (!ts.empty()) ts += ',';
    ts += std::to_string(t);
  }
  const ActivationPlan& plan = ev.activation_plan();
  std::printf(
      "RESULT {\"engine\": \"%s\", \"precision\": \"%s\", \"recompute_layers\": %s, \"activations\": \"%s\", "
      "\"predicted_peak_bytes\": %.0f, \"memory_budget_bytes\": %.0f, \"n_atoms\": %d, \"n_edges\": %d, "
      "\"median_s\": %.6e, \"times_s\": [%s], \"graph_build_s\": %.6e, \"peak_bytes\": %zu, "
      "\"torch_peak_bytes\": %zu, \"torch_reserved_peak_bytes\": %zu, \"workspace_bytes\": %zu, \"energy\": %.12e, "
      "\"cuda_graph_captures\": %ld, "
      "\"cuda_graph_replays\": %ld}\n",
      Exec::name(), to_string(prec).c_str(), plan.any_recomputed() ? "true" : "false", plan.describe().c_str(),
      plan.predicted_bytes, options.memory_budget, N, E, median, ts.c_str(), graph_s, peak,
      Evaluator::torch_device_peak_bytes(), torch_reserved_peak(), ev.workspace_bytes(), res.energy,
      ev.cuda_graph_captures(), ev.cuda_graph_replays());
  if (profiles.torch_profile) {
    double step = 0;
    {
      const KernelTimingPass timing;
      const auto t0 = Clock::now();
      for (int r = 0; r < reps; ++r) ev.compute(graph, x, what);
      step = std::chrono::duration<double>(Clock::now() - t0).count() / reps;
    }
    print_kernel_split(reps, step);
    profiling::profile_steps(
        reps, median, [&] { ev.compute(graph, x, what); }, profiles.trace_path);
  }
  if (profiles.memory_profile)
    profiling::memory_profile([&] { ev.compute(graph, x, what); }, E, prec == Precision::fp64 ? 8 : 4);
  return 0;
}

// `text` as the inside of a JSON string: torch's CUDA out-of-memory message has quotes and
// newlines (tools/gate.py could not read the line; tests/lammps/test_gate_tool.py checks it).
std::string json_escaped(const std::string& text) {
  std::string out;
  for (const char ch : text) {
    if (ch == '"' || ch == '\\')
      out += '\\', out += ch;
    else if (ch == '\n')
      out += "\\n";
    else if (static_cast<unsigned char>(ch) < 0x20)
      out += ' ';
    else
      out += ch;
  }
  return out;
}

// --plan EDGES,NODES: the memory model's peak for a step of that size under each plan, without
// running one (no graph, no positions): one line "PLAN {json}" per plan (keep, recompute and,
// for model v2, stream, in chunks of --edge-chunk; auto's choice under --memory-budget).
int print_plans(const std::string& size, const std::string& potential_path, const EvaluatorOptions& options) {
  const auto comma = size.find(',');
  if (comma == std::string::npos || potential_path.empty()) {
    std::fprintf(stderr, "edgeframe_bench: --plan EDGES,NODES needs --potential FILE\n");
    return 2;
  }
  auto count = [&](const std::string& text) {  // the whole text a count >= 0, or an error
    std::size_t used = 0;
    const long long v = std::stoll(text, &used);
    if (used != text.size() || v < 0) throw std::invalid_argument("not a count of edges or nodes: '" + text + "'");
    return std::int64_t(v);
  };
  const std::int64_t E = count(size.substr(0, comma)), N = count(size.substr(comma + 1));
  const Potential pot = read_potential(potential_path);
  const Evaluator ev(pot, options);
  const MemoryModel m = ev.memory_model();
  auto print = [&](ActivationPlan p) {
    p.fits = options.memory_budget <= 0 || p.predicted_bytes <= options.memory_budget;
    std::printf(
        "PLAN {\"n_edges\": %lld, \"n_nodes\": %lld, \"precision\": \"%s\", \"plan\": \"%s\", "
        "\"predicted_peak_bytes\": %.0f, \"memory_budget_bytes\": %.0f, \"fits\": %s}\n",
        (long long)E, (long long)N, to_string(options.precision).c_str(), p.describe().c_str(), p.predicted_bytes,
        options.memory_budget, p.fits ? "true" : "false");
  };
  ActivationPlan p;
  p.recompute.assign(m.kept_per_edge.size(), 0);
  p.predicted_bytes = predicted_peak(m, E, N, p.recompute, 0);
  print(p);
  p.recompute.assign(m.kept_per_edge.size(), 1);
  p.edge_chunk = options.edge_chunk;
  p.predicted_bytes = predicted_peak(m, E, N, p.recompute, p.edge_chunk);
  print(p);
  if (m.has_stream()) {
    p.stream = true;
    p.predicted_bytes = predicted_stream_peak(m, E, N, p.edge_chunk);
    print(p);
  }
  if (options.memory_budget > 0) print(plan_activations(m, E, N, options.memory_budget));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string shapes = "all", precision = "fp32";
  std::vector<int> cells = {4, 6, 8};
  int reps = 3, warmup = 2;
  bool torch_profile = false, memory_profile = false, cuda_graph = false;
  std::string activations = "auto";
  double memory_budget_gb = 0;
  int edge_chunk = 0;
  std::string case_path, potential_path, forces_out, trace_path, plan_size;
  for (int a = 1; a < argc; ++a) {
    const std::string arg = argv[a];
    auto next = [&]() { return a + 1 < argc ? std::string(argv[++a]) : std::string(); };
    if (arg == "--shape")
      shapes = next();
    else if (arg == "--reps")
      reps = std::stoi(next());
    else if (arg == "--precision")
      precision = next();
    else if (arg == "--warmup")
      warmup = std::stoi(next());
    else if (arg == "--case")
      case_path = next();
    else if (arg == "--potential")
      potential_path = next();
    else if (arg == "--forces-out")
      forces_out = next();
    else if (arg == "--recompute")
      activations = "recompute";
    else if (arg == "--activations")
      activations = next();
    else if (arg == "--memory-budget")
      memory_budget_gb = std::stod(next());
    else if (arg == "--cuda-graph")
      cuda_graph = true;
    else if (arg == "--torch-profile")
      torch_profile = true;
    else if (arg == "--memory-profile")
      memory_profile = true;
    else if (arg == "--trace")
      trace_path = next();
    else if (arg == "--edge-chunk")
      edge_chunk = std::stoi(next());
    else if (arg == "--plan")
      plan_size = next();
    else if (arg == "--cells") {
      cells.clear();
      std::string list = next();
      for (size_t p = 0; p < list.size();) {
        const size_t q = list.find(',', p);
        cells.push_back(std::stoi(list.substr(p, q - p)));
        p = q == std::string::npos ? list.size() : q + 1;
      }
    } else if (arg != "--kokkos-num-threads" && arg.rfind("--kokkos", 0) != 0) {
      std::fprintf(
          stderr,
          "usage: %s [--shape L2|L3|all] [--cells 4,6,8] [--reps N] [--precision fp64|fp32|tf32|bf16|tf32x3] "
          "[--activations auto|keep|recompute|stream [--edge-chunk N]] [--memory-budget GB] [--forces-out PREFIX] "
          "[--torch-profile [--trace FILE]] [--memory-profile]\n"
          "       %s --case FILE --potential FILE [--precision P] [--activations A] [--memory-budget GB] "
          "[--cuda-graph] [--reps N] [--warmup N] [--forces-out FILE] [--torch-profile [--trace FILE]] "
          "[--memory-profile]\n"
          "       %s --plan EDGES,NODES --potential FILE [--precision P] [--edge-chunk N] [--memory-budget GB]\n",
          argv[0], argv[0], argv[0]);
      return 2;
    }
  }
  if (!trace_path.empty() && !torch_profile) {
    std::fprintf(stderr, "%s: --trace needs --torch-profile\n", argv[0]);
    return 2;
  }
  Kokkos::ScopeGuard guard(argc, argv);
  const Precision prec = parse_precision(precision);
  EvaluatorOptions options;
  options.precision = prec;
  // --activations auto|keep|recompute|stream (--recompute: recompute): EvaluatorOptions::activations;
  // --edge-chunk N: recompute or stream in chunks of N edges; --memory-budget GB (1e9 bytes): auto's budget.
  if (activations == "auto")
    options.activations = EvaluatorOptions::Activations::automatic;
  else if (activations == "keep")
    options.activations = EvaluatorOptions::Activations::keep;
  else if (activations == "recompute")
    options.activations = EvaluatorOptions::Activations::recompute;
  else if (activations == "stream")
    options.activations = EvaluatorOptions::Activations::stream;
  else {
    std::fprintf(stderr, "edgeframe_bench: unknown --activations '%s' (valid: auto, keep, recompute, stream)\n",
                 activations.c_str());
    return 2;
  }
  if (edge_chunk > 0 && activations != "recompute" && activations != "stream" && plan_size.empty()) {
    std::fprintf(stderr,
                 "edgeframe_bench: --edge-chunk needs --activations recompute or stream (auto sizes its own chunks)\n");
    return 2;
  }
  options.edge_chunk = edge_chunk;
  options.memory_budget = memory_budget_gb * 1e9;
  options.cuda_graph = cuda_graph;  // --cuda-graph: EvaluatorOptions::cuda_graph (case mode)
  if (cuda_graph && case_path.empty()) {
    std::fprintf(stderr,
                 "edgeframe_bench: --cuda-graph is for --case mode (a replayed step has no per-kernel split)\n");
    return 2;
  }
  if (!plan_size.empty()) {
    try {
      return print_plans(plan_size, potential_path, options);
    } catch (const std::exception& e) {  // a bad size, an unreadable potential, stream with v1
      std::fprintf(stderr, "edgeframe_bench: --plan %s: %s\n", plan_size.c_str(), e.what());
      return 2;
    }
  }
  if (!case_path.empty()) {
    try {
      CaseProfiles profiles;
      profiles.torch_profile = torch_profile;
      profiles.memory_profile = memory_profile;
      profiles.trace_path = trace_path;
      return run_case_mode(case_path, potential_path, options, reps, warmup, forces_out, profiles);
    } catch (const std::exception& e) {
      std::printf("RESULT {\"error\": \"%s\"}\n", json_escaped(e.what()).c_str());
      return 1;
    }
  }
  const std::size_t real = prec == Precision::fp64 ? 8 : 4;
  std::printf("edgeframe_bench: %s, %s%s, %d thread(s), %d timed step(s) per case\n", Exec::name(), precision.c_str(),
              (" (activations " + activations + (edge_chunk > 0 ? ", edge chunk " + std::to_string(edge_chunk) : "") +
               (memory_budget_gb > 0 ? ", memory budget " + std::to_string(memory_budget_gb) + " GB" : "") + ")")
                  .c_str(),
              Exec().concurrency(), reps);

  for (const std::string shape : {"L2", "L3"}) {
    if (shapes != "all" && shapes != shape) continue;
    const Potential pot = random_potential(shape, 7);
    Evaluator ev(pot, options);
    for (int nc : cells) {
      const Box box = diamond(nc, 3);
      const int N = int(box.x.size() / 3);
      CaseData c;
      c.x = box.x;
      c.species.assign(N, 0);
      half_pairs(box, pot.config.r_cut, c.i, c.j, c.shift);
      const DeviceCase d = upload(c);
      const auto &x = d.x, &shift = d.shift;
      const auto &i = d.i, &j = d.j, &species = d.species;
      const AtomGraph graph = make_graph({i, j, shift, true}, x, species, N, pot.config.r_cut);
      const int E = graph.edges.n_edges;
      What what;
      what.virial = true;
      Result res = ev.compute(graph, x, what);  // warm-up: workspace grows, torch allocator warms
      // The step time without fences (what a run sees: kernels and torch ops overlap with the
      // host's launches), then the same steps again with a fence around each kernel for the
      // per-kernel split; the fenced step is longer by whatever overlap the fences remove.
      auto t0 = Clock::now();
      for (int r = 0; r < reps; ++r) res = ev.compute(graph, x, what);
      const double unfenced = std::chrono::duration<double>(Clock::now() - t0).count() / reps;
      double step = 0;
      {
        const KernelTimingPass timing;
        t0 = Clock::now();
        for (int r = 0; r < reps; ++r) ev.compute(graph, x, what);
        step = std::chrono::duration<double>(Clock::now() - t0).count() / reps;
      }
      if (!forces_out.empty()) write_forces(forces_out + "." + shape + "." + std::to_string(nc), res, N);
      std::printf(
          "\n%s (L=%d, mmax=%d, C=%d, T=%d, r_cut=%.1f)  diamond %d^3 cells: N=%d atoms, E=%d edges (%.1f per atom)\n",
          shape.c_str(), pot.config.lmax, pot.config.mmax, pot.config.channels, pot.config.layers, pot.config.r_cut, nc,
          N, E, double(E) / N);
      std::printf("  step (energy+forces+virial): %.4f s = %.2f us/atom = %.3f us/edge; workspace %.1f MB\n", unfenced,
                  1e6 * unfenced / N, 1e6 * unfenced / E, ev.workspace_bytes() / 1e6);
      std::printf("  step with a fence around each kernel (the split below): %.4f s\n", step);
      const auto costs = kernel_costs(pot.config, E, N, real, ev.trims_first_and_last_layers());
      double kernels = 0;
      std::printf("  %-46s %10s %7s %10s %9s %9s\n", "kernel", "ms/step", "share", "MB/step", "GB/s", "GFLOP/s");
      for (const auto& [name, s] : g_times.seconds) {
        const double per = s / reps;
        kernels += per;
        const auto it = costs.find(name);
        const Cost c = it == costs.end() ? Cost{} : it->second;
        std::printf("  %-46s %10.2f %6.1f%% %10.1f %9.2f %9.2f\n", name.c_str(), 1e3 * per, 100 * per / step,
                    c.bytes / 1e6, c.bytes / per / 1e9, c.flops / per / 1e9);
      }
      std::printf("  %-46s %10.2f %6.1f%%\n", "LibTorch + glue (step - kernels)", 1e3 * (step - kernels),
                  100 * (step - kernels) / step);
      if (torch_profile)
        profiling::profile_steps(
            reps, unfenced, [&] { ev.compute(graph, x, what); },
            trace_path.empty() ? "" : trace_path + "." + shape + "." + std::to_string(nc) + ".json");
      if (memory_profile) profiling::memory_profile([&] { ev.compute(graph, x, what); }, E, real);
    }
  }
  return 0;
}
