// Subcommands of `tailcut` that live in their own files: each declares its
// flags (command_line.h) and converts them to its library's options struct.
#pragma once

#include "cli_util.h"

namespace tailcut::cli {

Command DemoCommand();
Command SimCommand();
Command TrainCommand();
Command BenchCommand();
Command WhatifCommand();

}  // namespace tailcut::cli
