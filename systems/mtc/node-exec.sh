#!/usr/bin/env bash
# node-exec.sh RENDEZVOUS RANKS_PER_NODE CMD...: run an MPI rank's CMD inside the
# Apptainer instance of its node (container mode of systems/mtc), so that it sees
# that node's FUSE mounts. Rank r belongs to node r / RANKS_PER_NODE (the block
# order of Cluster.mpi_command). Without an instance for that node, CMD runs as is.
set -euo pipefail
rdv=$1 k=$2
shift 2
rank=${OMPI_COMM_WORLD_RANK:-${PMIX_RANK:-${SLURM_PROCID:-0}}}
node=$((rank / k))
f="$rdv/node-$node.json"
inst=""
if [ -f "$f" ]; then
    inst=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get("instance", ""))' "$f")
fi
if [ -n "$inst" ]; then
    exec apptainer exec "instance://$inst" "$@"
fi
exec "$@"
