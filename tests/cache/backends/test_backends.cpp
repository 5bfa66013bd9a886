// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// The dma-buf backend over a fake driver whose exported "dma-buf" fds are
// real (eventfds), so that closing them is observable; the kmod backend
// without a module; the GDRHOOK_BACKEND selection.
#include "cache/backends/dmabuf_backend.h"
#include "cache/backends/kmod_backend.h"
#include "cache/backends/pin_user_pages_backend.h"
#include "cache/backends/select_backend.h"
#include "cache/registration/registration_cache.h"

#include <catch2/catch.hpp>

#include <cerrno>
#include <fcntl.h>
#include <memory>
#include <mutex>
#include <set>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

using namespace gdrhook;

namespace {

// The fake driver's state: plain globals, since the driver API is a table
// of function pointers with no context argument.
struct FakeDriver {
    std::mutex mutex;
    std::set<unsigned long long> managed;
    std::set<unsigned long long> sync_memops;
    std::set<unsigned long long> vmm; // cuMemMap'ed: no SYNC_MEMOPS attribute
    std::set<int> exported;
    int export_result = cuda::success;
    int dma_buf_supported = 1;
    int integrated = 0; // CU_DEVICE_ATTRIBUTE_INTEGRATED
    int exports = 0;
} driver_state;

int fake_get_handle(void *handle, unsigned long long dptr, size_t size, int type,
                    unsigned long long flags)
{
    std::lock_guard<std::mutex> lock(driver_state.mutex);
    if (type != cuda::mem_range_handle_type_dma_buf_fd || flags != 0 || size == 0 || !dptr)
        return cuda::error_invalid_value;
    if (driver_state.export_result != cuda::success)
        return driver_state.export_result;
    int fd = eventfd(0, 0); // the backend, not the driver, makes it close-on-exec
    driver_state.exported.insert(fd);
    driver_state.exports++;
    *static_cast<int *>(handle) = fd;
    return cuda::success;
}

int fake_set_attribute(const void *value, int attribute, unsigned long long ptr)
{
    std::lock_guard<std::mutex> lock(driver_state.mutex);
    if (attribute != cuda::pointer_attribute_sync_memops ||
        *static_cast<const unsigned int *>(value) != 1)
        return cuda::error_invalid_value;
    if (driver_state.vmm.count(ptr))
        return cuda::error_not_supported; // what the real driver says
    driver_state.sync_memops.insert(ptr);
    return cuda::success;
}

int fake_get_attribute(void *data, int attribute, unsigned long long ptr)
{
    std::lock_guard<std::mutex> lock(driver_state.mutex);
    if (attribute != cuda::pointer_attribute_is_managed)
        return cuda::error_invalid_value;
    *static_cast<unsigned int *>(data) = driver_state.managed.count(ptr) ? 1 : 0;
    return cuda::success;
}

int fake_device_attribute(int *value, int attribute, int)
{
    if (attribute == cuda::device_attribute_integrated) {
        *value = driver_state.integrated;
        return cuda::success;
    }
    if (attribute != cuda::device_attribute_dma_buf_supported)
        return cuda::error_invalid_value;
    *value = driver_state.dma_buf_supported;
    return cuda::success;
}

DriverApi fake_api()
{
    DriverApi api;
    api.mem_get_handle_for_address_range = fake_get_handle;
    api.pointer_set_attribute = fake_set_attribute;
    api.pointer_get_attribute = fake_get_attribute;
    api.device_get_attribute = fake_device_attribute;
    return api;
}

bool fd_open(int fd)
{
    return fcntl(fd, F_GETFD) != -1 || errno != EBADF;
}

void reset_driver()
{
    std::lock_guard<std::mutex> lock(driver_state.mutex);
    driver_state.managed.clear();
    driver_state.sync_memops.clear();
    driver_state.vmm.clear();
    driver_state.exported.clear();
    driver_state.export_result = cuda::success;
    driver_state.dma_buf_supported = 1;
    driver_state.integrated = 0;
    driver_state.exports = 0;
}

} // namespace

TEST_CASE("the dma-buf backend sets SYNC_MEMOPS, exports an fd, and unpins by closing it",
          "[backend]")
{
    reset_driver();
    DmabufBackend backend(fake_api());
    Pin pin;
    REQUIRE(backend.pin(0x7000000, 1 << 20, pin).ok());
    REQUIRE(pin.fd.valid());
    REQUIRE(fd_open(pin.fd.get()));
    REQUIRE(driver_state.sync_memops.count(0x7000000) == 1);
    int fd = pin.fd.get();
    REQUIRE(backend.unpin(&pin, 1).ok());
    REQUIRE_FALSE(pin.fd.valid());
    REQUIRE_FALSE(fd_open(fd));
}

