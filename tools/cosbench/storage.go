package main

// Storage back ends: an S3 client (path-style, SigV4) and the in-process
// no-op "mock" storage that COSBench also has (type="none" there).

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"math/rand"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Store executes one request of each kind. proc is the part of the response
// time that is not body transfer (COSBench's Avg-ProcTime): for a write,
// from the end of the upload to the first response byte; for a read, from
// the start to the first response byte.
type Store interface {
	CreateContainer(c string) (proc time.Duration, err error)
	DeleteContainer(c string) (proc time.Duration, err error)
	Put(c, o string, body io.Reader, size int64) (proc time.Duration, err error)
	Get(c, o string, buf []byte) (n int64, proc time.Duration, err error)
	Delete(c, o string) (proc time.Duration, err error)
	List(c, prefix string, buf []byte) (n int64, proc time.Duration, err error)
}

// ---- mock ----

// mockStore keeps nothing: writes are consumed and dropped, reads return
// `size` bytes (a fixed, checksummed body; COSBench's mock storage config
// key size=), everything else succeeds at once.
type mockStore struct{ body []byte }

func newMockStore(st Storage) (*mockStore, error) {
	cfg, err := ParseConfig(st.Config)
	if err != nil {
		return nil, err
	}
	m := &mockStore{}
	if v, ok := cfg.Get("size"); ok {
		n, _ := strconv.ParseInt(v, 10, 64)
		m.body = newBody(n, rand.New(rand.NewSource(1)), false).Bytes()
	}
	return m, nil
}

func (*mockStore) CreateContainer(string) (time.Duration, error) { return 0, nil }
func (*mockStore) DeleteContainer(string) (time.Duration, error) { return 0, nil }
func (*mockStore) Put(_, _ string, body io.Reader, _ int64) (time.Duration, error) {
	_, err := io.Copy(io.Discard, body)
	return 0, err
}
func (m *mockStore) Get(_, _ string, buf []byte) (int64, time.Duration, error) {
	n, err := verifyBody(bytes.NewReader(m.body), buf)
	return n, 0, err
}
func (*mockStore) Delete(string, string) (time.Duration, error)              { return 0, nil }
func (*mockStore) List(string, string, []byte) (int64, time.Duration, error) { return 0, 0, nil }

// ---- S3 ----

type s3Store struct {
	base   *url.URL
	signer *Signer
	client *http.Client
	ctx    context.Context // cancelled on SIGINT/SIGTERM: in-flight requests end too
}

// S3Settings are the keys of an s3 storage config.
type S3Settings struct {
	AccessKey, SecretKey, Endpoint, Region string
	Timeout                                time.Duration
}

func s3SettingsFrom(st Storage, endpointOverride string) (S3Settings, error) {
	cfg, err := ParseConfig(st.Config)
	if err != nil {
		return S3Settings{}, err
	}
	s := S3Settings{Region: "us-east-1", Timeout: 30 * time.Second}
	s.AccessKey, _ = cfg.Get("accesskey")
	s.SecretKey, _ = cfg.Get("secretkey")
	s.Endpoint, _ = cfg.Get("endpoint")
	if endpointOverride != "" {
		s.Endpoint = endpointOverride
	}
	if v, ok := cfg.Get("region"); ok && v != "" {
		s.Region = v
	}
	if v, ok := cfg.Get("timeout"); ok {
		ms, _ := strconv.Atoi(v)
		s.Timeout = time.Duration(ms) * time.Millisecond
	}
	return s, nil
}

func newS3Store(ctx context.Context, s S3Settings, conns int) (*s3Store, error) {
	u, err := url.Parse(strings.TrimRight(s.Endpoint, "/"))
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("endpoint %q: not a URL", s.Endpoint)
	}
	tr := &http.Transport{
		Proxy:               nil, // never an environment proxy: traffic stays where the endpoint is
		DialContext:         (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        conns * 2,
		MaxIdleConnsPerHost: conns * 2,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
		TLSClientConfig:     &tls.Config{MinVersion: tls.VersionTLS12},
		WriteBufferSize:     64 << 10,
		ReadBufferSize:      64 << 10,
	}
	return &s3Store{base: u, signer: NewSigner(s.AccessKey, s.SecretKey, s.Region),
		client: &http.Client{Transport: tr, Timeout: s.Timeout}, ctx: ctx}, nil
}

type reqTimes struct {
	start, wrote, first time.Time
}

