#!/usr/bin/env bash
# OpenFaaS 0.21 on a Kubernetes cluster given by a kubeconfig, for paper 003's functions.
#
#   deploy.sh render   [--registry R]                         print every manifest deploy applies
#   deploy.sh build    --registry R                           build and push the function image (docker)
#   deploy.sh deploy   --kubeconfig K --registry R            platform + functions, 1 instance each
#   deploy.sh scale    --kubeconfig K --function F --replicas N   and wait until N instances serve
#   deploy.sh url      --kubeconfig K --function F            the function's URL, discovered
#   deploy.sh teardown --kubeconfig K                         delete functions and platform
#
# The function director sets instance counts with:
#   --scale-cmd 'systems/openfaas/deploy.sh scale --kubeconfig K --function F --replicas {n}'
set -euo pipefail
PROG=openfaas/deploy.sh
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
FUNCTIONS="imageproc imageproc-np reverse"
# shellcheck source=lib/kube.sh
. "$HERE/lib/kube.sh"

cmd=${1:-}
[ $# -gt 0 ] && shift
case "$cmd" in
    render) cmd_render "$@" ;;
    build)
        parse_common "$@"; need_registry "the registry to push to"
        command -v docker >/dev/null || die "docker not found: build the image where docker runs"
        for image in imageproc reverse; do
            docker build -f "$HERE/images/Dockerfile" -t "$REGISTRY/repro/openfaas-$image:0.21" "$REPO"
            docker push "$REGISTRY/repro/openfaas-$image:0.21"
        done
        ;;
    deploy)
        parse_common "$@"; need_kubeconfig; need_registry
        render "$HERE/k8s/platform" | kube apply -f -
        if ! kube -n openfaas get secret basic-auth >/dev/null 2>&1; then
            kube -n openfaas create secret generic basic-auth --from-literal=basic-auth-user=admin \
                --from-literal=basic-auth-password="$(head -c 24 /dev/urandom | base64 | tr -dc 'A-Za-z0-9')"
        fi
        kube -n openfaas rollout status deployment/gateway --timeout=600s
        render "$HERE/k8s/functions" | kube apply -f -
        for f in $FUNCTIONS; do wait_replicas openfaas-fn "$f" 1; done
        say "deployed; gateway at $(node_url openfaas gateway-external)"
        ;;
    scale)
        parse_common "$@"
        need_kubeconfig
        need_function
        [ -n "$REPLICAS" ] || die "--replicas N is required"
        kube -n openfaas-fn scale "deployment/$FUNCTION" --replicas="$REPLICAS" >&2
        wait_replicas openfaas-fn "$FUNCTION" "$REPLICAS"
        ;;
    url)
        parse_common "$@"
        need_kubeconfig
        need_function
        base=$(node_url openfaas gateway-external)
        echo "$base/function/$FUNCTION"
        ;;
    teardown) cmd_teardown "$@" ;;
    -h|--help|help|"") cmd_help "$cmd" ;;
    *)
        die "unknown command '$cmd' (render, build, deploy, scale, url, teardown)"
        ;;
esac
