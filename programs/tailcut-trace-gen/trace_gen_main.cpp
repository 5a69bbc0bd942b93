// tailcut-trace-gen: the same as `tailcut trace-gen`.
#include "tailcut/predictors/commands.h"

int main(int argc, char** argv) { return tailcut::TraceGenCommand(argc, argv); }
