#!/usr/bin/env bash
# Builds Kokkos 3.4.01 with the OpenMP and Serial execution spaces from Debian's own source package
# (trilinos_13.2.0.orig.tar.gz, whose packages/kokkos is a standalone CMake project) into a fixed
# prefix that CMake looks in first (backends/kokkos/CMakeLists.txt). Debian 12's binary Kokkos
# (libtrilinos-kokkos-dev) is the same version with Serial only, so every Kokkos row would run on
# one thread while LibTorch and oneDNN use all cores.
#
# Once per machine: when the prefix is there and its stamp matches this script's version and
# options, it only checks (well under a second). Otherwise it fetches the source with apt's own
# source download from a private sources list (the system's apt configuration is not touched),
# extracts only packages/kokkos in a temporary directory, builds, installs into a staging
# directory and renames it into place, so a half-built prefix is never seen.
#
# It never breaks the build: on any failure it writes the reason beside the prefix
# (<prefix>.failed), which the configure summary shows while Debian's Serial Kokkos is used.
# Environment: PHASEBENCH_KOKKOS_PREFIX (default /opt/phasebench/kokkos-3.4.01-openmp; CMake's
# cache variable of the same name must agree), PHASEBENCH_DEBIAN_MIRROR (default: the one
# the system's apt sources name; without one it fails and says so).
set -euo pipefail

prefix=${PHASEBENCH_KOKKOS_PREFIX:-/opt/phasebench/kokkos-3.4.01-openmp}
failure_note="$prefix.failed"
source_package=trilinos
orig_tarball=trilinos_13.2.0.orig.tar.gz
kokkos_version=3.4.01
cmake_options=(-DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_STANDARD=17 -DCMAKE_CXX_EXTENSIONS=OFF
               -DCMAKE_POSITION_INDEPENDENT_CODE=ON -DKokkos_ENABLE_OPENMP=ON -DKokkos_ENABLE_SERIAL=ON)
# What the prefix must have been built from and with; a different stamp means rebuild.
stamp="kokkos $kokkos_version from $orig_tarball; ${cmake_options[*]}; $(c++ --version | head -n 1)"
stamp_file="$prefix/phasebench-kokkos.stamp"

if [ -f "$stamp_file" ] && [ "$(cat "$stamp_file")" = "$stamp" ]; then
  echo "install-kokkos: Kokkos $kokkos_version (OpenMP, Serial) is at $prefix"
  exit 0
fi

fail() {
  echo "install-kokkos: $1; Debian's Serial Kokkos stays in use" >&2
  mkdir -p "$(dirname "$failure_note")" 2>/dev/null && echo "$1" > "$failure_note" 2>/dev/null || true
  exit 1
}

# The Debian archive the system installs from, for the deb-src line: PHASEBENCH_DEBIAN_MIRROR, else
# the first .../debian URI of the system's apt sources (deb822 "URIs:" fields and one-line "deb"
# entries; comments skipped). There is no built-in default: an archive this machine was not set up
# to use may be unreachable or not the one it trusts, so none found is a failure with its reason.
debian_mirror() {
  if [ -n "${PHASEBENCH_DEBIAN_MIRROR:-}" ]; then echo "$PHASEBENCH_DEBIAN_MIRROR"; return; fi
  { cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources 2>/dev/null || true; } |
    sed -nE 's/^[[:space:]]*(URIs:|deb(-src)?([[:space:]]+\[[^]]*\])?)[[:space:]]+//p' | tr -s ' \t' '\n' |
    grep -m 1 -E '^(https?|file)://.*/debian/?$'
}

parent=$(dirname "$prefix")
mkdir -p "$parent" 2>/dev/null && [ -w "$parent" ] ||
  fail "cannot write $parent (run as root, or set PHASEBENCH_KOKKOS_PREFIX to a writable place)"

work=$(mktemp -d "${TMPDIR:-/tmp}/phasebench-kokkos.XXXXXX")
trap 'rm -rf "$work"' EXIT
start=$(date +%s)

