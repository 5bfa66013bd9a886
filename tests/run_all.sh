#!/bin/bash
# SPDX-License-Identifier: MIT OR GPL-2.0-only
#
# The README's test command: builds the project three ways and runs every
# suite that applies to each build, then prints one closing line
# "N passed, N failed, N skipped" (the skipped tests named after it). A
# skip is not a pass: each says why in its own output.
#   build-test   plain build: every suite the tree declares but gpu (the
#                '# suites:' lines below)
#   build-asan   ASan+UBSan: the suites that do not preload the shim
#   build-tsan   TSan: the same
#   build-aarch64  cross-built for aarch64 (cross/aarch64-linux-gnu.ini), its
#                suites run under qemu-user: AARCH64_SUITES below. Missing
#                cross packages fail its setup: an error, not a skip.
#   build-fuzz   clang, libFuzzer: tests/fuzz/run.sh, each target for
#                GDRHOOKTEST_FUZZ_SECONDS (default 60); any finding fails
#   install      the Debian packages (tools/package.sh) on a clean Debian
#                root (tests/install/clean_root.sh), and the arm64 packages
#                cross-built and checked (tests/packaging/arm64_debs.sh); the
#                RPMs of x86_64 and aarch64 built and checked against them
#                (tests/packaging/rpms.sh)
#   mutants      tests/mutants/run.sh: each mutant of tests/mutants/mutants.py
#                on a scratch copy; any survivor fails
# GDRHOOKTEST_QUICK=1 runs the plain build only.
#
# CI's budget (issue 38): 60 minutes on a cold 2-core machine. A cold run
# of f151976 (fresh clone, empty HOME so no ccache and no cached kernels,
# nothing else running) took 3,061 s: build-test 932 s (the kmod VM 705 s,
# the debug kernel's build 347 s in it), asan 127 s, tsan 112 s, aarch64
# 394 s with its kernels' download, install 186 s, fuzz 162 s, mutants
# 1,148 s. The closing 'time' lines below say where each run's time went.
# A later full local run (2 shared cores) took: build-test 895 s (the kmod
# VM 709 s, its four kernels one after the other), aarch64 402 s (its VM
# 130 s), install 856 s, fuzz 258 s, mutants 3,168 s; CI's own run 3,908 s.
# Since then what waits on one core runs beside another: the VM test's
# kernels two at a time (tests/vm/run.sh: two of them 424 s -> 315 s), the
# aarch64 packages beside the clean root and the x86_64 RPMs (install
# leg below: 1,032 s -> 474 s), the fuzz targets side by side
# (tests/fuzz/run.sh: 123 s -> 61 s).
# A cold run of 655b88e here (fresh clone, empty HOME, 2 cores shared
# with other builds and tests): 6,503 s, of which build-test 1,419 (kmod/vm
# 958, the debug kernel's build 817 of it), asan 263, tsan 191, aarch64
# 715, install 1,030, fuzz 157, mutants 2,726 (549 of them); CI's own run
# of that tree took 4,292 s.
set -uo pipefail
cd "$(dirname "$0")/.."

failed_setup=0
results=()
run_started=$(date +%s)
# Each leg's wall time, printed in the closing lines (CI's budget is 60
# minutes on a cold machine: these say where it goes).
leg_times=()
leg_time() { # leg started-at [detail]
    leg_times+=("time $1: $(( $(date +%s) - $2 )) s${3:+ ($3)}")
}