func (s *s3Store) do(method, bucket, key string, query url.Values, body io.Reader, size int64) (*http.Response, *reqTimes, error) {
	u := *s.base
	p := u.Path + "/" + bucket
	if key != "" {
		p += "/" + key
	}
	u.Path = p
	u.RawQuery = query.Encode()
	t := &reqTimes{start: time.Now()}
	trace := &httptrace.ClientTrace{
		WroteRequest:         func(httptrace.WroteRequestInfo) { t.wrote = time.Now() },
		GotFirstResponseByte: func() { t.first = time.Now() },
	}
	ctx := httptrace.WithClientTrace(s.ctx, trace)
	req, err := http.NewRequestWithContext(ctx, method, u.String(), body)
	if err != nil {
		return nil, t, err
	}
	payload := emptySHA256
	if body != nil {
		req.ContentLength = size
		payload = unsignedBody
		if size == 0 {
			req.Body = http.NoBody
		}
	}
	s.signer.Sign(req, payload, t.start)
	resp, err := s.client.Do(req)
	if err != nil {
		return nil, t, err
	}
	if resp.StatusCode >= 300 {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		resp.Body.Close()
		code := between(string(msg), "<Code>", "</Code>")
		if code == "" {
			code = strings.TrimSpace(string(msg))
		}
		return resp, t, fmt.Errorf("%s %s: HTTP %d %s", method, u.Path, resp.StatusCode, code)
	}
	return resp, t, nil
}

func between(s, a, b string) string {
	i := strings.Index(s, a)
	if i < 0 {
		return ""
	}
	s = s[i+len(a):]
	j := strings.Index(s, b)
	if j < 0 {
		return ""
	}
	return s[:j]
}

func drain(resp *http.Response) {
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
}

func procWrite(t *reqTimes) time.Duration {
	if t.wrote.IsZero() || t.first.IsZero() {
		return 0
	}
	return t.first.Sub(t.wrote)
}

func procRead(t *reqTimes) time.Duration {
	if t.first.IsZero() {
		return 0
	}
	return t.first.Sub(t.start)
}

func (s *s3Store) CreateContainer(c string) (time.Duration, error) {
	resp, t, err := s.do(http.MethodPut, c, "", nil, nil, 0)
	if err != nil {
		if resp != nil && resp.StatusCode == http.StatusConflict && strings.Contains(err.Error(), "BucketAlreadyOwnedByYou") {
			return procRead(t), nil
		}
		return 0, err
	}
	drain(resp)
	return procRead(t), nil
}

func (s *s3Store) DeleteContainer(c string) (time.Duration, error) {
	resp, t, err := s.do(http.MethodDelete, c, "", nil, nil, 0)
	if err != nil {
		return 0, err
	}
	drain(resp)
	return procRead(t), nil
}

func (s *s3Store) Put(c, o string, body io.Reader, size int64) (time.Duration, error) {
	resp, t, err := s.do(http.MethodPut, c, o, nil, body, size)
	if err != nil {
		return 0, err
	}
	drain(resp)
	return procWrite(t), nil
}

func (s *s3Store) Get(c, o string, buf []byte) (int64, time.Duration, error) {
	resp, t, err := s.do(http.MethodGet, c, o, nil, nil, 0)
	if err != nil {
		return 0, 0, err
	}
	defer resp.Body.Close()
	n, err := verifyBody(resp.Body, buf)
	if err == nil && resp.ContentLength >= 0 && n != resp.ContentLength {
		err = fmt.Errorf("short read: %d of %d bytes", n, resp.ContentLength)
	}
	return n, procRead(t), err
}

func (s *s3Store) Delete(c, o string) (time.Duration, error) {
	resp, t, err := s.do(http.MethodDelete, c, o, nil, nil, 0)
	if err != nil {
		return 0, err
	}
	drain(resp)
	return procRead(t), nil
}

func (s *s3Store) List(c, prefix string, buf []byte) (int64, time.Duration, error) {
	q := url.Values{"list-type": {"2"}}
	if prefix != "" {
		q.Set("prefix", prefix)
	}
	resp, t, err := s.do(http.MethodGet, c, "", q, nil, 0)
	if err != nil {
		return 0, 0, err
	}
	defer resp.Body.Close()
	n, err := io.CopyBuffer(io.Discard, resp.Body, buf)
	return n, procRead(t), err
}
