# Source me: defaults for Open MPI 4.1 on these machines (see MACHINE-FACTS).
#   . systems/mpifuse/mpi-env.sh            # shared memory allowed within a host (UCX picks)
#   MPIFUSE_TCP_ONLY=1 . systems/mpifuse/mpi-env.sh   # emulate separate nodes: UCX over TCP only
# Values already set in the environment win.
export OMPI_MCA_osc="${OMPI_MCA_osc:-ucx}"           # default osc fails MPI_Win_allocate here
export OMPI_MCA_btl="${OMPI_MCA_btl:-self,tcp}"      # vader (shared memory BTL) crashes with several ranks/host
export OMPI_ALLOW_RUN_AS_ROOT="${OMPI_ALLOW_RUN_AS_ROOT:-1}"
export OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="${OMPI_ALLOW_RUN_AS_ROOT_CONFIRM:-1}"
export OMPI_MCA_btl_tcp_if_include="${OMPI_MCA_btl_tcp_if_include:-lo}"
export OMPI_MCA_oob_tcp_if_include="${OMPI_MCA_oob_tcp_if_include:-lo}"
export OMPI_MCA_rmaps_base_oversubscribe="${OMPI_MCA_rmaps_base_oversubscribe:-1}"
if [ "${MPIFUSE_TCP_ONLY:-0}" = 1 ]; then
    # what separate nodes without RDMA see: passive-target MPI_Get needs the
    # target's progress thread
    export UCX_TLS="${UCX_TLS:-tcp,self}"
    export UCX_NET_DEVICES="${UCX_NET_DEVICES:-lo}"
fi
