package reverse

import (
	"bytes"
	"math/rand"
	"testing"

	"repro.local/faas-functions/nuclioshape"
)

type event struct{ body []byte }

func (e event) GetBody() []byte        { return e.body }
func (e event) GetContentType() string { return "application/octet-stream" }

func TestHandlerReversesInPlace(t *testing.T) {
	for _, n := range []int{0, 1, 2, 3, 4096, 1<<20 + 7} {
		in := make([]byte, n)
		rand.New(rand.NewSource(int64(n))).Read(in)
		want := make([]byte, n)
		for i := range in {
			want[n-1-i] = in[i]
		}
		body := append([]byte(nil), in...)
		out, err := Handler(&nuclioshape.Context{}, event{body})
		if err != nil {
			t.Fatalf("n=%d: %v", n, err)
		}
		resp := out.(nuclioshape.Response)
		if resp.StatusCode != 200 || !bytes.Equal(resp.Body, want) {
			t.Fatalf("n=%d: status %d, body not the reverse", n, resp.StatusCode)
		}
		if n > 0 && &resp.Body[0] != &body[0] {
			t.Fatalf("n=%d: response body is a copy, not the request body reversed in place", n)
		}
	}
}
