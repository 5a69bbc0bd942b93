// Command-line entry points, shared by the `tailcut` CLI
// (`tailcut predict-eval`, `tailcut trace-gen`) and the standalone tools.
// argv[0] is the command's name; the rest are its arguments.
#pragma once

namespace tailcut {

int PredictEvalCommand(int argc, char** argv);
int TraceGenCommand(int argc, char** argv);

}  // namespace tailcut
