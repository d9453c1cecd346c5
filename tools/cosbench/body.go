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
	"bytes"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"math/rand"
	"strconv"
	"sync"
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
	done    func(trailer []byte) // remembers a computed trailer
}

func randomBlock(r *rand.Rand, zero bool) []byte {
	b := make([]byte, blockSize)
	if !zero {
		for i := range b {
			b[i] = byte('a' + r.Intn(26))
		}
	}
	return b
}

// newBody makes a body with its own random block (as COSBench does per object).
func newBody(size int64, r *rand.Rand, zero bool) *bodyReader {
	return bodyFromBlock(randomBlock(r, zero), size, nil)
}

func bodyFromBlock(block []byte, size int64, trailer []byte) *bodyReader {
	b := &bodyReader{block: block, size: size}
	if size > hashLen {
		b.hashed = true
		if trailer != nil {
			b.trailer = trailer
		} else {
			b.h = md5.New()
		}
	}
	return b
}

// bodyPool is a run's set of random blocks, shared by all workers. A body is
// one block repeated, so its MD5 depends only on (block, size): the pool
// computes each trailer once and writes then cost no hashing (the driver must
// not be the bottleneck). Every body still carries a correct COSBench trailer.
type bodyPool struct {
	blocks   [][]byte
	zero     []byte
	mu       sync.Mutex
	trailers map[[2]int64][]byte
}

const poolBlocks = 8

func newBodyPool(r *rand.Rand) *bodyPool {
	p := &bodyPool{trailers: map[[2]int64][]byte{}, zero: make([]byte, blockSize)}
	for i := 0; i < poolBlocks; i++ {
		p.blocks = append(p.blocks, randomBlock(r, false))
	}
	return p
}

// body picks a block with r (the worker's own generator).
func (p *bodyPool) body(size int64, r *rand.Rand, zero bool) *bodyReader {
	idx := int64(-1)
	block := p.zero
	if !zero {
		idx = int64(r.Intn(len(p.blocks)))
		block = p.blocks[idx]
	}
	key := [2]int64{idx, size}
	p.mu.Lock()
	t := p.trailers[key]
	p.mu.Unlock()
	b := bodyFromBlock(block, size, t)
	if b.hashed && b.trailer == nil {
		b.done = func(t []byte) {
			p.mu.Lock()
			p.trailers[key] = t
			p.mu.Unlock()
		}
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
		if b.h != nil {
			b.h.Write(p[n : n+c])
		}
		n += c
		b.pos += int64(c)
	}
	if b.hashed && b.pos >= dataEnd && n < len(p) {
		if b.trailer == nil {
			b.trailer = []byte(hashGuard + hex.EncodeToString(b.h.Sum(nil)) + hashGuard)
			if b.done != nil {
				b.done(b.trailer)
			}
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

// dataCheck consumes an object's data bytes (everything before the trailer)
// and yields their MD5. Bodies are a 4 KiB block repeated (ours and
// COSBench's), so it compares each byte with the first block (memcmp speed)
// and takes the MD5 of "block repeated n bytes" from a cache; the first byte
// that breaks the pattern switches it to hashing everything (the prefix is
// re-hashed from the block it equalled). Either way every byte is checked.
type dataCheck struct {
	block [blockSize]byte
	off   int64
	h     hash.Hash
}

func (d *dataCheck) write(p []byte) {
	for len(p) > 0 {
		if d.h != nil {
			d.h.Write(p)
			d.off += int64(len(p))
			return
		}
		if d.off < blockSize {
			c := copy(d.block[d.off:], p)
			d.off += int64(c)
			p = p[c:]
			continue
		}
		pos := int(d.off % blockSize)
		n := blockSize - pos
		if n > len(p) {
			n = len(p)
		}
		if !bytes.Equal(p[:n], d.block[pos:pos+n]) {
			d.fallback()
			continue
		}
		d.off += int64(n)
		p = p[n:]
	}
}

func (d *dataCheck) fallback() {
	d.h = md5.New()
	writeRepeated(d.h, d.block[:], d.off)
}

func writeRepeated(h hash.Hash, block []byte, n int64) {
	for n > 0 {
		c := int64(len(block))
		if c > n {
			c = n
		}
		h.Write(block[:c])
		n -= c
	}
}

var repeatCache = struct {
	sync.Mutex
	m map[string]string
}{m: map[string]string{}}

func (d *dataCheck) sum() string {
	if d.h != nil {
		return hex.EncodeToString(d.h.Sum(nil))
	}
	n := int64(blockSize)
	if d.off < n {
		n = d.off
	}
	key := string(d.block[:n]) + "/" + strconv.FormatInt(d.off, 10)
	repeatCache.Lock()
	v, ok := repeatCache.m[key]
	repeatCache.Unlock()
	if ok {
		return v
	}
	h := md5.New()
	writeRepeated(h, d.block[:n], d.off)
	v = hex.EncodeToString(h.Sum(nil))
	repeatCache.Lock()
	if len(repeatCache.m) < 4096 {
		repeatCache.m[key] = v
	}
	repeatCache.Unlock()
	return v
}

// verifyBody reads r to the end, returning the byte count and an error if
// the trailer is missing or does not match the content.
func verifyBody(r io.Reader, buf []byte) (int64, error) {
	d := &dataCheck{}
	var tail [hashLen]byte
	tailN := 0
	var total int64
	for {
		n, err := r.Read(buf)
		if n > 0 {
			total += int64(n)
			chunk := buf[:n]
			// keep the last hashLen bytes back; what falls out is data
			if tailN+len(chunk) <= hashLen {
				copy(tail[tailN:], chunk)
				tailN += len(chunk)
			} else {
				spill := tailN + len(chunk) - hashLen // bytes leaving the window
				if spill >= tailN {
					d.write(tail[:tailN])
					d.write(chunk[:spill-tailN])
					tailN = copy(tail[:], chunk[spill-tailN:])
				} else {
					d.write(tail[:spill])
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
	calc := d.sum()
	if calc != stored[4:36] {
		return total, fmt.Errorf("integrity: checksum mismatch: calculated %s, stored %s", calc, stored[4:36])
	}
	return total, nil
}
