// Byte reversal for Nuclio's Go runtime on the cluster path (paper 003, Appendix A.3): the same
// algorithm as systems/faas-functions/go/reverse, written against the real Nuclio Go SDK, which
// the Go module proxy refuses on the development machine -- so this file is built only by
// `nuctl build` (deploy.sh build) inside Nuclio's builder image, never here.
package main

import (
	"github.com/nuclio/nuclio-sdk-go"
)

// Handler reverses the request body in place and returns it.
func Handler(context *nuclio.Context, event nuclio.Event) (interface{}, error) {
	body := event.GetBody()
	for i, j := 0, len(body)-1; i < j; i, j = i+1, j-1 {
		body[i], body[j] = body[j], body[i]
	}
	return nuclio.Response{
		StatusCode:  200,
		ContentType: "application/octet-stream",
		Body:        body,
	}, nil
}
