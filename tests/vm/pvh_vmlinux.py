#!/usr/bin/env python3
# SPDX-License-Identifier: MIT OR GPL-2.0-only
"""pvh_vmlinux.py BZIMAGE OUT: the kernel ELF inside an x86 bzImage,
written to OUT, for qemu to boot through the PVH entry point.

Why: under software emulation a bzImage spends seconds before the kernel's
own first line, in SeaBIOS's real-mode boot and in decompressing itself (XZ
for Debian 12's 6.1). qemu boots an uncompressed kernel whose ELF carries
the PVH note (CONFIG_PVH) directly: 8.8 s -> 6.0 s a boot of the VM suite's
guest on the 2-core build machine. A module mutant boots one guest each.

The payload is found by the boot protocol's header (payload_offset and
payload_length, protocol 2.08 and later) and decompressed by its magic: XZ
with Python's lzma, zstd (Debian's 6.12) with the zstd program. Exit status
0 with OUT written, 1 with a reason on stderr and nothing written: the
caller then boots the bzImage."""
import lzma
import os
import struct
import subprocess
import sys
import tempfile


def payload(image):
    """The compressed kernel of a bzImage, or raises ValueError."""
    if len(image) < 0x250 or image[0x202:0x206] != b"HdrS":
        raise ValueError("not a bzImage (no HdrS header)")
    (version,) = struct.unpack_from("<H", image, 0x206)
    if version < 0x208:
        raise ValueError(f"boot protocol {version:#x} has no payload fields")
    setup_sects = image[0x1F1] or 4
    start = (setup_sects + 1) * 512
    offset, length = struct.unpack_from("<II", image, 0x248)
    data = image[start + offset:start + offset + length]
    if len(data) != length:
        raise ValueError("payload runs past the file")
    return data


def decompress(data):
    if data.startswith(b"\xfd7zXZ\x00"):
        return lzma.LZMADecompressor(format=lzma.FORMAT_XZ).decompress(data)
    if data.startswith(b"\x28\xb5\x2f\xfd"):
        # The kernel's build appends the decompressed size, 4 bytes, that
        # the zstd program would read as a damaged second frame.
        done = subprocess.run(["zstd", "-dcq"], input=data[:-4], capture_output=True)
        if done.returncode != 0:
            raise ValueError("zstd failed: " + done.stderr.decode(errors="replace").strip())
        return done.stdout
    raise ValueError(f"payload format {data[:6].hex()} not handled (XZ and zstd are)")


def main(argv):
    if len(argv) != 3:
        print(__doc__.strip().splitlines()[0], file=sys.stderr)
        return 2
    try:
        with open(argv[1], "rb") as f:
            kernel = decompress(payload(f.read()))
        if not kernel.startswith(b"\x7fELF"):
            raise ValueError("the payload is not an ELF file")
    except (OSError, ValueError, lzma.LZMAError) as e:
        print(f"pvh_vmlinux: {argv[1]}: {e}", file=sys.stderr)
        return 1
    # Written whole or not at all: a concurrent run may read it. A write
    # that fails (a full disk) leaves no temporary file behind.
    folder = os.path.dirname(os.path.abspath(argv[2]))
    temporary = None
    try:
        with tempfile.NamedTemporaryFile(dir=folder, delete=False) as out:
            temporary = out.name
            out.write(kernel)
        os.chmod(temporary, 0o644)
        os.replace(temporary, argv[2])
    except OSError as e:
        if temporary:
            try:
                os.unlink(temporary)
            except OSError:
                pass
        print(f"pvh_vmlinux: {argv[2]}: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
