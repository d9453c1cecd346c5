package main

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

// AWS SigV4 test suite, case get-vanilla (AKIDEXAMPLE, 20150830T123600Z,
// us-east-1, service "service").
func TestSigV4GetVanilla(t *testing.T) {
	hdr := http.Header{}
	hdr.Set("X-Amz-Date", "20150830T123600Z")
	creq := canonicalRequest("GET", "/", url.Values{}, "example.amazonaws.com", hdr, []string{"host", "x-amz-date"}, emptySHA256)
	wantCreq := "GET\n/\n\nhost:example.amazonaws.com\nx-amz-date:20150830T123600Z\n\nhost;x-amz-date\n" + emptySHA256
	if creq != wantCreq {
		t.Fatalf("canonical request:\n%s\nwant\n%s", creq, wantCreq)
	}
	sts := stringToSign("20150830T123600Z", "20150830/us-east-1/service/aws4_request", creq)
	key := signingKey("wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", "20150830", "us-east-1", "service")
	got := hexOf(hmacSHA256(key, sts))
	if want := "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31"; got != want {
		t.Errorf("signature %s, want %s", got, want)
	}
}

// Amazon S3 documentation, "Example: GET Object" (examplebucket, /test.txt,
// Range bytes=0-9, 20130524T000000Z).
func TestSigV4S3GetObjectExample(t *testing.T) {
	req, _ := http.NewRequest("GET", "http://examplebucket.s3.amazonaws.com/test.txt", nil)
	req.Header.Set("Range", "bytes=0-9")
	s := NewSigner("AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "us-east-1")
	now, _ := time.Parse(amzDateFormat, "20130524T000000Z")
	s.Sign(req, emptySHA256, now)
	want := "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, " +
		"SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, " +
		"Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41"
	if got := req.Header.Get("Authorization"); got != want {
		t.Errorf("Authorization\n%s\nwant\n%s", got, want)
	}
}

func TestSignAndVerifyRoundTrip(t *testing.T) {
	s := NewSigner("ak", "sk", "us-east-1")
	req, _ := http.NewRequest("PUT", "http://127.0.0.1:9000/bucket/obj_1?x=a%20b", strings.NewReader("body"))
	s.Sign(req, unsignedBody, time.Now())
	in := *req
	in.Host = req.URL.Host
	if who, ok := verifyRequest(&in, "sk"); !ok || who != "ak" {
		t.Fatalf("verify: %s", who)
	}
	if _, ok := verifyRequest(&in, "wrong"); ok {
		t.Error("wrong secret accepted")
	}
	in.URL, _ = url.Parse("http://127.0.0.1:9000/bucket/obj_2?x=a%20b")
	if _, ok := verifyRequest(&in, "sk"); ok {
		t.Error("changed path accepted")
	}
}

func hexOf(b []byte) string {
	const h = "0123456789abcdef"
	out := make([]byte, 0, 2*len(b))
	for _, c := range b {
		out = append(out, h[c>>4], h[c&15])
	}
	return string(out)
}
