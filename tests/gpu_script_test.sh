#!/usr/bin/env bash
# ci/gpu.sh's refusals, on a machine without a GPU: each missing prerequisite (no GPU, no nvcc, a
# CPU-only or absent LibTorch, an incomplete folder of .debs) is named, and the script exits 2 within
# seconds, before any configure or build; --help exits 0. The GPU, nvcc and python3's torch are
# stood in for by shims earlier on PATH (a real one is hidden by a PATH without it), so the verdicts
# do not depend on this machine's tools. What happens after the checks needs a GPU: not tested here.
# Usage: gpu_script_test.sh SCRATCH_DIR
set -euo pipefail
scratch=$1
repo=$(cd "$(dirname "$0")/.." && pwd)
rm -rf "$scratch"
mkdir -p "$scratch"
failed=0

# path_without NAME...: PATH with every folder holding one of NAMEs replaced by a folder of links
# to its other entries, so the named tools are gone and everything else stays.
path_without() {
  local dir path="" mirror name hides
  IFS=: read -ra dirs <<< "$PATH"
  for dir in "${dirs[@]}"; do
    hides=0
    for name in "$@"; do [ -e "$dir/$name" ] && hides=1; done
    if [ "$hides" -eq 1 ]; then
      mirror=$scratch/path-mirror/$(tr / _ <<< "$dir")
      if [ ! -d "$mirror" ]; then
        mkdir -p "$mirror"
        find "$dir" -mindepth 1 -maxdepth 1 -exec ln -s -t "$mirror" {} +
        for name in "$@"; do rm -f "$mirror/$name"; done
      fi
      dir=$mirror
    fi
    path=${path:+$path:}$dir
  done
  echo "$path"
}

# shim FOLDER NAME OUTPUT [STATUS]: an executable NAME in FOLDER that prints OUTPUT and exits STATUS.
shim() {
  mkdir -p "$1"
  printf '#!/bin/sh\ncat <<"END"\n%s\nEND\nexit %s\n' "$3" "${4:-0}" > "$1/$2"
  chmod +x "$1/$2"
}
shim "$scratch/no-device" nvidia-smi "No devices were found" 6
shim "$scratch/h100" nvidia-smi "9.0, NVIDIA H100 80GB HBM3"
shim "$scratch/cpu-torch" python3 "$(printf '%s\n' /opt/torch/share/cmake None 2.11.0+cpu)"
shim "$scratch/cuda-torch" python3 "$(printf '%s\n' "$scratch/torch/share/cmake" 13.0 2.11.0+cu130)"
shim "$scratch/no-torch" python3 "ModuleNotFoundError: No module named 'torch'" 1
shim "$scratch/nvcc" nvcc "Cuda compilation tools, release 13.0"
# A LibTorch folder as TorchConfig.cmake finds its libraries (three folders up): with CUDA, without.
mkdir -p "$scratch"/{torch,cpu-libtorch}/share/cmake/Torch "$scratch"/{torch,cpu-libtorch}/lib "$scratch/empty-debs"
touch "$scratch"/{torch,cpu-libtorch}/share/cmake/Torch/TorchConfig.cmake "$scratch/torch/lib/libtorch_cuda.so"
bare_path=$(path_without nvidia-smi nvcc python3)

