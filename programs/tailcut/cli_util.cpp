#include "cli_util.h"

#include <regex>
#include <set>

#include <google/protobuf/descriptor.h>
#include <google/protobuf/util/json_util.h>

namespace tailcut::cli {
namespace {

// The names of every 64-bit integer field of `d` and the messages it holds.
void SixtyFourBitFields(const google::protobuf::Descriptor* d, std::set<const google::protobuf::Descriptor*>* seen,
                        std::set<std::string>* out) {
  using google::protobuf::FieldDescriptor;
  if (!seen->insert(d).second) return;
  for (int i = 0; i < d->field_count(); ++i) {
    const FieldDescriptor* f = d->field(i);
    switch (f->cpp_type()) {
      case FieldDescriptor::CPPTYPE_INT64:
      case FieldDescriptor::CPPTYPE_UINT64: out->insert(f->name()); break;
      case FieldDescriptor::CPPTYPE_MESSAGE: SixtyFourBitFields(f->message_type(), seen, out); break;
      default: break;
    }
  }
}

}  // namespace

// Protobuf's JSON mapping writes 64-bit integers as strings ("job_id":
// "1"); scripts want numbers, and every id and count here is far below
// 2^53, so the quotes come off those fields' values (repeated ones too). A
// quote inside a string value is escaped (\"), so no text in one matches.
std::string ToJson(const google::protobuf::Message& m) {
  std::string out;
  google::protobuf::util::JsonPrintOptions o;
  o.preserve_proto_field_names = true;
  o.always_print_primitive_fields = true;
  (void)google::protobuf::util::MessageToJsonString(m, &out, o);
  std::set<const google::protobuf::Descriptor*> seen;
  std::set<std::string> names;
  SixtyFourBitFields(m.GetDescriptor(), &seen, &names);
  if (names.empty()) return out;
  std::string alternatives;
  for (const std::string& n : names) alternatives += (alternatives.empty() ? "" : "|") + n;
  const std::regex field("\"(" + alternatives + ")\":(\\[[^\\]]*\\]|\"-?[0-9]+\")");
  const std::regex quoted("\"(-?[0-9]+)\"");
  std::string result;
  auto last = out.cbegin();
  for (std::sregex_iterator it(out.begin(), out.end(), field), end; it != end; ++it) {
    result.append(last, (*it)[0].first);
    result += "\"" + (*it)[1].str() + "\":" + std::regex_replace((*it)[2].str(), quoted, "$1");
    last = (*it)[0].second;
  }
  result.append(last, out.cend());
  return result;
}

std::vector<Flag> ClientFlags(bool json) {
  std::vector<Flag> flags = {
      {"--scheduler", "EP",
       "the scheduler's client endpoint (default tcp://127.0.0.1:7701); replicas: every one's, comma-separated",
       "TAILCUT_SCHEDULER"},
      {"--key-file", "FILE", "this client's key pair, for a scheduler with keys (docs/SECURITY.md)",
       "TAILCUT_KEY_FILE"},
      {"--scheduler-key", "KEY", "the scheduler's public key: its .pub file or the Z85 key", "TAILCUT_SCHEDULER_KEY"},
      {"--timeout", "S", "seconds to wait for the scheduler's answer (default 10)"},
  };
  if (json) flags.insert(flags.begin(), {"--json", "", "machine-readable output (the protocol's messages as JSON)"});
  return flags;
}

}  // namespace tailcut::cli
