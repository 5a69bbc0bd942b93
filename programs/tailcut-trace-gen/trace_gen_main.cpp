// tailcut-trace-gen: the same as `tailcut trace-gen`.
#include "tailcut/cli/tool_commands.h"

int main(int argc, char** argv) {
  return tailcut::cli::RunProgram(tailcut::cli::TraceGenCommand("tailcut-trace-gen"), argc, argv);
}
