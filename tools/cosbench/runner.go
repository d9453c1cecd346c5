package main

// Executing a validated workload: stages in order, the works of a stage in
// parallel, each work's workers as goroutines. Every request becomes one
// record; metrics and CSVs are computed from the records afterwards.

import (
	"context"
	"fmt"
	"hash/fnv"
	"io"
	"math/rand"
	"sync"
	"sync/atomic"
	"time"
)

type rec struct {
	op      int16 // index into work.Ops
	worker  int32
	con     int64
	obj     int64 // -1: a container-level request
	start   int64 // ns since run start
	res     int64 // ns
	proc    int64 // ns
	bytes   int64
	ok      bool
	counted bool // inside the measurement window (rampup/rampdown excluded)
	integ   bool // failed its integrity check
	err     int32
}

type WorkResult struct {
	Work      *Work
	Recs      []rec
	Errors    []string // distinct messages, capped
	ErrCount  int64
	Integrity int64
	Start     time.Time
	End       time.Time
	WinStart  time.Time
	WinEnd    time.Time
	Failed    bool
	Reason    string
}

type StageResult struct {
	Stage  *Stage
	ID     string // w1-s3-main
	Works  []*WorkResult
	Start  time.Time
	End    time.Time
	Failed bool
	States [][2]interface{}
}

type Runner struct {
	WL       *Workload
	WID      string
	Seed     int64
	Endpoint string
	T0       time.Time
	Progress io.Writer
	Ctx      context.Context

	stores map[string]Store
	poolMu sync.Mutex
	pool   *bodyPool
}

// bodyPool is the run's shared pool of body blocks (seeded from --seed).
func (rn *Runner) bodyPool() *bodyPool {
	rn.poolMu.Lock()
	defer rn.poolMu.Unlock()
	if rn.pool == nil {
		rn.pool = newBodyPool(rand.New(rand.NewSource(seedFor(rn.Seed, "bodies"))))
	}
	return rn.pool
}

func (rn *Runner) storeFor(wk *Work) (Store, error) {
	key := fmt.Sprintf("%s|%s|%d", wk.Storage.Type, wk.Storage.Config, wk.Workers)
	if rn.stores == nil {
		rn.stores = map[string]Store{}
	}
	if s, ok := rn.stores[key]; ok {
		return s, nil
	}
	var s Store
	switch wk.Storage.Type {
	case "mock", "none", "":
		m, err := newMockStore(wk.Storage)
		if err != nil {
			return nil, err
		}
		s = m
	case "s3":
		set, err := s3SettingsFrom(wk.Storage, rn.Endpoint)
		if err != nil {
			return nil, err
		}
		s3, err := newS3Store(rn.Ctx, set, wk.Workers)
		if err != nil {
			return nil, err
		}
		s = s3
	default:
		return nil, fmt.Errorf("storage type %q", wk.Storage.Type)
	}
	rn.stores[key] = s
	return s, nil
}

func seedFor(base int64, parts ...string) int64 {
	h := fnv.New64a()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return base ^ int64(h.Sum64()&0x7fffffffffffffff)
}

func (rn *Runner) logf(format string, a ...interface{}) {
	if rn.Progress != nil {
		fmt.Fprintf(rn.Progress, "[cosbench-driver %s] ", time.Now().Format("15:04:05"))
		fmt.Fprintf(rn.Progress, format+"\n", a...)
	}
}

