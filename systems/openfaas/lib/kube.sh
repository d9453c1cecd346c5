# Shared by systems/openfaas/deploy.sh and systems/nuclio/deploy.sh (sourced, not run): kubectl
# with an explicit kubeconfig, rendering with the registry's image names, waiting for replicas,
# and discovering a NodePort URL. Nothing here edits an endpoint by hand.

die() { echo "$PROG: error: $*" >&2; exit 1; }
say() { echo "$PROG: $*" >&2; }

KUBECTL=${KUBECTL:-kubectl}

# parse_common ARGS...: sets KUBECONFIG_FILE, REGISTRY, FUNCTION, REPLICAS, CHART_OPTS from flags
parse_common() {
    KUBECONFIG_FILE= REGISTRY= FUNCTION= REPLICAS=
    while [ $# -gt 0 ]; do
        case "$1" in
            --kubeconfig) KUBECONFIG_FILE=${2:?--kubeconfig needs a file}; shift 2 ;;
            --registry) REGISTRY=${2:?--registry needs a registry prefix}; shift 2 ;;
            --function) FUNCTION=${2:?--function needs a name}; shift 2 ;;
            --replicas) REPLICAS=${2:?--replicas needs a number}; shift 2 ;;
            *) die "unknown argument '$1' (see $PROG --help)" ;;
        esac
    done
    case "$REGISTRY" in
        *[!A-Za-z0-9._:/-]*) die "--registry '$REGISTRY': want host[:port][/path]" ;;
    esac
    if [ -n "$REPLICAS" ]; then
        case "$REPLICAS" in
            ''|*[!0-9]*) die "--replicas '$REPLICAS': want a whole number (the paper used 1, 2, 4, 8, 16)" ;;
        esac
        [ "$REPLICAS" -ge 1 ] || die "--replicas must be at least 1"
    fi
}

need_kubeconfig() {
    [ -n "$KUBECONFIG_FILE" ] || die "--kubeconfig FILE is required (the cluster to deploy to)"
    [ -r "$KUBECONFIG_FILE" ] || die "--kubeconfig $KUBECONFIG_FILE: no such readable file"
    command -v "$KUBECTL" >/dev/null || die "$KUBECTL not found (Debian: kubernetes-client; or set KUBECTL)"
}

need_registry() {
    [ -n "$REGISTRY" ] || die "--registry is required (${1:-where deploy.sh build pushed the images})"
}

need_function() {
    [ -n "$FUNCTION" ] || die "--function NAME is required (one of: $FUNCTIONS)"
    case " $FUNCTIONS " in *" $FUNCTION "*) ;; *) die "--function '$FUNCTION': want one of: $FUNCTIONS" ;; esac
}

kube() { "$KUBECTL" --kubeconfig "$KUBECONFIG_FILE" "$@"; }

# render DIR: the manifests of a kustomization, with the repro/* images under $REGISTRY
# (a plain substitution: kustomize's images transformer does not reach custom kinds' spec.image)
render() {
    if [ -n "$REGISTRY" ]; then
        "$KUBECTL" kustomize "$1" | sed -E "s#^([[:space:]-]*image:[[:space:]]*)repro/#\\1$REGISTRY/repro/#"
    else
        "$KUBECTL" kustomize "$1"
    fi
}

# wait_replicas NAMESPACE DEPLOYMENT N: until N pods are ready and the Service has N endpoints
wait_replicas() {
    local ns=$1 dep=$2 n=$3 i ready
    kube -n "$ns" rollout status "deployment/$dep" --timeout=600s >&2 || die "deployment $ns/$dep did not roll out"
    for i in $(seq 1 300); do
        ready=$(kube -n "$ns" get endpoints "$dep" -o jsonpath='{.subsets[*].addresses[*].ip}' 2>/dev/null | wc -w)
        if [ "$ready" -eq "$n" ]; then
            say "$ns/$dep: $n ready instance(s)"
            return 0
        fi
        sleep 2
    done
    die "$ns/$dep: $ready of $n instances ready after 600 s"
}

# node_url NAMESPACE SERVICE: http://<first Ready node's InternalIP>:<the service's nodePort>
node_url() {
    local ns=$1 svc=$2 port ip
    port=$(kube -n "$ns" get service "$svc" -o jsonpath='{.spec.ports[0].nodePort}') \
        || die "service $ns/$svc not found"
    [ -n "$port" ] || die "service $ns/$svc has no nodePort"
    ip=$(kube get nodes -o jsonpath='{range .items[*]}{range .status.conditions[?(@.type=="Ready")]}{.status}{end} {.status.addresses[?(@.type=="InternalIP")].address}{"\n"}{end}' \
        | awk '$1 == "True" {print $2; exit}')
    [ -n "$ip" ] || die "no Ready node with an InternalIP"
    echo "http://$ip:$port"
}

# the sub-commands both platforms share (their deploy.sh sets HERE and PROG)
cmd_render() {
    parse_common "$@"
    render "$HERE/k8s/platform"
    echo "---"
    render "$HERE/k8s/functions"
}

cmd_teardown() {
    parse_common "$@"
    need_kubeconfig
    render "$HERE/k8s/functions" | kube delete --ignore-not-found --wait -f - || true
    render "$HERE/k8s/platform" | kube delete --ignore-not-found --wait -f -
}

cmd_help() {  # the script's header comment; exit 2 when no command was given
    sed -n '2,/^set -euo/p' "$0" | sed '$d'
    [ -n "$1" ] || exit 2
}

# the Go handler of systems/faas-functions (paper 003, App. A.3), rebound from the local SDK shape
# to the real Nuclio Go SDK: one source for the stand-in and the cluster (nuctl build compiles it)
go_handler_source() {
    sed -e 's#^package reverse$#package main#' \
        -e 's#"repro.local/faas-functions/nuclioshape"#nuclio "github.com/nuclio/nuclio-sdk-go"#' \
        -e 's#nuclioshape\.#nuclio.#g' \
        "$REPO/systems/faas-functions/go/reverse/reverse.go"
}
