package main

// One function instance (a "pod"): the part of each platform that runs the user function.
//
//   openfaas-watchdog  OpenFaaS's classic watchdog: every request forks the function process
//                      and pipes the body through its stdin/stdout; requests run concurrently,
//                      nothing queues (paper 003, Sec. 2.3 "forking a sub process ... copy it
//                      into the memory of the sub process").
//   nuclio-cpp         Nuclio's shell runtime for a C++ binary: the same fork-and-pipe, but a
//                      fixed number of workers per instance (the HTTP trigger's maxWorkers).
//   nuclio-go          Nuclio's Go runtime: the handler is compiled into the processor and
//                      works on the request body it was handed, in place: no fork, no copy;
//                      bodies over --max-body get 413 (Nuclio Go failed above 2 MiB, Sec. 3.2).
//   echo               no platform: the body comes back unchanged (the limit measurement).

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"time"

	"repro.local/faas-functions/nuclioshape"
	"repro.local/faas-functions/reverse"
)

const (
	kindHeader     = "X-Repro-System-Kind"
	instanceHeader = "X-Repro-Instance"
)

// systemKind is the label every response carries, naming the stand-in (or "none" for echo).
var systemKind = map[string]string{
	"openfaas-watchdog": "stand-in:openfaas-watchdog",
	"nuclio-cpp":        "stand-in:nuclio-cpp-shell",
	"nuclio-go":         "stand-in:nuclio-go-inprocess",
	"echo":              "none:echo-server",
}

type instance struct {
	kind     string
	id       string
	fprocess string
	workers  chan struct{} // nil: unlimited (the watchdog)
	wait     time.Duration // how long a request may wait for a free worker
	maxBody  int64
}

func (in *instance) label(w http.ResponseWriter) {
	w.Header().Set(kindHeader, systemKind[in.kind])
	w.Header().Set(instanceHeader, in.id)
}

func (in *instance) fail(w http.ResponseWriter, status int, format string, args ...interface{}) {
	in.label(w)
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(status)
	fmt.Fprintf(w, "%s (%s): %s\n", systemKind[in.kind], in.id, fmt.Sprintf(format, args...))
}

func (in *instance) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/_/health" {
		in.label(w)
		fmt.Fprintln(w, "OK")
		return
	}
	if in.workers != nil {
		timer := time.NewTimer(in.wait)
		select {
		case in.workers <- struct{}{}:
			timer.Stop()
			defer func() { <-in.workers }()
		case <-timer.C:
			io.Copy(io.Discard, r.Body)
			in.fail(w, http.StatusServiceUnavailable, "no worker available within %s", in.wait)
			return
		}
	}
	start := time.Now()
	switch in.kind {
	case "openfaas-watchdog", "nuclio-cpp":
		in.forkAndPipe(w, r, start)
	case "nuclio-go":
		in.inProcess(w, r, start)
	default:
		in.echo(w, r, start)
	}
}

// forkAndPipe reads the whole body (as the classic watchdog does), starts the function process,
// writes the body to its stdin and returns what it wrote to stdout.
func (in *instance) forkAndPipe(w http.ResponseWriter, r *http.Request, start time.Time) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		in.fail(w, http.StatusBadRequest, "reading the request body: %v", err)
		return
	}
	cmd := exec.CommandContext(r.Context(), in.fprocess)
	cmd.Stdin = bytes.NewReader(body)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		in.fail(w, http.StatusInternalServerError, "function %s failed: %v: %s", in.fprocess, err, bytes.TrimSpace(stderr.Bytes()))
		return
	}
	in.reply(w, start, "application/octet-stream", stdout.Bytes())
}

type event struct {
	body        []byte
	contentType string
}

func (e *event) GetBody() []byte        { return e.body }
func (e *event) GetContentType() string { return e.contentType }

// inProcess reads the body into one buffer of its announced size and hands that buffer to the
// Go handler, which reverses it in place; the response is written from the same buffer.
func (in *instance) inProcess(w http.ResponseWriter, r *http.Request, start time.Time) {
	if r.ContentLength > in.maxBody {
		n, _ := io.Copy(io.Discard, io.LimitReader(r.Body, 1<<30)) // drain, so the client reads the status
		in.fail(w, http.StatusRequestEntityTooLarge,
			"request body of %d bytes exceeds the body-size limit of %d bytes (read and dropped %d); "+
				"Nuclio Go failed above 2 MiB in paper 003, Sec. 3.2", r.ContentLength, in.maxBody, n)
		return
	}
	body, err := readBody(r, in.maxBody)
	if errors.Is(err, errTooLarge) {
		io.Copy(io.Discard, r.Body)
		in.fail(w, http.StatusRequestEntityTooLarge,
			"chunked request body exceeds the body-size limit of %d bytes", in.maxBody)
		return
	}
	if err != nil {
		in.fail(w, http.StatusBadRequest, "reading the request body: %v", err)
		return
	}
	out, err := reverse.Handler(&nuclioshape.Context{}, &event{body, r.Header.Get("Content-Type")})
	if err != nil {
		in.fail(w, http.StatusInternalServerError, "handler: %v", err)
		return
	}
	resp, ok := out.(nuclioshape.Response)
	if !ok {
		in.fail(w, http.StatusInternalServerError, "handler returned %T, want nuclioshape.Response", out)
		return
	}
	if resp.StatusCode != http.StatusOK {
		in.label(w)
		w.WriteHeader(resp.StatusCode)
		w.Write(resp.Body)
		return
	}
	in.reply(w, start, resp.ContentType, resp.Body)
}

