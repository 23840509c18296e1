// Reads a potential file through the installed edgeframe package and prints what it holds,
// plus the engine's build info (which pulls the engine's Kokkos and torch symbols into the link).
// usage: consumer <potential.safetensors>
#include <exception>
#include <iostream>

#include "potential.hpp"
#include "runtime.hpp"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: " << argv[0] << " <potential.safetensors>\n";
    return 2;
  }
  try {
    const edgeframe::Potential potential = edgeframe::read_potential(argv[1]);
    std::cout << "elements:";
    for (const std::string& element : potential.config.species) std::cout << ' ' << element;
    std::cout << "\nlmax: " << potential.config.lmax << "\nmmax: " << potential.config.mmax
              << "\ntensors: " << potential.tensors.size() << '\n';
    const edgeframe::BuildInfo info = edgeframe::build_info();
    std::cout << "engine: edgeframe " << info.edgeframe_version << ", Kokkos " << info.kokkos_version << " ("
              << info.execution_space << "), torch " << info.torch_version << '\n';
  } catch (const std::exception& error) {
    std::cerr << error.what() << '\n';
    return 1;
  }
  return 0;
}
