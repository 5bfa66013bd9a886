# SPDX-License-Identifier: MIT OR GPL-2.0-only
"""A process that forks after CUDA is initialized, with device memory
allocated, asked about and written. Children that touch CUDA: one ends
with os._exit, one with a normal interpreter exit (exit handlers run,
the shim's among them), and each prints the error names its driver calls
got, among them pointer questions about the parent's memory that the
shim could answer from its copy of the parent's table. Then a forked
child that execs another program and a subprocess; the parent's memory
must be intact and its questions answered as before. Run plain and
hooked by tests/gpu/more_programs.sh."""
import ctypes
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from driver_calls import as_int, call, cu, ok, primary_context  # noqa: E402 - after its path

MIB = 1 << 20
A = cu.CUpointer_attribute


def questions(ptr):
    out = []
    for attr in (A.CU_POINTER_ATTRIBUTE_MEMORY_TYPE, A.CU_POINTER_ATTRIBUTE_BUFFER_ID,
                 A.CU_POINTER_ATTRIBUTE_RANGE_SIZE, A.CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL):
        name, value = call(cu.cuPointerGetAttribute, attr, ptr)
        out.append(name if name != "CUDA_SUCCESS" else "id" if attr == A.CU_POINTER_ATTRIBUTE_BUFFER_ID
                   else str(as_int(value)) if as_int(value) is not None else value.name)
    name, _ = call(cu.cuPointerGetAttributes, 2, [A.CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                                  A.CU_POINTER_ATTRIBUTE_RANGE_SIZE], ptr)
    out.append(f"all at once {name}")
    return " ".join(out)


def child_calls(ptr, host):
    """What a child's driver calls answer, one line each."""
    lines = [f"cuDriverGetVersion {call(cu.cuDriverGetVersion)[0]}",
             f"cuInit {call(cu.cuInit, 0)[0]}",
             f"cuCtxGetCurrent {call(cu.cuCtxGetCurrent)[0]}",
             f"questions about the parent's memory: {questions(ptr)}",
             f"cuMemGetAddressRange {call(cu.cuMemGetAddressRange, ptr)[0]}",
             f"cuMemcpyDtoH {call(cu.cuMemcpyDtoH, bytearray(16), ptr, 16)[0]}",
             f"cuMemAlloc {call(cu.cuMemAlloc, MIB)[0]}",
             f"cuMemHostRegister {call(cu.cuMemHostRegister, host, 4096, 0)[0]}",
             f"cuMemFree of the parent's memory {call(cu.cuMemFree, ptr)[0]}",
             f"cuCtxSynchronize {call(cu.cuCtxSynchronize)[0]}"]
    dev_name, dev = call(cu.cuDeviceGet, 0)
    lines.append(f"cuDeviceGet {dev_name}")
    if dev_name == "CUDA_SUCCESS":
        lines.append(f"cuDevicePrimaryCtxRetain {call(cu.cuDevicePrimaryCtxRetain, dev)[0]}")
    return lines


def fork_child(label, ptr, host, normal_exit):
    sys.stdout.flush()
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_end)
        report = "\n".join(child_calls(ptr, host)) + "\n"
        os.write(write_end, report.encode())
        os.close(write_end)
        if normal_exit:
            raise SystemExit(3)  # the interpreter's own exit: exit handlers run
        os._exit(4)
    os.close(write_end)
    with os.fdopen(read_end) as r:
        report = r.read()
    _, status = os.waitpid(pid, 0)
    for line in report.splitlines():
        print(f"{label}: {line}")
    print(f"{label}: exit status {os.waitstatus_to_exitcode(status)}")


def parent_checks(label, ptr, host_copy):
    out = bytearray(64)
    ok(cu.cuMemcpyDtoH, out, ptr, 64)
    print(f"{label}: memory intact {out == bytearray([0x5A]) * 64}; {questions(ptr)}")


def main():
    dev, _ = primary_context()
    ptr = as_int(ok(cu.cuMemAlloc, 8 * MIB))
    ok(cu.cuMemsetD8, ptr, 0x5A, 8 * MIB)
    pinned = as_int(ok(cu.cuMemAllocHost, MIB))
    host = bytearray(1 << 16)
    host_address = ctypes.addressof((ctypes.c_char * len(host)).from_buffer(host))
    print(f"parent before: {questions(ptr)}")
    fork_child("child with _exit", ptr, host_address, normal_exit=False)
    parent_checks("parent after the first child", ptr, host)
    fork_child("child with a normal exit", ptr, host_address, normal_exit=True)
    parent_checks("parent after the second child", ptr, host)
    sys.stdout.flush()
    pid = os.fork()
    if pid == 0:
        os.execv(sys.executable, [sys.executable, "-c", "print('exec child ran')"])
    _, status = os.waitpid(pid, 0)
    print(f"exec child: exit status {os.waitstatus_to_exitcode(status)}")
    done = subprocess.run([sys.executable, "-c", "print('subprocess ran')"],
                          capture_output=True, text=True, check=False)
    print(f"subprocess: {done.stdout.strip()} exit status {done.returncode}")
    parent_checks("parent at the end", ptr, host)
    print("free:", call(cu.cuMemFree, ptr)[0], call(cu.cuMemFreeHost, pinned)[0])
    print(f"parent after the free: {questions(ptr)}")
    ok(cu.cuDevicePrimaryCtxRelease, dev)
    print("fork after cuda init done")


main()
