// cosbench-driver executes COSBench workload XML files against S3 endpoints
// (or an in-process no-op store) and writes COSBench's CSV files, a JSON
// summary and a per-request log. It also serves an in-memory S3 endpoint
// (memserver) and measures its own ceiling against it (ceiling).
//
// Exit status: 0 success; 1 the workload ran and some work failed (failed
// or corrupted requests); 2 the workload was refused (nothing ran) or the
// command line is wrong; 3 the outputs could not be written.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"
)

const version = "1.0"

func usage() {
	fmt.Fprint(os.Stderr, `usage:
  cosbench-driver run WORKLOAD.xml --out DIR [--endpoint URL] [--storage-type s3|mock --storage-config CFG]
                      [--time-scale F] [--seed N] [--wid w1] [--no-oplog] [--quiet]
  cosbench-driver check WORKLOAD.xml [same options]     validate only, print the plan, run nothing
  cosbench-driver memserver [--listen 127.0.0.1:0] [--port-file F] [--access-key AK --secret-key SK] [--admin]
  cosbench-driver ceiling [--endpoint URL] [--sizes 4KB,1MB] [--workers 1,4,16] [--seconds 3] [--json F]
  cosbench-driver version
`)
}

func main() {
	if len(os.Args) < 2 {
		usage()
		os.Exit(2)
	}
	switch os.Args[1] {
	case "run":
		os.Exit(cmdRun(os.Args[2:], false))
	case "check":
		os.Exit(cmdRun(os.Args[2:], true))
	case "memserver":
		os.Exit(cmdMemserver(os.Args[2:]))
	case "ceiling":
		os.Exit(cmdCeiling(os.Args[2:]))
	case "version", "--version":
		fmt.Println("cosbench-driver", version)
	case "-h", "--help", "help":
		usage()
	default:
		fmt.Fprintf(os.Stderr, "cosbench-driver: unknown command %q\n", os.Args[1])
		usage()
		os.Exit(2)
	}
}

// splitArgs lets flags come after the positional workload path.
func splitArgs(args []string) (pos []string, flags []string) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if strings.HasPrefix(a, "-") {
			flags = append(flags, a)
			if !strings.Contains(a, "=") && i+1 < len(args) && !isBoolFlag(a) {
				flags = append(flags, args[i+1])
				i++
			}
			continue
		}
		pos = append(pos, a)
	}
	return
}

func isBoolFlag(a string) bool {
	a = strings.TrimLeft(a, "-")
	return a == "no-oplog" || a == "quiet" || a == "admin"
}

