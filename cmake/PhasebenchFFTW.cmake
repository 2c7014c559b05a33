# FFTW (single precision), optional: the FFT phase of geometry/lior_memory_conv on the plain C++
# and Kokkos host paths. Found with pkg-config (Debian: libfftw3-dev ships fftw3f.pc). When found,
# the target phasebench_fftw carries the library and PHASEBENCH_HAS_FFTW; backends that need it
# link it (backends/kokkos: the host path; the reference backend times only the direct serial
# rung). When missing, those FFT rows are UNSUPPORTED with PHASEBENCH_FFTW_WHY as the reason, and configure says so below the backend summary.
find_package(PkgConfig QUIET)
if(PkgConfig_FOUND)
  pkg_check_modules(FFTW3F QUIET IMPORTED_TARGET fftw3f)
endif()
add_library(phasebench_fftw INTERFACE)
if(FFTW3F_FOUND)
  target_link_libraries(phasebench_fftw INTERFACE PkgConfig::FFTW3F)
  target_compile_definitions(phasebench_fftw INTERFACE PHASEBENCH_HAS_FFTW)
  set(PHASEBENCH_FFTW_WHY "FFTW ${FFTW3F_VERSION} (fftw3f)")
else()
  set(PHASEBENCH_FFTW_WHY "FFTW not found (Debian: libfftw3-dev): the kokkos FFT rows are UNSUPPORTED")
endif()

function(phasebench_print_fftw_summary)
  message(STATUS "  fftw        ${PHASEBENCH_FFTW_WHY}")
  message(STATUS "")
endfunction()
