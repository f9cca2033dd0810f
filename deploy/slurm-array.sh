#!/bin/bash
# Precompute sightline tables on Slurm: array task K computes shard K/N (observer rows
# i % N == K); a dependent job merges the N shard files into one table, byte-identical to a
# single run.
#
#   jid=$(sbatch --parsable deploy/slurm-array.sh)
#   sbatch --dependency=afterok:$jid deploy/slurm-array.sh merge
#
# Change the shard count with `sbatch --array=0-15 ...` (the script reads the array size).
# OUT_DIR must be on a file system every node sees. Set SIGHTLINE_IMAGE to run the container
# image built from the repository's Dockerfile through Apptainer (or Singularity: set
# CONTAINER=singularity) instead of a `sightline` binary on the nodes, e.g.
#   apptainer build sightline.sif docker://registry.example.com/sightline:0.1.0
#   SIGHTLINE_IMAGE=$PWD/sightline.sif sbatch --parsable deploy/slurm-array.sh
# See deploy/README.md; `tests/deploy.rs` runs this script for every task and the merge.
#SBATCH --job-name=sightline-tables
#SBATCH --array=0-7
#SBATCH --cpus-per-task=8
#SBATCH --mem=8G
#SBATCH --time=12:00:00
#SBATCH --output=sightline-%A_%a.log
# On GPU partitions add: #SBATCH --gres=gpu:1 (sightline then uses the GPU)

set -euo pipefail

SCENE=${SCENE:-urban}
SPACING=${SPACING:-2}
BACKEND=${BACKEND:-auto} # auto (the GPU where the node has one), gpu or cpu; same for all tasks
TABLE=${TABLE:-$(basename "$SCENE" | sed 's/\.[^.]*$//')} # output file name stem
OUT_DIR=${OUT_DIR:-$PWD/tables}
SIGHTLINE=${SIGHTLINE:-sightline}
mkdir -p "$OUT_DIR"

# The binary, or the image: `apptainer exec` runs `sightline` inside it with OUT_DIR bound at
# the same path (Apptainer also binds $HOME and the working directory; a mesh file elsewhere
# needs `--bind DIR` in CONTAINER_FLAGS). Add `--nv` to CONTAINER_FLAGS on NVIDIA GPU nodes.
sightline() {
    if [ -n "${SIGHTLINE_IMAGE:-}" ]; then
        # shellcheck disable=SC2086 # CONTAINER_FLAGS is a list of flags
        "${CONTAINER:-apptainer}" exec ${CONTAINER_FLAGS:-} --bind "$OUT_DIR" \
            "$SIGHTLINE_IMAGE" sightline "$@"
    else
        "$SIGHTLINE" "$@"
    fi
}

if [ "${1:-}" = "merge" ]; then
    # The merge job is not an array job: take N from the shard files present, and check it
    # against the array size when the caller passes SHARDS.
    shopt -s nullglob
    files=("$OUT_DIR/$TABLE".shard-*.slt)
    n=${SHARDS:-${#files[@]}}
    if [ "${#files[@]}" -ne "$n" ] || [ "$n" -eq 0 ]; then
        echo "expected $n shard files in $OUT_DIR, found ${#files[@]}" >&2
        exit 1
    fi
    sightline merge --out "$OUT_DIR/$TABLE.slt" "${files[@]}"
    sightline inspect "$OUT_DIR/$TABLE.slt"
    exit 0
fi

: "${SLURM_ARRAY_TASK_ID:?submit this script with sbatch (it is an array job)}"
N=${SLURM_ARRAY_TASK_COUNT:-$((SLURM_ARRAY_TASK_MAX + 1))}
export RAYON_NUM_THREADS=${SLURM_CPUS_PER_TASK:-1}
sightline precompute --scene "$SCENE" --spacing "$SPACING" --backend "$BACKEND" \
    --shard "$SLURM_ARRAY_TASK_ID/$N" \
    --out "$OUT_DIR/$TABLE.shard-$SLURM_ARRAY_TASK_ID.slt"
