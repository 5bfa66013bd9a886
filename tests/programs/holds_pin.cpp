// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// A job's process that keeps GPU memory (and so, under the shim with
// GDRHOOK_PIN=alloc, its pin) until it is killed: the Slurm test's
// leftover and its sibling job (tests/slurm). Once the buffer is allocated
// it writes its pid to READY_FILE (written whole, then renamed, so a
// reader never sees half of it), then waits. Nothing of gdrhook in it.
//
// usage: holds_pin READY_FILE
#include "cuda_checks.h"

#include <cuda.h>

#include <cstdio>
#include <string>
#include <unistd.h>

int main(int argc, char **argv)
{
    if (argc != 2)
        return 2;
    if (!current_primary_context())
        return 1;
    CUdeviceptr buffer;
    CHECK_CU_OR_EXIT(cuMemAlloc(&buffer, 4 << 20), 1);

    const std::string ready = argv[1], partial = ready + ".partial";
    FILE *file = fopen(partial.c_str(), "w");
    if (!file || fprintf(file, "%d\n", static_cast<int>(getpid())) < 0 || fclose(file) != 0 ||
        rename(partial.c_str(), ready.c_str()) != 0)
        return 1;
    for (;;)
        pause();
}
