// Commands that are both a `tailcut` subcommand and a program of their own
// (`tailcut predict-eval` = tailcut-predict-eval, `tailcut trace-gen` =
// tailcut-trace-gen): one declaration for both.
#pragma once

#include "tailcut/cli/command_line.h"

namespace tailcut::cli {

// `name`: the command's name ("predict-eval", or the program's).
Command PredictEvalCommand(const std::string& name);
Command TraceGenCommand(const std::string& name);

}  // namespace tailcut::cli
