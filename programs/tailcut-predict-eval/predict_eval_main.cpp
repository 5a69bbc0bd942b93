// tailcut-predict-eval: the same as `tailcut predict-eval`.
#include "tailcut/predictors/commands.h"

int main(int argc, char** argv) { return tailcut::PredictEvalCommand(argc, argv); }
