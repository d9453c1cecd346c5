package main

// AWS Signature Version 4 (header form), written from AWS's description of
// the algorithm: canonical request -> string to sign -> derived key ->
// signature. Shared by the S3 client and memserver's checker.

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"time"
)

const (
	sigAlgorithm  = "AWS4-HMAC-SHA256"
	amzDateFormat = "20060102T150405Z"
	emptySHA256   = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
	unsignedBody  = "UNSIGNED-PAYLOAD"
)

func sha256Hex(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

func hmacSHA256(key []byte, data string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(data))
	return m.Sum(nil)
}

// uriEncode is AWS's UriEncode: unreserved characters kept, everything else
// %XX upper-case; '/' kept when encodeSlash is false.
func uriEncode(s string, encodeSlash bool) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'A' && c <= 'Z', c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '-', c == '_', c == '.', c == '~':
			b.WriteByte(c)
		case c == '/' && !encodeSlash:
			b.WriteByte(c)
		default:
			const hexd = "0123456789ABCDEF"
			b.WriteByte('%')
			b.WriteByte(hexd[c>>4])
			b.WriteByte(hexd[c&15])
		}
	}
	return b.String()
}

func canonicalQuery(q url.Values) string {
	keys := make([]string, 0, len(q))
	for k := range q {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		vs := append([]string(nil), q[k]...)
		sort.Strings(vs)
		for _, v := range vs {
			parts = append(parts, uriEncode(k, true)+"="+uriEncode(v, true))
		}
	}
	return strings.Join(parts, "&")
}

// canonicalRequest builds the canonical request for the given signed
// headers (lower-case names). host is the Host header value.
func canonicalRequest(method, path string, query url.Values, host string, hdr http.Header, signed []string, payloadHash string) string {
	var b strings.Builder
	b.WriteString(method)
	b.WriteByte('\n')
	if path == "" {
		path = "/"
	}
	b.WriteString(uriEncode(path, false))
	b.WriteByte('\n')
	b.WriteString(canonicalQuery(query))
	b.WriteByte('\n')
	for _, h := range signed {
		var v string
		if h == "host" {
			v = host
		} else {
			v = strings.Join(hdr.Values(h), ",")
		}
		b.WriteString(h)
		b.WriteByte(':')
		b.WriteString(strings.Join(strings.Fields(v), " "))
		b.WriteByte('\n')
	}
	b.WriteByte('\n')
	b.WriteString(strings.Join(signed, ";"))
	b.WriteByte('\n')
	b.WriteString(payloadHash)
	return b.String()
}

func signingKey(secret, date, region, service string) []byte {
	k := hmacSHA256([]byte("AWS4"+secret), date)
	k = hmacSHA256(k, region)
	k = hmacSHA256(k, service)
	return hmacSHA256(k, "aws4_request")
}

func stringToSign(amzDate, scope, creq string) string {
	return sigAlgorithm + "\n" + amzDate + "\n" + scope + "\n" + sha256Hex([]byte(creq))
}

// Signer signs requests for one credential.
type Signer struct {
	AccessKey, SecretKey, Region, Service string

	mu      chan struct{}
	keyDate string
	key     []byte
}

func NewSigner(ak, sk, region string) *Signer {
	return &Signer{AccessKey: ak, SecretKey: sk, Region: region, Service: "s3", mu: make(chan struct{}, 1)}
}

func (s *Signer) derivedKey(date string) []byte {
	s.mu <- struct{}{}
	defer func() { <-s.mu }()
	if s.keyDate != date {
		s.key = signingKey(s.SecretKey, date, s.Region, s.Service)
		s.keyDate = date
	}
	return s.key
}

// Sign adds x-amz-date, x-amz-content-sha256 and Authorization to req.
// payloadHash is the body's SHA-256 (hex) or UNSIGNED-PAYLOAD.
func (s *Signer) Sign(req *http.Request, payloadHash string, now time.Time) {
	amzDate := now.UTC().Format(amzDateFormat)
	date := amzDate[:8]
	req.Header.Set("X-Amz-Date", amzDate)
	req.Header.Set("X-Amz-Content-Sha256", payloadHash)
	host := req.Host
	if host == "" {
		host = req.URL.Host
	}
	signed := []string{"host", "x-amz-content-sha256", "x-amz-date"}
	if req.Header.Get("Range") != "" {
		signed = []string{"host", "range", "x-amz-content-sha256", "x-amz-date"}
	}
	creq := canonicalRequest(req.Method, req.URL.Path, req.URL.Query(), host, req.Header, signed, payloadHash)
	scope := date + "/" + s.Region + "/" + s.Service + "/aws4_request"
	sig := hex.EncodeToString(hmacSHA256(s.derivedKey(date), stringToSign(amzDate, scope, creq)))
	req.Header.Set("Authorization", sigAlgorithm+" Credential="+s.AccessKey+"/"+scope+
		", SignedHeaders="+strings.Join(signed, ";")+", Signature="+sig)
}

// parsedAuth is an Authorization header taken apart.
type parsedAuth struct {
	AccessKey, Date, Region, Service string
	Signed                           []string
	Signature                        string
}

func parseAuthorization(h string) (*parsedAuth, bool) {
	if !strings.HasPrefix(h, sigAlgorithm+" ") {
		return nil, false
	}
	p := &parsedAuth{}
	for _, part := range strings.Split(strings.TrimPrefix(h, sigAlgorithm+" "), ",") {
		part = strings.TrimSpace(part)
		k, v, ok := strings.Cut(part, "=")
		if !ok {
			return nil, false
		}
		switch k {
		case "Credential":
			f := strings.Split(v, "/")
			if len(f) != 5 || f[4] != "aws4_request" {
				return nil, false
			}
			p.AccessKey, p.Date, p.Region, p.Service = f[0], f[1], f[2], f[3]
		case "SignedHeaders":
			p.Signed = strings.Split(v, ";")
		case "Signature":
			p.Signature = v
		}
	}
	if p.AccessKey == "" || len(p.Signed) == 0 || p.Signature == "" {
		return nil, false
	}
	return p, true
}

// verifyRequest recomputes the signature of an incoming request.
func verifyRequest(req *http.Request, secret string) (string, bool) {
	p, ok := parseAuthorization(req.Header.Get("Authorization"))
	if !ok {
		return "malformed or missing Authorization header", false
	}
	amzDate := req.Header.Get("X-Amz-Date")
	if len(amzDate) < 8 || amzDate[:8] != p.Date {
		return "x-amz-date does not match the credential scope", false
	}
	payload := req.Header.Get("X-Amz-Content-Sha256")
	if payload == "" {
		payload = emptySHA256
	}
	creq := canonicalRequest(req.Method, req.URL.Path, req.URL.Query(), req.Host, req.Header, p.Signed, payload)
	scope := p.Date + "/" + p.Region + "/" + p.Service + "/aws4_request"
	want := hex.EncodeToString(hmacSHA256(signingKey(secret, p.Date, p.Region, p.Service), stringToSign(amzDate, scope, creq)))
	if !hmac.Equal([]byte(want), []byte(p.Signature)) {
		return "signature does not match", false
	}
	return p.AccessKey, true
}
