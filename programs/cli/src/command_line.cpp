#include "tailcut/cli/command_line.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <type_traits>
#include <utility>

#include <CLI/CLI.hpp>

namespace tailcut::cli {
namespace {

constexpr size_t kHelpWidth = 80;
constexpr size_t kFlagColumn = 30;

// `text` broken at spaces into lines of at most `width`; its own line
// breaks kept.
std::string Wrap(const std::string& text, size_t width) {
  std::string out, line;
  auto flush = [&] {
    out += line;
    line.clear();
  };
  size_t at = 0;
  while (at <= text.size()) {
    size_t nl = text.find('\n', at);
    std::string para = text.substr(at, nl == std::string::npos ? std::string::npos : nl - at);
    size_t i = 0;
    while (i < para.size()) {
      size_t sp = para.find(' ', i);
      std::string word = para.substr(i, sp == std::string::npos ? std::string::npos : sp - i);
      if (!line.empty() && line.size() + 1 + word.size() > width) {
        flush();
        out += '\n';
      }
      line += (line.empty() ? "" : " ") + word;
      i = sp == std::string::npos ? para.size() : sp + 1;
    }
    flush();
    if (nl == std::string::npos) break;
    out += '\n';
    at = nl + 1;
  }
  return out;
}

const CLI::Option* Find(const CLI::App* app, const std::string& flag) {
  const CLI::Option* o = app->get_option_no_throw(flag);
  if (!o) {
    std::fprintf(stderr, "tailcut: internal error: command '%s' reads %s, which it does not declare\n",
                 app->get_name().c_str(), flag.c_str());
    std::abort();
  }
  return o;
}

std::string Range(double min, double max) {
  char buf[96];
  std::snprintf(buf, sizeof buf, "[%.15g, %.15g]", min, max);
  return buf;
}

// Storage for the positionals of every command of one parse: a single one
// in a string (a second word is then a stray argument), the rest in a list.
struct PositionalSlot {
  std::string one;
  std::vector<std::string> many;
  const CLI::Option* option = nullptr;
  bool rest = false;
};
using PositionalStore = std::deque<PositionalSlot>;

void Declare(CLI::App* app, const Command& c, PositionalStore* store) {
  app->description(Wrap(c.description.empty() ? c.summary : c.description, kHelpWidth));
  if (!c.footer.empty()) app->footer(Wrap(c.footer, kHelpWidth));
  for (const Flag& f : c.flags) {
    CLI::Option* o = f.value.empty() ? app->add_flag(f.names) : app->add_option(f.names);
    o->description(Wrap(f.help, kHelpWidth - kFlagColumn));
    if (!f.value.empty()) {
      o->type_name(f.value);
      o->multi_option_policy(f.repeat ? CLI::MultiOptionPolicy::TakeAll : CLI::MultiOptionPolicy::TakeLast);
    }
    if (!f.env.empty()) o->envname(f.env);
  }
  for (size_t i = 0; i < c.positionals.size(); ++i) {
    const Positional& p = c.positionals[i];
    PositionalSlot& slot = store->emplace_back();
    slot.rest = c.positional_rest && i + 1 == c.positionals.size();
    const std::string help = Wrap(p.help, kHelpWidth - kFlagColumn);
    CLI::Option* o = slot.rest ? app->add_option(p.name, slot.many, help) : app->add_option(p.name, slot.one, help);
    o->type_name("");
    if (p.required) o->required();
    slot.option = o;
  }
}

std::vector<std::string> Flatten(const PositionalStore& store, size_t first, size_t count) {
  std::vector<std::string> out;
  for (size_t i = first; i < first + count; ++i) {
    const PositionalSlot& slot = store[i];
    if (slot.rest)
      out.insert(out.end(), slot.many.begin(), slot.many.end());
    else if (slot.option->count() > 0)
      out.push_back(slot.one);
  }
  return out;
}

// The innermost command the parse reached, and its name as typed.
CLI::App* Deepest(CLI::App* root, std::string* path) {
  CLI::App* a = root;
  *path = root->get_name();
  while (!a->get_subcommands().empty()) {
    a = a->get_subcommands().front();
    *path += " " + a->get_name();
  }
  return a;
}

std::vector<std::string> OptionNames(const CLI::App* app) {
  std::vector<std::string> names;
  for (const CLI::Option* o : app->get_options()) {
    for (const std::string& l : o->get_lnames()) names.push_back("--" + l);
    for (const std::string& s : o->get_snames()) names.push_back("-" + s);
  }
  return names;
}

int Help(CLI::App* root) {
  std::string path;
  CLI::App* a = Deepest(root, &path);
  std::fputs((a == root ? root->help() : a->help(path.substr(0, path.rfind(' ')))).c_str(), stdout);
  return kExitOk;
}

int Error(CLI::App* root, const CLI::ParseError& e) {
  std::string path;
  CLI::App* a = Deepest(root, &path);
  std::string message = e.what();
  const bool commands = !root->get_subcommands({}).empty();
  std::vector<std::string> rest = a->remaining();
  if (a == root && commands && !rest.empty() && rest[0].rfind('-', 0) != 0) {
    std::vector<std::string> names;
    for (const CLI::App* s : root->get_subcommands({})) names.push_back(s->get_name());
    message = "unknown command '" + rest[0] + "'";
    if (std::string near = ClosestName(rest[0], names); !near.empty()) message += " (did you mean " + near + "?)";
  } else if (dynamic_cast<const CLI::ExtrasError*>(&e) && !rest.empty()) {
    message.clear();
    bool after_unknown = false;  // a word after an unknown option is most likely its value
    for (const std::string& r : rest) {
      const bool flag = r.size() > 1 && r[0] == '-';
      if (!flag && std::exchange(after_unknown, false)) continue;
      after_unknown = flag;
      if (!message.empty()) message += "; ";
      if (flag) {
        std::string flag = r.substr(0, r.find('='));
        message += "unknown option " + flag;
        if (std::string near = ClosestName(flag, OptionNames(a)); !near.empty())
          message += " (did you mean " + near + "?)";
      } else {
        message += "unexpected argument '" + r + "'";
      }
    }
  } else if (dynamic_cast<const CLI::RequiredError*>(&e) && a == root && commands) {
    message = "a command is needed";
  } else if (auto at = message.find(": 1 required");
             at != std::string::npos && message.find("missing") != std::string::npos) {
    message = message.substr(0, at) + " needs a value";
  }
  std::fprintf(stderr, "%s: %s\n(try %s --help)\n", path.c_str(), message.c_str(), path.c_str());
  return kExitUsage;
}

void SetUp(CLI::App* app) {
  app->get_formatter()->column_width(kFlagColumn);
  app->get_formatter()->label("REQUIRED", "(required)");
  app->get_formatter()->label("Usage", "usage");
}

}  // namespace

bool Args::Has(const std::string& flag) const { return Find(app_, flag)->count() > 0; }

std::string Args::Get(const std::string& flag, const std::string& def) const {
  const CLI::Option* o = Find(app_, flag);
  if (o->count() == 0 || o->results().empty()) return def;
  return o->results().back();
}

std::vector<std::string> Args::GetAll(const std::string& flag) const {
  const CLI::Option* o = Find(app_, flag);
  return o->count() ? o->results() : std::vector<std::string>{};
}

std::vector<std::pair<std::string, std::string>> Args::InOrder() const {
  std::vector<std::pair<std::string, std::string>> out;
  std::map<const CLI::Option*, size_t> next;
  for (const CLI::Option* o : app_->parse_order()) {
    if (o->get_positional()) continue;
    size_t i = next[o]++;
    if (o->get_type_size() == 0)
      out.emplace_back(o->get_name(false, true), "");
    else if (i < o->results().size())
      out.emplace_back(o->get_name(false, true), o->results()[i]);
  }
  return out;
}

namespace {

// All of `text` as a finite T, or nothing: "", "3x", "1e999" and "nan" are not numbers.
template <class T>
std::optional<T> ParseNumber(const std::string& text) {
  char* end = nullptr;
  errno = 0;
  T v;
  if constexpr (std::is_floating_point_v<T>)
    v = std::strtod(text.c_str(), &end);
  else
    v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno == ERANGE) return std::nullopt;
  if constexpr (std::is_floating_point_v<T>)
    if (!std::isfinite(v)) return std::nullopt;
  return v;
}

}  // namespace