run_suites() { # build-dir all|needed meson-options... -- suites...
    # "all" builds the whole tree; "needed" only what the suites' tests
    # need (tests/test_targets.py).
    local dir=$1 what=$2; shift 2
    local options=()
    while [ "$1" != "--" ]; do options+=("$1"); shift; done
    shift
    local suites=()
    for s in "$@"; do suites+=(--suite "$s"); done
    echo "=== $dir: ${options[*]:-(default)} suites: $*"
    local t_setup t_build t_tests
    t_setup=$(date +%s)
    # A folder configured earlier, perhaps with other options, is
    # reconfigured with these.
    local setup=(meson setup)
    [ -d "$dir" ] && setup+=(--reconfigure)
    "${setup[@]}" "$dir" "${options[@]}" >"$dir.setup.log" 2>&1 ||
        { cat "$dir.setup.log"; failed_setup=$((failed_setup + 1)); leg_time "$dir" "$t_setup" "setup failed"; return; }
    t_build=$(date +%s)
    local targets=()
    if [ "$what" = needed ]; then
        local needed
        needed=$(python3 tests/test_targets.py "$dir" "$@") ||
            { echo "tests/test_targets.py $dir failed"; failed_setup=$((failed_setup + 1)); return; }
        mapfile -t targets <<<"$needed"
    fi
    if ! ninja -C "$dir" "${targets[@]}" >"$dir.build.log" 2>&1; then
        tail -50 "$dir.build.log"
        failed_setup=$((failed_setup + 1))
        leg_time "$dir" "$t_setup" "build failed"
        return
    fi
    t_tests=$(date +%s)
    rm -f "$dir/meson-logs/testlog.json"
    # Two at a time at least (a test waiting on a VM or a daemon leaves a
    # core to the next), one a processor where there are more.
    meson test -C "$dir" --print-errorlogs --num-processes "$(( $(nproc) > 2 ? $(nproc) : 2 ))" "${suites[@]}"
    local status=$?
    results+=("$dir/meson-logs/testlog.json")
    # meson's own failures (a suite name it does not know, a test it could
    # not start) leave no failed test in the log: count them here.
    if [ $status -ne 0 ] && ! grep -q '"result": "\(FAIL\|TIMEOUT\|ERROR\|UNEXPECTEDPASS\)"' \
            "$dir/meson-logs/testlog.json" 2>/dev/null; then
        echo "meson test -C $dir exited $status"
        failed_setup=$((failed_setup + 1))
    fi
    leg_time "$dir" "$t_setup" "setup $((t_build - t_setup)) s, build $((t_tests - t_build)) s, tests $(( $(date +%s) - t_tests )) s"
    # The kmod suite's VM test: its time, and the debug kernel's build in
    # it (tests/vm/run.sh prints "debug kernel: RELEASE (N s)").
    python3 - "$dir/meson-logs/testlog.json" <<'PY' >"$dir.vm-time" 2>/dev/null && [ -s "$dir.vm-time" ] && leg_times+=("$(cat "$dir.vm-time")")
import json, re, sys
for line in open(sys.argv[1]):
    test = json.loads(line)
    if re.split(r"[:/ ]+", test.get("name", ""))[-1] == "vm":
        built = re.search(r"debug kernel: \S+ \((\d+) s\)", test.get("stdout", ""))
        print(f"time {sys.argv[1].split('/')[0]} kmod/vm: {test.get('duration', 0):.0f} s" +
              (f" (the debug kernel's build or cache: {built.group(1)} s)" if built else ""))
PY
}

# suites: begin (tests/docs/check_ci_suites.py runs these lines and
# compares them with the suites meson knows)
# Every suite a meson.build under tests/ or tools/ declares, so that a new
# suite runs here without an edit (the packaging suite's 7 tests were
# left out of a fixed list). gpu alone is not run: without a GPU it can
# only skip; tests/gpu/run.sh runs it on the GPU machine.
mapfile -t all_suites < <(grep -rhoP "suite *: *\[?'\K[a-z0-9_]+" --include=meson.build tests tools |
    sort -u | grep -vx gpu)
# suites: end
# Those of them that do not preload the shim.
sanitizer_suites=()
for s in unit cache; do
    if [[ " ${all_suites[*]} " == *" $s "* ]]; then sanitizer_suites+=("$s"); fi
done

