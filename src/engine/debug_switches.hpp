// The engine's debugging switches: the only environment variables product code reads, all of
// them here (debug_switches.cpp) and listed in doc/engine.md "Debugging switches". Each is on
// when set to "1" and off when unset or anything else. Settings a user or a test makes are
// typed options (EvaluatorOptions, pair_style keywords), never these.
#pragma once

namespace edgeframe {

// EDGEFRAME_POISON_SCRATCH=1: fill every freshly grown workspace slot with NaN, so that a kernel
// reading scratch it did not write shows up as NaN results (EvaluatorOptions::poison_scratch
// does the same per evaluator).
bool debug_poison_scratch();

}  // namespace edgeframe
