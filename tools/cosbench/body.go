package main

// Object bodies and their integrity check, in COSBench's hashCheck layout:
// the body is a 4 KiB block of random lower-case letters repeated, and its
// last 40 bytes are replaced by "!!!!" + MD5(hex of the bytes before) + "!!!!".
// Objects of 40 bytes or less carry no checksum (as in COSBench).
//
// Unlike COSBench (which checks only with hashCheck=true and merely warns
// when the trailer is missing), this driver always writes the trailer and
// always checks it on read: a wrong hash or a missing trailer fails the read.

import (
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"math/rand"
)

const (
	hashGuard = "!!!!"
	hashLen   = 40 // "!!!!" + 32 hex digits + "!!!!"
	blockSize = 4096
)

// bodyReader produces size bytes: the block repeated, then the trailer.
type bodyReader struct {
	block   []byte
	size    int64
	pos     int64
	hashed  bool
	h       hash.Hash
	trailer []byte
}

func newBody(size int64, r *rand.Rand, zero bool) *bodyReader {
	b := &bodyReader{block: make([]byte, blockSize), size: size}
	if !zero {
		for i := range b.block {
			b.block[i] = byte('a' + r.Intn(26))
		}
	}
	if size > hashLen {
		b.hashed = true
		b.h = md5.New()
	}
	return b
}

func (b *bodyReader) Read(p []byte) (int, error) {
	if b.pos >= b.size {
		return 0, io.EOF
	}
	dataEnd := b.size
	if b.hashed {
		dataEnd = b.size - hashLen
	}
	n := 0
	for n < len(p) && b.pos < dataEnd {
		off := int(b.pos % blockSize)
		c := copy(p[n:], b.block[off:])
		if rem := dataEnd - b.pos; int64(c) > rem {
			c = int(rem)
		}
		if b.hashed {
			b.h.Write(p[n : n+c])
		}
		n += c
		b.pos += int64(c)
	}
	if b.hashed && b.pos >= dataEnd && n < len(p) {
		if b.trailer == nil {
			b.trailer = []byte(hashGuard + hex.EncodeToString(b.h.Sum(nil)) + hashGuard)
		}
		off := b.pos - dataEnd
		c := copy(p[n:], b.trailer[off:])
		n += c
		b.pos += int64(c)
	}
	return n, nil
}

// Bytes materialises a whole body (tests, memserver fixtures).
func (b *bodyReader) Bytes() []byte {
	out, _ := io.ReadAll(b)
	return out
}

var errNoTrailer = errors.New("integrity: no checksum trailer at the end of the object")

// verifyBody reads r to the end, returning the byte count and an error if
// the trailer is missing or does not match the content.
func verifyBody(r io.Reader, buf []byte) (int64, error) {
	h := md5.New()
	var tail [hashLen]byte
	tailN := 0
	var total int64
	for {
		n, err := r.Read(buf)
		if n > 0 {
			total += int64(n)
			chunk := buf[:n]
			// keep the last hashLen bytes back; hash what falls out
			if tailN+len(chunk) <= hashLen {
				copy(tail[tailN:], chunk)
				tailN += len(chunk)
			} else {
				spill := tailN + len(chunk) - hashLen // bytes leaving the window
				if spill >= tailN {
					h.Write(tail[:tailN])
					h.Write(chunk[:spill-tailN])
					tailN = copy(tail[:], chunk[spill-tailN:])
				} else {
					h.Write(tail[:spill])
					copy(tail[:], tail[spill:tailN])
					tailN -= spill
					tailN += copy(tail[tailN:], chunk)
				}
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return total, err
		}
	}
	if total <= hashLen {
		return total, nil // too small to carry a checksum (as in COSBench)
	}
	stored := string(tail[:])
	if stored[:4] != hashGuard || stored[36:] != hashGuard {
		return total, errNoTrailer
	}
	calc := hex.EncodeToString(h.Sum(nil))
	if calc != stored[4:36] {
		return total, fmt.Errorf("integrity: checksum mismatch: calculated %s, stored %s", calc, stored[4:36])
	}
	return total, nil
}