# gpu NAME PATH_PREFIX [ARGS...]: ci/gpu.sh with PATH_PREFIX before the bare PATH (no CUDA_HOME nvcc,
# no Torch_DIR), never reaching a build (a build folder that does not exist is a failure below);
# its output in $scratch/NAME.out, its exit code in status, its seconds in seconds.
gpu() {
  local name=$1 prefix=$2 start
  shift 2
  start=$(date +%s%N)
  status=0
  env -u Torch_DIR -u CUDACXX -u PHASEBENCH_DEBS PATH="$prefix:$bare_path" CUDA_HOME="$scratch/no-cuda" \
    PHASEBENCH_BUILD_DIR="$scratch/$name-build" bash "$repo/ci/gpu.sh" "$@" > "$scratch/$name.out" 2>&1 || status=$?
  seconds=$(( ($(date +%s%N) - start) / 1000000000 ))
}
fail() { echo "FAIL: $1"; sed 's/^/    /' "$scratch/$current.out"; failed=1; }
# expect NAME STATUS PATH_PREFIX [ARGS...] -- PATTERN...: ci/gpu.sh exits STATUS within 5 s, before
# any build, and its output matches every PATTERN (grep -E); a PATTERN "!RE" must not match.
expect() {
  current=$1
  local want=$2 prefix=$3 pattern
  shift 3
  local args=()
  while [ "$1" != -- ]; do args+=("$1"); shift; done
  shift
  gpu "$current" "$prefix" "${args[@]}"
  [ "$status" -eq "$want" ] || fail "$current: exit $status, expected $want"
  [ "$seconds" -lt 5 ] || fail "$current: took $seconds s, expected a refusal within seconds"
  [ "$want" -ne 2 ] || [ ! -e "$scratch/$current-build" ] || fail "$current: created its build folder before refusing"
  for pattern in "$@"; do
    case $pattern in
      !*) ! grep -qE -- "${pattern#!}" "$scratch/$current.out" || fail "$current: output matches '${pattern#!}'" ;;
      *) grep -qE -- "$pattern" "$scratch/$current.out" || fail "$current: output does not match '$pattern'" ;;
    esac
  done
}

expect help 0 "$scratch/empty-debs" --help -- '^usage: bash ci/gpu.sh' '--without-torch-cuda' '--download-debs'
expect bad-option 2 "$scratch/empty-debs" --frobnicate -- "unknown option '--frobnicate'"
# Nothing at all: every missing piece named in one answer.
expect nothing 2 "$scratch/empty-debs" -- 'nvidia-smi is not on PATH' 'no nvcc' 'no LibTorch: no Torch_DIR'
expect no-device 2 "$scratch/no-device:$scratch/nvcc:$scratch/cuda-torch" -- \
  'no NVIDIA GPU: nvidia-smi --query-gpu=compute_cap,name answered: No devices were found' '!nvcc' '!LibTorch'
expect no-nvcc 2 "$scratch/h100:$scratch/cuda-torch" -- 'no nvcc' '!NVIDIA GPU' '!LibTorch'
expect cpu-only-torch 2 "$scratch/h100:$scratch/nvcc:$scratch/cpu-torch" -- \
  'CPU-only \(torch 2.11.0\+cpu: torch.version.cuda is None\)' '--without-torch-cuda' '!nvcc' '!NVIDIA GPU'
expect no-torch 2 "$scratch/h100:$scratch/nvcc:$scratch/no-torch" -- "python3 cannot import torch \(ModuleNotFoundError"
expect wrong-torch-dir 2 "$scratch/h100:$scratch/nvcc:$scratch/cuda-torch" \
  --torch-dir "$scratch/torch/share/cmake" -- 'no LibTorch: .*has no TorchConfig.cmake'
expect cpu-only-torch-dir 2 "$scratch/h100:$scratch/nvcc:$scratch/cuda-torch" \
  --torch-dir "$scratch/cpu-libtorch/share/cmake/Torch" -- 'cpu-libtorch/share/cmake/Torch is CPU-only \(no libtorch_cuda\.so in its lib/\)' '!nvcc' '!NVIDIA GPU'
# With --without-torch-cuda a CPU-only LibTorch is no longer missing; an empty --debs folder stops
# it before the build instead, naming each package it lacks.
expect without-torch-cuda 2 "$scratch/h100:$scratch/nvcc:$scratch/cpu-torch" \
  --without-torch-cuda --debs "$scratch/empty-debs" -- \
  'the torch backend is off, cuda rows only' 'empty-debs lacks the \.deb of libbenchmark-dev libbenchmark1debian nlohmann-json3-dev libcli11-dev libfccp-dev libsqlite3-dev libsqlite3-0 \(' '!or pass --without-torch-cuda'
expect missing-debs-folder 2 "$scratch/h100:$scratch/nvcc:$scratch/cuda-torch" --debs "$scratch/nowhere" -- \
  'nowhere is not a folder' '!LibTorch' '!nvcc'
expect download-needs-folder 2 "$scratch/empty-debs" --download-debs -- '--download-debs needs a folder'

if [ "$failed" -eq 0 ]; then echo "gpu script: every refusal named what was missing, within seconds"; fi
exit "$failed"
