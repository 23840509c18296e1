// The one place where Kokkos views and torch tensors meet (STYLE.md §5). Views wrap tensor
// memory and tensors wrap view memory, never copying; every crossing checks dtype, device,
// rank, sizes and contiguity once, here, and throws ComputeError naming the tensor otherwise.
// On CUDA the Kokkos execution-space instance is built on torch's current stream, so kernels
// and torch ops are ordered without a fence.
#pragma once

#include <torch/torch.h>

#include <Kokkos_Core.hpp>
#ifdef KOKKOS_ENABLE_CUDA
#include <c10/cuda/CUDAStream.h>
#endif
#include <mutex>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "bf16.hpp"
#include "errors.hpp"
#include "kernel_common.hpp"

namespace edgeframe::bridge {

using Exec = Kokkos::DefaultExecutionSpace;
using Mem = Exec::memory_space;

template <class T>
constexpr torch::Dtype dtype_of() {
  using U = std::remove_const_t<T>;
  if constexpr (std::is_same_v<U, double>)
    return torch::kFloat64;
  else if constexpr (std::is_same_v<U, float>)
    return torch::kFloat32;
  else if constexpr (std::is_same_v<U, int>)
    return torch::kInt32;
  else if constexpr (std::is_same_v<U, kk::Bf16>)
    return torch::kBFloat16;
  else
    static_assert(sizeof(U) == 0, "no torch dtype for this element type");
}

inline torch::Device device() {
#ifdef KOKKOS_ENABLE_CUDA
  return torch::Device(torch::kCUDA, c10::cuda::current_device());
#else
  return torch::Device(torch::kCPU);
#endif
}

// Execution-space instance to launch on: torch's current stream on CUDA, the default instance
// on host backends.
//
// On CUDA one instance per stream is kept until Kokkos finalizes. Building a Kokkos::Cuda from
// a stream allocates that instance's own scratch (device memory, pinned host memory, locks)
// and releasing the last copy frees it; cudaFree and cudaFreeHost synchronise the device. Made
// afresh for each of the ~50 kernel launches of a step, this cost about 17 ms of GPU idle time
// per 54 ms L2 step on the H200 (nsys). Every stream seen keeps
// its instance (there are a handful: torch's current stream, the CUDA-graph stream of
// step_graph.hpp): a step captured into a CUDA graph must find its instance, and the instance's
// scratch, unchanged at capture time whatever ran on another stream in between.
inline Exec exec_instance() {
#ifdef KOKKOS_ENABLE_CUDA
  struct Cache {
    std::mutex lock;
    std::vector<std::pair<cudaStream_t, Exec>> instances;
    bool hooked = false;
  };
  // Leaked on purpose: no static destructor may run before the finalize hook that empties it
  // (Kokkos can be finalized from an atexit handler registered earlier).
  static Cache& cache = *new Cache;
  const cudaStream_t stream = c10::cuda::getCurrentCUDAStream().stream();
  const std::lock_guard<std::mutex> guard(cache.lock);
  for (const auto& [s, exec] : cache.instances)
    if (s == stream) return exec;
  cache.instances.emplace_back(stream, Exec(stream, Kokkos::Impl::ManageStream::no));
  if (!cache.hooked) {  // instances must be gone before Kokkos::finalize
    Kokkos::push_finalize_hook([] {
      const std::lock_guard<std::mutex> g(cache.lock);
      cache.instances.clear();
    });
    cache.hooked = true;
  }
  return cache.instances.back().second;
#else
  return Exec();
#endif
}

inline void check(const torch::Tensor& t, torch::Dtype dtype, int64_t rank, const char* what) {
  if (!t.defined()) throw ComputeError(std::string("edgeframe bridge: tensor ") + what + " is undefined");
  if (t.scalar_type() != dtype)
    throw ComputeError(std::string("edgeframe bridge: tensor ") + what + " has dtype " +
                       std::string(c10::toString(t.scalar_type())) + ", expected " + std::string(c10::toString(dtype)));
  if (t.device().type() != device().type())
    throw ComputeError(std::string("edgeframe bridge: tensor ") + what + " is on " + t.device().str() +
                       ", the Kokkos kernels run on " + device().str());
  if (t.dim() != rank)
    throw ComputeError(std::string("edgeframe bridge: tensor ") + what + " has rank " + std::to_string(t.dim()) +
                       ", expected " + std::to_string(rank));
  if (!t.is_contiguous()) throw ComputeError(std::string("edgeframe bridge: tensor ") + what + " is not contiguous");
}

// Views over tensor memory (a view built from a pointer does not own or count it: unmanaged),
// typed as the kernels take them. The tensor must outlive the view.
template <class T>
using Unmanaged1 = kk::View1<T, Exec>;
template <class T>
using Unmanaged2 = kk::View2<T, Exec>;
template <class T>
using Unmanaged3 = kk::View3<T, Exec>;

template <class T>
Unmanaged1<T> view1(const torch::Tensor& t, const char* what) {
  check(t, dtype_of<T>(), 1, what);
  return Unmanaged1<T>(static_cast<T*>(t.data_ptr()), t.size(0));
}
template <class T>
Unmanaged2<T> view2(const torch::Tensor& t, const char* what) {
  check(t, dtype_of<T>(), 2, what);
  return Unmanaged2<T>(static_cast<T*>(t.data_ptr()), t.size(0), t.size(1));
}
template <class T>
Unmanaged3<T> view3(const torch::Tensor& t, const char* what) {
  check(t, dtype_of<T>(), 3, what);
  return Unmanaged3<T>(static_cast<T*>(t.data_ptr()), t.size(0), t.size(1), t.size(2));
}

// Tensor over view memory (no copy, not owning). The view must outlive the tensor; the
// evaluator's workspace guarantees that for one compute() call.
template <class View>
torch::Tensor tensor_of(const View& v, std::initializer_list<int64_t> sizes) {
  using T = typename View::value_type;
  int64_t count = 1;
  for (auto s : sizes) count *= s;
  if (static_cast<size_t>(count) > v.span())
    throw ComputeError("edgeframe bridge: tensor over view " + v.label() + " needs " + std::to_string(count) +
                       " elements, the view has " + std::to_string(v.span()));
  const auto options = torch::TensorOptions().dtype(dtype_of<T>()).device(device());
  // A rank whose atoms have no edges hands over empty views, whose data() may be null: CUDA's
  // from_blob asks the driver where a null pointer lives and throws (seen on the H200).
  if (count == 0) return torch::empty(torch::IntArrayRef(sizes), options);
  return torch::from_blob(const_cast<std::remove_const_t<T>*>(v.data()), torch::IntArrayRef(sizes), options);
}

}  // namespace edgeframe::bridge
