// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// cuPointerGetAttribute and cuPointerGetAttributes, as a program reaches
// them, compared with the driver's own answer (the fake driver's
// uncounted truth) after every step of the memory's life:
//
//   pointer_queries life PATH  allocations of every kind, freed and made
//                              again at the same address, pools, VMM map,
//                              unmap and remap, an IPC import and its close,
//                              a context's teardown, a forked child; PATH is
//                              symbol, dlsym or proc (cuGetProcAddress_v2).
//                              Prints checked=N mismatches=N
//   pointer_queries repeat     one allocation asked each answered attribute
//                              10 times alone, then 10 times together;
//                              prints most_driver_queries=N (the most times
//                              the driver was asked one attribute)
//   pointer_queries imported   an IPC import asked each answered attribute
//                              10 times alone; prints fewest_driver_queries=N
//                              (the fewest times the driver was asked one
//                              attribute: 10 when every query of memory the
//                              shim did not see allocated reached it)
//   pointer_queries untracked  memory the shim cannot answer for (a host
//                              buffer it never saw, an IPC import) asked 10
//                              times each; then an allocation made where
//                              the import was, asked the same. Prints
//                              host_range_calls=N,
//                              import_range_calls=N (the driver asked the
//                              allocation's range for the table while the
//                              program asked about the memory),
//                              reused_same_address=1, reused_driver_queries=N
//                              (the most times the driver was asked one
//                              attribute of the new allocation)
//                              and forwarded_differ=N (a query's answer
//                              other than the driver's)
//   pointer_queries interleave the driver's answer to the first query of an
//                              allocation is held while the allocation is
//                              freed and made again at the same address;
//                              prints stale=N (the next query answered the
//                              old allocation's buffer id)
//   pointer_queries verify     the driver changes an allocation's buffer id
//                              behind the shim's back; prints got_new=1 when
//                              the query after that got the driver's new id
//   pointer_queries race       threads free and reallocate at one address
//                              while others ask its buffer id; prints
//                              stale=N (an id of an allocation whose free
//                              had returned before the query began)
//
// Exit status 0 when every driver call the program made itself succeeded.
// Versioned names first (driver_api_table.h), then the checks.
#include "driver_api_table.h"

#include "cuda_checks.h"

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstdint>
#include <cstring>
#include <dlfcn.h>
#include <string>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <utility>
#include <vector>

extern "C" {
long fake_cuda_attribute_queries(int attribute);
long fake_cuda_call_count(const char *name);
CUresult fake_cuda_pointer_attribute_truth(void *data, CUpointer_attribute attribute,
                                           CUdeviceptr ptr);
CUresult fake_cuda_pointer_attributes_truth(unsigned int count, CUpointer_attribute *attributes,
                                            void **data, CUdeviceptr ptr);
void fake_cuda_hold_pointer_answers(int hold);
void fake_cuda_renumber_buffer(CUdeviceptr ptr);
void fake_cuda_wait_pointer_answers_held(long count);
}

