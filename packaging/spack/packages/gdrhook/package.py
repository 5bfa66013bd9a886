# SPDX-License-Identifier: MIT OR GPL-2.0-only
#
# Spack package for gdrhook's user space: the gdrhook command, the shim
# (libgdrhook.so), gdrhook.h and the pkg-config file. The kernel module is
# installed from the gdrhook-dkms package (README, "Packages"), not by
# Spack. Use it from a repository of your own:
#   spack repo add packaging/spack && spack install gdrhook
# Untested: Spack is not installed on the development machine (it comes
# from a git repository that machine cannot reach), so neither `spack
# install` nor `spack style` has run on this file.
from spack.package import *


class Gdrhook(MesonPackage):
    """Keeps GPUDirect RDMA registrations coherent with CUDA frees, for
    unmodified programs: a library preloaded into the program that sees
    every CUDA allocation and free, drops the registrations a free ends and
    unpins them before the real free runs, and logs every allocation, free,
    pin and unpin."""

    # The project has no public address yet: set these to where your site
    # keeps the repository.
    homepage = "https://gdrhook.invalid/"
    git = "https://gdrhook.invalid/gdrhook.git"

    license("MIT OR GPL-2.0-only")

    version("main", branch="main")

    depends_on("c", type="build")
    depends_on("cxx", type="build")
    depends_on("meson@1.0.1:", type="build")
    depends_on("ninja", type="build")
    depends_on("pkgconfig", type="build")
    depends_on("cli11", type="build")
    depends_on("nlohmann-json", type="build")
    # cuda.h only: the shim never links libcuda, it finds the program's.
    depends_on("cuda@12:", type="build")
    depends_on("spdlog")
    depends_on("fmt")
    depends_on("simdjson")

    conflicts("platform=darwin", msg="gdrhook interposes Linux's dynamic loader")

    def meson_args(self):
        return [
            "-Dtests=false",
            "-Dkernel_dir=none",
            "-Ducx=disabled",
            "-Dtoolkit_include={0}".format(self.spec["cuda"].prefix.include),
        ]
