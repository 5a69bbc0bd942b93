// tailcut-predict-eval: the same as `tailcut predict-eval`.
#include "tailcut/cli/tool_commands.h"

int main(int argc, char** argv) {
  return tailcut::cli::RunProgram(tailcut::cli::PredictEvalCommand("tailcut-predict-eval"), argc, argv);
}
