package main

// Metrics from the per-request records, written as COSBench's CSV files
// (workload CSV, one CSV per stage), our JSON summary and the raw per-op log.

import (
	"bufio"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Header lines, as COSBench 0.4.x's CSVWorkloadExporter and CSVStageExporter
// write them (fixtures/csv/cosbench-0.4.2-columns.json lists the names; the tests compare).
var workloadHeader = []string{"Stage", "Op-Name", "Op-Type", "Op-Count", "Byte-Count", "Avg-ResTime", "Avg-ProcTime",
	"60%-ResTime", "80%-ResTime", "90%-ResTime", "95%-ResTime", "99%-ResTime", "100%-ResTime",
	"Throughput", "Bandwidth", "Succ-Ratio", "Status", "Detailed Status"}

var stageMetricNames = []string{"Op-Count", "Byte-Count", "Avg-ResTime", "Avg-ProcTime", "Throughput", "Bandwidth", "Succ-Ratio"}

// Metrics of one operation kind (Op-Name) over a window.
type Metrics struct {
	OpName     string    `json:"op_name"`
	OpType     string    `json:"op_type"`
	SampleType string    `json:"sample_type"`
	OpCount    int64     `json:"op_count"`
	Failed     int64     `json:"failed"`
	ByteCount  int64     `json:"byte_count"`
	AvgResMs   float64   `json:"avg_res_ms"`
	AvgProcMs  float64   `json:"avg_proc_ms"`
	PctMs      []float64 `json:"pct_res_ms"` // 60 80 90 95 99 100
	Throughput float64   `json:"throughput_ops"`
	Bandwidth  float64   `json:"bandwidth_bps"`
	SuccRatio  float64   `json:"succ_ratio"` // -1: no samples
	WindowS    float64   `json:"window_s"`
	Integrity  int64     `json:"integrity_failures"`
}

var pctLevels = []float64{60, 80, 90, 95, 99, 100}

type opKey struct{ name, typ, sample string }

// aggregate computes per-Op-Name metrics over counted records of the given
// works, with throughput over window seconds.
func aggregate(works []*WorkResult, window float64, filter func(r *rec) bool) []*Metrics {
	type acc struct {
		m    *Metrics
		res  []float64
		proc float64
	}
	accs := map[opKey]*acc{}
	var order []opKey
	for _, wr := range works {
		for _, op := range wr.Work.Ops {
			k := opKey{op.Key(), op.Type, op.SampleType()}
			if _, ok := accs[k]; !ok {
				accs[k] = &acc{m: &Metrics{OpName: k.name, OpType: k.typ, SampleType: k.sample}}
				order = append(order, k)
			}
		}
		for i := range wr.Recs {
			r := &wr.Recs[i]
			if !r.counted || (filter != nil && !filter(r)) {
				continue
			}
			op := wr.Work.Ops[r.op]
			a := accs[opKey{op.Key(), op.Type, op.SampleType()}]
			if !r.ok {
				a.m.Failed++
				if r.integ {
					a.m.Integrity++
				}
				continue
			}
			a.m.OpCount++
			a.m.ByteCount += r.bytes
			a.res = append(a.res, float64(r.res)/1e6)
			a.proc += float64(r.proc) / 1e6
		}
	}
	var out []*Metrics
	for _, k := range order {
		a := accs[k]
		m := a.m
		m.WindowS = window
		if m.OpCount > 0 {
			sum := 0.0
			for _, v := range a.res {
				sum += v
			}
			m.AvgResMs = sum / float64(m.OpCount)
			m.AvgProcMs = a.proc / float64(m.OpCount)
			sort.Float64s(a.res)
			for _, p := range pctLevels {
				m.PctMs = append(m.PctMs, percentile(a.res, p))
			}
		}
		if window > 0 {
			m.Throughput = float64(m.OpCount) / window
			m.Bandwidth = float64(m.ByteCount) / window
		}
		m.SuccRatio = -1
		if t := m.OpCount + m.Failed; t > 0 {
			m.SuccRatio = float64(m.OpCount) / float64(t)
		}
		out = append(out, m)
	}
	return out
}

// percentile: nearest rank on sorted values.
func percentile(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	if rank < 1 {
		rank = 1
	}
	return sorted[rank-1]
}

// num formats like Java's DecimalFormat("0.##") (half-even rounding of the exact value).
func num(v float64) string {
	// FormatFloat rounds the exact binary value half-to-even, as DecimalFormat does
	s := strconv.FormatFloat(v, 'f', 2, 64)
	s = strings.TrimRight(s, "0")
	s = strings.TrimSuffix(s, ".")
	if s == "-0" {
		s = "0"
	}
	return s
}

func ratio(v float64) string {
	if v < 0 {
		return "N/A"
	}
	return num(v*100) + "%"
}

func resOrNA(v float64, count int64) string {
	if count == 0 || v <= 0 {
		return "N/A"
	}
	return num(v)
}

func stageWindow(sr *StageResult) float64 {
	var ws, we time.Time
	for _, wr := range sr.Works {
		if wr.Work.Type == "delay" {
			continue
		}
		if ws.IsZero() || wr.WinStart.Before(ws) {
			ws = wr.WinStart
		}
		if we.IsZero() || wr.WinEnd.After(we) {
			we = wr.WinEnd
		}
	}
	if ws.IsZero() {
		return 0
	}
	return we.Sub(ws).Seconds()
}

func stageState(sr *StageResult) string { return sr.States[len(sr.States)-1][0].(string) }

func detailed(sr *StageResult) []string {
	var out []string
	for _, s := range sr.States {
		out = append(out, fmt.Sprintf("%s @ %s", s[0], s[1].(time.Time).Format("2006-01-02 15:04:05")))
	}
	return out
}

// writeCSV writes rows with encoding/csv (CRLF off), creating the file atomically.
func writeCSV(path string, rows [][]string) error {
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	w := csv.NewWriter(f)
	if err := w.WriteAll(rows); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

func workloadRows(stages []*StageResult) [][]string {
	rows := [][]string{workloadHeader}
	for _, sr := range stages {
		ms := aggregate(sr.Works, stageWindow(sr), nil)
		tail := append([]string{stageState(sr)}, detailed(sr)...)
		if len(ms) == 0 {
			row := []string{sr.ID}
			for i := 0; i < 15; i++ {
				row = append(row, "N/A")
			}
			rows = append(rows, append(row, tail...))
			continue
		}
		for _, m := range ms {
			row := []string{sr.ID, m.OpName, m.OpType, strconv.FormatInt(m.OpCount, 10), strconv.FormatInt(m.ByteCount, 10),
				resOrNA(m.AvgResMs, m.OpCount), resOrNA(m.AvgProcMs, m.OpCount)}
			for i := range pctLevels {
				if m.OpCount == 0 {
					row = append(row, "N/A")
				} else {
					row = append(row, num(m.PctMs[i]))
				}
			}
			row = append(row, num(m.Throughput), num(m.Bandwidth), ratio(m.SuccRatio))
			rows = append(rows, append(row, tail...))
		}
	}
	return rows
}

// stageRows: COSBench's per-stage time series, one row per interval.
func stageRows(sr *StageResult, t0 time.Time) [][]string {
	interval := 5
	if len(sr.Works) > 0 {
		interval = sr.Works[0].Work.Interval
	}
	base := aggregate(sr.Works, 0, func(*rec) bool { return false })
	n := len(base)
	h1 := []string{"Timestamp"}
	for _, name := range stageMetricNames {
		h1 = append(h1, name)
		for i := 1; i < n; i++ {
			h1 = append(h1, "")
		}
	}
	h1 = append(h1, "Version-Info", "", "")
	h2 := []string{""}
	for range stageMetricNames {
		for _, m := range base {
			h2 = append(h2, m.OpName)
		}
	}
	h2 = append(h2, "Min-Version", "Version", "Max-Version")
	rows := [][]string{h1, h2}
	if n == 0 {
		return rows
	}
	step := time.Duration(interval) * time.Second
	ver := 0
	for bs := sr.Start; bs.Before(sr.End); bs = bs.Add(step) {
		be := bs.Add(step)
		if be.After(sr.End) {
			be = sr.End
		}
		lo, hi := bs.Sub(t0).Nanoseconds(), be.Sub(t0).Nanoseconds()
		ms := aggregate(sr.Works, be.Sub(bs).Seconds(), func(r *rec) bool {
			e := r.start + r.res
			return e >= lo && e < hi
		})
		ver++
		row := []string{be.Format("15:04:05")}
		for _, m := range ms {
			row = append(row, strconv.FormatInt(m.OpCount, 10))
		}
		for _, m := range ms {
			row = append(row, strconv.FormatInt(m.ByteCount, 10))
		}
		for _, m := range ms {
			row = append(row, resOrNA(m.AvgResMs, m.OpCount))
		}
		for _, m := range ms {
			row = append(row, resOrNA(m.AvgProcMs, m.OpCount))
		}
		for _, m := range ms {
			row = append(row, num(m.Throughput))
		}
		for _, m := range ms {
			row = append(row, num(m.Bandwidth))
		}
		for _, m := range ms {
			row = append(row, ratio(m.SuccRatio))
		}
		row = append(row, strconv.Itoa(ver), strconv.Itoa(ver), strconv.Itoa(ver))
		rows = append(rows, row)
	}
	return rows
}

// Summary is our own JSON, for the pipeline.
type Summary struct {
	Schema     string          `json:"schema"`
	Tool       string          `json:"tool"`
	SystemKind string          `json:"system_kind"`
	Workload   string          `json:"workload"`
	Source     string          `json:"source"`
	WorkloadID string          `json:"workload_id"`
	StartedAt  string          `json:"started_at"`
	ElapsedS   float64         `json:"elapsed_s"`
	TimeScale  float64         `json:"time_scale"`
	Endpoint   string          `json:"endpoint,omitempty"`
	Seed       int64           `json:"seed"`
	OK         bool            `json:"ok"`
	Stages     []*StageSummary `json:"stages"`
}

type StageSummary struct {
	ID       string         `json:"id"`
	Name     string         `json:"name"`
	State    string         `json:"state"`
	ElapsedS float64        `json:"elapsed_s"`
	WindowS  float64        `json:"window_s"`
	Ops      []*Metrics     `json:"ops"`
	Works    []*WorkSummary `json:"works"`
}

type WorkSummary struct {
	Name      string     `json:"name"`
	Type      string     `json:"type"`
	Workers   int        `json:"workers"`
	Storage   string     `json:"storage"`
	Endpoint  string     `json:"endpoint,omitempty"`
	Failed    bool       `json:"failed"`
	Reason    string     `json:"reason,omitempty"`
	Errors    []string   `json:"errors,omitempty"`
	ErrCount  int64      `json:"error_count"`
	Requests  int        `json:"requests"`
	WindowS   float64    `json:"window_s"`
	Ops       []*Metrics `json:"ops"`
	Integrity int64      `json:"integrity_failures"`
}

func buildSummary(rn *Runner, stages []*StageResult, timeScale float64) *Summary {
	s := &Summary{Schema: "repro.cosbench-driver/1", Tool: "cosbench-driver " + version, SystemKind: "stand-in:cosbench-driver",
		Workload: rn.WL.Name, Source: rn.WL.Source, WorkloadID: rn.WID, StartedAt: rn.T0.UTC().Format(time.RFC3339),
		ElapsedS: time.Since(rn.T0).Seconds(), TimeScale: timeScale, Endpoint: rn.Endpoint, Seed: rn.Seed, OK: true}
	for _, sr := range stages {
		ss := &StageSummary{ID: sr.ID, Name: sr.Stage.Name, State: stageState(sr), ElapsedS: sr.End.Sub(sr.Start).Seconds(),
			WindowS: stageWindow(sr), Ops: aggregate(sr.Works, stageWindow(sr), nil)}
		if sr.Failed {
			s.OK = false
		}
		for _, wr := range sr.Works {
			win := wr.WinEnd.Sub(wr.WinStart).Seconds()
			ep := ""
			if wr.Work.Storage.Type == "s3" {
				if set, err := s3SettingsFrom(wr.Work.Storage, rn.Endpoint); err == nil {
					ep = set.Endpoint
				}
			}
			ss.Works = append(ss.Works, &WorkSummary{Name: wr.Work.Name, Type: wr.Work.Type, Workers: wr.Work.Workers,
				Storage: wr.Work.Storage.Type, Endpoint: ep, Failed: wr.Failed, Reason: wr.Reason, Errors: wr.Errors, ErrCount: wr.ErrCount,
				Requests: len(wr.Recs), WindowS: win, Ops: aggregate([]*WorkResult{wr}, win, nil), Integrity: wr.Integrity})
		}
		s.Stages = append(s.Stages, ss)
	}
	if len(stages) < len(rn.WL.Stages) {
		s.OK = false
	}
	return s
}

var opLogHeader = []string{"stage_id", "stage", "work", "worker", "op_name", "op_type", "sample_type", "container", "object",
	"start_ns", "res_ms", "proc_ms", "bytes", "ok", "counted", "error"}

func writeOpLog(path string, stages []*StageResult) error {
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(f, 1<<20)
	w := csv.NewWriter(bw)
	w.Write(opLogHeader)
	for _, sr := range stages {
		for _, wr := range sr.Works {
			for i := range wr.Recs {
				r := &wr.Recs[i]
				op := wr.Work.Ops[r.op]
				obj := ""
				if r.obj >= 0 && op.Objects != nil {
					obj = objName(op, r.obj)
				}
				msg := ""
				if r.err >= 0 {
					msg = wr.Errors[r.err]
				}
				w.Write([]string{sr.ID, sr.Stage.Name, wr.Work.Name, strconv.Itoa(int(r.worker)), op.Key(), op.Type, op.SampleType(),
					conName(op, r.con), obj, strconv.FormatInt(r.start, 10),
					strconv.FormatFloat(float64(r.res)/1e6, 'f', 4, 64), strconv.FormatFloat(float64(r.proc)/1e6, 'f', 4, 64),
					strconv.FormatInt(r.bytes, 10), strconv.FormatBool(r.ok), strconv.FormatBool(r.counted), msg})
			}
		}
	}
	w.Flush()
	if err := w.Error(); err != nil {
		f.Close()
		return err
	}
	if err := bw.Flush(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// writeOutputs writes the archive folder the way COSBench lays one out:
// <wid>-<name>.csv, s<i>-<stage>.csv, workload-config.xml; plus summary.json
// and ops.csv (ours).
func writeOutputs(dir string, rn *Runner, stages []*StageResult, sum *Summary, xmlBytes []byte, opLog bool) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := writeCSV(filepath.Join(dir, fmt.Sprintf("%s-%s.csv", rn.WID, safeName(rn.WL.Name))), workloadRows(stages)); err != nil {
		return err
	}
	for _, sr := range stages {
		name := strings.TrimPrefix(sr.ID, rn.WID+"-")
		if err := writeCSV(filepath.Join(dir, safeName(name)+".csv"), stageRows(sr, rn.T0)); err != nil {
			return err
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "workload-config.xml"), xmlBytes, 0o644); err != nil {
		return err
	}
	if opLog {
		if err := writeOpLog(filepath.Join(dir, "ops.csv"), stages); err != nil {
			return err
		}
	}
	js, _ := json.MarshalIndent(sum, "", "  ")
	tmp := filepath.Join(dir, "summary.json.tmp")
	if err := os.WriteFile(tmp, append(js, '\n'), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, "summary.json"))
}

func safeName(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '/' || r == 0 || r == '\\' {
			return '_'
		}
		return r
	}, s)
}
