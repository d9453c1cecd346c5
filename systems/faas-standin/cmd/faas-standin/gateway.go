package main

// The request path in front of the instances.
//
//   openfaas  the gateway sends each synchronous request straight to the next instance, round
//             robin, and never holds it back: "While OpenFaaS has a similar queue, it only uses
//             it for its asynchronous endpoints" (paper 003, Sec. 3.1).
//   nuclio    requests wait in one queue and each goes to the next free worker of any instance:
//             "Nuclio's internal queue, which gathers requests sent to its HTTP endpoints and
//             forwards them as soon as a worker is available" (Sec. 3.1).

import (
	"fmt"
	"net/http"
	"net/http/httputil"
	"net/url"
	"sync"
	"sync/atomic"
	"time"
)

// pool is one generation of instances; a scale operation swaps in a new pool.
type pool struct {
	targets []*url.URL
	slots   chan int // nuclio: one token per free worker, holding the instance index
	next    uint64   // openfaas: round-robin counter
}

type front struct {
	kind    string // openfaas | nuclio
	label   string
	wait    time.Duration
	mu      sync.RWMutex
	current *pool
	proxy   *httputil.ReverseProxy
	queued  int64
}

type targetKey struct{}

func newFront(kind string, wait time.Duration) *front {
	f := &front{kind: kind, wait: wait, label: "stand-in:openfaas-gateway"}
	if kind != "openfaas" {
		f.label = "stand-in:nuclio-queue"
	}
	transport := &http.Transport{
		MaxIdleConns:        1024,
		MaxIdleConnsPerHost: 256,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
	}
	f.proxy = &httputil.ReverseProxy{
		Director: func(r *http.Request) {
			t := r.Context().Value(targetKey{}).(*url.URL)
			r.URL.Scheme, r.URL.Host = t.Scheme, t.Host
			r.Header.Set("X-Forwarded-By", f.label)
		},
		Transport:     transport,
		FlushInterval: -1,
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			t := r.Context().Value(targetKey{}).(*url.URL)
			w.Header().Set("X-Repro-Gateway", f.label)
			w.Header().Set(kindHeader, f.label)
			w.WriteHeader(http.StatusBadGateway)
			fmt.Fprintf(w, "%s: instance %s failed: %v\n", f.label, t.Host, err)
		},
		ModifyResponse: func(resp *http.Response) error {
			resp.Header.Set("X-Repro-Gateway", f.label)
			return nil
		},
	}
	return f
}

// setTargets installs a new generation of instances with workers slots each (nuclio).
func (f *front) setTargets(urls []string, workers int) error {
	p := &pool{}
	for _, u := range urls {
		parsed, err := url.Parse(u)
		if err != nil {
			return fmt.Errorf("instance URL %q: %w", u, err)
		}
		p.targets = append(p.targets, parsed)
	}
	if f.kind == "nuclio" {
		p.slots = make(chan int, len(urls)*workers)
		for w := 0; w < workers; w++ {
			for i := range urls {
				p.slots <- i
			}
		}
	}
	f.mu.Lock()
	f.current = p
	f.mu.Unlock()
	return nil
}

func (f *front) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.RLock()
	p := f.current
	f.mu.RUnlock()
	if p == nil || len(p.targets) == 0 {
		w.Header().Set(kindHeader, f.label)
		http.Error(w, f.label+": no instances", http.StatusServiceUnavailable)
		return
	}
	var idx int
	if f.kind == "openfaas" {
		idx = int(atomic.AddUint64(&p.next, 1)-1) % len(p.targets)
	} else {
		atomic.AddInt64(&f.queued, 1)
		timer := time.NewTimer(f.wait)
		select {
		case idx = <-p.slots:
			timer.Stop()
			atomic.AddInt64(&f.queued, -1)
			defer func() { p.slots <- idx }()
		case <-timer.C:
			atomic.AddInt64(&f.queued, -1)
			w.Header().Set(kindHeader, f.label)
			http.Error(w, fmt.Sprintf("%s: no worker free within %s", f.label, f.wait), http.StatusServiceUnavailable)
			return
		case <-r.Context().Done():
			atomic.AddInt64(&f.queued, -1)
			return
		}
	}
	if err := prepareBody(w, r); err != nil {
		w.Header().Set(kindHeader, f.label)
		http.Error(w, f.label+": reading the request: "+err.Error(), http.StatusBadRequest)
		return
	}
	ctx := contextWith(r.Context(), targetKey{}, p.targets[idx])
	f.proxy.ServeHTTP(w, r.WithContext(ctx))
}
