# SPDX-License-Identifier: MIT OR GPL-2.0-only
#
# Sourced by slurm.sh, its daemons up: a plugstack.conf line whose
# arguments the plugin refuses. The refusal names the argument, on srun's
# standard error and in slurmd's log, and nothing of the line is taken:
#   unknown   a required plugin, bogus=1: srun says the argument and the
#             ones known, and Slurm runs no job (a required plugin that
#             fails stops it);
#   bad       an optional plugin (the package's line), default=on then
#             timeout=0: the job runs, without gdrhook, though default=on
#             came before the bad value; --gdrhook is then no option.

plugstack bogus=1
as_user srun --job-name=unknown-argument true >"$tmp/unknown-argument.out" \
    2>"$tmp/unknown-argument.err" && fail "srun ran a job under a plugstack line with bogus=1"
has "$tmp/unknown-argument.err" "gdrhook: plugstack.conf: unknown argument 'bogus=1' (known: default= logdir= owner= group= timeout= library= gdrhook= proc= sys=)"
[ -z "$(squeue --noheader --states=all --name=unknown-argument --format=%i)" ] ||
    fail "a job was made under a plugstack line with bogus=1"

plugstack_kind=optional plugstack default=on timeout=0
as_user srun --job-name=bad-argument sh -c 'echo "job=$SLURM_JOB_ID preload=$LD_PRELOAD"' \
    >"$tmp/bad-argument.out" 2>"$tmp/bad-argument.err" ||
    fail "an optional plugin's bad argument failed the job: $(cat "$tmp/bad-argument.err")"
refused="gdrhook: plugstack.conf: timeout=0: not a number of seconds from 1 to 86400"
has "$tmp/bad-argument.err" "$refused"
job=$(sed -n 's/^job=\([0-9]*\) .*/\1/p' "$tmp/bad-argument.out")
[ -n "$job" ] || fail "the bad-argument job said no job id"
has "$tmp/bad-argument.out" "job=$job preload="
lacks "$tmp/bad-argument.out" "$shim"
grep -q "\[$job.0\] error: $refused" "$tmp/log/slurmd.log" ||
    fail "slurmd's log lacks the refusal: $(tail -5 "$tmp/log/slurmd.log")"
as_user srun --gdrhook --job-name=bad-argument-asked true >"$tmp/bad-argument-asked.out" \
    2>"$tmp/bad-argument-asked.err" && fail "srun took --gdrhook from a plugin that refused its line"
plugstack
