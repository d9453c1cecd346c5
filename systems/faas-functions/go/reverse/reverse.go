// Package reverse is the paper's Go byte-reversal function (paper 003, Appendix A.3): a Nuclio
// Go handler that reverses the request body in place -- the runtime hands it the body it
// read, the handler swaps bytes from both ends inward and returns the same slice as the
// response body, so no byte is copied between receiving the request and sending the answer.
package reverse

import "repro.local/faas-functions/nuclioshape"

// Handler reverses event's body in place and returns it with status 200.
func Handler(context *nuclioshape.Context, event nuclioshape.Event) (interface{}, error) {
	body := event.GetBody()
	for i, j := 0, len(body)-1; i < j; i, j = i+1, j-1 {
		body[i], body[j] = body[j], body[i]
	}
	return nuclioshape.Response{
		StatusCode:  200,
		ContentType: "application/octet-stream",
		Body:        body,
	}, nil
}
