#!/usr/bin/env bash
# Installs the Debian 12 packages phasebench builds, runs and tests with. Idempotent: when all are
# present it only checks (about a second). Needs root (or sudo) for apt-get; the OpenMP Kokkos
# (ci/install-kokkos.sh) goes to /opt/phasebench unless PHASEBENCH_KOKKOS_PREFIX says otherwise.
#   bash ci/install-deps.sh          everything: building, running and testing (ci/test.sh)
#   bash ci/install-deps.sh --run    what building and running the phasebench binary needs (ci/main.sh)
set -euo pipefail

case "${1:-}" in
  "") with_tests=1 ;;
  --run) with_tests=0 ;;
  *) echo "install-deps: unknown argument '$1' (expected nothing, or --run)" >&2; exit 2 ;;
esac

run_packages=(
  g++ cmake ninja-build git pkg-config
  libbenchmark-dev                               # timing engine
  libcli11-dev nlohmann-json3-dev libfccp-dev     # command line, JSON, CSV parser
  libtorch-dev libopenblas0-openmp               # LibTorch (without OpenBLAS it uses reference BLAS)
  libdnnl-dev ocl-icd-opencl-dev                 # oneDNN (its CMake config needs OpenCL headers)
  libtrilinos-kokkos-dev                         # Kokkos
  libfftw3-dev                                   # FFTW (lior_memory_conv's FFT phase; optional)
  libsqlite3-dev libpq-dev                       # results history: SQLite file, PostgreSQL client
)
test_packages=(
  libgtest-dev googletest                        # the unit and integration tests
  postgresql                                     # the PostgreSQL history tests start a server
  slurm-wlm munge                                # the Slurm test starts a one-node cluster (ci/slurm/)
  python3 python3-numpy                          # the dump round-trip test loads .npy with numpy
  python3-torch                                  # runs docs/check-your-code.md's PyTorch examples
  libbenchmark-tools python3-scipy               # Google Benchmark's compare.py, run on benchmark.json
  chromium                                       # the report test opens report.html headless
  clang-14 libclang-rt-14-dev                    # libFuzzer for the fuzz harnesses (ci/fuzz.sh)
  clang-format                                   # git clang-format on changed lines (ci/format-check.sh)
)
packages=("${run_packages[@]}")
if [ "$with_tests" -eq 1 ]; then packages+=("${test_packages[@]}"); fi

missing=()
for package in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$package")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
else
  echo "install-deps: installing ${missing[*]}"
  sudo_cmd=()
  if [ "$(id -u)" -ne 0 ]; then sudo_cmd=(sudo); fi
  export DEBIAN_FRONTEND=noninteractive
  "${sudo_cmd[@]}" apt-get update -qq
  "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# Kokkos with OpenMP, built once per machine from Debian's trilinos source (a few minutes the
# first time, a second afterwards). A failure leaves Debian's Serial Kokkos in use and its reason
# in the configure summary: it never stops the build. PHASEBENCH_SKIP_KOKKOS=1 (ci/gpu.sh, whose
# build has Kokkos off) skips it.
if [ -z "${PHASEBENCH_SKIP_KOKKOS:-}" ]; then bash "$(dirname "$0")/install-kokkos.sh" || true; fi

# The CUDA toolkit is not a Debian package here: the cuda backend is built when nvcc is found
# (PATH or /usr/local/cuda/bin/nvcc) and reports why not otherwise.
if ! command -v nvcc >/dev/null && [ ! -x /usr/local/cuda/bin/nvcc ]; then
  echo "install-deps: no CUDA toolkit found; the cuda backend will be off (see the configure summary)"
fi
