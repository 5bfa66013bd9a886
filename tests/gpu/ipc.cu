// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// CUDA IPC between two processes, runtime API (built by
// tests/gpu/build_programs.sh). The parent starts a copy of itself as the
// child (fork + exec, before either process makes any CUDA call, so the
// child is a fresh process that inherits only LD_PRELOAD and the GDRHOOK_*
// variables: under the shim each writes its own log), allocates buffers,
// fills them and sends their cudaIpcGetMemHandle handles through a pipe.
// The child opens each with cudaIpcOpenMemHandle, adds one to every element
// in a kernel, closes it with cudaIpcCloseMemHandle and answers with the
// number of handles it closed. The parent checks the data and frees the
// buffers.
//
// Every cudaIpcCloseMemHandle is a cuIpcCloseMemHandle free event (kind
// "ipc") in the child's log; "frees_made=N" counts the parent's frees and
// the child's closes, each process bracketing its part with the markers of
// tests/gpu/marker.py.
//
// `ipc DEVICE` makes the child use GPU DEVICE (the parent's buffers stay on
// GPU 0): memory of one GPU opened, written and closed by a process on
// another, through peer access.
#include "runtime_program.h"

#include <cstring>
#include <string>
#include <sys/wait.h>
#include <vector>

#define CHECK_SYS(cond)                                                                            \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            perror("ipc: " #cond);                                                                 \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

namespace {

constexpr int buffers = 3;
constexpr int n = 1 << 20; // floats: 4 MiB a buffer

__global__ void iota(float *data, int count, float base)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < count)
        data[i] = base + static_cast<float>(i % 1000);
}

__global__ void add_one(float *data, int count)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < count)
        data[i] += 1.0f;
}

void read_all(int fd, void *data, size_t size)
{
    auto *p = static_cast<char *>(data);
    while (size > 0) {
        ssize_t got = read(fd, p, size);
        CHECK_SYS(got > 0);
        p += got;
        size -= static_cast<size_t>(got);
    }
}

void write_all(int fd, const void *data, size_t size)
{
    const auto *p = static_cast<const char *>(data);
    while (size > 0) {
        ssize_t put = write(fd, p, size);
        CHECK_SYS(put > 0);
        p += put;
        size -= static_cast<size_t>(put);
    }
}

// The child: handles in on `in`, the number it closed out on `out`.
int child(int in, int out, int device)
{
    cudaIpcMemHandle_t handles[buffers];
    read_all(in, handles, sizeof handles);
    CHECK(cudaSetDevice(device));
    CHECK(cudaFree(nullptr)); // initialize the runtime outside the window
    mark();
    int closes = 0;
    for (const cudaIpcMemHandle_t &handle : handles) {
        void *p = nullptr;
        CHECK(cudaIpcOpenMemHandle(&p, handle, cudaIpcMemLazyEnablePeerAccess));
        add_one<<<(n + 255) / 256, 256>>>(static_cast<float *>(p), n);
        CHECK(cudaGetLastError());
        CHECK(cudaDeviceSynchronize());
        CHECK(cudaIpcCloseMemHandle(p));
        ++closes;
    }
    mark();
    write_all(out, &closes, sizeof closes);
    return 0;
}

} // namespace

int main(int argc, char **argv)
{
    if (argc == 5 && strcmp(argv[1], "--child") == 0)
        return child(atoi(argv[2]), atoi(argv[3]), atoi(argv[4]));
    const std::string child_device = argc == 2 ? argv[1] : "0";

    // The child first, while this process has made no CUDA call.
    int to_child[2], from_child[2];
    CHECK_SYS(pipe(to_child) == 0 && pipe(from_child) == 0);
    pid_t pid = fork();
    CHECK_SYS(pid >= 0);
    if (pid == 0) {
        close(to_child[1]);
        close(from_child[0]);
        std::string in = std::to_string(to_child[0]), out = std::to_string(from_child[1]);
        execl("/proc/self/exe", argv[0], "--child", in.c_str(), out.c_str(), child_device.c_str(),
              static_cast<char *>(nullptr));
        perror("ipc: exec");
        _exit(127);
    }
    close(to_child[0]);
    close(from_child[1]);

    CHECK(cudaFree(nullptr)); // initialize the runtime outside the window
    const long long used_at_start = used_bytes();
    mark();
    float *d[buffers];
    cudaIpcMemHandle_t handles[buffers];
    for (int b = 0; b < buffers; ++b) {
        CHECK(cudaMalloc(&d[b], n * sizeof(float)));
        iota<<<(n + 255) / 256, 256>>>(d[b], n, static_cast<float>(100 * b));
        CHECK(cudaGetLastError());
        CHECK(cudaIpcGetMemHandle(&handles[b], d[b]));
    }
    CHECK(cudaDeviceSynchronize());
    write_all(to_child[1], handles, sizeof handles);
    close(to_child[1]);

    int closes = 0;
    read_all(from_child[0], &closes, sizeof closes);
    close(from_child[0]);
    int status = 0;
    CHECK_SYS(waitpid(pid, &status, 0) == pid);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "ipc: child failed (status %d)\n", status);
        return 1;
    }

    std::vector<float> host(n);
    double checksum = 0;
    long wrong = 0;
    for (int b = 0; b < buffers; ++b) {
        CHECK(cudaMemcpy(host.data(), d[b], n * sizeof(float), cudaMemcpyDeviceToHost));
        for (int i = 0; i < n; ++i) {
            wrong += host[i] != static_cast<float>(100 * b + i % 1000) + 1.0f;
            checksum += host[i];
        }
        FREE(cudaFree(d[b]));
    }
    mark();

    printf("checksum=%.1f wrong=%ld child_closes=%d\n", checksum, wrong, closes);
    printf("frees_made=%d\n", frees_made + closes);
    // The child's context went with it (it has exited).
    report_used_delta(used_at_start, used_bytes);
    fprintf(stderr, "expect ipc_closes=%d\n", closes);
    return wrong == 0 && closes == buffers ? 0 : 1;
}
