#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "fuzz_targets.h"

namespace fs = std::filesystem;

namespace {

// Runs every file under `dir`/<target>/ through its target; the test passes
// when none crashes (sanitizers turn memory errors and UB into crashes).
size_t ReplayAll(const fs::path& dir) {
  size_t n = 0;
  for (const auto& t : tailcut::fuzz::Targets()) {
    fs::path sub = dir / std::string(t.name);
    if (!fs::is_directory(sub)) continue;
    for (const auto& f : fs::directory_iterator(sub)) {
      if (!f.is_regular_file()) continue;
      std::ifstream in(f.path(), std::ios::binary);
      std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      INFO(f.path().string());
      CHECK(t.entry(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()) == 0);
      ++n;
    }
  }
  return n;
}

}  // namespace

TEST_CASE("every crash fuzzing found replays without a crash") {
  ReplayAll(fs::path(TAILCUT_SOURCE_DIR) / "tests/security/crashes");
}

TEST_CASE("every seed of the fuzz corpus runs through its target") {
  // Every target has seeds: a folder renamed without its target would
  // silently stop being replayed.
  for (const auto& t : tailcut::fuzz::Targets()) {
    INFO(std::string(t.name));
    CHECK(fs::is_directory(fs::path(TAILCUT_SOURCE_DIR) / "tests/fuzz/corpus" / std::string(t.name)));
  }
  CHECK(ReplayAll(fs::path(TAILCUT_SOURCE_DIR) / "tests/fuzz/corpus") >= tailcut::fuzz::Targets().size());
}
