// SPDX-License-Identifier: GPL-2.0-only OR MIT
// test_fuzz.cpp - "What must be shown" 4, the fuzz loop: at least 1,000,000
// ioctl calls with random commands and random, mutated or plausible
// arguments, from two threads with their own files, mixed with revocations
// (provider FIRE), event reads and close/reopen. Every call must answer 0 or
// an errno the interface documents; afterwards nothing may be left pinned.
#include "common.hpp"

#include <algorithm>
#include <memory>
#include <thread>

namespace vmtest {
namespace {

class Rng {
public:
    explicit Rng(uint64_t seed) : s_(seed ? seed : 1) {}
    uint64_t next()
    {
        s_ ^= s_ << 13;
        s_ ^= s_ >> 7;
        s_ ^= s_ << 17;
        return s_;
    }
    uint64_t below(uint64_t n) { return next() % n; }
    bool chance(unsigned percent) { return below(100) < percent; }

private:
    uint64_t s_;
};

bool allowed(int e)
{
    switch (e) {
    case 0:
    case EINVAL:
    case ENOENT:
    case EFAULT:
    case EBADF:
    case EOVERFLOW:
    case ENOSPC:
    case E2BIG:
    case ENOTTY:
    case ENODEV:
    case EAGAIN:
    case ENOMEM:
    case EOPNOTSUPP: return true;
    default: return false;
    }
}

struct Stats {
    uint64_t calls = 0;
    uint64_t ok = 0;
    uint64_t pins = 0;
    uint64_t fired = 0;
};

class Fuzzer {
public:
    Fuzzer(uint64_t seed, uint64_t calls)
        : rng_(seed), calls_(calls), buf_(16 * kGpuPage), vgem_(16 * 4096),
          peer_(first_pci_device())
    {
        CHECK(vgem_.ok() && tp_.ok());
        reopen();
    }

    Stats run()
    {
        while (stats_.calls < calls_) {
            one_call();
            if (stats_.calls % 1024 == 0)
                housekeeping();
        }
        dev_.reset();
        return stats_;
    }

private:
    void reopen()
    {
        dev_.reset(new Gdrhook(O_RDWR | O_NONBLOCK | O_CLOEXEC));
        CHECK(dev_->ok());
        handles_.clear();
    }

    uint64_t some_handle()
    {
        if (!handles_.empty() && rng_.chance(80))
            return handles_[rng_.below(handles_.size())];
        static const uint64_t odd[] = {0, 1, 2, 1ULL << 31, ~0ULL, 0x7fffffff};
        return rng_.chance(50) ? odd[rng_.below(6)] : rng_.next();
    }

    uint64_t some_pointer(void *good)
    {
        switch (rng_.below(6)) {
        case 0: return 0;
        case 1: return 0x10;
        case 2: return 0xffff888000000000ULL;
        case 3: return rng_.next() | (1ULL << 63); // never our memory
        default: return reinterpret_cast<uintptr_t>(good);
        }
    }

    void pin_request(gdrhook_ioc_pin *p)
    {
        if (rng_.chance(50)) {
            *p = Gdrhook::nvp2p_req(buf_.data() + rng_.below(16) * kGpuPage,
                                    (1 + rng_.below(4)) * kGpuPage);
            if (rng_.chance(20))
                p->flags |= GDRHOOK_PIN_PERSISTENT;
        } else {
            *p = Gdrhook::dmabuf_req(vgem_.fd(), rng_.below(16) * 4096, (1 + rng_.below(4)) * 4096,
                                     peer_);
        }
        if (rng_.chance(50)) { // mutate one field
            auto *words = reinterpret_cast<uint32_t *>(p);
            size_t w = rng_.below(sizeof(*p) / 4);
            switch (rng_.below(4)) {
            case 0: words[w] = static_cast<uint32_t>(rng_.next()); break;
            case 1: words[w] ^= 1u << rng_.below(32); break;
            case 2: words[w] = 0; break;
            default: words[w] = ~0u; break;
            }
        }
    }

