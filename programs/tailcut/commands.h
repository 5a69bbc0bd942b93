// Subcommands of `tailcut` that live in their own files.
#pragma once

#include "cli_util.h"

namespace tailcut::cli {

int RunDemo(const Args& args);
int RunSim(const Args& args);
int RunTrain(const Args& args);
int RunBench(const Args& args);
int RunWhatif(const Args& args);

}  // namespace tailcut::cli
