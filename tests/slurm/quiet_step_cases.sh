# SPDX-License-Identifier: MIT OR GPL-2.0-only
#
# Sourced by slurm.sh, its daemons up: a step that made no CUDA call under
# the shim (`srun hostname`) prints nothing on srun's standard error, its
# verdict file and slurmd's log say "no CUDA call"; under the site's
# default=on too, where every step runs under gdrhook and a line for each
# would be noise. A step that did make CUDA calls still prints its line.
#   asked     srun --gdrhook hostname: nothing printed;
#   default   default=on, srun hostname: nothing printed; srun of the demo:
#             its OK line.

# quiet NAME ARGS...: srun ARGS as the user, whose stderr must hold no line
# of gdrhook's, while the step's verdict file says no CUDA call.
quiet() {
    local name=$1 job
    shift
    as_user srun --job-name="$name" "$@" sh -c 'echo "job=$SLURM_JOB_ID"; hostname' \
        >"$tmp/$name.out" 2>"$tmp/$name.err" || fail "the $name job failed"
    job=$(sed -n 's/^job=\([0-9]*\)$/\1/p' "$tmp/$name.out")
    lacks "$tmp/$name.err" "gdrhook: "
    has "$logs/$user/$job/$host.step0.verdict.txt" "gdrhook: job $job step 0 on $host: no CUDA call; nothing of the job left pinned"
}

quiet asked --gdrhook
plugstack default=on
quiet default
as_user srun --job-name=default-demo "$tmp/bin/gdrhook-demo" >"$tmp/default-demo.out" \
    2>"$tmp/default-demo.err" || fail "the demo under default=on failed"
has "$tmp/default-demo.err" ": OK; nothing of the job left pinned; log check: OK, 1 log(s)"
plugstack
