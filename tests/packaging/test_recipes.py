#!/usr/bin/env python3
# SPDX-License-Identifier: MIT OR GPL-2.0-only
"""The Spack package and the EasyBuild easyconfig, checked without Spack or
EasyBuild (neither runs on this machine; README, "Packages"), as far as
their text and the repository can say (issue 41):
  - the Spack repository has the layout of package API v2
    (spack_repo/NAMESPACE/repo.yaml with api v2.x, packages/NAME/package.py)
    and the package compiles as Python, imports its build system from
    spack_repo.builtin, and names a real version: a sha256 (or a commit);
  - header-only libraries and CUDA (cuda.h only) are build dependencies
    only, in both; simdjson, which the command links, is not;
  - both name the same release, and its sha256 is the one
    packaging/release-tarball.sh makes again from the commit the version
    names (the tarball remade here, from this repository's history:
    GDRHOOKTEST_SOURCE_GIT where the tree is a copy without it, as a
    mutant's scratch copy is), under umask 022 and 077 alike: a user
    extracts with the umask applied, root did not;
  - that commit is in HEAD's history, so that a clone has it: a commit
    left only in this checkout's objects (a branch rewritten or deleted)
    is remade here but not in CI's clone (the CI run of 259577a).
"""
import ast
import hashlib
import os
import re
import subprocess
import sys
import tempfile


ROOT = os.path.realpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
SPACK_REPO = os.path.join(ROOT, "packaging", "spack", "spack_repo")
EASYCONFIGS = os.path.join(ROOT, "packaging", "easybuild")
BUILD_ONLY = {"cli11", "nlohmann-json", "fmt", "spdlog", "cuda"}
LINKED = {"simdjson"}
failures = []


def fail(why):
    failures.append(why)


def literal(node):
    try:
        return ast.literal_eval(node)
    except ValueError:
        # An f-string (the url): its constant parts, placeholders as "{}".
        if isinstance(node, ast.JoinedStr):
            return "".join(v.value if isinstance(v, ast.Constant) else "{}" for v in node.values)
        return None


def calls(tree, name):
    """Each call of `name` at the class's top level, as (args, keywords)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == name:
            yield ([literal(a) for a in node.args],
                   {k.arg: literal(k.value) for k in node.keywords})


def spack_package():
    if not os.path.isdir(SPACK_REPO):
        fail("no Spack repository of package API v2's layout (packaging/spack/spack_repo)")
        return None
    repos = [d for d in os.listdir(SPACK_REPO) if os.path.isdir(os.path.join(SPACK_REPO, d))]
    if len(repos) != 1:
        fail(f"spack_repo/ holds {repos}, not one repository")
        return None
    namespace = repos[0]
    # repo.yaml's two keys under `repo:`, read without a YAML library.
    with open(os.path.join(SPACK_REPO, namespace, "repo.yaml")) as f:
        repo = dict(re.findall(r"^  (namespace|api): *(\S+)", f.read(), re.M))
    if repo.get("namespace") != namespace:
        fail(f"repo.yaml's namespace {repo.get('namespace')} is not its folder's name {namespace}")
    if not re.fullmatch(r"v2\.\d+", str(repo.get("api"))):
        fail(f"repo.yaml's api is {repo.get('api')}, not v2.x (Spack 1.0's package API)")
    path = os.path.join(SPACK_REPO, namespace, "packages", "gdrhook", "package.py")
    with open(path) as f:
        source = f.read()
    compile(source, path, "exec")
    tree = ast.parse(source)
    imports = {(n.module, a.name) for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)
               for a in n.names}
    if ("spack_repo.builtin.build_systems.meson", "MesonPackage") not in imports:
        fail("package.py does not import MesonPackage from spack_repo.builtin.build_systems.meson")
    if ("spack.package", "*") not in imports:
        fail("package.py does not import spack.package")
    classes = [n for n in tree.body if isinstance(n, ast.ClassDef)]
    if [(c.name, [b.id for b in c.bases if isinstance(b, ast.Name)]) for c in classes] != \
            [("Gdrhook", ["MesonPackage"])]:
        fail("package.py does not define one class Gdrhook(MesonPackage)")
    return tree


def check_spack(tree):
    versions = list(calls(tree, "version"))
    if not versions:
        fail("the Spack package has no version")
    for args, keywords in versions:
        sha = keywords.get("sha256", "")
        commit = keywords.get("commit", "")
        if not re.fullmatch(r"[0-9a-f]{64}", sha or "") and not re.fullmatch(r"[0-9a-f]{40}", commit or ""):
            fail(f"Spack version {args[0]} has neither a sha256 nor a full commit hash")
    for args, keywords in calls(tree, "depends_on"):
        name = re.split(r"[@+~ ]", args[0])[0]
        kind = keywords.get("type")
        kinds = {kind} if isinstance(kind, str) else set(kind or ("build", "link"))
        if name in BUILD_ONLY and kinds != {"build"}:
            fail(f"Spack: {name} is a {sorted(kinds)} dependency, not a build dependency only")
        if name in LINKED and "link" not in kinds:
            fail(f"Spack: {name}, which gdrhook links, is not a link dependency")
    return versions


def easyconfig():
    names = [n for n in os.listdir(EASYCONFIGS) if n.endswith(".eb")]
    if len(names) != 1:
        fail(f"packaging/easybuild holds {names}, not one easyconfig")
        return {}
    path = os.path.join(EASYCONFIGS, names[0])
    with open(path) as f:
        source = f.read()
    config = {"SYSTEM": {"name": "system", "version": "system"}}
    exec(compile(source, path, "exec"), config)  # an easyconfig is Python assignments
    build = {d[0] for d in config.get("builddependencies", [])}
    run = {d[0] for d in config.get("dependencies", [])}
    if "CUDA" not in build or "CUDA" in run:
        fail("EasyBuild: CUDA is not a build dependency only")
    for name in ("CLI11", "nlohmann_json", "fmt", "spdlog"):
        if name not in build or name in run:
            fail(f"EasyBuild: {name} is not a build dependency only")
    if "simdjson" not in run:
        fail("EasyBuild: simdjson, which gdrhook links, is not a dependency")
    return config


def git_env():
    """The environment in which packaging/release-tarball.sh finds this
    repository's history: the tree's own, or GDRHOOKTEST_SOURCE_GIT's."""
    env = dict(os.environ)
    inside = subprocess.run(["git", "-C", ROOT, "rev-parse", "--show-toplevel"],
                            capture_output=True, text=True)
    if inside.returncode == 0 and os.path.realpath(inside.stdout.strip()) == ROOT:
        return env
    if not env.get("GDRHOOKTEST_SOURCE_GIT"):
        fail(f"{ROOT} is not a git checkout and GDRHOOKTEST_SOURCE_GIT is not set: "
             "the release tarball cannot be made again")
        return None
    env["GIT_DIR"] = env["GDRHOOKTEST_SOURCE_GIT"]
    return env