# build-test without debug info: the mutation check's scratch build
# (tests/mutants/run.py) uses the same compiler options, so that with
# ccache (.ci/run installs it) its first build is build-test's objects
# again, not a second cold compile of the tree. -Werror is left out of
# ccache's hash (the mutants build without it, where a mutant's warning must
# not count as a catch): build-test runs first and fails on any warning, so
# nothing it did not compile cleanly is in the cache for the mutants.
export CCACHE_IGNOREOPTIONS=-Werror
run_suites build-test all -Dwerror=true -Ddebug=false -- "${all_suites[@]}"
if [ "${GDRHOOKTEST_QUICK:-0}" != 1 ]; then
    # At -O0: the sanitizers check every access the source makes (none is
    # optimized away), and GCC compiles the tree with ASan+UBSan about five
    # times faster than at -O2 (tools/cli/main.cpp: 9.5 s against 54 s;
    # the cold run's asan build took 441 s at -O2).
    run_suites build-asan needed -Db_sanitize=address,undefined -Db_lundef=false -Doptimization=0 \
        -- "${sanitizer_suites[@]}"
    run_suites build-tsan needed -Db_sanitize=thread -Doptimization=0 -- "${sanitizer_suites[@]}"
fi

# The aarch64 leg. The suites that fit CI's time under emulation, and the
# module's: kmod's vm test boots Debian's arm64 kernel in
# qemu-system-aarch64 with the cross-built module (tests/vm/run.sh,
# GDRHOOKTEST_VM_ARCH=arm64). Measured on the shared 2-core machine (load
# average ~7): setup 3 s, build 396 s, the 16 tests 77 s (churn at 100,000
# cycles: 21 s); the arm64 VM: see kmod/README.md. The cli suite's 30
# tests start the target's programs through the emulator
# (tests/cli/tool_checks.sh). Measured again (load average ~2): the
# suites' meson test took 130 s without cli and 6.12, 184 s with both;
# building what cli adds (its units, the demo, the sleeper): 33 s.
aarch64_suites=(unit shim cache cli stress kmod)
if [ "${GDRHOOKTEST_QUICK:-0}" != 1 ]; then
    aarch64_started=$(date +%s)
    # The arm64 kernels the kmod suite boots (tests/vm/run.sh,
    # GDRHOOKTEST_VM_ARM64_HEADERS): Debian 12's 6.1 and bookworm-backports'
    # 6.12. The 6.12 one costs its module build and boot, 51 s here with a
    # quiet machine (16 s and 35 s, 20 passed), plus its download in a
    # fresh container (41 s); GDRHOOKTEST_AARCH64_KERNELS=6.1 boots 6.1 only.
    case ${GDRHOOKTEST_AARCH64_KERNELS:-all} in
    all) arm64_headers="linux-headers-amd64 linux-headers-6.12-amd64" ;;
    6.1) arm64_headers=linux-headers-amd64 ;;
    *)
        echo "GDRHOOKTEST_AARCH64_KERNELS=$GDRHOOKTEST_AARCH64_KERNELS: all or 6.1"
        failed_setup=$((failed_setup + 1))
        arm64_headers=linux-headers-amd64
        ;;
    esac
    # ccache for the cross compilers too (cross/ccache-aarch64.ini): the
    # mutation check's aarch64 build is then this one's objects again.
    cross_files=(--cross-file cross/aarch64-linux-gnu.ini)
    command -v ccache >/dev/null && cross_files+=(--cross-file cross/ccache-aarch64.ini)
    # The churn at a tenth of its size: 1,000,000 cycles took 485 s under
    # qemu-user on 2 shared cores, 100,000 keep every check of the test.
    GDRHOOKTEST_VM_ARM64_HEADERS=$arm64_headers \
        GDRHOOKTEST_STRESS_CYCLES=${GDRHOOKTEST_AARCH64_STRESS_CYCLES:-100000} \
        run_suites build-aarch64 needed "${cross_files[@]}" -Dwerror=true -Ddebug=false \
        -- "${aarch64_suites[@]}"
    # Without the tool the shim's and stress suites check less: a setup
    # error here too (an arm64 library missing), not a smaller suite.
    if grep -q 'the gdrhook tool is not built' build-aarch64.setup.log 2>/dev/null; then
        echo "build-aarch64: the gdrhook tool is not built (see build-aarch64.setup.log)"
        failed_setup=$((failed_setup + 1))
    fi
    leg_time "build-aarch64 (with its arm64 kernels' download)" "$aarch64_started"
fi

