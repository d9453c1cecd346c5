package main

// memserver: an in-memory S3 endpoint (path-style) for tests and for
// measuring the driver's own ceiling. Buckets and objects live in maps;
// SigV4 signatures are checked when credentials are configured.
// Implemented: ListBuckets, PUT/DELETE/HEAD bucket, ListObjects (v1/v2,
// prefix, max-keys), PUT/GET/HEAD/DELETE object. Not implemented (501):
// multipart uploads, ACLs, versioning, copy, ranges.

import (
	"encoding/xml"
	"fmt"
	"hash/crc32"
	"io"
	"net"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

type memBucket struct {
	mu      sync.RWMutex
	objects map[string][]byte
	created time.Time
}

type MemServer struct {
	AccessKey, SecretKey string
	Admin                bool // enable /_memserver/ endpoints (tests)

	mu      sync.RWMutex
	buckets map[string]*memBucket
	reqs    atomic.Int64
}

func NewMemServer(ak, sk string, admin bool) *MemServer {
	return &MemServer{AccessKey: ak, SecretKey: sk, Admin: admin, buckets: map[string]*memBucket{}}
}

func s3Error(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/xml")
	w.WriteHeader(status)
	fmt.Fprintf(w, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>%s</Code><Message>%s</Message></Error>", code, xmlEscape(msg))
}

func xmlEscape(s string) string {
	var b strings.Builder
	xml.EscapeText(&b, []byte(s))
	return b.String()
}

func (m *MemServer) bucket(name string) *memBucket {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.buckets[name]
}

func (m *MemServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if m.Admin && strings.HasPrefix(r.URL.Path, "/_memserver/") {
		m.admin(w, r)
		return
	}
	m.reqs.Add(1) // S3 requests only
	if m.SecretKey != "" {
		who, ok := verifyRequest(r, m.SecretKey)
		if !ok {
			s3Error(w, http.StatusForbidden, "SignatureDoesNotMatch", who)
			return
		}
		if who != m.AccessKey {
			s3Error(w, http.StatusForbidden, "InvalidAccessKeyId", "unknown access key "+who)
			return
		}
		if ph := r.Header.Get("X-Amz-Content-Sha256"); strings.HasPrefix(ph, "STREAMING-") {
			s3Error(w, http.StatusNotImplemented, "NotImplemented", "streaming (chunked) payload signing")
			return
		}
	}
	path := strings.TrimPrefix(r.URL.Path, "/")
	bucket, key, _ := strings.Cut(path, "/")
	switch {
	case bucket == "":
		if r.Method != http.MethodGet {
			s3Error(w, http.StatusMethodNotAllowed, "MethodNotAllowed", r.Method+" /")
			return
		}
		m.listBuckets(w)
	case key == "":
		m.bucketOp(w, r, bucket)
	default:
		m.objectOp(w, r, bucket, key)
	}
}

func (m *MemServer) listBuckets(w http.ResponseWriter) {
	m.mu.RLock()
	names := make([]string, 0, len(m.buckets))
	for n := range m.buckets {
		names = append(names, n)
	}
	m.mu.RUnlock()
	sort.Strings(names)
	var b strings.Builder
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?>` + "\n<ListAllMyBucketsResult><Owner><ID>memserver</ID></Owner><Buckets>")
	for _, n := range names {
		fmt.Fprintf(&b, "<Bucket><Name>%s</Name></Bucket>", xmlEscape(n))
	}
	b.WriteString("</Buckets></ListAllMyBucketsResult>")
	w.Header().Set("Content-Type", "application/xml")
	io.WriteString(w, b.String())
}

func (m *MemServer) bucketOp(w http.ResponseWriter, r *http.Request, name string) {
	switch r.Method {
	case http.MethodPut:
		io.Copy(io.Discard, r.Body)
		m.mu.Lock()
		if _, ok := m.buckets[name]; ok {
			m.mu.Unlock()
			s3Error(w, http.StatusConflict, "BucketAlreadyOwnedByYou", name)
			return
		}
		m.buckets[name] = &memBucket{objects: map[string][]byte{}, created: time.Now()}
		m.mu.Unlock()
		w.WriteHeader(http.StatusOK)
	case http.MethodDelete:
		m.mu.Lock()
		b, ok := m.buckets[name]
		if !ok {
			m.mu.Unlock()
			s3Error(w, http.StatusNotFound, "NoSuchBucket", name)
			return
		}
		b.mu.RLock()
		n := len(b.objects)
		b.mu.RUnlock()
		if n > 0 {
			m.mu.Unlock()
			s3Error(w, http.StatusConflict, "BucketNotEmpty", name)
			return
		}
		delete(m.buckets, name)
		m.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	case http.MethodHead:
		if m.bucket(name) == nil {
			w.WriteHeader(http.StatusNotFound)
			return
		}
		w.WriteHeader(http.StatusOK)
	case http.MethodGet:
		m.listObjects(w, r, name)
	default:
		s3Error(w, http.StatusNotImplemented, "NotImplemented", r.Method+" on a bucket")
	}
}

func (m *MemServer) listObjects(w http.ResponseWriter, r *http.Request, name string) {
	b := m.bucket(name)
	if b == nil {
		s3Error(w, http.StatusNotFound, "NoSuchBucket", name)
		return
	}
	q := r.URL.Query()
	prefix := q.Get("prefix")
	max := 1000
	if v := q.Get("max-keys"); v != "" {
		if n, err := strconv.Atoi(v); err == nil && n >= 0 && n < max {
			max = n
		}
	}
	after := q.Get("start-after")
	if v := q.Get("continuation-token"); v != "" {
		after = v
	}
	if v := q.Get("marker"); v != "" {
		after = v
	}
	b.mu.RLock()
	keys := make([]string, 0)
	sizes := map[string]int{}
	for k, v := range b.objects {
		if strings.HasPrefix(k, prefix) && k > after {
			keys = append(keys, k)
			sizes[k] = len(v)
		}
	}
	b.mu.RUnlock()
	sort.Strings(keys)
	truncated := len(keys) > max
	if truncated {
		keys = keys[:max]
	}
	var sb strings.Builder
	sb.WriteString(`<?xml version="1.0" encoding="UTF-8"?>` + "\n<ListBucketResult>")
	fmt.Fprintf(&sb, "<Name>%s</Name><Prefix>%s</Prefix><MaxKeys>%d</MaxKeys><KeyCount>%d</KeyCount><IsTruncated>%t</IsTruncated>",
		xmlEscape(name), xmlEscape(prefix), max, len(keys), truncated)
	if truncated && len(keys) > 0 {
		fmt.Fprintf(&sb, "<NextContinuationToken>%s</NextContinuationToken><NextMarker>%s</NextMarker>",
			xmlEscape(keys[len(keys)-1]), xmlEscape(keys[len(keys)-1]))
	}
	for _, k := range keys {
		fmt.Fprintf(&sb, "<Contents><Key>%s</Key><Size>%d</Size><StorageClass>STANDARD</StorageClass></Contents>", xmlEscape(k), sizes[k])
	}
	sb.WriteString("</ListBucketResult>")
	w.Header().Set("Content-Type", "application/xml")
	io.WriteString(w, sb.String())
}

func etag(b []byte) string { return fmt.Sprintf("\"%08x%08x\"", crc32.ChecksumIEEE(b), len(b)) }

func (m *MemServer) objectOp(w http.ResponseWriter, r *http.Request, bucket, key string) {
	b := m.bucket(bucket)
	if b == nil {
		io.Copy(io.Discard, r.Body)
		s3Error(w, http.StatusNotFound, "NoSuchBucket", bucket)
		return
	}
	if r.URL.RawQuery != "" && r.Method != http.MethodGet && r.Method != http.MethodHead {
		s3Error(w, http.StatusNotImplemented, "NotImplemented", "sub-resources ("+r.URL.RawQuery+")")
		return
	}
	switch r.Method {
	case http.MethodPut:
		if r.ContentLength < 0 {
			s3Error(w, http.StatusLengthRequired, "MissingContentLength", key)
			return
		}
		if r.Header.Get("X-Amz-Copy-Source") != "" {
			s3Error(w, http.StatusNotImplemented, "NotImplemented", "copy")
			return
		}
		data := make([]byte, r.ContentLength)
		if _, err := io.ReadFull(r.Body, data); err != nil {
			s3Error(w, http.StatusBadRequest, "IncompleteBody", err.Error())
			return
		}
		if ph := r.Header.Get("X-Amz-Content-Sha256"); ph != "" && ph != unsignedBody && m.SecretKey != "" {
			if sha256Hex(data) != ph {
				s3Error(w, http.StatusBadRequest, "XAmzContentSHA256Mismatch", key)
				return
			}
		}
		b.mu.Lock()
		b.objects[key] = data
		b.mu.Unlock()
		w.Header().Set("ETag", etag(data))
		w.WriteHeader(http.StatusOK)
	case http.MethodGet, http.MethodHead:
		if r.Header.Get("Range") != "" {
			s3Error(w, http.StatusNotImplemented, "NotImplemented", "range requests")
			return
		}
		b.mu.RLock()
		data, ok := b.objects[key]
		b.mu.RUnlock()
		if !ok {
			s3Error(w, http.StatusNotFound, "NoSuchKey", key)
			return
		}
		w.Header().Set("Content-Length", strconv.Itoa(len(data)))
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("ETag", etag(data))
		w.WriteHeader(http.StatusOK)
		if r.Method == http.MethodGet {
			w.Write(data)
		}
	case http.MethodDelete:
		b.mu.Lock()
		delete(b.objects, key)
		b.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	default:
		s3Error(w, http.StatusNotImplemented, "NotImplemented", r.Method+" on an object")
	}
}

// admin endpoints (only with --admin): corrupt an object in place, or count.
//
//	POST /_memserver/corrupt/<bucket>/<key>   flips one byte in the middle
//	GET  /_memserver/stats                    buckets, objects, bytes, requests
func (m *MemServer) admin(w http.ResponseWriter, r *http.Request) {
	rest := strings.TrimPrefix(r.URL.Path, "/_memserver/")
	switch {
	case strings.HasPrefix(rest, "corrupt/") && r.Method == http.MethodPost:
		bucket, key, _ := strings.Cut(strings.TrimPrefix(rest, "corrupt/"), "/")
		b := m.bucket(bucket)
		if b == nil {
			http.Error(w, "no such bucket", http.StatusNotFound)
			return
		}
		b.mu.Lock()
		data, ok := b.objects[key]
		if ok && len(data) > 0 {
			cp := append([]byte(nil), data...)
			cp[len(cp)/2] ^= 0x20
			b.objects[key] = cp
		}
		b.mu.Unlock()
		if !ok {
			http.Error(w, "no such key", http.StatusNotFound)
			return
		}
		io.WriteString(w, "corrupted\n")
	case rest == "stats":
		m.mu.RLock()
		nb, no, nbytes := len(m.buckets), 0, 0
		for _, b := range m.buckets {
			b.mu.RLock()
			no += len(b.objects)
			for _, v := range b.objects {
				nbytes += len(v)
			}
			b.mu.RUnlock()
		}
		m.mu.RUnlock()
		fmt.Fprintf(w, "{\"buckets\": %d, \"objects\": %d, \"bytes\": %d, \"requests\": %d}\n", nb, no, nbytes, m.reqs.Load())
	default:
		http.Error(w, "unknown admin request", http.StatusNotFound)
	}
}

// StartMemServer listens on addr and serves in the background.
func StartMemServer(addr string, ms *MemServer) (*http.Server, net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, nil, err
	}
	srv := &http.Server{Handler: ms, ReadHeaderTimeout: 30 * time.Second}
	go srv.Serve(ln)
	return srv, ln, nil
}
