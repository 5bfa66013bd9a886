# SPDX-License-Identifier: MIT OR GPL-2.0-only
#
# Sourced by slurm.sh, its daemons up: --gdrhook=MODE checked where it is
# given, by srun and sbatch before anything is submitted, against the
# words the shim's settings table accepts (GDRHOOK_PIN's, with on and
# off); a misspelt mode is refused with the accepted words named, and no
# job is made.
#   misspelt  srun --gdrhook=allocc and sbatch --gdrhook=allocc: refused,
#             naming on, off, alloc and demand; no job of that name;
#   words     each accepted word, in any case, runs.

for submit in "srun true" "sbatch --wrap=true"; do
    set -- $submit
    as_user "$1" --gdrhook=allocc --job-name="misspelt-$1" "$2" \
        >"$tmp/misspelt-$1.out" 2>"$tmp/misspelt-$1.err" && fail "$1 took --gdrhook=allocc"
    submit=$1
    has "$tmp/misspelt-$submit.err" "--gdrhook=allocc is not a mode: expected on, off, alloc or demand"
    [ -z "$(squeue --noheader --states=all --name="misspelt-$submit" --format=%i)" ] ||
        fail "$submit --gdrhook=allocc made a job"
done
for mode in on OFF alloc Demand; do
    as_user srun --gdrhook="$mode" --job-name="mode-$mode" true >"$tmp/mode.out" 2>"$tmp/mode.err" ||
        fail "srun --gdrhook=$mode failed: $(cat "$tmp/mode.err")"
done
