// Small helpers shared by the `tailcut` subcommands.
#pragma once

#include <cstdint>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include <google/protobuf/message.h>

namespace tailcut::cli {

// Exit codes of every subcommand.
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailed = 1;  // the job failed, or the scheduler said no
inline constexpr int kExitUsage = 2;   // bad command line or input file
inline constexpr int kExitUnavailable = 3;  // no scheduler answered

// Parsed "--flag value" / "--switch" / positional arguments.
class Args {
 public:
  // `switches` take no value; every other --flag takes one.
  static bool Parse(int argc, char** argv, int first, const std::vector<std::string>& switches, Args* out,
                    std::string* error);
  bool Has(const std::string& flag) const { return values_.count(flag) > 0; }
  std::string Get(const std::string& flag, const std::string& def = "") const;
  // Every value given for a repeatable flag.
  std::vector<std::string> GetAll(const std::string& flag) const;
  const std::vector<std::string>& positional() const { return positional_; }
  // Numeric flags: the value, or `def` when the flag is absent. A value that
  // is not a number in [min, max] ("abc", "1e999", "nan", "3x") is not read
  // as 0: it records a usage error naming the flag, see error().
  double Double(const std::string& flag, double def, double min, double max) const;
  int64_t Int(const std::string& flag, int64_t def, int64_t min, int64_t max) const;
  // The first bad numeric value read so far, or "".
  const std::string& error() const { return error_; }

 private:
  std::multimap<std::string, std::string> values_;
  mutable std::string error_;
  std::vector<std::string> positional_;
};

std::string ToJson(const google::protobuf::Message& m);

}  // namespace tailcut::cli