TEST_CASE("the dma-buf backend pins VMM mappings, which have no SYNC_MEMOPS", "[backend]")
{
    // On an H100 every pin of NCCL's, JAX's and PyTorch's cuMemMap'ed memory
    // failed on CUDA_ERROR_NOT_SUPPORTED from that attribute.
    reset_driver();
    DmabufBackend backend(fake_api());
    driver_state.vmm.insert(0x7400000);
    Pin pin;
    REQUIRE(backend.pin(0x7400000, 2 << 20, pin).ok());
    REQUIRE(pin.fd.valid());
    CHECK(driver_state.sync_memops.count(0x7400000) == 0);
    // A program the application execs must not inherit the export.
    CHECK((fcntl(pin.fd.get(), F_GETFD) & FD_CLOEXEC) != 0);
    REQUIRE(backend.unpin(&pin, 1).ok());
}

TEST_CASE("the dma-buf backend refuses managed memory and maps driver errors", "[backend]")
{
    reset_driver();
    DmabufBackend backend(fake_api());
    Pin pin;
    driver_state.managed.insert(0x8000000);
    REQUIRE(backend.pin(0x8000000, 4096, pin).code == StatusCode::managed);
    REQUIRE(driver_state.exports == 0);

    driver_state.export_result = cuda::error_out_of_memory;
    REQUIRE(backend.pin(0x9000000, 4096, pin).code == StatusCode::no_space);
    driver_state.export_result = cuda::error_invalid_value;
    REQUIRE(backend.pin(0x9000000, 4096, pin).code == StatusCode::invalid);
    driver_state.export_result = 999;
    Status status = backend.pin(0x9000000, 4096, pin);
    REQUIRE(status.code == StatusCode::driver_error);
    REQUIRE(status.detail == 999);
    REQUIRE_FALSE(pin.fd.valid());
}

TEST_CASE("a cache over the dma-buf backend closes the fd after the free, not before",
          "[backend][cache]")
{
    reset_driver();
    CacheOptions options;
    options.allocation_of = [](uint64_t addr, AllocationInfo &out) {
        out = AllocationInfo{addr & ~uint64_t(0xFFFFF), 1 << 20, false};
        return true;
    };
    RegistrationCache cache(std::make_unique<DmabufBackend>(fake_api()), options);
    Registration reg;
    REQUIRE(cache.lookup(0xA00000 + 100, 100, reg).ok());
    REQUIRE(reg.base == 0xA00000);
    REQUIRE(fd_open(reg.fd));
    cache.invalidate(0xA00000, 1 << 20);
    REQUIRE(fd_open(reg.fd)); // the worker closes it
    REQUIRE(cache.drain_unpins(nullptr) == 1);
    REQUIRE_FALSE(fd_open(reg.fd));
}

TEST_CASE("the kmod backend reports an absent device clearly", "[backend]")
{
    KmodBackend backend;
    Status status = backend.open("/nonexistent/gdrhook");
    REQUIRE(status.code == StatusCode::no_device);
    REQUIRE(std::string(status.what).find("/dev/gdrhook") != std::string::npos);
    Pin pin;
    REQUIRE(backend.pin(0x10000, 65536, pin).code == StatusCode::no_device);
    // Nothing to wait on and nothing revoked (the VM test covers the rest).
    REQUIRE(backend.revocation_fd() == -1);
    std::vector<uint64_t> revoked;
    REQUIRE(backend.take_revocations(revoked) == 0);
    REQUIRE(revoked.empty());
}