// Run executes every stage. It returns the results of the stages that ran.
func (rn *Runner) Run() []*StageResult {
	if rn.Ctx == nil {
		rn.Ctx = context.Background()
	}
	var out []*StageResult
	for i, st := range rn.WL.Stages {
		sr := &StageResult{Stage: st, ID: fmt.Sprintf("%s-s%d-%s", rn.WID, i+1, st.Name), Start: time.Now()}
		rn.logf("stage %d/%d %q: %d work(s)", i+1, len(rn.WL.Stages), st.Name, len(st.Works))
		sr.States = append(sr.States, [2]interface{}{"running", sr.Start})
		var wg sync.WaitGroup
		sr.Works = make([]*WorkResult, len(st.Works))
		for j, wk := range st.Works {
			wg.Add(1)
			go func(j int, wk *Work) {
				defer wg.Done()
				sr.Works[j] = rn.runWork(i, st, wk)
			}(j, wk)
		}
		wg.Wait()
		for _, wr := range sr.Works {
			if wr.Failed {
				sr.Failed = true
				rn.logf("stage %q work %q FAILED: %s", st.Name, wr.Work.Name, wr.Reason)
			}
		}
		if st.ClosureDelay > 0 && rn.Ctx.Err() == nil {
			rn.logf("stage %q: closure delay %.2fs", st.Name, st.ClosureDelay)
			select {
			case <-time.After(time.Duration(st.ClosureDelay * float64(time.Second))):
			case <-rn.Ctx.Done():
			}
		}
		sr.End = time.Now()
		state := "completed"
		if sr.Failed {
			state = "failed"
		}
		if rn.Ctx.Err() != nil {
			state, sr.Failed = "aborted", true
		}
		sr.States = append(sr.States, [2]interface{}{state, sr.End})
		out = append(out, sr)
		if rn.Ctx.Err() != nil {
			break
		}
	}
	return out
}

type workerState struct {
	idx, all int
	r        *rand.Rand
	buf      []byte
	recs     []rec
	bodies   *bodyPool
	count    atomic.Int64 // requests so far (read by the progress printer)
}

