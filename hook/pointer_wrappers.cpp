// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// The driver's pointer queries: answered from the shim's table where it
// can, else forwarded (cache/pointers/pointer_answers.h decides which).
// The cache's plain-int signatures are the ABI of cuda.h's.
#include "hook/wrapper.h"

#include "cache/pointers/pointer_answers.h"

using namespace gdrhook;

namespace {

// Everything but the common answer: the driver's function looked up here,
// off the common path.
__attribute__((noinline, cold)) CUresult
answer_or_forward(void *data, CUpointer_attribute attribute, CUdeviceptr ptr)
{
    GDRHOOK_REAL_OR_RETURN(real, cuPointerGetAttribute, CUDA_ERROR_NOT_INITIALIZED);
    return static_cast<CUresult>(answer_pointer_attribute(
        data, static_cast<int>(attribute), ptr, reinterpret_cast<PointerAttributeFunction>(real)));
}

} // namespace

// The table holds only what the driver answered: where it answers, the
// driver's function exists.
GDRHOOK_HOT_WRAPPER(CUresult, cuPointerGetAttribute,
                    (void *data, CUpointer_attribute attribute, CUdeviceptr ptr))
{
    GDRHOOK_PATCHABLE_PROLOGUE();
    if (GDRHOOK_LIKELY(answered_from_table(data, static_cast<int>(attribute), ptr)))
        return CUDA_SUCCESS;
    return answer_or_forward(data, attribute, ptr);
}

GDRHOOK_HOT_WRAPPER(CUresult, cuPointerGetAttributes,
                    (unsigned int count, CUpointer_attribute *attributes, void **data,
                     CUdeviceptr ptr))
{
    GDRHOOK_REAL_OR_RETURN(real, cuPointerGetAttributes, CUDA_ERROR_NOT_INITIALIZED);
    static_assert(sizeof(CUpointer_attribute) == sizeof(int), "the cache's int signature");
    return static_cast<CUresult>(
        answer_pointer_attributes(count, reinterpret_cast<int *>(attributes), data, ptr,
                                  reinterpret_cast<PointerAttributesFunction>(real)));
}