template <class T>
T Args::Number(const std::string& flag, T def, T min, T max, const char* what) const {
  if (!Has(flag)) return def;
  const std::string text = Get(flag);
  if (std::optional<T> v = ParseNumber<T>(text); v && *v >= min && *v <= max) return *v;
  if (error_.empty())
    error_ = flag + " wants " + what + " in " + Range(static_cast<double>(min), static_cast<double>(max)) + ", got '" +
             text + "'";
  return def;
}

double Args::Double(const std::string& flag, double def, double min, double max) const {
  return Number<double>(flag, def, min, max, "a number");
}

int64_t Args::Int(const std::string& flag, int64_t def, int64_t min, int64_t max) const {
  return Number<int64_t>(flag, def, min, max, "a whole number");
}

std::string ClosestName(const std::string& given, const std::vector<std::string>& known) {
  // Optimal string alignment distance: a swap of neighbours counts 1.
  auto distance = [](const std::string& a, const std::string& b) {
    std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
    for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
    for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
    for (size_t i = 1; i <= a.size(); ++i)
      for (size_t j = 1; j <= b.size(); ++j) {
        d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] != b[j - 1])});
        if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
          d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
      }
    return d[a.size()][b.size()];
  };
  std::string best;
  size_t best_d = std::max<size_t>(2, given.size() / 3) + 1;
  for (const std::string& k : known)
    if (size_t dk = distance(given, k); dk < best_d) best = k, best_d = dk;
  return best;
}