namespace {

// A kmod backend attached to `device` as if it were /dev/gdrhook (the
// module's answers made up: it pins GPU memory).
std::unique_ptr<KmodBackend> attached_to(const char *device)
{
    ModuleProbe probe;
    probe.facts.open_errno = 0;
    probe.facts.answers_version = true;
    probe.facts.abi_fits = true;
    probe.facts.nvp2p = true;
    probe.facts.unpin_batch_max = 8;
    probe.device = UniqueFd(::open(device, O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    REQUIRE(probe.device.valid());
    auto backend = std::make_unique<KmodBackend>(fake_api());
    REQUIRE(backend->attach(std::move(probe)).ok());
    return backend;
}

struct stat stat_of(const char *path)
{
    struct stat st = {};
    REQUIRE(::stat(path, &st) == 0);
    return st;
}

} // namespace

TEST_CASE("an unpin touches the descriptor /dev/gdrhook had only while it names the same device "
          "and inode",
          "[backend]")
{
    // Any ioctl on a directory fails (ENOTTY), so an unpin that reached the
    // file under the number says so. /proc and /sys are the roots of two
    // file systems that both number their root 1: the same inode on
    // another device, as a file of a fresh tmpfs can be; /proc/self is
    // another inode on /proc's device.
    const struct stat device = stat_of("/proc");
    const struct stat same_inode = stat_of("/sys");
    const struct stat same_device = stat_of("/proc/self/");
    REQUIRE(same_inode.st_ino == device.st_ino);
    REQUIRE(same_inode.st_dev != device.st_dev);
    REQUIRE(same_device.st_dev == device.st_dev);
    REQUIRE(same_device.st_ino != device.st_ino);

    SECTION("still its own file: the unpin reaches it")
    {
        auto backend = attached_to("/proc");
        Pin pins[1];
        pins[0].handle = 7;
        CHECK(backend->unpin(pins, 1).code == StatusCode::io_error);
    }
    for (const char *impostor : {"/sys", "/proc/self/"}) {
        DYNAMIC_SECTION("the program's own file took the number: " << impostor)
        {
            int number = -1;
            {
                auto backend = attached_to("/proc");
                number = backend->revocation_fd();
                REQUIRE(number >= 0);
                // The program closes every descriptor and opens its own
                // file, which gets the number.
                ::close(number);
                const int own = ::open(impostor, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                REQUIRE(own >= 0);
                REQUIRE(::dup2(own, number) == number);
                ::close(own);
                Pin pins[2];
                pins[0].handle = 7;
                pins[1].handle = 8;
                CHECK(backend->unpin(pins, 2).ok());
                CHECK(pins[0].handle == 0); // released when the program closed it
                CHECK(pins[1].handle == 0);
                std::vector<uint64_t> revoked;
                CHECK(backend->take_revocations(revoked) == 0);
            }
            // Nor closed it, as the backend went.
            CHECK(::fcntl(number, F_GETFD) != -1);
            ::close(number);
        }
    }
}

TEST_CASE("GDRHOOK_BACKEND selects kmod, then dma-buf, then none, and says why", "[backend]")
{
    reset_driver();
    BackendChoice choice;
    REQUIRE(
        select_backend(Backend::auto_select, fake_api(), 0, "/nonexistent/gdrhook", choice).ok());
    REQUIRE(choice.backend->kind() == BackendKind::dmabuf);
    REQUIRE(choice.reason.find("DMA_BUF_SUPPORTED") != std::string::npos);

    driver_state.dma_buf_supported = 0;
    REQUIRE(
        select_backend(Backend::auto_select, fake_api(), 0, "/nonexistent/gdrhook", choice).ok());
    REQUIRE(choice.backend->kind() == BackendKind::none);
    REQUIRE(choice.reason.find("absent") != std::string::npos);

    Status status = select_backend(Backend::kmod, fake_api(), 0, "/nonexistent/gdrhook", choice);
    REQUIRE(status.code == StatusCode::no_device);
    REQUIRE(choice.backend->kind() == BackendKind::none);

    REQUIRE(select_backend(Backend::none, fake_api(), 0, "/dev/gdrhook", choice).ok());
    REQUIRE(choice.backend->kind() == BackendKind::none);
    REQUIRE(select_backend(Backend::dmabuf, DriverApi{}, 0, "/dev/gdrhook", choice).ok());
    REQUIRE(choice.backend->kind() == BackendKind::dmabuf);
}

TEST_CASE("on an integrated GPU auto tries pin_user_pages first and says why it is not taken",
          "[backend]")
{
    reset_driver();
    BackendChoice choice;
    REQUIRE(
        select_backend(Backend::auto_select, fake_api(), 0, "/nonexistent/gdrhook", choice).ok());
    REQUIRE(choice.reason.find("integrated") == std::string::npos);

    driver_state.integrated = 1;
    REQUIRE(
        select_backend(Backend::auto_select, fake_api(), 0, "/nonexistent/gdrhook", choice).ok());
    REQUIRE(choice.backend->kind() == BackendKind::dmabuf);
    REQUIRE(choice.reason.find("the GPU is integrated but /dev/gdrhook is absent") !=
            std::string::npos);

    // Asked for by name: without the module, nothing is pinned, and the
    // caller is told.
    Status status =
        select_backend(Backend::pin_user_pages, fake_api(), 0, "/nonexistent/gdrhook", choice);
    REQUIRE(status.code == StatusCode::no_device);
    REQUIRE(choice.backend->kind() == BackendKind::none);
    REQUIRE(choice.reason.find("GDRHOOK_BACKEND=pin_user_pages but") != std::string::npos);
}

TEST_CASE("the pin_user_pages backend pins host memory, registered memory too, in whole pages",
          "[backend]")
{
    PinUserPagesBackend backend(fake_api());
    REQUIRE(backend.kind() == BackendKind::pin_user_pages);
    REQUIRE(std::string(backend.name()) == "pin_user_pages");
    REQUIRE(backend.alignment() == static_cast<uint64_t>(sysconf(_SC_PAGESIZE)));
    REQUIRE(backend.pins_host_memory(0));
    REQUIRE(backend.pins_registered_host_memory());
    REQUIRE_FALSE(KmodBackend(fake_api()).pins_registered_host_memory());
    REQUIRE(backend.open("/nonexistent/gdrhook").code == StatusCode::no_device);
}