    void one_call()
    {
        alignas(16) unsigned char arg[256];
        unsigned long cmd = 0;
        void *argp = arg;
        const unsigned op = static_cast<unsigned>(rng_.below(100));
        bool is_pin = false;

        if (op < 35) {
            auto *p = reinterpret_cast<gdrhook_ioc_pin *>(arg);
            pin_request(p);
            cmd = GDRHOOK_IOCTL_PIN;
            is_pin = true;
        } else if (op < 50) {
            auto *u = reinterpret_cast<gdrhook_ioc_unpin *>(arg);
            u->handle = some_handle();
            cmd = GDRHOOK_IOCTL_UNPIN;
        } else if (op < 58) {
            auto *b = reinterpret_cast<gdrhook_ioc_unpin_batch *>(arg);
            *b = gdrhook_ioc_unpin_batch{};
            batch_.resize(1 + rng_.below(32));
            for (auto &h : batch_)
                h = some_handle();
            b->handles = rng_.chance(90) ? reinterpret_cast<uintptr_t>(batch_.data())
                                         : some_pointer(nullptr);
            b->count = rng_.chance(90) ? static_cast<uint32_t>(batch_.size())
                                       : static_cast<uint32_t>(rng_.next());
            if (b->count > batch_.size() &&
                b->handles == reinterpret_cast<uintptr_t>(batch_.data()))
                b->handles = some_pointer(nullptr) | 1; // never read past our array
            cmd = GDRHOOK_IOCTL_UNPIN_BATCH;
        } else if (op < 70) {
            auto *q = reinterpret_cast<gdrhook_ioc_query *>(arg);
            *q = gdrhook_ioc_query{};
            q->handle = some_handle();
            if (rng_.chance(5))
                q->reserved = 1;
            cmd = GDRHOOK_IOCTL_QUERY;
        } else if (op < 82) {
            auto *g = reinterpret_cast<gdrhook_ioc_get_pages *>(arg);
            *g = gdrhook_ioc_get_pages{};
            g->handle = some_handle();
            g->addrs = some_pointer(sink_);
            g->max_entries = static_cast<uint32_t>(rng_.below(65)); // sink_ holds 64
            g->first = static_cast<uint32_t>(rng_.below(8));
            cmd = GDRHOOK_IOCTL_GET_PAGES;
        } else if (op < 85) {
            cmd = GDRHOOK_IOCTL_GET_VERSION;
        } else {
            // Anything at all: random number, direction and size.
            for (auto &c : arg)
                c = static_cast<unsigned char>(rng_.next());
            const unsigned dir = static_cast<unsigned>(rng_.below(4));
            const unsigned type =
                rng_.chance(80) ? GDRHOOK_IOCTL_MAGIC : static_cast<unsigned>(rng_.below(256));
            const unsigned nr = static_cast<unsigned>(rng_.below(rng_.chance(80) ? 8 : 256));
            const unsigned size = rng_.chance(50) ? static_cast<unsigned>(rng_.below(80))
                                                  : static_cast<unsigned>(rng_.below(1 << 14));
            cmd = _IOC(dir, type, nr, size);
            if (cmd == GDRHOOK_IOCTL_GET_PAGES || cmd == GDRHOOK_IOCTL_GET_VERSION ||
                cmd == GDRHOOK_IOCTL_QUERY || cmd == GDRHOOK_IOCTL_PIN ||
                cmd == GDRHOOK_IOCTL_UNPIN_BATCH)
                argp = reinterpret_cast<void *>(
                    some_pointer(nullptr)); // never let random bytes aim a write at us
            else if (rng_.chance(20))
                argp = reinterpret_cast<void *>(some_pointer(arg));
        }
        if (op < 85 && rng_.chance(3))
            argp = reinterpret_cast<void *>(some_pointer(arg));

        const int e = dev_->call(cmd, argp);
        stats_.calls++;
        if (!allowed(e))
            fail(__FILE__, __LINE__,
                 "ioctl " + std::to_string(cmd) + " answered errno " + std::to_string(e));
        if (e == 0) {
            stats_.ok++;
            if (is_pin && argp == arg) {
                stats_.pins++;
                handles_.push_back(reinterpret_cast<gdrhook_ioc_pin *>(arg)->handle);
            }
        }
    }

    void housekeeping()
    {
        std::vector<gdrhook_event> ev;
        switch (rng_.below(8)) {
        case 0: { // the "driver" frees a random part of the buffer
            uint32_t n = 0;
            CHECK_OK(tp_.fire(buf_.data() + rng_.below(16) * kGpuPage,
                              kGpuPage * (1 + rng_.below(4)), &n));
            stats_.fired += n;
            break;
        }
        case 1: CHECK_OK(dev_->read_events(&ev)); break;
        case 2:
            if (rng_.chance(10))
                reopen(); // close with whatever is pinned
            break;
        default: break;
        }
        if (handles_.size() > 2048) {
            for (size_t i = 0; i < handles_.size(); i += GDRHOOK_UNPIN_BATCH_MAX) {
                uint32_t n = static_cast<uint32_t>(
                    std::min<size_t>(GDRHOOK_UNPIN_BATCH_MAX, handles_.size() - i));
                dev_->unpin_batch(handles_.data() + i, n); // some are gone already
            }
            handles_.clear();
        }
    }

    Rng rng_;
    uint64_t calls_;
    HostBuffer buf_;
    VgemBuffer vgem_;
    PciAddr peer_;
    Provider tp_;
    std::unique_ptr<Gdrhook> dev_;
    std::vector<uint64_t> handles_;
    std::vector<uint64_t> batch_;
    uint64_t sink_[64] = {};
    Stats stats_;
};

} // namespace

int test_fuzz()
{
    const char *s = std::getenv("GDRHOOKTEST_VM_FUZZ_CALLS");
    const uint64_t total = s ? std::strtoull(s, nullptr, 10) : 1000000;
    const char *seed_s = std::getenv("GDRHOOKTEST_VM_FUZZ_SEED");
    const uint64_t seed =
        seed_s ? std::strtoull(seed_s, nullptr, 0)
               : static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
    std::printf("fuzz: seed 0x%" PRIx64 " (GDRHOOKTEST_VM_FUZZ_SEED to replay)\n", seed);
    Stopwatch sw;
    Stats st[2];
    std::thread t0([&] { st[0] = Fuzzer(seed, total / 2).run(); });
    std::thread t1(
        [&] { st[1] = Fuzzer(seed * 0x9e3779b97f4a7c15ULL + 1, total - total / 2).run(); });
    t0.join();
    t1.join();
    const uint64_t calls = st[0].calls + st[1].calls;
    std::printf("fuzz: %" PRIu64 " ioctl calls in %.1f s (%" PRIu64 " succeeded, %" PRIu64
                " pins made, %" PRIu64 " revoked by the provider)\n",
                calls, sw.seconds(), st[0].ok + st[1].ok, st[0].pins + st[1].pins,
                st[0].fired + st[1].fired);
    CHECK(calls >= total);
    CHECK(st[0].pins + st[1].pins > 1000); // the loop got past validation
    check_no_leaks("after fuzz");
    return 0;
}

} // namespace vmtest
