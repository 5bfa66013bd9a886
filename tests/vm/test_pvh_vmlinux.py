#!/usr/bin/env python3
# SPDX-License-Identifier: MIT OR GPL-2.0-only
"""pvh_vmlinux.py, the kernel the VM suite boots through PVH: built
bzImages of each payload format give back their ELF byte for byte, what is
not one gives nothing, and every installed Debian kernel with CONFIG_PVH
gives an ELF with the PVH entry note qemu boots by."""
import glob
import lzma
import os
import resource
import shutil
import struct
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
TOOL = os.path.join(HERE, "pvh_vmlinux.py")
failures = []


def check(what, ok):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)


def bzimage(payload, setup_sects=3, version=0x20F):
    """A bzImage as far as the tool reads one: the setup header, then the
    protected-mode part with the payload somewhere inside it."""
    setup = bytearray(((setup_sects or 4) + 1) * 512)
    setup[0x1F1] = setup_sects
    setup[0x202:0x206] = b"HdrS"
    struct.pack_into("<H", setup, 0x206, version)
    lead = b"\x90" * 200  # the decompressor's code, before the payload
    struct.pack_into("<II", setup, 0x248, len(lead), len(payload))
    return bytes(setup) + lead + payload + b"\xcc" * 64


def run(image, most_bytes=None):
    """(exit status, the bytes written or None, the folder's files). With
    most_bytes, the tool may write no file larger (RLIMIT_FSIZE: its write
    fails as on a full disk)."""
    def limited():
        resource.setrlimit(resource.RLIMIT_FSIZE, (most_bytes, most_bytes))

    with tempfile.TemporaryDirectory() as d:
        src, out = os.path.join(d, "bzImage"), os.path.join(d, "vmlinux")
        with open(src, "wb") as f:
            f.write(image)
        status = subprocess.run([sys.executable, TOOL, src, out], capture_output=True,
                                preexec_fn=limited if most_bytes else None).returncode
        written = open(out, "rb").read() if os.path.exists(out) else None
        return status, written, os.listdir(d)


def pvh_note(elf):
    """Whether a 64-bit ELF has the Xen note XEN_ELFNOTE_PHYS32_ENTRY (18),
    the entry qemu's PVH boot jumps to."""
    if elf[:4] != b"\x7fELF" or elf[4] != 2:
        return False
    phoff, = struct.unpack_from("<Q", elf, 0x20)
    phentsize, phnum = struct.unpack_from("<HH", elf, 0x36)
    for i in range(phnum):
        p_type, _, p_offset, _, _, p_filesz = struct.unpack_from("<IIQQQQ", elf, phoff + i * phentsize)
        if p_type != 4:  # PT_NOTE
            continue
        at, end = p_offset, p_offset + p_filesz
        while at + 12 <= end:
            namesz, descsz, kind = struct.unpack_from("<III", elf, at)
            name = elf[at + 12:at + 12 + namesz].rstrip(b"\0")
            if name == b"Xen" and kind == 18:
                return True
            at += 12 + (namesz + 3) // 4 * 4 + (descsz + 3) // 4 * 4
    return False


kernel = b"\x7fELF" + os.urandom(100000)
status, written, _ = run(bzimage(lzma.compress(kernel, format=lzma.FORMAT_XZ) + b"\x10\x20\x30\x40"))
check("an XZ payload gives its ELF back", status == 0 and written == kernel)
status, written, _ = run(bzimage(lzma.compress(kernel, format=lzma.FORMAT_XZ), setup_sects=0, version=0x20C))
check("setup_sects 0 counts as 4", status == 0 and written == kernel)
if shutil.which("zstd"):
    packed = subprocess.run(["zstd", "-q", "-c"], input=kernel, capture_output=True, check=True).stdout
    # The size the kernel's build appends to the payload.
    status, written, _ = run(bzimage(packed + struct.pack("<I", len(kernel))))
    check("a zstd payload with its size appended gives its ELF back", status == 0 and written == kernel)
else:
    check("zstd installed (tests/packages/tests.txt)", False)
for what, image in [("not a bzImage", b"MZ" + os.urandom(4096)),
                    ("boot protocol 2.07, no payload fields", bzimage(b"x" * 64, version=0x207)),
                    ("a gzip payload", bzimage(b"\x1f\x8b" + os.urandom(64))),
                    ("a payload past the file's end", bzimage(b"\xfd7zXZ\x00")[:-80]),
                    ("a payload that is not an ELF",
                     bzimage(lzma.compress(b"not an ELF", format=lzma.FORMAT_XZ)))]:
    status, written, left = run(image)
    check(f"{what}: exit 1, nothing written, no temporary left", status == 1 and written is None and
          left == ["bzImage"])
# A write that fails (here the file size limit; a full disk alike):
# Python ignores SIGXFSZ, so the write raises.
status, written, left = run(bzimage(lzma.compress(kernel, format=lzma.FORMAT_XZ)), 50000)
check("a write that fails: exit 1, nothing written, no temporary left",
      status == 1 and written is None and left == ["bzImage"])

# The real kernels run.sh boots: each with CONFIG_PVH must give a kernel
# qemu can boot through PVH.
seen = 0
for image in sorted(glob.glob("/boot/vmlinuz-*")):
    release = image[len("/boot/vmlinuz-"):]
    try:
        config = open(f"/boot/config-{release}").read()
    except OSError:
        continue
    if "\nCONFIG_PVH=y\n" not in config or not os.access(image, os.R_OK):
        continue
    seen += 1
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "vmlinux")
        status = subprocess.run([sys.executable, TOOL, image, out]).returncode
        check(f"{release}: an ELF with the PVH entry note",
              status == 0 and pvh_note(open(out, "rb").read()))
print(f"{seen} installed kernel(s) with CONFIG_PVH checked")
if failures:
    print(f"{len(failures)} failed")
    sys.exit(1)