# apt-get source from a private sources list, lists and cache: nothing under /etc/apt changes.
suite=$(. /etc/os-release && echo "${VERSION_CODENAME:-bookworm}")
mirror=$(debian_mirror) ||
  fail "no Debian archive in the system's apt sources (/etc/apt/sources.list, /etc/apt/sources.list.d/); set PHASEBENCH_DEBIAN_MIRROR to the archive's URL"
keyring=/usr/share/keyrings/debian-archive-keyring.gpg
mkdir -p "$work/apt/lists/partial" "$work/apt/cache/archives/partial" "$work/source"
echo "deb-src [signed-by=$keyring] $mirror $suite main" > "$work/apt/sources.list"
apt_private=(-o "Dir::Etc::SourceList=$work/apt/sources.list" -o Dir::Etc::SourceParts=/dev/null
             -o "Dir::State::Lists=$work/apt/lists" -o "Dir::Cache=$work/apt/cache" -o Debug::NoLocking=1
             -o APT::Sandbox::User=root)  # the _apt user cannot enter a private mktemp directory
echo "install-kokkos: fetching $orig_tarball with apt-get source ($mirror $suite)"
# apt's first complaint, for the reason in the configure summary.
apt_error() { grep -m 1 -E '^(E|W|Err):' "$work/apt.log" | cut -c 1-200; }
apt-get "${apt_private[@]}" -qq --error-on=any update 2> "$work/apt.log" ||
  fail "apt-get update of a private deb-src list failed (no network?): $(apt_error)"
(cd "$work/source" && apt-get "${apt_private[@]}" -qq source --download-only "$source_package" >/dev/null 2> "$work/apt.log") ||
  fail "apt-get source --download-only $source_package failed: $(apt_error)"
[ -f "$work/source/$orig_tarball" ] ||
  fail "the archive's $source_package source is not $orig_tarball (found: $(ls "$work/source" | tr '\n' ' '))"

tar -xzf "$work/source/$orig_tarball" -C "$work/source" --wildcards '*/packages/kokkos/*' ||
  fail "packages/kokkos could not be extracted from $orig_tarball"
rm -f "$work/source/$orig_tarball"  # 166 MB, no longer needed
kokkos_source=$(ls -d "$work"/source/*/packages/kokkos)
grep -q 'set(Kokkos_VERSION_MINOR 4)' "$kokkos_source/CMakeLists.txt" &&
  grep -q 'set(Kokkos_VERSION_PATCH 01)' "$kokkos_source/CMakeLists.txt" ||
  fail "$orig_tarball does not hold Kokkos $kokkos_version"

launcher=()
if command -v ccache >/dev/null; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
jobs=$(nproc)
echo "install-kokkos: building Kokkos $kokkos_version (OpenMP, Serial) with $jobs jobs"
cmake -S "$kokkos_source" -B "$work/build" -G Ninja "${cmake_options[@]}" "${launcher[@]}" \
  -DCMAKE_INSTALL_PREFIX="$prefix" > "$work/configure.log" 2>&1 ||
  { tail -n 20 "$work/configure.log" >&2; fail "configuring Kokkos failed"; }
cmake --build "$work/build" -j "$jobs" > "$work/build.log" 2>&1 ||
  { tail -n 20 "$work/build.log" >&2; fail "building Kokkos failed"; }
# Installed under a staging root with the final prefix inside it (so any path Kokkos writes into
# its files is the final one), then renamed into place.
DESTDIR="$work/stage" cmake --install "$work/build" > "$work/install.log" 2>&1 || fail "installing Kokkos failed"
echo "$stamp" > "$work/stage$prefix/phasebench-kokkos.stamp"

incoming="$prefix.incoming.$$"
rm -rf "$incoming"
mv "$work/stage$prefix" "$incoming" || fail "cannot write $parent"
if [ -e "$prefix" ]; then mv "$prefix" "$prefix.replaced.$$"; fi
mv "$incoming" "$prefix"
rm -rf "$prefix.replaced.$$" "$failure_note"
echo "install-kokkos: Kokkos $kokkos_version (OpenMP, Serial) installed at $prefix in $(( $(date +%s) - start )) s"
