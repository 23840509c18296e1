# LibTorch from the PyPI torch wheel (pinned 2.11.0), found through Torch_DIR
# (<site-packages>/torch/share/cmake/Torch; scripts/bootstrap.sh writes it into its env file).
#
# The PyPI wheel is a CUDA build. Its TorchConfig.cmake pulls in the CUDA toolkit, cuDNN and
# friends even when nothing on the machine can run them, so:
#   - CPU builds (Kokkos without CUDA) link only c10 + torch_cpu through imported targets made
#     here from the wheel's own include/ and lib/ folders. libtorch_cpu.so of the CUDA wheel
#     still names libcudart.so.13 and libcupti.so.13 as NEEDED; they come from the wheel's
#     nvidia/cu13 package, so that folder goes onto the RPATH (nothing in it is ever called).
#   - CUDA builds use the full TorchConfig (torch + torch_cuda).
# Result: target edgeframe::torch, variables EDGEFRAME_TORCH_VERSION and EDGEFRAME_TORCH_LIBDIR.

set(_edgeframe_torch_min 2.11.0)

if(NOT Torch_DIR AND DEFINED ENV{Torch_DIR})
  # Cached, so that later re-configures (ninja regenerating build.ninja) need no environment.
  set(Torch_DIR "$ENV{Torch_DIR}" CACHE PATH "<site-packages>/torch/share/cmake/Torch" FORCE)
endif()
if(NOT Torch_DIR OR NOT EXISTS "${Torch_DIR}/TorchConfig.cmake")
  message(FATAL_ERROR "edgeframe: LibTorch not found. Set Torch_DIR to <site-packages>/torch/share/cmake/Torch "
                      "(scripts/bootstrap.sh installs torch ${_edgeframe_torch_min} and writes it to its env file).")
endif()
get_filename_component(_torch_root "${Torch_DIR}/../../.." ABSOLUTE)

# Version from the wheel's version.py, e.g. __version__ = '2.11.0+cu130'.
file(STRINGS "${_torch_root}/version.py" _torch_version_line REGEX "^__version__")
string(REGEX MATCH "[0-9]+\\.[0-9]+\\.[0-9]+" EDGEFRAME_TORCH_VERSION "${_torch_version_line}")
if(EDGEFRAME_TORCH_VERSION VERSION_LESS _edgeframe_torch_min)
  message(FATAL_ERROR "edgeframe: torch ${EDGEFRAME_TORCH_VERSION} at ${_torch_root} is older than ${_edgeframe_torch_min}")
endif()
set(EDGEFRAME_TORCH_LIBDIR "${_torch_root}/lib")

add_library(edgeframe_torch INTERFACE)
add_library(edgeframe::torch ALIAS edgeframe_torch)

if(EDGEFRAME_ENABLE_CUDA)
  find_package(Torch ${_edgeframe_torch_min} REQUIRED CONFIG)
  target_link_libraries(edgeframe_torch INTERFACE ${TORCH_LIBRARIES})
  target_include_directories(edgeframe_torch SYSTEM INTERFACE ${TORCH_INCLUDE_DIRS})
else()
  foreach(_lib c10 torch_cpu)
    find_library(EDGEFRAME_TORCH_${_lib} NAMES ${_lib} PATHS "${_torch_root}/lib" NO_DEFAULT_PATH REQUIRED)
    add_library(edgeframe_torch_${_lib} SHARED IMPORTED)
    set_target_properties(edgeframe_torch_${_lib} PROPERTIES IMPORTED_LOCATION "${EDGEFRAME_TORCH_${_lib}}")
    target_link_libraries(edgeframe_torch INTERFACE edgeframe_torch_${_lib})
  endforeach()
  target_include_directories(edgeframe_torch SYSTEM INTERFACE
    "${_torch_root}/include" "${_torch_root}/include/torch/csrc/api/include")
  # The wheel is built with the C++11 ABI (torch._C._GLIBCXX_USE_CXX11_ABI is True).
  target_compile_definitions(edgeframe_torch INTERFACE _GLIBCXX_USE_CXX11_ABI=1)
  get_filename_component(_site "${_torch_root}/.." ABSOLUTE)
  set(EDGEFRAME_TORCH_RPATH "${_torch_root}/lib" "${_site}/nvidia/cu13/lib")
  # -rpath-link lets ld resolve libtorch_cpu's NEEDED CUDA runtime names when linking executables.
  target_link_options(edgeframe_torch INTERFACE "LINKER:-rpath-link,${_site}/nvidia/cu13/lib")
endif()
