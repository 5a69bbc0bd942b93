// Forwarding header: the built-in policies moved from tailcut/plugins/ to
// tailcut/policies/ (issue 40). Code written against the old path keeps
// building; new code includes "tailcut/policies/coded_jobs.h".
#pragma once

#include "tailcut/policies/coded_jobs.h"