namespace {

using GetOne = decltype(&cuPointerGetAttribute);
using GetMany = decltype(&cuPointerGetAttributes);
GetOne get_one = nullptr;
GetMany get_many = nullptr;

const CUpointer_attribute answered[] = {
    CU_POINTER_ATTRIBUTE_BUFFER_ID,        CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
    CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,   CU_POINTER_ATTRIBUTE_CONTEXT,
    CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, CU_POINTER_ATTRIBUTE_RANGE_SIZE,
    CU_POINTER_ATTRIBUTE_IS_MANAGED,
};
// The answered ones and some the shim always forwards.
const CUpointer_attribute asked[] = {
    CU_POINTER_ATTRIBUTE_BUFFER_ID,        CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
    CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,   CU_POINTER_ATTRIBUTE_CONTEXT,
    CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, CU_POINTER_ATTRIBUTE_RANGE_SIZE,
    CU_POINTER_ATTRIBUTE_IS_MANAGED,       CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE,
    CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE,   CU_POINTER_ATTRIBUTE_DEVICE_POINTER,
};
constexpr unsigned asked_count = sizeof(asked) / sizeof(asked[0]);

long checked = 0, mismatches = 0;

void mismatch(const char *step, CUdeviceptr p, const char *how, int attribute)
{
    ++mismatches;
    std::fprintf(stderr, "mismatch at %s, 0x%llx: %s attribute %d\n", step,
                 static_cast<unsigned long long>(p), how, attribute);
}

// Each attribute alone, twice (the second time the shim may answer it),
// then all together, twice, and the answered ones together.
void compare(const char *step, CUdeviceptr p)
{
    for (int round = 0; round < 2; ++round) {
        for (CUpointer_attribute a : asked) {
            uint64_t got = 0x5a5a5a5a5a5a5a5aull, truth = got;
            CUresult rc = get_one(&got, a, p);
            CUresult rc_truth = fake_cuda_pointer_attribute_truth(&truth, a, p);
            ++checked;
            if (rc != rc_truth || (rc == CUDA_SUCCESS && got != truth))
                mismatch(step, p, "cuPointerGetAttribute", a);
        }
        for (unsigned count : {asked_count, 7u}) {
            uint64_t got[asked_count], truth[asked_count];
            void *got_data[asked_count], *truth_data[asked_count];
            for (unsigned i = 0; i < count; ++i) {
                got[i] = truth[i] = 0x5a5a5a5a5a5a5a5aull;
                got_data[i] = &got[i];
                truth_data[i] = &truth[i];
            }
            auto *list = const_cast<CUpointer_attribute *>(count == asked_count ? asked : answered);
            CUresult rc = get_many(count, list, got_data, p);
            CUresult rc_truth = fake_cuda_pointer_attributes_truth(count, list, truth_data, p);
            ++checked;
            if (rc != rc_truth || (rc == CUDA_SUCCESS && memcmp(got, truth, count * 8) != 0))
                mismatch(step, p, "cuPointerGetAttributes", int(count));
        }
    }
}

void compare_range(const char *step, CUdeviceptr p, size_t size)
{
    compare(step, p);
    compare(step, p + size / 2);
    compare(step, p + size - 1);
}

int device_life(CUcontext primary)
{
    CUdeviceptr a = 0, b = 0, pitched = 0, managed = 0;
    CHECK_CU(cuMemAlloc_v2(&a, 1 << 20));
    compare_range("device", a, 1 << 20);
    CHECK_CU(cuMemFree_v2(a));
    compare("device freed", a);
    CHECK_CU(cuMemAlloc_v2(&b, 1 << 20)); // the same address, a new buffer
    compare_range("device again", b, 1 << 20);
    CHECK_CU(cuMemFree_v2(b));
    size_t pitch = 0;
    CHECK_CU(cuMemAllocPitch_v2(&pitched, &pitch, 1000, 10, 4));
    compare_range("pitch", pitched, pitch * 10);
    CHECK_CU(cuMemFree_v2(pitched));
    CHECK_CU(cuMemAllocManaged(&managed, 8192, CU_MEM_ATTACH_GLOBAL));
    compare_range("managed", managed, 8192);
    CHECK_CU(cuMemFree_v2(managed));
    compare("managed freed", managed);
    void *host = nullptr;
    CHECK_CU(cuMemHostAlloc(&host, 4096, 0));
    compare_range("host", CUdeviceptr(host), 4096);
    CHECK_CU(cuMemFreeHost(host));
    compare("host freed", CUdeviceptr(host));
    std::vector<char> buffer(16384);
    CHECK_CU(cuMemHostRegister_v2(buffer.data(), buffer.size(), 0));
    compare_range("registered", CUdeviceptr(buffer.data()), buffer.size());
    CHECK_CU(cuMemHostUnregister(buffer.data()));
    compare("unregistered", CUdeviceptr(buffer.data()));
    (void)primary;
    return 0;
}

int pool_life()
{
    CUdeviceptr p = 0;
    CHECK_CU(cuMemAllocAsync(&p, 65536, nullptr));
    compare_range("pool", p, 65536);
    CHECK_CU(cuMemFreeAsync(p, nullptr));
    compare("pool freed", p);
    CUmemPoolProps props{};
    props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    CUmemoryPool pool = nullptr;
    CHECK_CU(cuMemPoolCreate(&pool, &props));
    CHECK_CU(cuMemAllocFromPoolAsync(&p, 65536, pool, nullptr));
    compare_range("own pool", p, 65536);
    CHECK_CU(cuMemFreeAsync(p, nullptr));
    CHECK_CU(cuMemPoolTrimTo(pool, 0));
    compare("pool trimmed", p);
    CHECK_CU(cuMemPoolDestroy(pool));
    return 0;
}

int vmm_life()
{
    const size_t size = 2 << 20;
    CUdeviceptr va = 0;
    CHECK_CU(cuMemAddressReserve(&va, 2 * size, 0, 0, 0));
    CUmemAllocationProp prop{};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    CUmemGenericAllocationHandle handle = 0;
    CHECK_CU(cuMemCreate(&handle, size, &prop, 0));
    CHECK_CU(cuMemMap(va, size, 0, handle, 0));
    compare_range("vmm mapped", va, size);
    CHECK_CU(cuMemUnmap(va, size));
    compare("vmm unmapped", va);
    CHECK_CU(cuMemMap(va + size, size, 0, handle, 0)); // the same memory elsewhere
    compare_range("vmm remapped", va + size, size);
    compare("vmm old place", va);
    CHECK_CU(cuMemUnmap(va + size, size));
    CHECK_CU(cuMemRelease(handle));
    CHECK_CU(cuMemAddressFree(va, 2 * size));
    compare("vmm released", va + size);
    return 0;
}

int ipc_and_context_life()
{
    CUdeviceptr exported = 0, imported = 0;
    CHECK_CU(cuMemAlloc_v2(&exported, 65536));
    CUipcMemHandle handle;
    CHECK_CU(cuIpcGetMemHandle(&handle, exported));
    CHECK_CU(cuIpcOpenMemHandle_v2(&imported, handle, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS));
    compare_range("ipc import", imported, 65536);
    CHECK_CU(cuIpcCloseMemHandle(imported));
    compare("ipc closed", imported);
    CHECK_CU(cuMemFree_v2(exported));
    CUcontext primary = nullptr, other = nullptr;
    CHECK_CU(cuCtxGetCurrent(&primary));
    CHECK_CU(cuCtxCreate_v2(&other, 0, 0));
    CUdeviceptr in_other = 0;
    CHECK_CU(cuMemAlloc_v2(&in_other, 1 << 20));
    compare_range("other context", in_other, 1 << 20);
    CHECK_CU(cuCtxDestroy_v2(other));
    compare("context destroyed", in_other);
    CHECK_CU(cuCtxSetCurrent(primary));
    CUdeviceptr again = 0;
    CHECK_CU(cuMemAlloc_v2(&again, 1 << 20));
    compare_range("after teardown", again, 1 << 20);
    CHECK_CU(cuMemFree_v2(again));
    return 0;
}

// The child of a fork asks what its parent's shim learned.
int fork_life()
{
    CUdeviceptr p = 0;
    CHECK_CU(cuMemAlloc_v2(&p, 1 << 20));
    compare("before fork", p);
    fflush(nullptr);
    pid_t child = fork();
    if (child == 0) {
        compare("forked child", p);
        _exit(mismatches > 0 ? 3 : 0);
    }
    int status = 0;
    waitpid(child, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        mismatch("forked child", p, "exit status", status);
    compare("after fork", p);
    CHECK_CU(cuMemFree_v2(p));
    return 0;
}

bool resolve(const char *path)
{
    if (!strcmp(path, "symbol")) {
        get_one = &cuPointerGetAttribute;
        get_many = &cuPointerGetAttributes;
    } else if (!strcmp(path, "dlsym")) {
        get_one = reinterpret_cast<GetOne>(libcuda_dlsym("cuPointerGetAttribute"));
        get_many = reinterpret_cast<GetMany>(libcuda_dlsym("cuPointerGetAttributes"));
    } else if (!strcmp(path, "proc") && resolve_proc_address_v2()) {
        get_one = reinterpret_cast<GetOne>(proc_lookup_v2("cuPointerGetAttribute", 12000, false));
        get_many =
            reinterpret_cast<GetMany>(proc_lookup_v2("cuPointerGetAttributes", 12000, false));
    }
    return get_one && get_many;
}

// Each answered attribute asked `rounds` times alone about p; the driver's
// count of queries of each before, in `before`.
using QueryCounts = long[sizeof(answered) / sizeof(answered[0])];
int ask_each_alone(CUdeviceptr p, int rounds, QueryCounts &before)
{
    int i = 0;
    for (CUpointer_attribute a : answered)
        before[i++] = fake_cuda_attribute_queries(a);
    for (int round = 0; round < rounds; ++round)
        for (CUpointer_attribute a : answered) {
            uint64_t value = 0;
            CHECK_CU(get_one(&value, a, p));
        }
    return 0;
}

// The fewest and the most queries the driver had of one answered attribute
// since `before`.
std::pair<long, long> queries_since(const QueryCounts &before)
{
    std::pair<long, long> range{LONG_MAX, 0};
    int i = 0;
    for (CUpointer_attribute a : answered) {
        long asked = fake_cuda_attribute_queries(a) - before[i++];
        range = {std::min(range.first, asked), std::max(range.second, asked)};
    }
    return range;
}

// Memory another process exported: the shim saw no allocation of it, so
// every query goes to the driver.
int imported()
{
    CUdeviceptr exported = 0, p = 0;
    CHECK_CU(cuMemAlloc_v2(&exported, 65536));
    CUipcMemHandle handle;
    CHECK_CU(cuIpcGetMemHandle(&handle, exported));
    CHECK_CU(cuIpcOpenMemHandle_v2(&p, handle, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS));
    QueryCounts before;
    if (ask_each_alone(p + 64, 10, before))
        return 1;
    std::printf("fewest_driver_queries=%ld\n", queries_since(before).first);
    CHECK_CU(cuIpcCloseMemHandle(p));
    CHECK_CU(cuMemFree_v2(exported));
    return 0;
}

// Memory the shim cannot answer for: each query must cost the driver what
// the program's own call costs, once the table has seen it cannot learn
// it; and once the memory becomes memory it tracks, it learns it.
int untracked()
{
    std::vector<char> host(1 << 20);
    const auto h = reinterpret_cast<CUdeviceptr>(host.data()) + 64;
    CUpointer_attribute three[] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_CONTEXT,
                                   CU_POINTER_ATTRIBUTE_IS_MANAGED};
    long differ = 0;
    auto ask_host = [&] {
        unsigned type = 7, managed = 7, type_truth = 8, managed_truth = 8;
        CUcontext ctx = nullptr, ctx_truth = nullptr;
        void *got[] = {&type, &ctx, &managed};
        void *truth[] = {&type_truth, &ctx_truth, &managed_truth};
        differ += get_many(3, three, got, h) != CUDA_SUCCESS;
        fake_cuda_pointer_attributes_truth(3, three, truth, h);
        differ += type != type_truth || ctx != ctx_truth || managed != managed_truth;
        unsigned one = 7, one_truth = 8;
        const CUresult rc = get_one(&one, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, h);
        const CUresult rc_truth =
            fake_cuda_pointer_attribute_truth(&one_truth, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, h);
        differ += rc != rc_truth || (rc == CUDA_SUCCESS && one != one_truth);
    };
    long ranges = fake_cuda_call_count("cuMemGetAddressRange_v2");
    for (int round = 0; round < 10; ++round)
        ask_host();
    std::printf("host_range_calls=%ld\n", fake_cuda_call_count("cuMemGetAddressRange_v2") - ranges);

    CUdeviceptr exported = 0, p = 0;
    CHECK_CU(cuMemAlloc_v2(&exported, 65536));
    CUipcMemHandle handle;
    CHECK_CU(cuIpcGetMemHandle(&handle, exported));
    CHECK_CU(cuIpcOpenMemHandle_v2(&p, handle, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS));
    ranges = fake_cuda_call_count("cuMemGetAddressRange_v2");
    QueryCounts before;
    if (ask_each_alone(p + 64, 10, before))
        return 1;
    std::printf("import_range_calls=%ld\n",
                fake_cuda_call_count("cuMemGetAddressRange_v2") - ranges);
    CHECK_CU(cuIpcCloseMemHandle(p));

    // The driver hands the import's address to the next allocation: the
    // shim saw that one made, and learns it.
    CUdeviceptr again = 0;
    CHECK_CU(cuMemAlloc_v2(&again, 65536));
    std::printf("reused_same_address=%d\n", again == p);
    if (ask_each_alone(again + 64, 10, before))
        return 1;
    std::printf("reused_driver_queries=%ld\n", queries_since(before).second);
    CHECK_CU(cuMemFree_v2(again));
    CHECK_CU(cuMemFree_v2(exported));
    std::printf("forwarded_differ=%ld\n", differ);
    return 0;
}

int repeat()
{
    CUdeviceptr p = 0;
    CHECK_CU(cuMemAlloc_v2(&p, 1 << 20));
    QueryCounts before;
    if (ask_each_alone(p + 64, 10, before))
        return 1;
    for (int round = 0; round < 10; ++round) {
        uint64_t values[7];
        void *data[7];
        for (int j = 0; j < 7; ++j)
            data[j] = &values[j];
        CHECK_CU(get_many(7, const_cast<CUpointer_attribute *>(answered), data, p));
    }
    std::printf("most_driver_queries=%ld\n", queries_since(before).second);
    CHECK_CU(cuMemFree_v2(p));
    return 0;
}

// A free's return is published with the buffer id it ended; a query that
// begins after reading it must not answer that id (the fake driver's ids
// only grow, so any id up to it is stale). Each allocation lives until the
// askers made a few queries of it, so that the shim learns and answers
// some, and the frees race the answers.
int race()
{
    std::atomic<uint64_t> freed_id{0};
    std::atomic<CUdeviceptr> where{0};
    std::atomic<bool> done{false};
    std::atomic<long> stale{0}, queries{0};
    CUcontext context = nullptr;
    CHECK_CU(cuCtxGetCurrent(&context));
    auto churn = [&] {
        cuCtxSetCurrent(context);
        for (int i = 0; i < 2000; ++i) {
            CUdeviceptr p = 0;
            uint64_t id = 0;
            CHECK_CU_OR_EXIT(cuMemAlloc_v2(&p, 1 << 16), 2);
            fake_cuda_pointer_attribute_truth(&id, CU_POINTER_ATTRIBUTE_BUFFER_ID, p);
            where.store(p);
            const long until = queries.load() + 8;
            while (queries.load() < until)
                std::this_thread::yield();
            CHECK_CU_OR_EXIT(cuMemFree_v2(p), 2);
            freed_id.store(id, std::memory_order_release);
        }
        done.store(true);
    };
    auto ask = [&] {
        cuCtxSetCurrent(context);
        while (!done.load()) {
            const uint64_t ended = freed_id.load(std::memory_order_acquire);
            uint64_t id = 0;
            if (get_one(&id, CU_POINTER_ATTRIBUTE_BUFFER_ID, where.load()) == CUDA_SUCCESS &&
                id <= ended)
                ++stale;
            ++queries;
        }
    };
    std::vector<std::thread> threads;
    threads.emplace_back(churn);
    for (int i = 0; i < 3; ++i)
        threads.emplace_back(ask);
    for (std::thread &t : threads)
        t.join();
    std::printf("stale=%ld\n", stale.load());
    return 0;
}

int interleave()
{
    CUdeviceptr p = 0, again = 0;
    CHECK_CU(cuMemAlloc_v2(&p, 1 << 20));
    uint64_t asked = 0, old_id = 0;
    fake_cuda_pointer_attribute_truth(&old_id, CU_POINTER_ATTRIBUTE_BUFFER_ID, p);
    fake_cuda_hold_pointer_answers(1);
    std::thread first([&] { get_one(&asked, CU_POINTER_ATTRIBUTE_BUFFER_ID, p); });
    fake_cuda_wait_pointer_answers_held(1);
    CHECK_CU(cuMemFree_v2(p));
    CHECK_CU(cuMemAlloc_v2(&again, 1 << 20));
    fake_cuda_hold_pointer_answers(0);
    first.join();
    uint64_t now = 0;
    CHECK_CU(get_one(&now, CU_POINTER_ATTRIBUTE_BUFFER_ID, again));
    std::printf("reused=%d stale=%d\n", again == p, now == old_id);
    CHECK_CU(cuMemFree_v2(again));
    return 0;
}

int verify()
{
    CUdeviceptr p = 0;
    CHECK_CU(cuMemAlloc_v2(&p, 1 << 20));
    uint64_t id = 0, again = 0, renumbered = 0;
    CHECK_CU(get_one(&id, CU_POINTER_ATTRIBUTE_BUFFER_ID, p));
    CHECK_CU(get_one(&again, CU_POINTER_ATTRIBUTE_BUFFER_ID, p));
    fake_cuda_renumber_buffer(p);
    CHECK_CU(get_one(&renumbered, CU_POINTER_ATTRIBUTE_BUFFER_ID, p));
    std::printf("got_new=%d\n", renumbered != id);
    CHECK_CU(cuMemFree_v2(p));
    return 0;
}

} // namespace

int main(int argc, char **argv)
{
    CUcontext primary = current_primary_context();
    const std::string mode = argc > 1 ? argv[1] : "";
    if (!primary || !resolve(argc > 2 ? argv[2] : "symbol")) {
        std::fprintf(stderr, "pointer_queries: no context or no pointer query functions\n");
        return 2;
    }
    if (mode == "repeat")
        return repeat();
    if (mode == "imported")
        return imported();
    if (mode == "untracked")
        return untracked();
    if (mode == "race")
        return race();
    if (mode == "interleave")
        return interleave();
    if (mode == "verify")
        return verify();
    if (mode != "life")
        return 2;
    if (device_life(primary) || pool_life() || vmm_life() || ipc_and_context_life() || fork_life())
        return 1;
    std::printf("checked=%ld mismatches=%ld\n", checked, mismatches);
    return 0;
}
