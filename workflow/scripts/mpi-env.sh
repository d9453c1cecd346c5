# Open MPI settings, the one copy (source it): the benchmark rules (MPI_ENV in
# workflow/rules/common.smk), the systems' tests and their developer scripts.
# See ../shared/MACHINE-FACTS.md. Values already set in the environment win.
#
#   always               osc=ucx (the default one-sided component fails MPI_Win_allocate
#                        here; ucx gives MPI_THREAD_MULTIPLE), root allowed, and every PMIx
#                        fence of a Slurm step a real barrier (SLURM_PMIX_FENCE=ring, below)
#   REPRO_SINGLE_HOST=1  all "nodes" are one host (local runs, the local Slurm cluster,
#                        the tests): traffic on loopback, the shared-memory BTL off (it
#                        crashes with several ranks per host), oversubscription allowed,
#                        and UCX over TCP only, so ranks of different virtual nodes talk
#                        as separate nodes without RDMA do (a passive-target MPI_Get then
#                        needs the target's progress thread, as on a real cluster)
#   REPRO_MPI_SHM=1      with REPRO_SINGLE_HOST=1: let UCX use shared memory between the
#                        ranks (a faster, less faithful transport; some system tests use it)
# On a real cluster (REPRO_SINGLE_HOST unset) the transports are left to Open MPI, so
# the interconnect (InfiniBand) is used.
export OMPI_MCA_osc="${OMPI_MCA_osc:-ucx}"
export OMPI_ALLOW_RUN_AS_ROOT="${OMPI_ALLOW_RUN_AS_ROOT:-1}"
export OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="${OMPI_ALLOW_RUN_AS_ROOT_CONFIRM:-1}"
# srun --mpi=pmix: Slurm 22.05's PMIx plugin runs a fence without data (Open MPI's second fence in
# MPI_Init, the one in MPI_Finalize) as a "tree" collective, and for a step on fewer nodes than
# TreeWidth (default 50) that tree has no edges: every node is its own root and the fence returns at
# once, synchronising nothing (seen: a rank left it while another slept 2 s). A fast rank then leaves
# MPI_Init and sends (MPI_Comm_split's allgather) to a rank still waiting in the modex fence, whose
# pml ob1 has not registered its handlers yet: the TCP BTL calls a NULL callback and the rank dies
# of SIGSEGV, which UCX's signal handler reports ("Caught signal 11 ... address (nil)" in libucs).
# The ring collective is a real barrier. slurmstepd reads it from the step's environment; without
# Slurm it means nothing. (workflow/scripts/slurm/mpi-startup-loop.sh measures it.)
export SLURM_PMIX_FENCE="${SLURM_PMIX_FENCE:-ring}"
if [ "${REPRO_SINGLE_HOST:-0}" = 1 ]; then
    export OMPI_MCA_btl="${OMPI_MCA_btl:-self,tcp}"
    export OMPI_MCA_btl_tcp_if_include="${OMPI_MCA_btl_tcp_if_include:-lo}"
    export OMPI_MCA_oob_tcp_if_include="${OMPI_MCA_oob_tcp_if_include:-lo}"
    export OMPI_MCA_rmaps_base_oversubscribe="${OMPI_MCA_rmaps_base_oversubscribe:-1}"
    if [ "${REPRO_MPI_SHM:-0}" != 1 ]; then
        export UCX_TLS="${UCX_TLS:-tcp,self}"
        export UCX_NET_DEVICES="${UCX_NET_DEVICES:-lo}"
    fi
fi