func (in *instance) echo(w http.ResponseWriter, r *http.Request, start time.Time) {
	body, err := readBody(r, 1<<40)
	if err != nil {
		in.fail(w, http.StatusBadRequest, "reading the request body: %v", err)
		return
	}
	in.reply(w, start, "application/octet-stream", body)
}

var errTooLarge = errors.New("request body over the limit")

// readBody reads the body into one buffer of the announced Content-Length (no growing, no
// copying); a chunked body is read up to limit+1 bytes.
func readBody(r *http.Request, limit int64) ([]byte, error) {
	if r.ContentLength >= 0 {
		body := make([]byte, r.ContentLength)
		_, err := io.ReadFull(r.Body, body)
		return body, err
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, limit+1))
	if err == nil && int64(len(body)) > limit {
		return nil, errTooLarge
	}
	return body, err
}

func (in *instance) reply(w http.ResponseWriter, start time.Time, contentType string, body []byte) {
	in.label(w)
	w.Header().Set("Content-Type", contentType)
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.Header().Set("X-Duration-Seconds", fmt.Sprintf("%.6f", time.Since(start).Seconds()))
	w.WriteHeader(http.StatusOK)
	w.Write(body)
}

// serve listens, announces "LISTENING host:port" on stdout (the supervisor waits for it, and
// writes it to --endpoint-file if given) and serves until SIGTERM/SIGINT.
func serve(handler http.Handler, listen, endpointFile string) error {
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", listen, err)
	}
	addr := ln.Addr().String()
	if endpointFile != "" {
		if err := writeFileAtomic(endpointFile, "http://"+addr+"\n"); err != nil {
			return err
		}
	}
	fmt.Printf("LISTENING %s\n", addr)
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second}
	ctx, stop := signalContext()
	defer stop()
	go func() {
		<-ctx.Done()
		shut, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		srv.Shutdown(shut)
	}()
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

func cmdInstance(args []string, echoOnly bool) error {
	fs := flag.NewFlagSet("instance", flag.ContinueOnError)
	kind := fs.String("kind", "", "openfaas-watchdog | nuclio-cpp | nuclio-go | echo")
	listen := fs.String("listen", "127.0.0.1:0", "address to listen on (port 0: any free port)")
	fprocess := fs.String("fprocess", "", "the function binary (fork-and-pipe kinds)")
	workers := fs.Int("workers", 0, "workers per instance (nuclio kinds; 0 = the kind's default)")
	wait := fs.Duration("worker-wait", 60*time.Second, "how long a request waits for a free worker")
	maxBody := fs.Int64("max-body", 2<<20, "body-size limit of nuclio-go in bytes")
	id := fs.String("id", "", "instance name in responses (default: the listen address)")
	endpointFile := fs.String("endpoint-file", "", "write the URL here once listening")
	pidFile := fs.String("pid-file", "", "write the process id here; removed on exit")
	if echoOnly {
		*kind = "echo"
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	in, err := newInstance(*kind, *fprocess, *workers, *wait, *maxBody, *id)
	if err != nil {
		return err
	}
	if *pidFile != "" {
		if err := writeFileAtomic(*pidFile, strconv.Itoa(os.Getpid())+"\n"); err != nil {
			return err
		}
		defer os.Remove(*pidFile)
	}
	if *endpointFile != "" {
		defer os.Remove(*endpointFile)
	}
	if in.id == "" {
		in.id = "instance@" + *listen
	}
	node, host := whereAmI()
	fmt.Printf("NODE %s %s\n", node, host) // where it runs, measured here (the supervisor records it)
	return serve(in, *listen, *endpointFile)
}

func newInstance(kind, fprocess string, workers int, wait time.Duration, maxBody int64, id string) (*instance, error) {
	if _, ok := systemKind[kind]; !ok {
		return nil, fmt.Errorf("--kind %q: want openfaas-watchdog, nuclio-cpp, nuclio-go or echo", kind)
	}
	in := &instance{kind: kind, id: id, fprocess: fprocess, wait: wait, maxBody: maxBody}
	if kind == "openfaas-watchdog" || kind == "nuclio-cpp" {
		if fprocess == "" {
			return nil, fmt.Errorf("--kind %s needs --fprocess (the function binary)", kind)
		}
		if st, err := os.Stat(fprocess); err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
			return nil, fmt.Errorf("--fprocess %s: not an executable file", fprocess)
		}
	}
	if kind == "nuclio-cpp" || kind == "nuclio-go" {
		if workers <= 0 {
			workers = defaultNuclioWorkers
		}
		in.workers = make(chan struct{}, workers)
	}
	if maxBody <= 0 {
		return nil, fmt.Errorf("--max-body %d: must be positive", maxBody)
	}
	return in, nil
}
