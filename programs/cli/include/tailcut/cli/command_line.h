// Every program's command line: one parser (CLI11, Debian's libcli11-dev)
// behind one declaration per command. A command declares its flags and
// positionals once (Flag, Positional); the parse, `--help`, the environment
// variables and the errors all come from that declaration:
//
//   - an unknown option or a stray argument: exit 2, naming it, with the
//     closest known option when one is close ("did you mean --tasks?");
//   - `--help` on every command and subcommand lists every flag, its value
//     and the environment variable that sets it;
//   - a flag the command does not declare cannot be read (Args aborts).
//
// Libraries take options structs; this is the only place argv is read
// (docs/ARCHITECTURE.md, "Programs").
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace CLI {
class App;
}

namespace tailcut::cli {

// Exit codes of every program.
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailed = 1;       // the job failed, or the scheduler said no
inline constexpr int kExitUsage = 2;        // bad command line or input file
inline constexpr int kExitUnavailable = 3;  // no scheduler answered

struct Flag {
  std::string names;    // "--kernel", or "-o,--out"
  std::string value;    // the value's name in --help ("N", "FILE"); empty: a switch
  std::string help;     // one paragraph; wrapped for --help
  std::string env{};    // the environment variable that sets it, if any
  bool repeat = false;  // every value kept in order (GetAll); else the last one wins
};

struct Positional {
  std::string name;  // "JOB", "SCENARIO.toml"
  std::string help;
  bool required = true;
};

// What a command's run function reads: the parsed flags, by any of their
// names. Reading a flag the command did not declare is a bug: it aborts.
class Args {
 public:
  Args(const CLI::App* app, std::vector<std::string> positional) : app_(app), positional_(std::move(positional)) {}
  bool Has(const std::string& flag) const;
  // The last value given (or the environment's), or `def`.
  std::string Get(const std::string& flag, const std::string& def = "") const;
  // Every value given for a repeatable flag, in order.
  std::vector<std::string> GetAll(const std::string& flag) const;
  // Every flag given, in command-line order, as (its names as declared,
  // short first: "-c,--config"; its value, "" for a switch): daemons apply
  // them as config overrides in that order.
  std::vector<std::pair<std::string, std::string>> InOrder() const;
  const std::vector<std::string>& positional() const { return positional_; }
  // Numeric flags: the value, or `def` when the flag is absent. A value that
  // is not a number in [min, max] ("abc", "1e999", "nan", "3x") is not read
  // as 0: it records a usage error naming the flag, see error().
  double Double(const std::string& flag, double def, double min, double max) const;
  int64_t Int(const std::string& flag, int64_t def, int64_t min, int64_t max) const;
  // The first bad numeric value read so far, or "".
  const std::string& error() const { return error_; }

 private:
  template <class T>
  T Number(const std::string& flag, T def, T min, T max, const char* what) const;

  const CLI::App* app_;
  std::vector<std::string> positional_;
  mutable std::string error_;
};

struct Command {
  std::string name;         // "submit"; for a program, the program's name
  std::string summary;      // one line, in the parent's list of commands
  std::string description;  // paragraphs before the options in --help
  std::string footer;       // paragraphs after them (exit codes, docs)
  std::vector<Flag> flags;
  std::vector<Positional> positionals;  // in order; optional ones last
  bool positional_rest = false;         // the last positional takes every further argument
  std::function<int(const Args&)> run;
};

// A program that is one command: `tailcut-scheduler [options]`. `--version`
// prints `version_line` when it is not empty.
int RunProgram(const Command& command, int argc, char** argv, const std::string& version_line = "");

// A program of subcommands: `tailcut COMMAND [options]`.
int RunCommands(const std::string& program, const std::string& description, const std::string& footer,
                const std::vector<Command>& commands, int argc, char** argv, const std::string& version_line);

// The closest of `known` to `given` (edit distance, at most 2 or a third of
// its length), or "".
std::string ClosestName(const std::string& given, const std::vector<std::string>& known);

}  // namespace tailcut::cli
