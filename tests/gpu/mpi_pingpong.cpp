// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// A two-rank MPI ping-pong over cuMemAlloc'd buffers, for a CUDA-aware MPI
// run unmodified (tests/gpu/openmpi.sh): each send and receive hands the
// library a device pointer, which it must recognise as one (a pointer
// query) before it moves the bytes.
//
//   mpi_pingpong cuda|host ITERS SIZE...
//
// Rank 0's buffers are always on the GPU; rank 1's are on the GPU too
// (cuda) or in host memory (host). For each size, fresh buffers are
// allocated, then 8 checked exchanges: the sender fills its buffer with a
// pattern new to each exchange, the receiver copies what arrived back and
// compares it byte for byte (a mismatch is "check failed" and exit 1).
// Then the timed part on the same buffers: ITERS/10 unmeasured round trips
// and ITERS measured ones; rank 0 prints
//   size=BYTES iters=ITERS usec=HALF_A_ROUND_TRIP
// and, at the end, "data checked: SIZES sizes"; before all that, where the
// library can say (Open MPI's extension), "cuda-aware at run time: 0|1".
// The buffers are freed before the next size, so the library sees
// allocations come and go.
#include "../programs/cuda_checks.h"

#include <cuda.h>
#include <mpi.h>
#if __has_include(<mpi-ext.h>)
#include <mpi-ext.h> // Open MPI's MPIX_Query_cuda_support
#endif

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

constexpr int checked_exchanges = 8;

struct Buffers {
    void *send = nullptr;
    void *receive = nullptr;
    bool on_gpu = false;
};

Buffers allocate(size_t size, bool on_gpu)
{
    Buffers b;
    b.on_gpu = on_gpu;
    if (!on_gpu) {
        b.send = std::malloc(size);
        b.receive = std::malloc(size);
        if (!b.send || !b.receive)
            exit_on_failure("malloc", 0, 1);
        return b;
    }
    CUdeviceptr send = 0, receive = 0;
    CHECK_CU_OR_EXIT(cuMemAlloc(&send, size), 1);
    CHECK_CU_OR_EXIT(cuMemAlloc(&receive, size), 1);
    b.send = reinterpret_cast<void *>(send);
    b.receive = reinterpret_cast<void *>(receive);
    return b;
}

void release(const Buffers &b)
{
    if (!b.on_gpu) {
        std::free(b.send);
        std::free(b.receive);
        return;
    }
    CHECK_CU_OR_EXIT(cuMemFree(reinterpret_cast<CUdeviceptr>(b.send)), 1);
    CHECK_CU_OR_EXIT(cuMemFree(reinterpret_cast<CUdeviceptr>(b.receive)), 1);
}

// The byte at index i of exchange `seed`'s message: a different pattern for
// every exchange, size and offset, so a stale or shifted buffer fails.
unsigned char pattern(size_t i, int seed, size_t size)
{
    return static_cast<unsigned char>((i * 131u + static_cast<size_t>(seed) * 7u + size) % 251u);
}

void copy_in(const Buffers &b, void *dst, const std::vector<unsigned char> &host)
{
    if (b.on_gpu)
        CHECK_CU_OR_EXIT(cuMemcpyHtoD(reinterpret_cast<CUdeviceptr>(dst), host.data(), host.size()),
                         1);
    else
        std::memcpy(dst, host.data(), host.size());
}

void copy_out(const Buffers &b, std::vector<unsigned char> &host, const void *src)
{
    if (b.on_gpu)
        CHECK_CU_OR_EXIT(cuMemcpyDtoH(host.data(), reinterpret_cast<CUdeviceptr>(src), host.size()),
                         1);
    else
        std::memcpy(host.data(), src, host.size());
}

// One exchange in each direction whose bytes are compared at the receiver.
bool checked_exchange(const Buffers &b, int rank, size_t size, int seed)
{
    std::vector<unsigned char> host(size);
    const int peer = 1 - rank;
    for (int sender = 0; sender < 2; ++sender) {
        const int s = seed * 2 + sender;
        if (rank == sender) {
            for (size_t i = 0; i < size; ++i)
                host[i] = pattern(i, s, size);
            copy_in(b, b.send, host);
            MPI_Send(b.send, static_cast<int>(size), MPI_BYTE, peer, s, MPI_COMM_WORLD);
            continue;
        }
        std::vector<unsigned char> zero(size, 0);
        copy_in(b, b.receive, zero);
        MPI_Recv(b.receive, static_cast<int>(size), MPI_BYTE, peer, s, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
        copy_out(b, host, b.receive);
        for (size_t i = 0; i < size; ++i)
            if (host[i] != pattern(i, s, size)) {
                std::printf("check failed: rank %d size %zu exchange %d byte %zu\n", rank, size, s,
                            i);
                return false;
            }
    }
    return true;
}

// Half the mean round trip, in microseconds, over `iters` after a warm-up.
double timed(const Buffers &b, int rank, size_t size, int iters)
{
    const int n = static_cast<int>(size);
    const int peer = 1 - rank;
    double start = 0;
    const int warmup = iters / 10;
    for (int i = -warmup; i < iters; ++i) {
        if (i == 0) {
            MPI_Barrier(MPI_COMM_WORLD);
            start = MPI_Wtime();
        }
        if (rank == 0) {
            MPI_Send(b.send, n, MPI_BYTE, peer, 1000, MPI_COMM_WORLD);
            MPI_Recv(b.receive, n, MPI_BYTE, peer, 1000, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(b.receive, n, MPI_BYTE, peer, 1000, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(b.send, n, MPI_BYTE, peer, 1000, MPI_COMM_WORLD);
        }
    }
    return (MPI_Wtime() - start) * 1e6 / iters / 2;
}

} // namespace

int main(int argc, char **argv)
{
    if (argc < 4 || (std::strcmp(argv[1], "cuda") && std::strcmp(argv[1], "host"))) {
        std::fprintf(stderr, "usage: mpi_pingpong cuda|host ITERS SIZE...\n");
        return 2;
    }
    if (!current_primary_context())
        exit_on_failure("making device 0's primary context current", 0, 1);
    MPI_Init(&argc, &argv);
    int rank = 0, ranks = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &ranks);
    if (ranks != 2) {
        std::fprintf(stderr, "mpi_pingpong runs on 2 ranks, not %d\n", ranks);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
#if defined(MPIX_CUDA_AWARE_SUPPORT) && MPIX_CUDA_AWARE_SUPPORT
    if (rank == 0)
        std::printf("cuda-aware at run time: %d\n", MPIX_Query_cuda_support());
#endif
    const bool on_gpu = rank == 0 || std::strcmp(argv[1], "cuda") == 0;
    const int iters = std::atoi(argv[2]);
    int ok = 1;
    for (int a = 3; a < argc && ok; ++a) {
        const size_t size = std::strtoull(argv[a], nullptr, 10);
        const Buffers b = allocate(size, on_gpu);
        for (int seed = 0; seed < checked_exchanges && ok; ++seed)
            ok = checked_exchange(b, rank, size, seed);
        MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
        if (ok) {
            const double usec = timed(b, rank, size, iters);
            if (rank == 0)
                std::printf("size=%zu iters=%d usec=%.3f\n", size, iters, usec);
        }
        release(b);
    }
    if (rank == 0 && ok)
        std::printf("data checked: %d sizes\n", argc - 3);
    MPI_Finalize();
    return ok ? 0 : 1;
}
