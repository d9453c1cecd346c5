#!/usr/bin/env bash
# Nuclio 1.6.18 on a Kubernetes cluster given by a kubeconfig, for paper 003's functions.
#
#   deploy.sh render   [--registry R]                         print every manifest deploy applies
#   deploy.sh build    --registry R                           build and push the images (nuctl 1.6.18)
#   deploy.sh deploy   --kubeconfig K --registry R            platform + functions, 1 instance each
#   deploy.sh scale    --kubeconfig K --function F --replicas N   and wait until N instances serve
#   deploy.sh url      --kubeconfig K --function F            the function's URL, discovered
#   deploy.sh teardown --kubeconfig K                         delete functions and platform
#
# The function director sets instance counts with:
#   --scale-cmd 'systems/nuclio/deploy.sh scale --kubeconfig K --function F --replicas {n}'
set -euo pipefail
PROG=nuclio/deploy.sh
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
FUNCTIONS="imageproc imageproc-np reverse reverse-go"
NUCLIO_VERSION=1.6.18
# shellcheck source=../openfaas/lib/kube.sh
. "$HERE/../openfaas/lib/kube.sh"

# the controller names a function's Deployment and Service nuclio-<name>
wait_function() {
    local f=$1 n=$2 i state
    for i in $(seq 1 300); do
        state=$(kube -n nuclio get nucliofunction "$f" -o jsonpath='{.status.state}' 2>/dev/null || true)
        [ "$state" = ready ] && break
        case "$state" in error|unhealthy) die "function $f is $state: kubectl -n nuclio describe nucliofunction $f" ;; esac
        sleep 2
    done
    [ "$state" = ready ] || die "function $f not ready after 600 s (state '$state')"
    wait_replicas nuclio "nuclio-$f" "$n"
}

cmd=${1:-}
[ $# -gt 0 ] && shift
case "$cmd" in
    render) cmd_render "$@" ;;
    go-source) go_handler_source ;;  # the Go handler nuctl builds, printed (the tests parse it)
    build)
        parse_common "$@"; need_registry "the registry to push to"
        command -v nuctl >/dev/null || die "nuctl not found: install nuctl $NUCLIO_VERSION on the driver node"
        nuctl version 2>&1 | grep -q "$NUCLIO_VERSION" || die "nuctl is not version $NUCLIO_VERSION"
        make -C "$REPO/systems/faas-functions" build/imageproc build/imageproc-np build/reverse
        stage=$(mktemp -d)
        trap 'rm -rf "$stage"' EXIT
        for f in imageproc imageproc-np reverse; do
            mkdir -p "$stage/$f"
            cp "$REPO/systems/faas-functions/build/$f" "$stage/$f/"
            sed "s/FUNCTION/$f/g" "$HERE/functions/shell/function.yaml" > "$stage/$f/function.yaml"
            nuctl build "$f" --path "$stage/$f" --file "$stage/$f/function.yaml" --platform local \
                --registry "$REGISTRY" --image "repro/nuclio-$f:$NUCLIO_VERSION"
        done
        mkdir -p "$stage/reverse-go"
        go_handler_source > "$stage/reverse-go/handler.go"
        nuctl build reverse-go --path "$stage/reverse-go" --file "$HERE/functions/reverse-go/function.yaml" \
            --platform local --registry "$REGISTRY" --image "repro/nuclio-reverse-go:$NUCLIO_VERSION"
        ;;
    deploy)
        parse_common "$@"; need_kubeconfig; need_registry
        render "$HERE/k8s/platform" | kube apply -f -
        kube -n nuclio rollout status deployment/nuclio-controller --timeout=600s
        render "$HERE/k8s/functions" | kube apply -f -
        for f in $FUNCTIONS; do wait_function "$f" 1; done
        say "deployed; e.g. $f at $(node_url nuclio "nuclio-$f")"
        ;;
    scale)
        parse_common "$@"
        need_kubeconfig
        need_function
        [ -n "$REPLICAS" ] || die "--replicas N is required"
        kube -n nuclio patch nucliofunction "$FUNCTION" --type merge \
            -p "{\"spec\":{\"minReplicas\":$REPLICAS,\"maxReplicas\":$REPLICAS}}" >&2
        sleep 2  # the controller picks the change up and updates the Deployment
        wait_function "$FUNCTION" "$REPLICAS"
        ;;
    url)
        parse_common "$@"
        need_kubeconfig
        need_function
        node_url nuclio "nuclio-$FUNCTION"
        ;;
    teardown) cmd_teardown "$@" ;;
    -h|--help|help|"") cmd_help "$cmd" ;;
    *)
        die "unknown command '$cmd' (render, build, deploy, scale, url, teardown)"
        ;;
esac
