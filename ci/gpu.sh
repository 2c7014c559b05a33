#!/usr/bin/env bash
# The GPU machine's one command: checks that an NVIDIA GPU, nvcc and a LibTorch with CUDA are
# there, builds phasebench for the GPU's own architecture with the cuda and torch backends,
# verifies their rows, runs them (ci/main.sh: run, then report.html beside the results) and
# prints where. Whatever is missing is named, all of it at once, and the script exits 2 before any
# build. oneDNN and Kokkos are off: the GPU run does not select them, and a GPU node (Ubuntu, pip's
# LibTorch, no network) may have neither. Usage: bash ci/gpu.sh --help.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)

# The Debian 12 packages a build needs beyond the compiler, CMake and LibTorch (tests are off,
# so no GoogleTest): what --download-debs fetches and PHASEBENCH_DEBS must hold. The -dev
# packages' shared libraries come in their own packages (libbenchmark1debian, libsqlite3-0).
debian_packages=(libbenchmark-dev libbenchmark1debian nlohmann-json3-dev libcli11-dev libfccp-dev
                 libsqlite3-dev libsqlite3-0)
backends=cuda,torch  # the serial reference rows come with them: `run` adds them to every workload

usage() {
  cat <<EOF
usage: bash ci/gpu.sh [options] [-- RUN_OPTIONS...]

On a machine with an NVIDIA GPU: checks for the GPU (nvidia-smi), nvcc and a LibTorch with CUDA,
builds phasebench into \${PHASEBENCH_BUILD_DIR:-build-gpu} for the GPU's compute capability
(CMAKE_CUDA_ARCHITECTURES), runs \`phasebench verify\` and \`phasebench run\` of the $backends
backends (and their workloads' serial references), writes report.html into the run directory and
prints where. Missing prerequisites are named and it exits 2 before building.

options:
  --filter REGEX         only variants whose suite/workload/backend/phase matches (verify and run)
  --without-torch-cuda   go on when the LibTorch has no CUDA (or there is none): cuda rows only
  --torch-dir DIR        LibTorch's CMake folder (<libtorch>/share/cmake/Torch); default: \$Torch_DIR,
                         else python3's torch (torch.utils.cmake_prefix_path), which must have CUDA
  --debs DIR             build against the Debian 12 packages in DIR, unpacked under the build
                         folder (default: \$PHASEBENCH_DEBS; else the system's packages)
  --download-debs DIR    on a Debian 12 machine with network: download those packages into DIR
                         with apt-get and stop (copy DIR to the GPU machine)
  -h, --help             this text
  -- RUN_OPTIONS         passed to \`phasebench run\` (e.g. -- --reps 20 --size large)

Packages: ${debian_packages[*]}
nvcc: \$CUDACXX, else nvcc on PATH, else \${CUDA_HOME:-/usr/local/cuda}/bin/nvcc.
Exit codes: 0 all passed; 1 a check failed (verify or run); 2 something missing or bad usage.
EOF
}

die() {  # die MESSAGE: a usage or input error
  echo "gpu: $1" >&2
  exit 2
}

# ---- options --------------------------------------------------------------------------------------
filter=""
without_torch_cuda=0
torch_dir=${Torch_DIR:-}
debs_dir=${PHASEBENCH_DEBS:-}
download_dir=""
run_options=()
while [ $# -gt 0 ]; do
  case $1 in
    -h|--help) usage; exit 0 ;;
    --filter) [ $# -ge 2 ] || die "--filter needs a regular expression"; filter=$2; shift ;;
    --without-torch-cuda) without_torch_cuda=1 ;;
    --torch-dir) [ $# -ge 2 ] || die "--torch-dir needs a folder"; torch_dir=$2; shift ;;
    --debs) [ $# -ge 2 ] || die "--debs needs a folder"; debs_dir=$2; shift ;;
    --download-debs) [ $# -ge 2 ] || die "--download-debs needs a folder"; download_dir=$2; shift ;;
    --) shift; run_options=("$@"); break ;;
    *) die "unknown option '$1' (bash ci/gpu.sh --help; options for \`phasebench run\` go after --)" ;;
  esac
  shift
done

# Folders given are the caller's (relative to where it was called from); the build folder is the
# repository's, as in ci/build.sh.
absolute() { case $1 in /*|"") echo "$1" ;; *) echo "$PWD/$1" ;; esac; }
torch_dir=$(absolute "$torch_dir") debs_dir=$(absolute "$debs_dir") download_dir=$(absolute "$download_dir")
cd "$repo"

# shellcheck source=/dev/null
os_id=$( (. /etc/os-release 2>/dev/null && echo "${ID:-}${VERSION_ID:+ $VERSION_ID}") || true)

# ---- helper mode: fetch the packages for a machine without network --------------------------------
if [ -n "$download_dir" ]; then
  # The names are Debian 12's (another release names its libraries differently), and a set from
  # elsewhere has not been tried on a GPU node.
  [ "$os_id" = "debian 12" ] || die "--download-debs fetches Debian 12's packages: run it on Debian 12 (this is '${os_id:-unknown}')"
  command -v apt-get > /dev/null || die "--download-debs needs apt-get"
  mkdir -p "$download_dir" || die "cannot create $download_dir"
  echo "gpu: downloading ${debian_packages[*]} into $download_dir"
  (cd "$download_dir" && apt-get download "${debian_packages[@]}") ||
    die "apt-get download failed (above); after \`apt-get update\` try again"
  echo "gpu: done; copy $download_dir to the GPU machine and run there: bash ci/gpu.sh --debs <that folder>"
  exit 0
fi

# ---- prerequisites: each check is quick; all that fail are reported together ----------------------
missing=()

# Sets gpu_archs ("90", "80;90") and gpu_names from nvidia-smi, or adds to missing.
find_gpu() {
  gpu_archs="" gpu_names=""
  if ! command -v nvidia-smi > /dev/null; then
    missing+=("no NVIDIA GPU: nvidia-smi is not on PATH (no NVIDIA driver here; for CPU backends use ci/main.sh)")
    return
  fi
  local answer caps
  if ! answer=$(nvidia-smi --query-gpu=compute_cap,name --format=csv,noheader 2>&1) ||
     ! grep -qE '^[0-9]+\.[0-9]+, ' <<< "$answer"; then
    missing+=("no NVIDIA GPU: nvidia-smi --query-gpu=compute_cap,name answered: $(head -n 1 <<< "$answer")")
    return
  fi
  # compute_cap 9.0 is CMake's architecture 90; several kinds of GPU: each kind's, once.
  caps=$(grep -oE '^[0-9]+\.[0-9]+' <<< "$answer" | tr -d . | sort -un)
  gpu_archs=$(tr '\n' ';' <<< "$caps" | sed 's/;$//')
  gpu_names=$(sed -E 's/^[0-9.]+, *//' <<< "$answer" | sort | uniq -c | sed -E 's/^ *([0-9]+) /\1 x /' | paste -sd, -)
}

# Sets nvcc, or adds to missing.
find_nvcc() {
  nvcc=""
  if [ -n "${CUDACXX:-}" ]; then
    if [ -x "$CUDACXX" ]; then nvcc=$CUDACXX; else missing+=("nvcc: CUDACXX=$CUDACXX is not an executable"); fi
  elif command -v nvcc > /dev/null; then
    nvcc=$(command -v nvcc)
  elif [ -x "${CUDA_HOME:-/usr/local/cuda}/bin/nvcc" ]; then
    nvcc=${CUDA_HOME:-/usr/local/cuda}/bin/nvcc
  else
    missing+=("no nvcc (CUDA toolkit): not on PATH nor at ${CUDA_HOME:-/usr/local/cuda}/bin/nvcc (set CUDACXX=/path/to/nvcc or CUDA_HOME)")
  fi
}

# Sets torch_dir (LibTorch's CMake folder) and torch_cuda (its CUDA version; "" when CPU-only, with
# the evidence in torch_cpu_only), or torch_problem when there is no usable LibTorch.
find_torch() {
  torch_cuda="" torch_problem="" torch_version=""
  torch_cpu_only="no libtorch_cuda.so in its lib/"
  if [ -n "$torch_dir" ]; then
    if [ ! -f "$torch_dir/TorchConfig.cmake" ]; then
      torch_problem="no LibTorch: $torch_dir has no TorchConfig.cmake (give <libtorch>/share/cmake/Torch)"
    elif compgen -G "$torch_dir/../../../lib/libtorch_cuda.so*" > /dev/null; then
      # TorchConfig.cmake's own install prefix is three folders up; CUDA builds have libtorch_cuda.
      torch_cuda="its lib/ has libtorch_cuda.so"
    fi
    return
  fi
  if ! command -v python3 > /dev/null; then
    torch_problem="no LibTorch: no Torch_DIR (--torch-dir) and no python3 to ask for PyTorch's"
    return
  fi
  local answer
  if ! answer=$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path); print(torch.version.cuda); print(torch.__version__)' 2>&1); then
    torch_problem="no LibTorch: python3 cannot import torch ($(tail -n 1 <<< "$answer")); install a CUDA PyTorch or give --torch-dir"
    return
  fi
  torch_dir=$(sed -n 1p <<< "$answer")/Torch
  torch_version=$(sed -n 3p <<< "$answer")
  torch_cpu_only="torch $torch_version: torch.version.cuda is None"
  if [ "$(sed -n 2p <<< "$answer")" != None ]; then torch_cuda=$(sed -n 2p <<< "$answer"); fi
}

# Checks that the .debs of PHASEBENCH_DEBS are all there (dpkg-deb unpacks them later).
check_debs() {
  local package absent=()
  if [ ! -d "$debs_dir" ]; then missing+=("--debs/PHASEBENCH_DEBS: $debs_dir is not a folder"); return; fi
  command -v dpkg-deb > /dev/null || missing+=("dpkg-deb (package dpkg), to unpack $debs_dir")
  for package in "${debian_packages[@]}"; do
    compgen -G "$debs_dir/${package}_*.deb" > /dev/null || absent+=("$package")
  done
  if [ ${#absent[@]} -gt 0 ]; then
    missing+=("$debs_dir lacks the .deb of ${absent[*]} (bash ci/gpu.sh --download-debs DIR on Debian 12 fetches them)")
  fi
}

find_gpu
find_nvcc
find_torch
if [ -n "$torch_problem" ] || [ -z "$torch_cuda" ]; then
  reason=${torch_problem:-"the LibTorch at $torch_dir is CPU-only ($torch_cpu_only): install a CUDA PyTorch (e.g. pip's +cu130 wheel) or give --torch-dir"}
  if [ "$without_torch_cuda" -eq 1 ]; then
    echo "gpu: $reason; --without-torch-cuda: the torch backend is off, cuda rows only" >&2
    torch_dir="" backends=cuda
  else
    missing+=("$reason; or pass --without-torch-cuda for the cuda rows alone")
  fi
fi
command -v cmake > /dev/null || missing+=("cmake (3.22 or newer)")
command -v c++ > /dev/null || missing+=("a C++17 compiler (c++)")
if [ -n "$debs_dir" ]; then check_debs; fi

if [ ${#missing[@]} -gt 0 ]; then
  echo "gpu: cannot build for the GPU here; missing:" >&2
  printf '  - %s\n' "${missing[@]}" >&2
  exit 2
fi
echo "gpu: ${gpu_names} (CMAKE_CUDA_ARCHITECTURES=$gpu_archs); nvcc $nvcc"
echo "gpu: LibTorch ${torch_dir:-off}${torch_cuda:+ (CUDA: $torch_cuda)}"
# A LibTorch built for another CUDA major version than nvcc's tends to fail late, at link or load:
# say so now (a warning: the user may know better).
nvcc_release=$("$nvcc" --version 2>/dev/null | sed -nE 's/.*release ([0-9]+)\..*/\1/p' | head -n 1)
if [[ $torch_cuda =~ ^([0-9]+)\. ]] && [ -n "$nvcc_release" ] && [ "${BASH_REMATCH[1]}" != "$nvcc_release" ]; then
  echo "gpu: warning: the LibTorch is for CUDA $torch_cuda but nvcc is CUDA $nvcc_release; if the build fails, use a matching pair" >&2
fi

# ---- dependencies ----------------------------------------------------------------------------------
build_dir=${PHASEBENCH_BUILD_DIR:-build-gpu}
mkdir -p "$build_dir"
build_dir=$(cd "$build_dir" && pwd)
prefix_path=""
if [ -n "$debs_dir" ]; then
  # dpkg-deb -x only unpacks (no root, no package database): the prefix's usr/ then has the layout
  # find_package searches under a CMAKE_PREFIX_PATH entry (lib/x86_64-linux-gnu/cmake/benchmark,
  # share/cmake/nlohmann_json, include/libfccp/csv.h, ...). Unpacked afresh, into a new folder
  # renamed into place, so a changed set never mixes with an old one.
  deps_prefix=$build_dir/debian-packages
  rm -rf "$deps_prefix.partial"
  mkdir -p "$deps_prefix.partial"
  for deb in "$debs_dir"/*.deb; do dpkg-deb -x "$deb" "$deps_prefix.partial" || die "dpkg-deb -x $deb failed"; done
  rm -rf "$deps_prefix"
  mv "$deps_prefix.partial" "$deps_prefix"
  prefix_path=$deps_prefix/usr
  echo "gpu: packages from $debs_dir unpacked into $deps_prefix"
elif [ "$os_id" = "debian 12" ] && [ -z "${PHASEBENCH_SKIP_INSTALL:-}" ]; then
  # The README's own installer (quick when all is there). Kokkos is off in this build: skip
  # building the OpenMP one.
  PHASEBENCH_SKIP_KOKKOS=1 bash ci/install-deps.sh ||
    die "ci/install-deps.sh failed (above); without network or root, use --debs (see --help)"
fi

# ---- configure and build ---------------------------------------------------------------------------
cmake_args=(-DCMAKE_BUILD_TYPE=Release -DPHASEBENCH_BUILD_TESTS=OFF
            -DPHASEBENCH_WITH_CUDA=ON -DPHASEBENCH_WITH_ONEDNN=OFF -DPHASEBENCH_WITH_KOKKOS=OFF
            "-DCMAKE_CUDA_COMPILER=$nvcc" "-DCMAKE_CUDA_ARCHITECTURES=$gpu_archs")
if [ -n "$prefix_path" ]; then cmake_args+=("-DCMAKE_PREFIX_PATH=$prefix_path"); fi
if [ -n "$torch_dir" ]; then
  cmake_args+=(-DPHASEBENCH_WITH_TORCH=ON "-DTorch_DIR=$torch_dir")
else
  cmake_args+=(-DPHASEBENCH_WITH_TORCH=OFF)
fi
if [ ! -f "$build_dir/CMakeCache.txt" ] && command -v ninja > /dev/null; then cmake_args+=(-G Ninja); fi
start=$(date +%s)
if ! cmake -S . -B "$build_dir" "${cmake_args[@]}"; then
  echo "gpu: configure failed (above). A package it did not find: install it, or bring Debian 12's" >&2
  echo "gpu: (bash ci/gpu.sh --download-debs DIR on a Debian 12 machine with network, then --debs DIR here)" >&2
  exit 2
fi
cmake --build "$build_dir" -j "$(nproc)"
echo "gpu: built in $(( $(date +%s) - start )) s in $build_dir"

# ---- verify, run, report -----------------------------------------------------------------------------
selection=(--backend "$backends")
if [ -n "$filter" ]; then selection+=(--filter "$filter"); fi
verify_status=0
"$build_dir/phasebench" verify "${selection[@]}" || verify_status=$?
if [ "$verify_status" -ne 0 ] && [ "$verify_status" -ne 1 ]; then
  echo "gpu: phasebench verify failed (exit $verify_status, above)" >&2
  exit "$verify_status"
fi
# ci/main.sh runs and writes report.html beside the results, as on any machine.
run_status=0
PHASEBENCH_SKIP_INSTALL=1 PHASEBENCH_SKIP_BUILD=1 PHASEBENCH_BUILD_DIR=$build_dir \
  bash ci/main.sh "${selection[@]}" "${run_options[@]}" || run_status=$?
if [ "$verify_status" -eq 1 ]; then
  echo "gpu: some variant failed verify (see its output above)" >&2
fi
if [ "$run_status" -gt "$verify_status" ]; then exit "$run_status"; fi
exit "$verify_status"
