# SPDX-License-Identifier: MIT OR GPL-2.0-only
"""Calls through cuda-python's driver bindings for the programs of
more_programs/ that print what the driver answered: an error's name is
the same with and without the shim, an address never is."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from driver_bindings import driver as cu  # noqa: E402,F401 - after its path; re-exported


def call(fn, *args):
    """The result's name and its value(s); a binding that raises gives the
    exception's type name."""
    try:
        result = fn(*args)
    except Exception as e:  # noqa: BLE001 - printed, compared plain and hooked
        return type(e).__name__, None
    err, *rest = result if isinstance(result, tuple) else (result,)
    return getattr(err, "name", str(err)), (rest[0] if len(rest) == 1 else rest)


def ok(fn, *args):
    name, value = call(fn, *args)
    if name != "CUDA_SUCCESS":
        raise RuntimeError(f"{fn.__name__}: {name}")
    return value


def as_int(value):
    """A handle or pointer object as a number (None where it is neither)."""
    try:
        return int(value)
    except (TypeError, ValueError):
        try:
            return int(value.getPtr())
        except Exception:  # noqa: BLE001
            return None


def primary_context():
    """cuInit, device 0 and its primary context made current."""
    ok(cu.cuInit, 0)
    dev = ok(cu.cuDeviceGet, 0)
    ctx = ok(cu.cuDevicePrimaryCtxRetain, dev)
    ok(cu.cuCtxSetCurrent, ctx)
    return dev, ctx


def create_context(dev):
    """cuCtxCreate under the signature of these bindings: CUDA 13's takes
    creation parameters first, 12's only flags and the device."""
    name, ctx = call(cu.cuCtxCreate, 0, dev)
    if name == "TypeError":
        name, ctx = call(cu.cuCtxCreate, None, 0, dev)
    if name != "CUDA_SUCCESS":
        raise RuntimeError(f"cuCtxCreate: {name}")
    return ctx


def device_location(ordinal):
    location = cu.CUmemLocation()
    location.type = cu.CUmemLocationType.CU_MEM_LOCATION_TYPE_DEVICE
    location.id = ordinal
    return location
