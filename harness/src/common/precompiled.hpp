#pragma once
// The harness's precompiled header (harness/CMakeLists.txt): the JSON library and the standard
// headers that most of its units include, parsed once per build instead of once per unit.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
