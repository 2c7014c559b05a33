// libFuzzer harness: a .npy file through read_npy, as `check` reads a user's output or a dump's
// reference array. Whatever the header claims, the reader must refuse (InputError) or read it.

#include "fuzz_input.hpp"
#include "phasebench/npy.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto path = pb::fuzz::scratch_directory() / "output.npy";
  pb::fuzz::write_bytes(path, data, size);
  pb::fuzz::expect_read_or_refusal([&] { (void)pb::read_npy(path); });
  return 0;
}
