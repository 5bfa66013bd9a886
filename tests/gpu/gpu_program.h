// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// What the programs of tests/gpu share, driver API or runtime (through
// driver_program.h and runtime_program.h): how a call is checked, and how
// the frees a program makes are counted for its "frees_made=N" line, which
// tests/gpu/run.sh holds against the successful free events of the shim's
// log.
#pragma once

#include "../programs/cuda_checks.h"
#include "../programs/used_delta.h"

// A failed call ends the program (cuda_checks.h says how).
#define CHECK(call) CHECK_CU_OR_EXIT(call, 1)

/// The deallocations this program made, each through FREE.
inline int frees_made = 0;

// A deallocation: checked, then counted.
#define FREE(call)                                                                                 \
    do {                                                                                           \
        CHECK(call);                                                                               \
        ++frees_made;                                                                              \
    } while (0)
