// Small helpers shared by the `tailcut` subcommands.
#pragma once

#include <string>
#include <vector>

#include <google/protobuf/message.h>

#include "tailcut/cli/command_line.h"

namespace tailcut::cli {

std::string ToJson(const google::protobuf::Message& m);

// The flags every client command takes (--scheduler, --key-file,
// --scheduler-key, --timeout, and --json unless `json` is false), each with
// the environment variable that sets it.
std::vector<Flag> ClientFlags(bool json = true);

}  // namespace tailcut::cli
