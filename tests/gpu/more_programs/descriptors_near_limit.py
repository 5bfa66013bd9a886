# SPDX-License-Identifier: MIT OR GPL-2.0-only
"""A program near its descriptor limit (RLIMIT_NOFILE lowered to 1024,
then the program runs again under it so that it holds from the start)
with many pinnable allocations live: it opens /dev/null until EMFILE and
prints how many descriptors it fell short of the limit; at the limit it
allocates device and host memory and creates a stream (a dma-buf pin
needs a descriptor, the program's calls must not); then closes its files,
frees everything and checks that the memory came back. The shim's pins
hold dma-buf descriptors: they must not take the program's. Run plain
and hooked by tests/gpu/more_programs.sh."""
import errno
import os
import resource
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from driver_calls import as_int, call, cu, ok, primary_context  # noqa: E402 - after its path

MIB = 1 << 20
LIMIT = 1024
PIECES = 300
SLACK = 256 * MIB
# Descriptors a process may fall short of the limit for reasons of its own
# (the interpreter, the driver, a log) without a program noticing.
TOLERATED = 16


def relaunch_under_the_limit():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if os.environ.get("DESCRIPTORS_NEAR_LIMIT_CHILD") == "1":
        return
    limit = min(LIMIT, hard) if hard != resource.RLIM_INFINITY else LIMIT
    resource.setrlimit(resource.RLIMIT_NOFILE, (limit, hard))
    os.environ["DESCRIPTORS_NEAR_LIMIT_CHILD"] = "1"
    sys.stdout.flush()
    os.execv(sys.executable, [sys.executable] + sys.argv)


def open_until_refused():
    files = []
    while True:
        try:
            files.append(os.open("/dev/null", os.O_RDONLY))
        except OSError as e:
            return files, errno.errorcode.get(e.errno, str(e.errno))


def main():
    relaunch_under_the_limit()
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    print(f"soft limit {soft}")
    dev, _ = primary_context()
    free0 = int(ok(cu.cuMemGetInfo)[0])
    # The driver's own descriptors are open by now; what the allocations
    # take after this is what the program loses.
    in_use = len(os.listdir("/proc/self/fd")) - 1  # less listdir's own
    pieces = [as_int(ok(cu.cuMemAlloc, 2 * MIB)) for _ in range(PIECES)]
    files, refusal = open_until_refused()
    short = soft - len(files) - in_use
    sys.stderr.write(f"{in_use} descriptors in use before, {len(files)} opened, short {short}\n")
    print(f"opened /dev/null until {refusal}; descriptors short of the limit "
          f"{'at most' if short <= TOLERATED else 'more than'} {TOLERATED}")
    at_limit = [call(cu.cuMemAlloc, 4 * MIB), call(cu.cuMemAllocHost, 4 * MIB),
                call(cu.cuMemAllocManaged, 4 * MIB, 1), call(cu.cuStreamCreate, 0)]
    print("at the limit: " + " ".join(name for name, _ in at_limit))
    name, extra = at_limit[0]
    if name == "CUDA_SUCCESS":
        ok(cu.cuMemsetD8, extra, 3, 4 * MIB)
        out = bytearray(8)
        ok(cu.cuMemcpyDtoH, out, extra, 8)
        print("memory allocated at the limit works:", out == bytearray([3]) * 8)
    os.close(files.pop())
    one_more = call(cu.cuMemAlloc, 4 * MIB)
    print("one descriptor free, another allocation:", one_more[0])
    files2, refusal2 = open_until_refused()
    print(f"after that allocation the program could open {len(files2)} more ({refusal2})")
    for f in files + files2:
        os.close(f)
    frees = {call(cu.cuMemFree, p)[0] for p in pieces}
    frees |= {call(cu.cuMemFree, as_int(v))[0] for n, v in (at_limit[0], one_more) if n == "CUDA_SUCCESS"}
    if at_limit[1][0] == "CUDA_SUCCESS":
        frees.add(call(cu.cuMemFreeHost, as_int(at_limit[1][1]))[0])
    if at_limit[2][0] == "CUDA_SUCCESS":
        frees.add(call(cu.cuMemFree, as_int(at_limit[2][1]))[0])
    if at_limit[3][0] == "CUDA_SUCCESS":
        ok(cu.cuStreamDestroy, at_limit[3][1])
    print("frees:", sorted(frees))
    back = int(ok(cu.cuMemGetInfo)[0])
    print(f"free memory back after the frees {abs(back - free0) <= SLACK}")
    files3, _ = open_until_refused()
    print(f"after the frees, descriptors short of the limit at most {TOLERATED}: "
          f"{soft - len(files3) - in_use <= TOLERATED}")
    for f in files3:
        os.close(f)
    ok(cu.cuDevicePrimaryCtxRelease, dev)
    print("descriptors near the limit done")


main()
