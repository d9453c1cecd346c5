// Package nuclioshape is the shape of the Nuclio Go SDK that a Nuclio Go handler is written
// against (github.com/nuclio/nuclio-sdk-go: Context, Event.GetBody, Response), re-declared
// here because the Go module proxy refuses Nuclio's modules on this machine. It holds only
// what the paper's handler (Appendix A.3) uses. The stand-in's in-process runtime
// (systems/faas-standin, kind nuclio-go) builds events of this shape and calls the handler
// with the request body it read, without copying it (paper 003, Sec. 2.3).
package nuclioshape

// Context is passed to every invocation; the real SDK carries a logger, the platform and
// user data. The stand-in fills in the worker that runs the call.
type Context struct {
	WorkerID int
}

// Event is one trigger event; the paper's handler only reads its body.
type Event interface {
	GetBody() []byte
	GetContentType() string
}

// Response is what a handler returns for an HTTP trigger.
type Response struct {
	StatusCode  int
	ContentType string
	Headers     map[string]interface{}
	Body        []byte
}

// Handler is the signature of a Nuclio Go function.
type Handler func(context *Context, event Event) (interface{}, error)