func cmdRun(args []string, checkOnly bool) int {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	out := fs.String("out", "", "output folder (COSBench CSVs, summary.json, ops.csv)")
	endpoint := fs.String("endpoint", "", "replace the endpoint of every s3 storage")
	stType := fs.String("storage-type", "", "replace every <storage> by this type (s3 or mock); <auth> is then ignored")
	stCfg := fs.String("storage-config", "", "config of the replacing storage")
	scale := fs.Float64("time-scale", 1, "multiply runtime, rampup, rampdown and closuredelay by this")
	seed := fs.Int64("seed", 1, "random seed (object choice, sizes, bodies)")
	wid := fs.String("wid", "w1", "workload id used in file names and stage ids")
	noOpLog := fs.Bool("no-oplog", false, "do not write ops.csv")
	quiet := fs.Bool("quiet", false, "no progress lines")
	pos, flags := splitArgs(args)
	if err := fs.Parse(flags); err != nil {
		return 2
	}
	if len(pos) != 1 {
		fmt.Fprintln(os.Stderr, "cosbench-driver: exactly one workload file expected")
		return 2
	}
	if !checkOnly && *out == "" {
		fmt.Fprintln(os.Stderr, "cosbench-driver: --out DIR is required")
		return 2
	}
	if *scale <= 0 {
		fmt.Fprintln(os.Stderr, "cosbench-driver: --time-scale must be > 0")
		return 2
	}
	opt := LoadOptions{TimeScale: *scale, Endpoint: *endpoint}
	if *stType != "" {
		opt.StorageOverride = &Storage{Type: *stType, Config: *stCfg}
	} else if *stCfg != "" {
		fmt.Fprintln(os.Stderr, "cosbench-driver: --storage-config needs --storage-type")
		return 2
	}
	xmlBytes, err := os.ReadFile(pos[0])
	if err != nil {
		fmt.Fprintln(os.Stderr, "cosbench-driver:", err)
		return 2
	}
	wl, err := ParseWorkload(strings.NewReader(string(xmlBytes)), pos[0], opt)
	if err != nil {
		fmt.Fprintf(os.Stderr, "cosbench-driver: %s: %v\n", pos[0], err)
		return 2
	}
	if checkOnly {
		printPlan(wl)
		return 0
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	rn := &Runner{WL: wl, WID: *wid, Seed: *seed, Endpoint: *endpoint, T0: time.Now(), Ctx: ctx}
	if !*quiet {
		rn.Progress = os.Stderr
	}
	rn.logf("workload %q from %s: %d stage(s)", wl.Name, pos[0], len(wl.Stages))
	stages := rn.Run()
	sum := buildSummary(rn, stages, *scale)
	if err := writeOutputs(*out, rn, stages, sum, xmlBytes, !*noOpLog); err != nil {
		fmt.Fprintln(os.Stderr, "cosbench-driver: writing outputs:", err)
		return 3
	}
	for _, ss := range sum.Stages {
		for _, m := range ss.Ops {
			rn.logf("%-24s %-16s ops %7d  bytes %12d  avg %8.3f ms  %9.2f op/s  succ %s", ss.ID, m.OpName, m.OpCount,
				m.ByteCount, m.AvgResMs, m.Throughput, ratio(m.SuccRatio))
		}
	}
	if !sum.OK {
		fmt.Fprintf(os.Stderr, "cosbench-driver: workload %q FAILED (see %s/summary.json)\n", wl.Name, *out)
		return 1
	}
	rn.logf("workload %q completed; results in %s", wl.Name, *out)
	return 0
}

func printPlan(wl *Workload) {
	fmt.Printf("workload %q: %d stage(s)\n", wl.Name, len(wl.Stages))
	for i, st := range wl.Stages {
		fmt.Printf("  s%d %q closuredelay=%gs\n", i+1, st.Name, st.ClosureDelay)
		for _, wk := range st.Works {
			fmt.Printf("    work %q type=%s workers=%d runtime=%gs totalOps=%d totalBytes=%d division=%s storage=%s\n",
				wk.Name, wk.Type, wk.Workers, wk.Runtime, wk.TotalOps, wk.TotalBytes, wk.Division, wk.Storage.Type)
			for _, op := range wk.Ops {
				fmt.Printf("      op %s ratio=%d containers=%v objects=%v sizes=%v\n", op.Key(), op.Ratio, op.Containers, op.Objects, sizeText(op.Sizes))
			}
		}
	}
}

func sizeText(z *SizeSpec) string {
	if z == nil {
		return "-"
	}
	return z.Text
}

func cmdMemserver(args []string) int {
	fs := flag.NewFlagSet("memserver", flag.ContinueOnError)
	listen := fs.String("listen", "127.0.0.1:0", "address to listen on")
	portFile := fs.String("port-file", "", "write the chosen port here once listening")
	ak := fs.String("access-key", "", "access key (with --secret-key: SigV4 is checked)")
	sk := fs.String("secret-key", "", "secret key")
	admin := fs.Bool("admin", false, "enable /_memserver/ test endpoints (corrupt, stats)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	ms := NewMemServer(*ak, *sk, *admin)
	srv, ln, err := StartMemServer(*listen, ms)
	if err != nil {
		fmt.Fprintln(os.Stderr, "memserver:", err)
		return 2
	}
	addr := ln.Addr().String()
	fmt.Printf("memserver listening on http://%s (sigv4 %s)\n", addr, map[bool]string{true: "checked", false: "not checked"}[*sk != ""])
	if *portFile != "" {
		_, port, _ := strings.Cut(addr[strings.LastIndex(addr, ":"):], ":")
		tmp := *portFile + ".tmp"
		if err := os.WriteFile(tmp, []byte(port+"\n"), 0o644); err == nil {
			os.Rename(tmp, *portFile)
		}
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	<-ctx.Done()
	sctx, c2 := context.WithTimeout(context.Background(), 2*time.Second)
	defer c2()
	srv.Shutdown(sctx)
	fmt.Printf("memserver stopped after %d requests\n", ms.reqs.Load())
	return 0
}

// ---- ceiling ----

type CeilingRow struct {
	Size        string  `json:"size"`
	SizeBytes   int64   `json:"size_bytes"`
	Workers     int     `json:"workers"`
	Op          string  `json:"op"`
	OpsPerS     float64 `json:"ops_per_s"`
	BytesPerS   float64 `json:"bytes_per_s"`
	AvgResMs    float64 `json:"avg_res_ms"`
	OpCount     int64   `json:"op_count"`
	WindowS     float64 `json:"window_s"`
	SuccRatio   float64 `json:"succ_ratio"`
	Endpoint    string  `json:"endpoint"`
	ServerInPrc bool    `json:"server_in_process"`
}

// ceilingObjects: 4 objects per worker (16..256), at most 2 GB of them in memserver.
func ceilingObjects(sizeBytes int64, workers int) int {
	objs := workers * 4
	if objs < 16 {
		objs = 16
	}
	if objs > 256 {
		objs = 256
	}
	if sizeBytes > 0 && int64(objs)*sizeBytes > 2e9 {
		objs = int(2e9 / sizeBytes)
	}
	if objs < 2 {
		objs = 2
	}
	return objs
}

func ceilingXML(size string, sizeBytes int64, workers int, seconds int, ak, sk, endpoint string) string {
	objs := ceilingObjects(sizeBytes, workers)
	return fmt.Sprintf(`<?xml version="1.0" encoding="UTF-8"?>
<workload name="ceiling-%[1]s-w%[2]d" description="driver ceiling">
  <storage type="s3" config="accesskey=%[5]s;secretkey=%[6]s;endpoint=%[7]s;path_style_access=true"/>
  <workflow>
    <workstage name="init"><work type="init" workers="1" config="cprefix=ceil;containers=r(1,1)"/></workstage>
    <workstage name="prepare"><work type="prepare" workers="%[2]d" config="cprefix=ceil;containers=r(1,1);objects=r(1,%[4]d);sizes=%[1]s"/></workstage>
    <workstage name="write"><work name="write" workers="%[2]d" runtime="%[3]d">
      <operation type="write" ratio="100" config="cprefix=ceil;containers=c(1);objects=u(1,%[4]d);sizes=%[1]s"/></work></workstage>
    <workstage name="read"><work name="read" workers="%[2]d" runtime="%[3]d">
      <operation type="read" ratio="100" config="cprefix=ceil;containers=c(1);objects=u(1,%[4]d)"/></work></workstage>
    <workstage name="cleanup"><work type="cleanup" workers="%[2]d" config="cprefix=ceil;containers=r(1,1);objects=r(1,%[4]d)"/></workstage>
    <workstage name="dispose"><work type="dispose" workers="1" config="cprefix=ceil;containers=r(1,1)"/></workstage>
  </workflow>
</workload>
`, sizeSelector(size), workers, seconds, objs, ak, sk, endpoint)
}

// sizeSelector turns "4KB" into "c(4)KB".
func sizeSelector(size string) string {
	i := strings.IndexFunc(size, func(r rune) bool { return r < '0' || r > '9' })
	if i <= 0 {
		return size
	}
	return "c(" + size[:i] + ")" + size[i:]
}

func cmdCeiling(args []string) int {
	fs := flag.NewFlagSet("ceiling", flag.ContinueOnError)
	endpoint := fs.String("endpoint", "", "memserver to use (default: start one in this process)")
	sizes := fs.String("sizes", "4KB,1MB", "object sizes (decimal units)")
	workersS := fs.String("workers", "1,4,16", "worker counts")
	seconds := fs.Int("seconds", 3, "seconds per read and per write phase")
	jsonOut := fs.String("json", "", "write the rows as JSON here")
	ak := fs.String("access-key", "ceiling", "access key")
	sk := fs.String("secret-key", "ceiling-secret", "secret key")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	ep := *endpoint
	inProc := false
	if ep == "" {
		srv, ln, err := StartMemServer("127.0.0.1:0", NewMemServer(*ak, *sk, false))
		if err != nil {
			fmt.Fprintln(os.Stderr, "ceiling:", err)
			return 2
		}
		defer srv.Close()
		ep, inProc = "http://"+ln.Addr().String(), true
	}
	var rows []CeilingRow
	fail := false
	for _, size := range strings.Split(*sizes, ",") {
		zs, err := ParseSize(sizeSelector(size))
		if err != nil {
			fmt.Fprintf(os.Stderr, "ceiling: size %q: use e.g. 4KB or 1MB\n", size)
			return 2
		}
		for _, wS := range strings.Split(*workersS, ",") {
			var w int
			if _, err := fmt.Sscanf(wS, "%d", &w); err != nil || w < 1 {
				fmt.Fprintf(os.Stderr, "ceiling: workers %q\n", wS)
				return 2
			}
			x := ceilingXML(size, zs.Sel.Lo*zs.Unit, w, *seconds, *ak, *sk, ep)
			wl, err := ParseWorkload(strings.NewReader(x), "ceiling", LoadOptions{TimeScale: 1})
			if err != nil {
				fmt.Fprintln(os.Stderr, "ceiling:", err)
				return 2
			}
			rn := &Runner{WL: wl, WID: "w1", Seed: 1, T0: time.Now(), Ctx: context.Background()}
			stages := rn.Run()
			sum := buildSummary(rn, stages, 1)
			if !sum.OK {
				fail = true
			}
			for _, ss := range sum.Stages {
				if ss.Name != "read" && ss.Name != "write" {
					continue
				}
				m := ss.Ops[0]
				row := CeilingRow{Size: size, SizeBytes: zs.Sel.Lo * zs.Unit, Workers: w, Op: ss.Name, OpsPerS: m.Throughput,
					BytesPerS: m.Bandwidth, AvgResMs: m.AvgResMs, OpCount: m.OpCount, WindowS: m.WindowS, SuccRatio: m.SuccRatio,
					Endpoint: ep, ServerInPrc: inProc}
				rows = append(rows, row)
				fmt.Printf("ceiling size=%-5s workers=%-3d %-5s %10.1f op/s %9.1f MB/s  avg %7.3f ms  (%d ops, succ %s)\n",
					size, w, ss.Name, m.Throughput, m.Bandwidth/1e6, m.AvgResMs, m.OpCount, ratio(m.SuccRatio))
			}
		}
	}
	if *jsonOut != "" {
		js, _ := json.MarshalIndent(map[string]interface{}{"schema": "repro.cosbench-ceiling/1", "tool": "cosbench-driver " + version,
			"system_kind": "stand-in:memserver", "rows": rows}, "", "  ")
		if err := os.WriteFile(*jsonOut, append(js, '\n'), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "ceiling:", err)
			return 3
		}
	}
	if fail {
		return 1
	}
	return 0
}
