# Open MPI settings for the benchmark jobs (source it).
# See ../shared/MACHINE-FACTS.md: the default one-sided component fails
# MPI_Win_allocate here (osc=ucx works and gives MPI_THREAD_MULTIPLE), and the
# shared-memory BTL crashes with several ranks per virtual node.
export OMPI_MCA_osc=${OMPI_MCA_osc:-ucx}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# REPRO_SINGLE_HOST=1 (cluster.single_host in the config): all "nodes" are one
# host. Keep traffic on loopback and keep ranks of different virtual nodes off
# shared memory, so one-sided reads behave as between separate nodes.
if [ "${REPRO_SINGLE_HOST:-0}" = 1 ]; then
    export OMPI_MCA_btl=${OMPI_MCA_btl:-self,tcp}
    export OMPI_MCA_btl_tcp_if_include=${OMPI_MCA_btl_tcp_if_include:-lo}
    export OMPI_MCA_oob_tcp_if_include=${OMPI_MCA_oob_tcp_if_include:-lo}
    export UCX_TLS=${UCX_TLS:-tcp,self}
    export UCX_NET_DEVICES=${UCX_NET_DEVICES:-lo}
fi
