# SPDX-License-Identifier: MIT OR GPL-2.0-only
"""JAX with whatever XLA_PYTHON_CLIENT_* selects (modes.sh: the default,
which preallocates three quarters of the GPU in one allocation, and
cuda_async): 50 matrix products of varying shapes. XLA's sums differ in
the last printed digit from run to run without the shim (36150.886 and
36150.887 on the H200), so the sum is printed to one decimal."""
import jax
import jax.numpy as jnp

key = jax.random.PRNGKey(0)
total = 0.0
for i in range(50):
    key, sub = jax.random.split(key)
    x = jax.random.normal(sub, (512 + 64 * (i % 5), 512))
    total += float(jnp.tanh(x @ x.T).sum())
print(f"devices={jax.devices()} total={total:.1f}")
