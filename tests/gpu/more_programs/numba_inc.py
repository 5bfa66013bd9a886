# numba.cuda device arrays and a kernel.
# Run plain and hooked by tests/gpu/more_programs.sh.
from numba import cuda
import numpy as np
@cuda.jit
def inc(a):
    i = cuda.grid(1)
    if i < a.size: a[i] += 1
for k in range(30):
    d = cuda.to_device(np.arange(1 << 18, dtype=np.float32))
    inc[256, 1024](d)
    h = d.copy_to_host(); assert h[5] == 6
    del d
cuda.current_context().deallocations.clear()
print("numba ok")
