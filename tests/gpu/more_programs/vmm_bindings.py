# cuda-python's driver bindings, the virtual memory calls by hand: reserve,
# create, map, access, copy through, unmap, release, free the range; and
# cuMemAllocManaged/cuMemFree beside them. The bindings resolve the driver
# with cuGetProcAddress. Run plain and hooked by tests/gpu/more_programs.sh.
from cuda.bindings import driver as cu


def ok(result):
    err, *rest = result if isinstance(result, tuple) else (result,)
    assert err == cu.CUresult.CUDA_SUCCESS, err
    return rest[0] if len(rest) == 1 else rest


ok(cu.cuInit(0))
dev = ok(cu.cuDeviceGet(0))
ctx = ok(cu.cuDevicePrimaryCtxRetain(dev))
ok(cu.cuCtxSetCurrent(ctx))
prop = cu.CUmemAllocationProp()
prop.type = cu.CUmemAllocationType.CU_MEM_ALLOCATION_TYPE_PINNED
prop.location.type = cu.CUmemLocationType.CU_MEM_LOCATION_TYPE_DEVICE
prop.location.id = 0
gran = ok(cu.cuMemGetAllocationGranularity(
    prop, cu.CUmemAllocationGranularity_flags.CU_MEM_ALLOC_GRANULARITY_MINIMUM))
access = cu.CUmemAccessDesc()
access.location = prop.location
access.flags = cu.CUmemAccess_flags.CU_MEM_ACCESS_FLAGS_PROT_READWRITE
checks = 0
for k in range(16):
    size = gran * (1 + k % 4)
    va = ok(cu.cuMemAddressReserve(size, 0, 0, 0))
    handle = ok(cu.cuMemCreate(size, prop, 0))
    ok(cu.cuMemMap(va, size, 0, handle, 0))
    ok(cu.cuMemSetAccess(va, size, [access], 1))
    ok(cu.cuMemsetD8(va, k, size))
    managed = ok(cu.cuMemAllocManaged(size, cu.CUmemAttach_flags.CU_MEM_ATTACH_GLOBAL.value))
    ok(cu.cuMemcpy(managed, va, size))
    ok(cu.cuCtxSynchronize())
    host = bytearray(16)
    ok(cu.cuMemcpyDtoH(host, managed, 16))
    checks += all(b == k for b in host)
    ok(cu.cuMemFree(managed))
    ok(cu.cuMemUnmap(va, size))
    ok(cu.cuMemRelease(handle))
    ok(cu.cuMemAddressFree(va, size))
ok(cu.cuDevicePrimaryCtxRelease(dev))
print(f"vmm bindings ok, {checks} of 16 copies right")
