# SPDX-License-Identifier: MIT OR GPL-2.0-only
"""JAX with XLA_PYTHON_CLIENT_ALLOCATOR=platform: no pool, a cudaMalloc
and a cudaFree for every buffer, so every deleted array is a free the
shim sees at once. A jitted update donating its arguments (the output
takes over the donated buffer), arrays deleted by hand, device_put and
device_get, shapes changing so jit recompiles. Integer arithmetic: the
sums are exact. Run plain and hooked by tests/gpu/more_programs.sh."""
import os
import sys

os.environ["XLA_PYTHON_CLIENT_ALLOCATOR"] = "platform"
os.environ["XLA_PYTHON_CLIENT_PREALLOCATE"] = "false"
try:
    import jax
    import jax.numpy as jnp
    import numpy as np
except ImportError:
    print("skip: no jax")
    sys.exit(0)


def step(params, grads):
    return {k: params[k] - grads[k] // 2 for k in params}, sum(jnp.sum(g) for g in grads.values())


def main():
    if not any(d.platform == "gpu" for d in jax.devices()):
        print("skip: no GPU for jax")
        return
    update = jax.jit(step, donate_argnums=(0,))
    matmul = jax.jit(lambda a, b: (a @ b) % 1009)
    donated, totals = 0, []
    for i in range(30):
        n = 128 * (1 + i % 4)
        params = {"w": jnp.arange(n * n, dtype=jnp.int32).reshape(n, n) % 97,
                  "b": jnp.full((n,), i, dtype=jnp.int32)}
        grads = {"w": jnp.ones((n, n), dtype=jnp.int32) * 4, "b": jnp.ones((n,), dtype=jnp.int32) * 2}
        old = params["w"]
        params, gsum = update(params, grads)
        donated += int(old.is_deleted())
        product = matmul(params["w"], params["w"])
        totals.append(int(jnp.sum(product)) + int(gsum) + int(jnp.sum(params["b"])))
        for array in (params["w"], params["b"], product, grads["w"], grads["b"]):
            array.delete()
    host = np.arange(1 << 20, dtype=np.int32)
    on_gpu = jax.device_put(host)
    back = jax.device_get(on_gpu * 2)
    on_gpu.delete()
    print(f"donated {donated} of 30, totals {totals[:4]} ... {totals[-2:]}, "
          f"sum {sum(totals)}, round trip {int(back.sum()) == 2 * int(host.sum())}")
    jax.clear_caches()
    print("done")


if __name__ == "__main__":
    main()
