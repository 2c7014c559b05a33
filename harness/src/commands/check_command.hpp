#pragma once
// `phasebench check DUMP_DIR OUTPUTS_DIR`: outputs that code outside phasebench computed from a
// dump's inputs (one <output>.npy each) judged against the dump's fp64 reference exactly as
// `verify` judges a variant (check_outputs, with the checks the dump's manifest recorded).

#include <string>

namespace pb::commands {

struct CheckCommand {
  std::string dump_dir;
  std::string outputs_dir;
};

/// 0 when every output passes, 1 when one fails (FAIL or MISTRUSTED); bad input throws InputError.
int check(const CheckCommand& command);

}  // namespace pb::commands