int RunProgram(const Command& c, int argc, char** argv, const std::string& version_line) {
  CLI::App app(c.description, c.name);
  SetUp(&app);
  PositionalStore store;
  Declare(&app, c, &store);
  if (!version_line.empty()) app.add_flag("--version")->description("print the version and exit");
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    return Help(&app);
  } catch (const CLI::ParseError& e) {
    return Error(&app, e);
  }
  if (!version_line.empty() && app.get_option("--version")->count()) {
    std::puts(version_line.c_str());
    return kExitOk;
  }
  return c.run(Args(&app, Flatten(store, 0, store.size())));
}

int RunCommands(const std::string& program, const std::string& description, const std::string& footer,
                const std::vector<Command>& commands, int argc, char** argv, const std::string& version_line) {
  CLI::App app(Wrap(description, kHelpWidth), program);
  SetUp(&app);
  if (!footer.empty()) app.footer(Wrap(footer, kHelpWidth));
  app.require_subcommand(0, 1);
  app.add_flag("--version")->description("print the version and exit");
  PositionalStore store;
  std::vector<std::pair<CLI::App*, std::pair<size_t, size_t>>> subs;
  for (const Command& c : commands) {
    CLI::App* sub = app.add_subcommand(c.name, c.summary);
    size_t first = store.size();
    Declare(sub, c, &store);
    subs.push_back({sub, {first, store.size() - first}});
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    return Help(&app);
  } catch (const CLI::ParseError& e) {
    return Error(&app, e);
  }
  if (app.get_option("--version")->count()) {
    std::puts(version_line.c_str());
    return kExitOk;
  }
  for (size_t i = 0; i < commands.size(); ++i)
    if (subs[i].first->parsed())
      return commands[i].run(Args(subs[i].first, Flatten(store, subs[i].second.first, subs[i].second.second)));
  std::fputs(app.help().c_str(), stderr);
  return kExitUsage;
}

}  // namespace tailcut::cli