func (rn *Runner) runWork(stageIdx int, st *Stage, wk *Work) *WorkResult {
	wr := &WorkResult{Work: wk, Start: time.Now()}
	if wk.Type == "delay" {
		wr.End, wr.WinStart, wr.WinEnd = wr.Start, wr.Start, wr.Start
		return wr
	}
	store, err := rn.storeFor(wk)
	if err != nil {
		wr.Failed, wr.Reason = true, err.Error()
		wr.End = time.Now()
		return wr
	}
	var (
		mu       sync.Mutex
		errIdx   = map[string]int32{}
		bytesAll atomic.Int64
		stop     atomic.Bool
	)
	noteErr := func(e error) int32 {
		mu.Lock()
		defer mu.Unlock()
		wr.ErrCount++
		m := e.Error()
		if i, ok := errIdx[m]; ok {
			return i
		}
		if len(wr.Errors) >= 50 {
			return int32(len(wr.Errors) - 1)
		}
		wr.Errors = append(wr.Errors, m)
		errIdx[m] = int32(len(wr.Errors) - 1)
		return errIdx[m]
	}
	start := time.Now()
	wr.WinStart = start.Add(time.Duration(wk.Rampup * float64(time.Second)))
	var deadline time.Time
	if wk.Runtime > 0 {
		wr.WinEnd = wr.WinStart.Add(time.Duration(wk.Runtime * float64(time.Second)))
		deadline = wr.WinEnd.Add(time.Duration(wk.Rampdown * float64(time.Second)))
	}
	workers := make([]*workerState, wk.Workers)
	var wg sync.WaitGroup
	for i := range workers {
		ws := &workerState{idx: i + 1, all: wk.Workers,
			r:   rand.New(rand.NewSource(seedFor(rn.Seed, st.Name, wk.Name, fmt.Sprint(i+1)))),
			buf: make([]byte, 256<<10)}
		ws.bodies = rn.bodyPool()
		workers[i] = ws
		wg.Add(1)
		go func(ws *workerState) {
			defer wg.Done()
			record := func(opIdx int, con, obj int64, t0 time.Time, proc time.Duration, n int64, err error) {
				end := time.Now()
				rc := rec{op: int16(opIdx), worker: int32(ws.idx), con: con, obj: obj,
					start: t0.Sub(rn.T0).Nanoseconds(), res: end.Sub(t0).Nanoseconds(), proc: proc.Nanoseconds(),
					bytes: n, ok: err == nil, err: -1}
				if wk.Runtime > 0 {
					rc.counted = !t0.Before(wr.WinStart) && t0.Before(wr.WinEnd)
				} else {
					rc.counted = true
				}
				if err != nil && rn.Ctx.Err() != nil {
					return // cut short by SIGINT/SIGTERM: not a failure of the storage
				}
				if err != nil {
					rc.err = noteErr(err)
					rc.bytes = 0
					if isIntegrity(err) {
						rc.integ = true
					}
				}
				ws.recs = append(ws.recs, rc)
				ws.count.Add(1)
			}
			if wk.Type != "normal" {
				rn.scan(wk, store, ws, record)
				return
			}
			var quota int64 = -1
			if wk.TotalOps > 0 {
				quota = wk.TotalOps / int64(ws.all)
				if int64(ws.idx) <= wk.TotalOps%int64(ws.all) {
					quota++
				}
			}
			for n := int64(0); quota < 0 || n < quota; n++ {
				if stop.Load() || rn.Ctx.Err() != nil {
					return
				}
				if !deadline.IsZero() && !time.Now().Before(deadline) {
					return
				}
				if wk.TotalBytes > 0 && bytesAll.Load() >= wk.TotalBytes {
					stop.Store(true)
					return
				}
				opIdx := pickOp(wk.Ops, ws.r)
				b := rn.doOp(wk.Ops[opIdx], opIdx, store, ws, record)
				bytesAll.Add(b)
			}
		}(ws)
	}
	done := make(chan struct{})
	if rn.Progress != nil && wk.Type == "normal" {
		go rn.progress(wk, start, workers, done)
	}
	wg.Wait()
	close(done)
	wr.End = time.Now()
	if wk.Runtime == 0 || wr.End.Before(wr.WinEnd) { // totalOps/totalBytes, or interrupted
		wr.WinEnd = wr.End
	}
	if wr.WinEnd.Before(wr.WinStart) {
		wr.WinStart = wr.WinEnd
	}
	for _, ws := range workers {
		wr.Recs = append(wr.Recs, ws.recs...)
	}
	var fails, integ, total int64
	for _, rc := range wr.Recs {
		total++
		if !rc.ok {
			fails++
		}
		if rc.integ {
			integ++
		}
	}
	wr.Integrity = integ
	switch {
	case rn.Ctx.Err() != nil:
		wr.Failed, wr.Reason = true, "interrupted"
	case integ > 0:
		wr.Failed, wr.Reason = true, fmt.Sprintf("%d object(s) failed the integrity check", integ)
	case fails > 0 && fails*1000000 > int64(wk.AFR)*total:
		wr.Failed, wr.Reason = true, fmt.Sprintf("%d of %d operations failed (afr %d per million)", fails, total, wk.AFR)
	}
	return wr
}

// progress prints a line every 10 s while a normal work runs.
func (rn *Runner) progress(wk *Work, start time.Time, workers []*workerState, done chan struct{}) {
	t := time.NewTicker(10 * time.Second)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case now := <-t.C:
			var n int64
			for _, ws := range workers {
				n += ws.count.Load()
			}
			left := ""
			if wk.Runtime > 0 {
				left = fmt.Sprintf(", %.0fs left", wk.Rampup+wk.Runtime+wk.Rampdown-now.Sub(start).Seconds())
			} else if wk.TotalOps > 0 {
				left = fmt.Sprintf(" of %d", wk.TotalOps)
			}
			rn.logf("work %q: %d requests after %.0fs%s", wk.Name, n, now.Sub(start).Seconds(), left)
		}
	}
}

func isIntegrity(err error) bool {
	return err != nil && len(err.Error()) >= 10 && err.Error()[:10] == "integrity:"
}

