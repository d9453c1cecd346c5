//go:build !go1.21

package main

import (
	"bytes"
	"io"
	"net/http"
)

// prepareBody, before Go 1.21 (no full-duplex switch): the front reads the whole request body
// first, so the server's draining cannot race with the transport (see duplex_go121.go).
func prepareBody(w http.ResponseWriter, r *http.Request) error {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return err
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	return nil
}
