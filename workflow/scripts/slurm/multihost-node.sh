#!/usr/bin/env bash
# One node of multihost-cluster.sh: run inside the node's network namespace, in a fresh UTS and
# mount namespace (`ip netns exec rsc-node<i> unshare --uts --mount --propagation private`).
# Gives the node its hostname and its private /tmp and /dev/shm (tmpfs), the cluster's /etc/hosts
# and /etc/slurm/slurm.conf, then becomes slurmd (which daemonizes inside these namespaces).
#
#   multihost-node.sh NAME CONF DIR TMP_SIZE TAG
set -euo pipefail
name=$1 conf=$2 dir=$3 size=$4 tag=$5
hostname "$name"
mount -t tmpfs -o "mode=1777,size=$size" "$tag-tmp-$name" /tmp
mount -t tmpfs -o "mode=1777,size=$size" "$tag-shm-$name" /dev/shm
mount --bind "$dir/hosts" /etc/hosts
mount -t tmpfs -o mode=755,size=1m "$tag-etc-$name" /etc/slurm
ln -s "$conf" /etc/slurm/slurm.conf
export SLURM_CONF=$conf
exec slurmd -N "$name" -f "$conf"