func pickOp(ops []*Operation, r *rand.Rand) int {
	if len(ops) == 1 {
		return 0
	}
	x := r.Intn(100)
	acc := 0
	for i, op := range ops {
		acc += op.Ratio
		if x < acc {
			return i
		}
	}
	return len(ops) - 1
}

func conName(op *Operation, c int64) string { return fmt.Sprintf("%s%d%s", op.CPrefix, c, op.CSuffix) }
func objName(op *Operation, o int64) string { return fmt.Sprintf("%s%d%s", op.OPrefix, o, op.OSuffix) }

type recordFn func(opIdx int, con, obj int64, t0 time.Time, proc time.Duration, n int64, err error)

// doOp runs one request of a normal work and returns the bytes moved.
func (rn *Runner) doOp(op *Operation, opIdx int, store Store, ws *workerState, record recordFn) int64 {
	con := op.Containers.Next(ws.r, ws.idx, ws.all, op.Division == "container")
	obj := int64(-1)
	if op.Objects != nil {
		obj = op.Objects.Next(ws.r, ws.idx, ws.all, op.Division == "object")
	}
	c := conName(op, con)
	var (
		n    int64
		proc time.Duration
		err  error
	)
	t0 := time.Now()
	switch op.Type {
	case "read":
		n, proc, err = store.Get(c, objName(op, obj), ws.buf)
	case "write":
		size := op.Sizes.Next(ws.r, ws.idx, ws.all)
		proc, err = store.Put(c, objName(op, obj), ws.bodies.body(size, ws.r, op.Zero), size)
		n = size
	case "delete":
		proc, err = store.Delete(c, objName(op, obj))
	case "list":
		prefix := ""
		if obj >= 0 {
			prefix = objName(op, obj)
		}
		n, proc, err = store.List(c, prefix, ws.buf)
	}
	record(opIdx, con, obj, t0, proc, n, err)
	if err != nil {
		return 0
	}
	return n
}

// scan runs a special work's single operation for one worker: it walks the
// worker's share of containers (init, dispose) or objects (prepare, cleanup).
func (rn *Runner) scan(wk *Work, store Store, ws *workerState, record recordFn) {
	op := wk.Ops[0]
	cFirst, cN, _ := op.Containers.Scan(ws.idx, ws.all, wk.Division == "container")
	switch wk.Type {
	case "init", "dispose":
		for c := cFirst; c < cFirst+cN; c++ {
			if rn.Ctx.Err() != nil {
				return
			}
			t0 := time.Now()
			var proc time.Duration
			var err error
			if wk.Type == "init" {
				proc, err = store.CreateContainer(conName(op, c))
			} else {
				proc, err = store.DeleteContainer(conName(op, c))
			}
			record(0, c, -1, t0, proc, 0, err)
		}
	case "prepare", "cleanup":
		oFirst, oN, _ := op.Objects.Scan(ws.idx, ws.all, wk.Division == "object")
		for c := cFirst; c < cFirst+cN; c++ {
			cn := conName(op, c)
			if wk.Type == "prepare" && op.CreateCont && oN > 0 {
				t0 := time.Now()
				if _, err := store.CreateContainer(cn); err != nil {
					record(0, c, -1, t0, 0, 0, err)
					continue
				}
			}
			for o := oFirst; o < oFirst+oN; o++ {
				if rn.Ctx.Err() != nil {
					return
				}
				t0 := time.Now()
				if wk.Type == "prepare" {
					size := op.Sizes.Next(ws.r, ws.idx, ws.all)
					proc, err := store.Put(cn, objName(op, o), ws.bodies.body(size, ws.r, op.Zero), size)
					record(0, c, o, t0, proc, size, err)
				} else {
					proc, err := store.Delete(cn, objName(op, o))
					record(0, c, o, t0, proc, 0, err)
				}
			}
			if wk.Type == "cleanup" && op.DeleteCont && oN > 0 {
				t0 := time.Now()
				if _, err := store.DeleteContainer(cn); err != nil {
					record(0, c, -1, t0, 0, 0, err)
				}
			}
		}
	}
}
