package main

// Selectors: COSBench's integer distributions used in config strings
// (containers=u(1,2);objects=r(1,100);sizes=c(64)KB).
//
//   c(N)    constant N
//   u(a,b)  uniform random integer in [a,b]
//   r(a,b)  range: a shared cursor walking a..b and wrapping; under a
//           division each worker walks its own contiguous segment
//   s(a,b)  sequential: one cursor shared by all workers, a..b, wrapping
//   a-b     COSBench's old spelling of r(a,b)
//
// Segment arithmetic for divisions follows COSBench: a range of n values
// split over `all` workers gives worker idx (1-based) base=n/all values,
// plus one for the first n%all workers.
//
// Size units are decimal, as in COSBench's DefaultSizeGenerator:
// B=1, KB=1000, MB=1000^2, GB=1000^3.

import (
	"fmt"
	"math/rand"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

type SelKind byte

const (
	SelConst   SelKind = 'c'
	SelUniform SelKind = 'u'
	SelRange   SelKind = 'r'
	SelSeq     SelKind = 's'
)

// Selector is a parsed distribution. Range and sequential selectors carry
// cursors; a Selector must not be shared between operations.
type Selector struct {
	Kind   SelKind
	Lo, Hi int64
	Text   string

	mu      sync.Mutex
	cursors map[int]*int64 // r(): one cursor per segment index (1 when not divided)
	seq     atomic.Int64   // s(): shared cursor
}

func (s *Selector) String() string { return s.Text }

// ParseSelector parses c(N), u(a,b), r(a,b), s(a,b) or a-b.
func ParseSelector(text string) (*Selector, error) {
	t := strings.TrimSpace(text)
	if t == "" {
		return nil, fmt.Errorf("empty selector")
	}
	sel := &Selector{Text: t}
	if strings.HasPrefix(t, "h(") {
		return nil, fmt.Errorf("selector %q: histogram selector h() not supported", t)
	}
	if len(t) >= 4 && t[1] == '(' && strings.HasSuffix(t, ")") {
		args := strings.Split(t[2:len(t)-1], ",")
		nums := make([]int64, 0, 2)
		for _, a := range args {
			v, err := strconv.ParseInt(strings.TrimSpace(a), 10, 64)
			if err != nil {
				return nil, fmt.Errorf("selector %q: %q is not an integer", t, a)
			}
			nums = append(nums, v)
		}
		switch t[0] {
		case 'c':
			if len(nums) != 1 {
				return nil, fmt.Errorf("selector %q: c() takes one argument", t)
			}
			if nums[0] < 0 {
				return nil, fmt.Errorf("selector %q: negative constant", t)
			}
			sel.Kind, sel.Lo, sel.Hi = SelConst, nums[0], nums[0]
			return sel, nil
		case 'u', 'r', 's':
			if len(nums) != 2 {
				return nil, fmt.Errorf("selector %q: %c() takes two arguments", t, t[0])
			}
			if nums[0] < 0 || nums[1] < nums[0] {
				return nil, fmt.Errorf("selector %q: bounds must satisfy 0 <= lower <= upper", t)
			}
			sel.Kind, sel.Lo, sel.Hi = SelKind(t[0]), nums[0], nums[1]
			return sel, nil
		default:
			return nil, fmt.Errorf("selector %q: unknown distribution %q (supported: c, u, r, s)", t, t[0])
		}
	}
	// COSBench's old range form "a-b"
	if parts := strings.SplitN(t, "-", 2); len(parts) == 2 {
		lo, err1 := strconv.ParseInt(parts[0], 10, 64)
		hi, err2 := strconv.ParseInt(parts[1], 10, 64)
		if err1 == nil && err2 == nil && lo >= 0 && hi >= lo {
			sel.Kind, sel.Lo, sel.Hi = SelRange, lo, hi
			return sel, nil
		}
	}
	return nil, fmt.Errorf("selector %q: unrecognized distribution (supported: c(N), u(a,b), r(a,b), s(a,b))", t)
}

// Count is the number of distinct values.
func (s *Selector) Count() int64 { return s.Hi - s.Lo + 1 }

// Segment returns worker idx's (1-based, of all) contiguous share of [lo,hi]
// as its first value and length (length 0: the worker gets nothing).
func Segment(lo, hi int64, idx, all int) (first, n int64) {
	rng := hi - lo + 1
	base := rng / int64(all)
	extra := rng % int64(all)
	i := int64(idx - 1)
	off := base*i + min64(i, extra)
	n = base
	if i < extra {
		n++
	}
	return lo + off, n
}

func min64(a, b int64) int64 {
	if a < b {
		return a
	}
	return b
}

// Next picks a value. divided says whether this selector is split among the
// work's workers (COSBench's division); idx is 1-based.
func (s *Selector) Next(r *rand.Rand, idx, all int, divided bool) int64 {
	lo, n := s.Lo, s.Count()
	if divided && s.Kind != SelConst && s.Kind != SelSeq {
		lo, n = Segment(s.Lo, s.Hi, idx, all)
		if n <= 0 {
			return -1
		}
	}
	switch s.Kind {
	case SelConst:
		return s.Lo
	case SelUniform:
		return lo + r.Int63n(n)
	case SelRange:
		key := 1
		if divided {
			key = idx
		}
		s.mu.Lock()
		if s.cursors == nil {
			s.cursors = map[int]*int64{}
		}
		c, ok := s.cursors[key]
		if !ok {
			c = new(int64)
			s.cursors[key] = c
		}
		v := lo + *c%n
		*c++
		s.mu.Unlock()
		return v
	case SelSeq:
		v := s.seq.Add(1) - 1
		return s.Lo + v%s.Count()
	}
	return -1
}

// Scan lists the values a scanning work (prepare/cleanup/init/dispose) walks:
// all of them, or the worker's segment when divided.
func (s *Selector) Scan(idx, all int, divided bool) (first, n int64, err error) {
	switch s.Kind {
	case SelConst:
		if divided && idx != 1 {
			return s.Lo, 0, nil
		}
		return s.Lo, 1, nil
	case SelRange, SelSeq:
		if divided {
			f, c := Segment(s.Lo, s.Hi, idx, all)
			return f, c, nil
		}
		return s.Lo, s.Count(), nil
	}
	return 0, 0, fmt.Errorf("selector %q cannot be scanned (use r(a,b), s(a,b) or c(N))", s.Text)
}

// SizeSpec is a size selector with its unit, e.g. c(64)KB.
type SizeSpec struct {
	Sel  *Selector
	Unit int64
	Text string
}

var sizeUnits = []struct {
	suffix string
	mult   int64
}{{"GB", 1000 * 1000 * 1000}, {"MB", 1000 * 1000}, {"KB", 1000}, {"B", 1}}

// ParseSize parses "c(64)KB", "u(1,10)MB", "r(1,4)B". The unit is required.
func ParseSize(text string) (*SizeSpec, error) {
	t := strings.TrimSpace(text)
	for _, u := range sizeUnits {
		if strings.HasSuffix(t, u.suffix) {
			sel, err := ParseSelector(strings.TrimSuffix(t, u.suffix))
			if err != nil {
				return nil, err
			}
			return &SizeSpec{Sel: sel, Unit: u.mult, Text: t}, nil
		}
	}
	return nil, fmt.Errorf("size %q: missing or unknown unit (supported: B, KB, MB, GB; decimal)", t)
}

func (z *SizeSpec) Next(r *rand.Rand, idx, all int) int64 {
	return z.Sel.Next(r, idx, all, false) * z.Unit
}

// FormatSize renders a byte count in COSBench's decimal units ("64KB").
func FormatSize(b int64) string {
	for _, u := range sizeUnits {
		if b >= u.mult && b%u.mult == 0 {
			return strconv.FormatInt(b/u.mult, 10) + u.suffix
		}
	}
	return strconv.FormatInt(b, 10) + "B"
}