# aarch64_packages FAILURES: the arm64 packages from Debian's cross
# toolchain (about 250 CPU seconds): their architecture, every ELF file
# AArch64, lintian clean, and its _all packages build-deb's, byte for byte;
# then the aarch64 RPMs from the same compilers, checked against them. A
# line in FAILURES for each that failed.
aarch64_packages() {
    tests/packaging/arm64_debs.sh build-deb-arm64 build-deb ||
        echo "arm64 packages: FAILED (tests/packaging/arm64_debs.sh, build-aarch64-packages.log)" >>"$1"
    tests/packaging/rpms.sh build-rpm-aarch64 aarch64 build-deb-arm64 ||
        echo "aarch64 RPMs: FAILED (tests/packaging/rpms.sh, build-aarch64-packages.log)" >>"$1"
    return 0
}

# The Debian packages on a clean machine: built from this tree
# (tools/package.sh, lintian clean), installed with apt into a fresh
# Debian root with apt's defaults, DKMS's module loaded in the VM by the
# packaged modules-load and udev files, purged without a trace
# (tests/install/clean_root.sh; it needs a Debian mirror, as .ci/run's
# apt-get does).
install_result="install: skipped (GDRHOOKTEST_QUICK=1)"
if [ "${GDRHOOKTEST_QUICK:-0}" != 1 ]; then
    echo "=== install: tools/package.sh build-deb, tests/install/clean_root.sh"
    install_started=$(date +%s)
    install_ok=1
    if ! tools/package.sh build-deb >build-deb.log 2>&1; then
        tail -30 build-deb.log
        install_result="install: FAILED (tools/package.sh, see build-deb.log)"
        failed_setup=$((failed_setup + 1))
        install_ok=0
    fi
    # The aarch64 packages, in the background beside the clean root and
    # the x86_64 RPMs (the clean root waits on apt and a VM, the builds on
    # the compiler): their output in build-aarch64-packages.log, printed
    # after the foreground's, each failure counted. Measured on the shared
    # 2-core machine, these four steps after build-deb, from empty package
    # folders: one after the other 1,032 s (clean root 131 s, arm64 .debs
    # 480 s, x86_64 RPMs 264 s, aarch64 RPMs 157 s; load average 2 to 6),
    # two side by side 474 s (load average 2 to 3).
    aarch64_failures=$(mktemp)
    aarch64_packages "$aarch64_failures" >build-aarch64-packages.log 2>&1 &
    aarch64_pid=$!
    if [ $install_ok = 1 ] && tests/packaging/check_debs.sh build-deb amd64 &&
            tests/install/clean_root.sh build-deb build-test; then
        install_result="install: OK (packages built, installed on a clean root with Recommends, module built by DKMS, loaded by its packaged files in the VM, its node the group's, purged clean with --autoremove; $(( $(date +%s) - install_started )) s)"
    elif [ $install_ok = 1 ]; then
        install_result="install: FAILED (tests/packaging/check_debs.sh or tests/install/clean_root.sh above)"
        failed_setup=$((failed_setup + 1))
    fi
    # The RPMs, from Debian's rpm and compilers: hardened, gdrhook-slurm
    # requiring its Slurm, and every file the .debs of the same machine
    # hold (aarch64's in aarch64_packages).
    if ! tests/packaging/rpms.sh build-rpm-x86_64 x86_64 build-deb; then
        install_result="$install_result; x86_64 RPMs: FAILED (tests/packaging/rpms.sh above)"
        failed_setup=$((failed_setup + 1))
    fi
    wait "$aarch64_pid" || echo "aarch64 packages: FAILED (exit $?)" >>"$aarch64_failures"
    echo "--- the aarch64 packages (build-aarch64-packages.log):"
    cat build-aarch64-packages.log
    while read -r failure; do
        install_result="$install_result; $failure"
        failed_setup=$((failed_setup + 1))
    done <"$aarch64_failures"
    rm -f "$aarch64_failures"
    leg_time install "$install_started"
fi
echo "$install_result"

