package main

import (
	"math/rand"
	"testing"
)

func TestParseSelector(t *testing.T) {
	cases := []struct {
		in     string
		kind   SelKind
		lo, hi int64
	}{
		{"c(64)", SelConst, 64, 64}, {"u(1,2)", SelUniform, 1, 2}, {"r(1,100)", SelRange, 1, 100},
		{"s(3,5)", SelSeq, 3, 5}, {"1-10", SelRange, 1, 10}, {" u( 2 , 9 ) ", SelUniform, 2, 9},
	}
	for _, c := range cases {
		s, err := ParseSelector(c.in)
		if err != nil {
			t.Fatalf("%q: %v", c.in, err)
		}
		if s.Kind != c.kind || s.Lo != c.lo || s.Hi != c.hi {
			t.Errorf("%q: got %c(%d,%d)", c.in, s.Kind, s.Lo, s.Hi)
		}
	}
	for _, bad := range []string{"", "x(1,2)", "u(5,1)", "u(1)", "c(1,2)", "h(1|2|50,3|4|50)", "r(a,b)", "u(-1,3)"} {
		if _, err := ParseSelector(bad); err == nil {
			t.Errorf("%q: accepted", bad)
		}
	}
}

func TestParseSizeDecimalUnits(t *testing.T) {
	for in, want := range map[string]int64{"c(64)KB": 64000, "c(4)MB": 4000000, "c(1)GB": 1000000000, "c(100)B": 100} {
		z, err := ParseSize(in)
		if err != nil {
			t.Fatal(err)
		}
		if got := z.Next(rand.New(rand.NewSource(1)), 1, 1); got != want {
			t.Errorf("%s: %d, want %d", in, got, want)
		}
	}
	for _, bad := range []string{"c(64)", "c(64)KiB", "c(64)kb", "u(1,2)TB"} {
		if _, err := ParseSize(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if FormatSize(64000) != "64KB" || FormatSize(1000000) != "1MB" || FormatSize(4096) != "4096B" {
		t.Error("FormatSize")
	}
}

func TestUniformStaysInRange(t *testing.T) {
	s, _ := ParseSelector("u(5,9)")
	r := rand.New(rand.NewSource(7))
	seen := map[int64]bool{}
	for i := 0; i < 2000; i++ {
		v := s.Next(r, 1, 1, false)
		if v < 5 || v > 9 {
			t.Fatalf("out of range: %d", v)
		}
		seen[v] = true
	}
	if len(seen) != 5 {
		t.Errorf("not all values drawn: %v", seen)
	}
}

func TestSegmentsPartitionTheRange(t *testing.T) {
	// 10 values over 3 workers: 4, 3, 3 (the first range%all workers get one more)
	want := [][2]int64{{1, 4}, {5, 3}, {8, 3}}
	for i, w := range want {
		f, n := Segment(1, 10, i+1, 3)
		if f != w[0] || n != w[1] {
			t.Errorf("worker %d: (%d,%d), want %v", i+1, f, n, w)
		}
	}
	// every value exactly once, for many shapes
	for rng := int64(1); rng <= 40; rng++ {
		for all := 1; all <= 9; all++ {
			cover := map[int64]int{}
			for idx := 1; idx <= all; idx++ {
				f, n := Segment(11, 10+rng, idx, all)
				for v := f; v < f+n; v++ {
					cover[v]++
				}
			}
			for v := int64(11); v <= 10+rng; v++ {
				if cover[v] != 1 {
					t.Fatalf("range %d over %d: value %d covered %d times", rng, all, v, cover[v])
				}
			}
		}
	}
}

func TestRangeAndSequentialCursors(t *testing.T) {
	s, _ := ParseSelector("r(1,3)")
	var got []int64
	for i := 0; i < 5; i++ {
		got = append(got, s.Next(nil, 1, 1, false))
	}
	if want := []int64{1, 2, 3, 1, 2}; !equal(got, want) {
		t.Errorf("r(1,3) undivided: %v", got)
	}
	// divided: worker 2 of 2 walks its own segment of r(1,10): 6..10
	d, _ := ParseSelector("r(1,10)")
	got = nil
	for i := 0; i < 6; i++ {
		got = append(got, d.Next(nil, 2, 2, true))
	}
	if want := []int64{6, 7, 8, 9, 10, 6}; !equal(got, want) {
		t.Errorf("r(1,10) worker 2/2: %v", got)
	}
	q, _ := ParseSelector("s(4,5)")
	got = nil
	for i := 0; i < 3; i++ {
		got = append(got, q.Next(nil, 1, 3, true))
	}
	if want := []int64{4, 5, 4}; !equal(got, want) {
		t.Errorf("s(4,5): %v", got)
	}
}

func TestScan(t *testing.T) {
	s, _ := ParseSelector("r(1,10)")
	if f, n, _ := s.Scan(3, 3, true); f != 8 || n != 3 {
		t.Errorf("scan 3/3: %d %d", f, n)
	}
	if f, n, _ := s.Scan(3, 3, false); f != 1 || n != 10 {
		t.Errorf("scan undivided: %d %d", f, n)
	}
	u, _ := ParseSelector("u(1,10)")
	if _, _, err := u.Scan(1, 1, false); err == nil {
		t.Error("u() scanned")
	}
}

func equal(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
