# SPDX-License-Identifier: MIT OR GPL-2.0-only
#
# Spack package for gdrhook's user space: the gdrhook command, the shim
# (libgdrhook.so), gdrhook.h and the pkg-config file. The kernel module is
# installed from the gdrhook-dkms package (README, "Packages"), not by
# Spack.
#
# Its sources are release tarballs made by packaging/release-tarball.sh
# COMMIT (git archive of COMMIT with its version in VERSION, made
# reproducible: the same bytes, the sha256 below, for anyone who makes it
# again), published as <releases>/gdrhook-<version>.tar.gz. The project
# has no public address yet (example.org stands for it): until it has, a
# site puts the tarball in a Spack mirror of its own (spack mirror add
# site file:///DIR, the tarball at
# DIR/gdrhook/gdrhook-0.1.0-git506.259577a.tar.gz), where Spack finds it
# by name and checks its sha256. In a Spack spec "+" starts a variant, so
# the packages' version 0.1.0+gitN.HASH is 0.1.0-gitN.HASH here, its url
# given per version. maintainers() is left out until the project has
# GitHub handles to name.
from spack_repo.builtin.build_systems.meson import MesonPackage

from spack.package import *


class Gdrhook(MesonPackage):
    """Keeps GPUDirect RDMA registrations coherent with CUDA frees, for
    unmodified programs: a library preloaded into the program that sees
    every CUDA allocation and free, drops the registrations a free ends and
    unpins them before the real free runs, and logs every allocation, free,
    pin and unpin."""

    homepage = "https://gdrhook.example.org/"
    releases = "https://gdrhook.example.org/releases"

    license("MIT OR GPL-2.0-only")

    version(
        "0.1.0-git506.259577a",
        sha256="f2c1dd5f64dd3a6da53124fd745a5c341e267b674e5641986184bbbe3e32d6bb",
        url=f"{releases}/gdrhook-0.1.0+git506.259577a.tar.gz",
    )

    depends_on("c", type="build")
    depends_on("cxx", type="build")
    depends_on("meson@1.0.1:", type="build")
    depends_on("ninja", type="build")
    depends_on("pkgconfig", type="build")
    # Header-only where gdrhook uses them: CLI11 and nlohmann-json are, fmt
    # is compiled in (FMT_HEADER_ONLY), and spdlog's implementation is
    # compiled into the shim and hidden (cache/meson.build); nothing of
    # theirs is linked, so nothing of theirs is needed at run time.
    depends_on("cli11", type="build")
    depends_on("nlohmann-json", type="build")
    depends_on("fmt", type="build")
    depends_on("spdlog", type="build")
    # cuda.h only: the shim never links libcuda, it finds the program's.
    depends_on("cuda@12:", type="build")
    # libsimdjson.so, linked by the gdrhook command.
    depends_on("simdjson")

    conflicts("platform=darwin", msg="gdrhook interposes Linux's dynamic loader")

    def meson_args(self):
        return [
            "-Dtests=false",
            "-Dkernel_dir=none",
            "-Ducx=disabled",
            f"-Dtoolkit_include={self.spec['cuda'].prefix.include}",
        ]
