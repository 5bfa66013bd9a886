# SPDX-License-Identifier: MIT OR GPL-2.0-only
#
# Sourced by slurm.sh, its daemons up: steps whose programs run in a mount
# namespace where the shim's folder is hidden, as in a container image that
# lacks it. The loader then says it cannot preload the shim and the program
# runs without it, making CUDA calls no log records; the step's verdict
# must say it ran without gdrhook, never OK.
#   first     the task itself starts in the namespace, as pyxis/enroot
#             start a task (here a static busybox, which loads nothing,
#             makes it and runs the demo in it): no process of the step
#             loaded the shim;
#   runtime   a container runtime the shim was loaded into (util-linux's
#             unshare) starts the demo in a namespace where the shim is
#             hidden, as Apptainer and podman do: only the runtime loaded
#             it, nothing in its container did;
#   bound     the same runtime with the shim's folder left in view, as the
#             README's recipes bind it in: the demo runs under the shim, OK.
# The user namespace (-r) lets the unprivileged user make the mount.

busybox=$(command -v busybox) || fail "no busybox (Debian: apt-get install busybox-static)"
ldd "$busybox" >/dev/null 2>&1 && fail "$busybox is not static (Debian: busybox-static)"
mkdir -m 755 "$tmp/empty"

# contained NAME COMMAND...: the demo run by COMMAND as a job of the user
# under --gdrhook=alloc; its job id in $job.
contained() {
    local name=$1
    shift
    as_user srun --gdrhook=alloc --job-name="$name" "$@" \
        >"$tmp/$name.out" 2>"$tmp/$name.err" || fail "the $name job failed: $(cat "$tmp/$name.err")"
    job=$(squeue --noheader --states=all --name="$name" --format=%i | sort -n | tail -1)
    [ -n "$job" ] || fail "no job named $name"
}
# The demo, run by busybox's shell once the shim's folder is hidden.
hide_and_run=("$busybox" sh -c '"$0" mount --bind "$1" "$2" && exec "$3"'
    "$busybox" "$tmp/empty" "$tmp/shim" "$tmp/bin/gdrhook-demo")

contained first "$busybox" unshare -r -m "${hide_and_run[@]}"
has "$tmp/first.out" "demo: device 0 is"
has "$tmp/first.err" "cannot be preloaded"
has "$tmp/first.err" "gdrhook: job $job step 0 on $host: ran without gdrhook: no process of the step loaded the shim"
lacks "$tmp/first.err" ": OK"

contained runtime unshare -r -m "${hide_and_run[@]}"
has "$tmp/runtime.out" "demo: device 0 is"
has "$tmp/runtime.err" "cannot be preloaded"
has "$tmp/runtime.err" "gdrhook: job $job step 0 on $host: ran without gdrhook: only unshare, a container runtime, loaded the shim"
lacks "$tmp/runtime.err" ": OK"

contained bound unshare -r -m "$busybox" sh -c 'exec "$0"' "$tmp/bin/gdrhook-demo"
lacks "$tmp/bound.err" "cannot be preloaded"
has "$tmp/bound.err" "gdrhook: job $job step 0 on $host: OK; nothing of the job left pinned; log check: OK, 1 log(s)"
