// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// The shim's cost per cuMemAlloc+cuMemFree pair on the real driver, measured
// side by side inside one process: run under LD_PRELOAD=libgdrhook.so, it
// alternates pairs through the hooked symbols with pairs through the real
// driver's functions, found in libcuda's own symbol table (dlsym would hand
// out the shim's wrappers). Both kinds of pair see the same driver state,
// the same GPU and the same moment, so the driver's drift between runs (a
// few percent, ten times the target) cancels out.
//
// Prints the median time of each kind, the median and trimmed mean of the
// difference between neighbouring pairs, with a 95% interval, percentiles
// of that difference, and the ratio.
//
// usage: alloc_free_ab [PAIRS [BYTES]]
#include "driver_program.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <string>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

namespace {

struct LoadedObject {
    std::string path;
    uintptr_t base = 0;
};

int find_libcuda(dl_phdr_info *info, size_t, void *data)
{
    auto *found = static_cast<LoadedObject *>(data);
    if (info->dlpi_name && strstr(info->dlpi_name, "libcuda.so")) {
        found->path = info->dlpi_name;
        found->base = info->dlpi_addr;
        return 1;
    }
    return 0;
}

// The address of `name` in the loaded libcuda, from the file's .dynsym.
void *real_symbol(const LoadedObject &object, const char *name)
{
    int fd = open(object.path.c_str(), O_RDONLY | O_CLOEXEC);
    struct stat st {};
    if (fd < 0 || fstat(fd, &st) != 0)
        return nullptr;
    void *map = mmap(nullptr, st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (map == MAP_FAILED)
        return nullptr;
    const auto *file = static_cast<const char *>(map);
    const auto *header = reinterpret_cast<const Elf64_Ehdr *>(file);
    const auto *sections = reinterpret_cast<const Elf64_Shdr *>(file + header->e_shoff);
    void *address = nullptr;
    for (int i = 0; i < header->e_shnum && !address; ++i) {
        if (sections[i].sh_type != SHT_DYNSYM)
            continue;
        const auto *symbols = reinterpret_cast<const Elf64_Sym *>(file + sections[i].sh_offset);
        const char *names = file + sections[sections[i].sh_link].sh_offset;
        size_t count = sections[i].sh_size / sizeof(Elf64_Sym);
        for (size_t k = 0; k < count; ++k) {
            if (symbols[k].st_value && strcmp(names + symbols[k].st_name, name) == 0) {
                address = reinterpret_cast<void *>(object.base + symbols[k].st_value);
                break;
            }
        }
    }
    munmap(map, st.st_size);
    return address;
}

using AllocFn = CUresult (*)(CUdeviceptr *, size_t);
using FreeFn = CUresult (*)(CUdeviceptr);

double time_pair(AllocFn alloc, FreeFn release, size_t bytes)
{
    auto start = std::chrono::steady_clock::now();
    CUdeviceptr p;
    if (alloc(&p, bytes) != CUDA_SUCCESS || release(p) != CUDA_SUCCESS) {
        fprintf(stderr, "cuMemAlloc/cuMemFree failed\n");
        exit(1);
    }
    return std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start)
        .count();
}

double median(std::vector<double> v)
{
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

} // namespace

int main(int argc, char **argv)
{
    const int pairs = argc > 1 ? atoi(argv[1]) : 20000;
    const size_t bytes = argc > 2 ? strtoull(argv[2], nullptr, 0) : 1 << 20;
    use_primary_context();

    LoadedObject libcuda;
    dl_iterate_phdr(find_libcuda, &libcuda);
    auto real_alloc = reinterpret_cast<AllocFn>(real_symbol(libcuda, "cuMemAlloc_v2"));
    auto real_free = reinterpret_cast<FreeFn>(real_symbol(libcuda, "cuMemFree_v2"));
    if (!real_alloc || !real_free) {
        fprintf(stderr, "cannot find cuMemAlloc_v2/cuMemFree_v2 in %s\n", libcuda.path.c_str());
        return 1;
    }
    // The program's own calls resolve to the shim when it is preloaded.
    AllocFn hooked_alloc = &cuMemAlloc_v2;
    FreeFn hooked_free = &cuMemFree_v2;
    const bool preloaded =
        reinterpret_cast<void *>(hooked_alloc) != reinterpret_cast<void *>(real_alloc);
    printf("libcuda=%s hooked_symbols=%s\n", libcuda.path.c_str(), preloaded ? "yes" : "no");

    for (int i = 0; i < 2000; ++i) { // warm both paths and the driver up
        time_pair(real_alloc, real_free, bytes);
        time_pair(hooked_alloc, hooked_free, bytes);
    }
    std::vector<double> plain, hooked, difference;
    plain.reserve(pairs);
    hooked.reserve(pairs);
    for (int i = 0; i < pairs; ++i) {
        // Alternate which goes first, so that neither always follows the other.
        double a, b;
        if (i & 1) {
            b = time_pair(hooked_alloc, hooked_free, bytes);
            a = time_pair(real_alloc, real_free, bytes);
        } else {
            a = time_pair(real_alloc, real_free, bytes);
            b = time_pair(hooked_alloc, hooked_free, bytes);
        }
        plain.push_back(a);
        hooked.push_back(b);
        difference.push_back(b - a);
    }

    // Trimmed mean of the differences: the driver's rare multi-microsecond
    // stalls land on either side at random and would swamp a plain mean.
    std::vector<double> sorted = difference;
    std::sort(sorted.begin(), sorted.end());
    const size_t cut = sorted.size() / 100;
    double sum = 0, squares = 0;
    const size_t n = sorted.size() - 2 * cut;
    for (size_t i = cut; i < sorted.size() - cut; ++i)
        sum += sorted[i];
    const double mean = sum / n;
    for (size_t i = cut; i < sorted.size() - cut; ++i)
        squares += (sorted[i] - mean) * (sorted[i] - mean);
    const double half_width = 1.96 * std::sqrt(squares / (n - 1) / n);

    const double plain_median = median(plain);
    printf("pairs=%d bytes=%zu plain_median_ns=%.1f hooked_median_ns=%.1f\n", pairs, bytes,
           plain_median, median(hooked));
    printf("added_ns_median=%.1f added_ns_trimmed_mean=%.1f ci95=%.1f\n", median(difference), mean,
           half_width);
    // Where the added time sits: a mean above the median means a few
    // hooked pairs cost much more than the rest.
    auto at = [&](double q) { return sorted[static_cast<size_t>(q * (sorted.size() - 1))]; };
    printf("added_ns_percentiles p10=%.0f p25=%.0f p50=%.0f p75=%.0f p90=%.0f\n", at(0.10),
           at(0.25), at(0.50), at(0.75), at(0.90));
    printf("overhead_percent=%.3f (trimmed mean / plain median; 95%% interval %.3f..%.3f)\n",
           100 * mean / plain_median, 100 * (mean - half_width) / plain_median,
           100 * (mean + half_width) / plain_median);
    return 0;
}
