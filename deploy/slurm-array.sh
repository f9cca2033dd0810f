#!/bin/bash
# Precompute sightline tables on Slurm: array task K computes shard K/N (observer rows
# i % N == K); a dependent job merges the N shard files into one table, byte-identical to a
# single run.
#
#   jid=$(sbatch --parsable deploy/slurm-array.sh)
#   sbatch --dependency=afterok:$jid deploy/slurm-array.sh merge
#
# Change the shard count with `sbatch --array=0-15 ...` (the script reads the array size).
# OUT_DIR must be on a file system every node sees. See deploy/README.md.
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
OUT_DIR=${OUT_DIR:-$PWD/tables}
SIGHTLINE=${SIGHTLINE:-sightline}
mkdir -p "$OUT_DIR"

if [ "${1:-}" = "merge" ]; then
    # The merge job is not an array job: take N from the shard files present, and check it
    # against the array size when the caller passes SHARDS.
    shopt -s nullglob
    files=("$OUT_DIR/$SCENE".shard-*.slt)
    n=${SHARDS:-${#files[@]}}
    if [ "${#files[@]}" -ne "$n" ] || [ "$n" -eq 0 ]; then
        echo "expected $n shard files in $OUT_DIR, found ${#files[@]}" >&2
        exit 1
    fi
    "$SIGHTLINE" merge --out "$OUT_DIR/$SCENE.slt" "${files[@]}"
    "$SIGHTLINE" inspect "$OUT_DIR/$SCENE.slt"
    exit 0
fi

: "${SLURM_ARRAY_TASK_ID:?submit this script with sbatch (it is an array job)}"
N=${SLURM_ARRAY_TASK_COUNT:-$((SLURM_ARRAY_TASK_MAX + 1))}
export RAYON_NUM_THREADS=${SLURM_CPUS_PER_TASK:-1}
"$SIGHTLINE" precompute --scene "$SCENE" --spacing "$SPACING" \
    --shard "$SLURM_ARRAY_TASK_ID/$N" \
    --out "$OUT_DIR/$SCENE.shard-$SLURM_ARRAY_TASK_ID.slt"