fuzz_result="fuzz: skipped (GDRHOOKTEST_QUICK=1)"
if [ "${GDRHOOKTEST_QUICK:-0}" != 1 ]; then
    echo "=== build-fuzz: libFuzzer targets (tests/fuzz/run.sh)"
    fuzz_started=$(date +%s)
    if tests/fuzz/run.sh; then
        fuzz_result="fuzz: OK (config, log_reader: ${GDRHOOKTEST_FUZZ_SECONDS:-60} s each, no finding)"
    else
        fuzz_result="fuzz: FAILED (see tests/fuzz/run.sh output above)"
        failed_setup=$((failed_setup + 1))
    fi
    leg_time build-fuzz "$fuzz_started"
fi

echo "$fuzz_result"

# The mutation check: every promise in tests/mutants/mutants.py broken in
# turn on a scratch copy; the suites must catch each one.
mutants_result="mutants: skipped (GDRHOOKTEST_QUICK=1)"
if [ "${GDRHOOKTEST_QUICK:-0}" != 1 ]; then
    echo "=== mutants: tests/mutants/run.sh"
    # Its lines are shown as they come and kept for the verdict. (Not tee
    # /dev/stderr: where stderr is a file, tee opens it anew and truncates
    # everything this script printed before.)
    mutants_log=$(mktemp)
    mutants_started=$(date +%s)
    # The tests build-test and build-aarch64 passed above are not run
    # unmutated again (tests/mutants/run.py, GDRHOOKTEST_MUTANTS_PASSED):
    # 91 s and 19 s of the two runs' preparation in a local run of 9270eda.
    GDRHOOKTEST_MUTANTS_PASSED="native=$PWD/build-test/meson-logs/testlog.json aarch64=$PWD/build-aarch64/meson-logs/testlog.json" \
        tests/mutants/run.sh | tee "$mutants_log"
    mutants_status=${PIPESTATUS[0]}
    mutants_line=$(tail -1 "$mutants_log")
    # CI keeps only the tail of the output: the verdict names the mutants
    # that survived or went stale, whose own lines scrolled away.
    mutants_missed=$(awk '$2 == "SURVIVED" || $2 == "STALE:" { print $1 }' "$mutants_log" | paste -sd, -)
    # and those caught only when run a second time (tests/mutants/run.py).
    mutants_lucky=$(awk '/ CAUGHT-ON-SECOND-RUN / { print $1 }' "$mutants_log" | paste -sd, -)
    rm -f "$mutants_log"
    if [ "$mutants_status" = 0 ] && [[ "$mutants_line" == *" 0 survived"* ]]; then
        mutants_result="mutants: OK ($mutants_line${mutants_lucky:+; caught only on a second run: $mutants_lucky})"
    else
        mutants_result="mutants: FAILED (${mutants_line:-no result}${mutants_missed:+; not caught: $mutants_missed})"
        failed_setup=$((failed_setup + 1))
    fi
    leg_time mutants "$mutants_started"
fi
echo "$mutants_result"
leg_time total "$run_started"
printf '%s\n' "${leg_times[@]}"
python3 - "$failed_setup" "${results[@]}" <<'PY'
import json, sys
failed_setup = int(sys.argv[1])
passed = failed = 0
skipped = []
failures = []  # named in the closing lines: CI keeps only the output's tail
for path in sys.argv[2:]:
    build = path.split("/")[0]
    build_passed = build_failed = 0
    try:
        for line in open(path):
            test = json.loads(line)
            result = test.get("result")
            if result in ("OK", "EXPECTEDFAIL"):
                build_passed += 1
            elif result == "SKIP":
                skipped.append(f"{build}:{test.get('name')}")
            else:
                build_failed += 1
                failures.append(f"{build}:{test.get('name')} ({result})")
    except OSError:
        build_failed += 1
        failures.append(f"{build}: no test log ({path})")
    # Each build's own count: the aarch64 leg's beside x86-64's.
    print(f"{build}: {build_passed} passed, {build_failed} failed")
    passed += build_passed
    failed += build_failed
failed += failed_setup
print(f"{passed} passed, {failed} failed, {len(skipped)} skipped")
if skipped:
    print("skipped: " + ", ".join(skipped))
if failures:
    print("failed: " + ", ".join(failures))
sys.exit(1 if failed or passed == 0 else 0)
PY
