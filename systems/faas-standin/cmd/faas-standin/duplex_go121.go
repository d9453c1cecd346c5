//go:build go1.21

package main

import "net/http"

// prepareBody lets the front answer while the transport may still be reading the request body.
// By default Go's HTTP/1 server drains and closes an unread request body when the handler starts
// its response; with a proxied body that races with the transport still writing it upstream
// (seen: "use of closed network connection" mid-response when the instance answers at once, as
// nuclio-go does). Full duplex switches that draining off.
func prepareBody(w http.ResponseWriter, r *http.Request) error {
	return http.NewResponseController(w).EnableFullDuplex()
}