def check_release(versions, config):
    if not versions or not config:
        return
    (spack_version,), keywords = versions[0]
    sha = keywords.get("sha256")
    if config.get("checksums") != [sha]:
        fail(f"the easyconfig's checksums {config.get('checksums')} are not the Spack package's {sha}")
    match = re.fullmatch(r"(.+)-git(\d+)\.([0-9a-f]{7,40})", spack_version)
    if not match:
        fail(f"Spack version {spack_version} names no commit (BASE-gitN.HASH)")
        return
    base, count, commit = match.groups()
    tarball_name = f"gdrhook-{base}+git{count}.{commit}.tar.gz"
    if not keywords.get("url", "").endswith("/" + tarball_name):
        fail(f"the Spack url {keywords.get('url')} is not the tarball {tarball_name}")
    sources = [s.replace("%(name)s", config.get("name", "")) for s in config.get("sources", [])]
    if sources != [tarball_name]:
        fail(f"the easyconfig's sources {sources} are not the tarball {tarball_name}")
    env = git_env()
    if env is None:
        return
    reachable = subprocess.run(["git", "-C", ROOT, "merge-base", "--is-ancestor", commit, "HEAD"],
                               env=env, capture_output=True, text=True)
    if reachable.returncode != 0:
        fail(f"the release's commit {commit} is not in HEAD's history: a clone of the "
             f"repository does not have it {reachable.stderr.strip()}")
        return
    for umask in (0o022, 0o077):
        remade = release_sha256(commit, tarball_name, env, umask)
        if remade is None:
            return
        if remade != sha:
            fail(f"the tarball of {commit} made again under umask {umask:03o} has sha256 "
                 f"{remade}, the recipes say {sha}")
        else:
            print(f"  {tarball_name} made again under umask {umask:03o}: sha256 {remade}, "
                  "as both recipes say")


def release_sha256(commit, tarball_name, env, umask):
    with tempfile.TemporaryDirectory() as out:
        made = subprocess.run([os.path.join(ROOT, "packaging", "release-tarball.sh"), commit, out],
                              env=env, capture_output=True, text=True,
                              preexec_fn=lambda: os.umask(umask))
        if made.returncode != 0:
            fail(f"packaging/release-tarball.sh {commit} failed: {made.stderr.strip()}")
            return None
        path = os.path.join(out, tarball_name)
        if not os.path.exists(path):
            fail(f"packaging/release-tarball.sh {commit} made {os.listdir(out)}, not {tarball_name}")
            return None
        with open(path, "rb") as f:
            return hashlib.sha256(f.read()).hexdigest()


def main():
    tree = spack_package()
    versions = check_spack(tree) if tree else []
    check_release(versions, easyconfig())
    for why in failures:
        print(f"test_recipes: FAIL: {why}", file=sys.stderr)
    if not failures:
        print("test_recipes: Spack (API v2) and EasyBuild recipes: build-only headers and CUDA, "
              "one release, its sha256 made again")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
