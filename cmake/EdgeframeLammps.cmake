# The LAMMPS the plugin is built against: its installed CMake package (target LAMMPS::lammps)
# plus its src/ tree, because most headers a plugin needs (lammpsplugin.h, version.h, pair.h,
# KOKKOS/*.h) are not installed. The prefix is passed explicitly: Debian's liblammps-dev ships
# an older LAMMPS CMake config that must never be picked up.
if(NOT LAMMPS_ROOT OR NOT EXISTS "${LAMMPS_ROOT}")
  message(FATAL_ERROR "edgeframe: LAMMPS_ROOT is not set or missing ('${LAMMPS_ROOT}'); run scripts/bootstrap.sh "
                      "and source the env file it prints, or configure with -DEDGEFRAME_BUILD_PLUGIN=OFF")
endif()
if(NOT LAMMPS_SOURCE_DIR OR NOT EXISTS "${LAMMPS_SOURCE_DIR}/lammpsplugin.h")
  message(FATAL_ERROR "edgeframe: LAMMPS_SOURCE_DIR ('${LAMMPS_SOURCE_DIR}') is not a LAMMPS src/ tree (no lammpsplugin.h)")
endif()
find_package(LAMMPS CONFIG REQUIRED PATHS "${LAMMPS_ROOT}" NO_DEFAULT_PATH)
find_package(MPI REQUIRED COMPONENTS CXX)

# Which packages that LAMMPS has: lmpinstalledpkgs.h is generated into its build, so ask the
# installed binary instead (fast, and it is the binary the plugin will be loaded into).
find_program(EDGEFRAME_LMP lmp PATHS "${LAMMPS_ROOT}/bin" NO_DEFAULT_PATH REQUIRED)
execute_process(COMMAND "${EDGEFRAME_LMP}" -h OUTPUT_VARIABLE _lmp_help ERROR_QUIET RESULT_VARIABLE _lmp_rc
                TIMEOUT 60)
if(NOT _lmp_rc EQUAL 0)
  message(FATAL_ERROR "edgeframe: '${EDGEFRAME_LMP} -h' failed (${_lmp_rc}); is this LAMMPS install usable?")
endif()
string(REGEX MATCH "Installed packages:[^\n]*\n\n[^\n]*\n" _lmp_pkgs "${_lmp_help}")
if(NOT _lmp_help MATCHES "PLUGIN")
  message(FATAL_ERROR "edgeframe: the LAMMPS at ${LAMMPS_ROOT} has no PLUGIN package")
endif()
if(_lmp_help MATCHES "KOKKOS")
  set(EDGEFRAME_WITH_KOKKOS_STYLE ON)
else()
  set(EDGEFRAME_WITH_KOKKOS_STYLE OFF)
endif()
