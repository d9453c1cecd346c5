package main

import (
	"bytes"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"io"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const goodXML = `<?xml version="1.0" encoding="UTF-8" ?>
<workload name="t" description="d">
  <storage type="s3" config="accesskey=a;secretkey=b;endpoint=http://127.0.0.1:1;path_style_access=true" />
  <workflow>
    <workstage name="init"><work type="init" workers="2" config="cprefix=x;containers=r(1,3)" /></workstage>
    <workstage name="prepare"><work type="prepare" workers="3" config="cprefix=x;containers=r(1,3);objects=r(1,10);sizes=c(4)KB" /></workstage>
    <workstage name="main" closuredelay="2">
      <work name="w1" workers="4" runtime="30" rampup="5">
        <operation type="read" ratio="70" config="cprefix=x;containers=u(1,3);objects=u(1,10)" />
        <operation type="write" ratio="20" config="cprefix=x;containers=u(1,3);objects=u(11,20);sizes=u(1,4)MB" />
        <operation type="delete" ratio="10" config="cprefix=x;containers=u(1,3);objects=u(11,20)" />
        <operation type="list" ratio="0" config="cprefix=x;containers=u(1,3)" />
      </work>
    </workstage>
    <workstage name="cleanup"><work type="cleanup" workers="1" config="cprefix=x;containers=r(1,3);objects=r(1,20)" /></workstage>
    <workstage name="dispose"><work type="dispose" workers="1" config="cprefix=x;containers=r(1,3)" /></workstage>
  </workflow>
</workload>`

func TestParseGoodWorkload(t *testing.T) {
	wl, err := ParseWorkload(strings.NewReader(goodXML), "t.xml", LoadOptions{TimeScale: 0.5})
	if err != nil {
		t.Fatal(err)
	}
	if len(wl.Stages) != 5 {
		t.Fatalf("%d stages", len(wl.Stages))
	}
	main := wl.Stages[2]
	if main.ClosureDelay != 1 {
		t.Errorf("closuredelay scaled: %g", main.ClosureDelay)
	}
	wk := main.Works[0]
	if wk.Runtime != 15 || wk.Rampup != 2.5 || wk.Workers != 4 || wk.Interval != 5 {
		t.Errorf("work attrs: %+v", wk)
	}
	if len(wk.Ops) != 3 { // ratio 0 dropped
		t.Fatalf("%d ops", len(wk.Ops))
	}
	if wk.Ops[1].Sizes.Unit != 1000000 || wk.Ops[0].CPrefix != "x" || wk.Ops[0].OPrefix != "myobjects_" {
		t.Errorf("op config: %+v", wk.Ops[1])
	}
	prep := wl.Stages[1].Works[0]
	if prep.Division != "object" || prep.Ops[0].Key() != "prepare-write" || prep.Ops[0].CreateCont {
		t.Errorf("prepare: division %s key %s create %v", prep.Division, prep.Ops[0].Key(), prep.Ops[0].CreateCont)
	}
	if wl.Stages[0].Works[0].Division != "container" {
		t.Error("init division")
	}
}

func refusedWith(t *testing.T, xml string, want ...string) {
	t.Helper()
	_, err := ParseWorkload(strings.NewReader(xml), "bad.xml", LoadOptions{})
	if err == nil {
		t.Fatalf("accepted, wanted %q", want)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q lacks %q", err.Error(), w)
		}
	}
}

func TestRefusals(t *testing.T) {
	sub := func(old, new string) string { return strings.Replace(goodXML, old, new, 1) }
	refusedWith(t, sub(`runtime="30"`, `runtime="30" afr="x"`), `workstage "main" › work "w1": attribute afr="x" is not an integer`)
	refusedWith(t, sub(`rampup="5"`, `rampup="5" colour="red"`), `workstage "main" › work "w1": attribute colour not supported`)
	refusedWith(t, sub(`type="delete" ratio="10"`, `type="delete" ratio="15"`), `operation ratios sum to 105`)
	refusedWith(t, sub(`<operation type="list"`, `<operation type="filewrite"`), `operation "filewrite": operation type filewrite not supported`)
	refusedWith(t, sub(`objects=u(1,10)"`, `objects=h(1|10|100)"`), `histogram selector h() not supported`)
	refusedWith(t, sub(`sizes=c(4)KB`, `sizes=c(4)KiB`), `workstage "prepare" › work "prepare": config sizes`)
	refusedWith(t, sub(`type="s3"`, `type="swift"`), `storage: attribute type="swift" not supported`)
	refusedWith(t, sub(`<workflow>`, `<workflow><bogus/>`), `element <bogus> not supported`)
	refusedWith(t, sub(`type="init"`, `type="warmup"`), `attribute type="warmup" not supported`)
	refusedWith(t, sub(`cprefix=x;containers=u(1,3);objects=u(1,10)`, `cprefix=x;containers=u(1,3);objects=u(1,10);fancy=1`), `config key "fancy" not supported`)
	refusedWith(t, sub(`workers="4" runtime="30" rampup="5"`, `workers="4"`), `no limit: set runtime, totalOps or totalBytes`)
	refusedWith(t, sub(`containers=r(1,3);objects=r(1,10)`, `containers=r(1,3);objects=u(1,10)`), `cannot be scanned`)
	refusedWith(t, sub(`<work name="w1" workers="4"`, `<work name="w1" division="object" workers="40"`), `fewer values than workers`)
	refusedWith(t, `<workload name="x"><workflow></workflow></workload>`, `workflow has no workstage`)
	refusedWith(t, `<workload name="x"><workflow>`, `XML`)
	// several problems are all reported at once
	_, err := ParseWorkload(strings.NewReader(sub(`runtime="30"`, `runtime="30" afr="x" driver="d2"`)), "b", LoadOptions{})
	if err == nil || !strings.Contains(err.Error(), "afr") || !strings.Contains(err.Error(), "driver") {
		t.Errorf("not all problems named: %v", err)
	}
}

func TestStorageOverrideAndFixturesParse(t *testing.T) {
	files, _ := filepath.Glob("fixtures/conf/*.xml")
	if len(files) != 6 {
		t.Fatalf("fixtures missing: %v", files)
	}
	ov := &Storage{Type: "s3", Config: "accesskey=a;secretkey=b;endpoint=http://127.0.0.1:9;path_style_access=true"}
	for _, f := range files {
		data, _ := os.ReadFile(f)
		_, err := ParseWorkload(bytes.NewReader(data), f, LoadOptions{StorageOverride: ov})
		switch filepath.Base(f) {
		case "mock-filewrite-refused.xml":
			if err == nil || !strings.Contains(err.Error(), "filewrite") {
				t.Errorf("%s: want filewrite refusal, got %v", f, err)
			}
		default:
			if err != nil {
				t.Errorf("%s: %v", f, err)
			}
		}
	}
	// without the override: swift + keystone refused, mock storage + mock auth accepted
	data, _ := os.ReadFile("fixtures/conf/integrity-check.xml")
	_, err := ParseWorkload(bytes.NewReader(data), "i", LoadOptions{})
	if err == nil || !strings.Contains(err.Error(), `type="swift" not supported`) || !strings.Contains(err.Error(), `type="keystone" not supported`) {
		t.Errorf("integrity-check.xml without override: %v", err)
	}
	data, _ = os.ReadFile("fixtures/conf/mock-filewrite-refused.xml")
	_, err = ParseWorkload(bytes.NewReader(data), "m", LoadOptions{})
	if err == nil || strings.Contains(err.Error(), "storage") || strings.Contains(err.Error(), "auth") {
		t.Errorf("mock-filewrite-refused.xml without override: %v", err)
	}
	// placeholders such as accesskey=<accesskey> left unfilled are not well-formed XML
	placeholder := strings.Replace(goodXML, "accesskey=a;secretkey=b", "accesskey=<accesskey>;secretkey=<secretkey>", 1)
	_, err = ParseWorkload(strings.NewReader(placeholder), "p", LoadOptions{StorageOverride: ov})
	if err == nil || !strings.Contains(err.Error(), "XML") {
		t.Errorf("unfilled placeholders: want an XML error, got %v", err)
	}
}

func TestConfigParsing(t *testing.T) {
	c, err := ParseConfig(" cprefix = a ; hashCheck=true;;objects=r(1,2)")
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := c.Get("HASHCHECK"); v != "true" {
		t.Error("case-insensitive keys")
	}
	if v, _ := c.Get("cprefix"); v != "a" {
		t.Error("trim")
	}
	if _, err := ParseConfig("novalue"); err == nil {
		t.Error("entry without = accepted")
	}
}

func TestBodyChecksumRoundTrip(t *testing.T) {
	r := rand.New(rand.NewSource(3))
	buf := make([]byte, 1000) // smaller than the body: exercises the sliding tail
	for _, size := range []int64{0, 10, 40, 41, 4095, 4096, 4097, 64000, 1000000} {
		body := newBody(size, r, false).Bytes()
		if int64(len(body)) != size {
			t.Fatalf("size %d: body %d", size, len(body))
		}
		n, err := verifyBody(bytes.NewReader(body), buf)
		if err != nil || n != size {
			t.Fatalf("size %d: %v (n=%d)", size, err, n)
		}
		if size > hashLen {
			if !bytes.HasPrefix(body[size-40:], []byte("!!!!")) || !bytes.HasSuffix(body, []byte("!!!!")) {
				t.Fatalf("size %d: trailer %q", size, body[size-40:])
			}
			bad := append([]byte(nil), body...)
			bad[size/3] ^= 1
			if _, err := verifyBody(bytes.NewReader(bad), buf); err == nil || !isIntegrity(err) {
				t.Fatalf("size %d: corruption not detected (%v)", size, err)
			}
			bad = append([]byte(nil), body...)
			bad[size-1] = 'x'
			if _, err := verifyBody(bytes.NewReader(bad), buf); err == nil {
				t.Fatalf("size %d: broken trailer not detected", size)
			}
		}
	}
	// a reader returning one byte at a time
	body := newBody(5000, r, false).Bytes()
	if _, err := verifyBody(io.LimitReader(&oneByte{bytes.NewReader(body)}, 1<<20), buf); err != nil {
		t.Fatal(err)
	}
}

type oneByte struct{ r io.Reader }

func (o *oneByte) Read(p []byte) (int, error) {
	if len(p) > 1 {
		p = p[:1]
	}
	return o.r.Read(p)
}

func TestNumberFormats(t *testing.T) {
	for v, want := range map[float64]string{0: "0", 1: "1", 1.5: "1.5", 0.125: "0.12", 0.375: "0.38", 2.346: "2.35", 1234567.891: "1234567.89", 0.004: "0"} {
		if got := num(v); got != want {
			t.Errorf("num(%v) = %s, want %s", v, got, want)
		}
	}
	if ratio(1) != "100%" || ratio(0.9) != "90%" || ratio(-1) != "N/A" || ratio(0.98766) != "98.77%" {
		t.Error("ratio format")
	}
}

// cosbenchColumns is fixtures/csv/cosbench-0.4.2-columns.json: the column names of
// COSBench 0.4.2's workload and stage CSV files.
type cosbenchColumns struct {
	Workload []string `json:"workload_csv"`
	Stage    struct {
		First          string   `json:"first_column"`
		Metrics        []string `json:"metrics"`
		VersionGroup   string   `json:"version_group"`
		VersionColumns []string `json:"version_columns"`
	} `json:"stage_csv"`
}

func loadColumns(t *testing.T) cosbenchColumns {
	var c cosbenchColumns
	data, err := os.ReadFile("fixtures/csv/cosbench-0.4.2-columns.json")
	if err == nil {
		err = json.Unmarshal(data, &c)
	}
	if err != nil || len(c.Workload) != 18 || len(c.Stage.Metrics) != 7 || len(c.Stage.VersionColumns) != 3 {
		t.Fatalf("columns fixture: %v %+v", err, c)
	}
	return c
}

// stageHeaderFor builds a stage file's two header lines from the column names:
// each group name followed by one empty cell per further column, and beneath the
// group names the operation names (or version columns).
func stageHeaderFor(c cosbenchColumns, ops []string) string {
	top, sub := []string{c.Stage.First}, []string{""}
	for _, m := range c.Stage.Metrics {
		top = append(top, m)
		for range ops[1:] {
			top = append(top, "")
		}
		sub = append(sub, ops...)
	}
	top = append(top, c.Stage.VersionGroup)
	for range c.Stage.VersionColumns[1:] {
		top = append(top, "")
	}
	sub = append(sub, c.Stage.VersionColumns...)
	return strings.Join(top, ",") + "\n" + strings.Join(sub, ",") + "\n"
}

func TestCSVHeadersMatchFixtures(t *testing.T) {
	cols := loadColumns(t)
	rows := workloadRows(nil)
	if got, want := strings.Join(rows[0], ","), strings.Join(cols.Workload, ","); got != want {
		t.Errorf("workload header\n%s\nwant\n%s", got, want)
	}
	// a stage with read and write, as COSBench's CSVStageExporter lays it out
	wl, err := ParseWorkload(strings.NewReader(goodXML), "t", LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	wk := wl.Stages[2].Works[0]
	wk.Ops = wk.Ops[:2]
	now := time.Now()
	sr := &StageResult{Stage: wl.Stages[2], Works: []*WorkResult{{Work: wk}}, Start: now, End: now,
		States: [][2]interface{}{{"completed", now}}}
	srows := stageRows(sr, now)
	got := strings.Join(srows[0], ",") + "\n" + strings.Join(srows[1], ",") + "\n"
	if want := stageHeaderFor(cols, []string{"read", "write"}); got != want {
		t.Errorf("stage header\n%s\nwant\n%s", got, want)
	}
	if len(srows[0]) != 1+7*2+3 || len(srows[1]) != len(srows[0]) {
		t.Errorf("stage header widths %d, %d", len(srows[0]), len(srows[1]))
	}
}

func TestMetricsFromRecords(t *testing.T) {
	wl, _ := ParseWorkload(strings.NewReader(goodXML), "t", LoadOptions{})
	wk := wl.Stages[2].Works[0]
	ms := float64(time.Millisecond)
	recs := []rec{
		{op: 0, res: int64(1 * ms), proc: int64(0.5 * ms), bytes: 100, ok: true, counted: true},
		{op: 0, res: int64(3 * ms), proc: int64(1.5 * ms), bytes: 300, ok: true, counted: true},
		{op: 0, res: int64(9 * ms), bytes: 0, ok: false, counted: true, integ: true},
		{op: 1, res: int64(2 * ms), bytes: 1000, ok: true, counted: false}, // rampup: not counted
	}
	m := aggregate([]*WorkResult{{Work: wk, Recs: recs}}, 2, nil)
	if m[0].OpCount != 2 || m[0].ByteCount != 400 || m[0].AvgResMs != 2 || m[0].AvgProcMs != 1 || m[0].Failed != 1 || m[0].Integrity != 1 {
		t.Errorf("read metrics: %+v", m[0])
	}
	if m[0].Throughput != 1 || m[0].Bandwidth != 200 || m[0].PctMs[5] != 3 || m[0].PctMs[0] != 3 {
		t.Errorf("rates/percentiles: %+v", m[0])
	}
	if m[0].SuccRatio < 0.666 || m[0].SuccRatio > 0.667 {
		t.Errorf("succ ratio %v", m[0].SuccRatio)
	}
	if m[1].OpCount != 0 || m[1].SuccRatio != -1 {
		t.Errorf("uncounted write: %+v", m[1])
	}
}

func TestBodyPoolTrailersAreCorrect(t *testing.T) {
	r := rand.New(rand.NewSource(9))
	p := newBodyPool(r)
	buf := make([]byte, 4096)
	for i := 0; i < 40; i++ { // several bodies per (block, size): cached trailers must stay right
		for _, size := range []int64{41, 5000, 64000} {
			body := p.body(size, r, i%7 == 0).Bytes()
			if _, err := verifyBody(bytes.NewReader(body), buf); err != nil || int64(len(body)) != size {
				t.Fatalf("round %d size %d: %v", i, size, err)
			}
		}
	}
	if len(p.trailers) == 0 {
		t.Error("no trailer cached")
	}
}

func TestVerifyNonRepeatingBodies(t *testing.T) {
	// a body that is not a repeated block (e.g. written by another tool) is hashed in full
	r := rand.New(rand.NewSource(11))
	data := make([]byte, 20000)
	for i := range data {
		data[i] = byte('a' + r.Intn(26))
	}
	h := md5.Sum(data)
	body := append(append([]byte(nil), data...), []byte("!!!!"+hex.EncodeToString(h[:])+"!!!!")...)
	buf := make([]byte, 3000)
	if _, err := verifyBody(bytes.NewReader(body), buf); err != nil {
		t.Fatal(err)
	}
	body[15000] ^= 4
	if _, err := verifyBody(bytes.NewReader(body), buf); err == nil {
		t.Fatal("corruption in a non-repeating body not detected")
	}
	// a repeating body corrupted late, in the last block, and in the first block
	for _, at := range []int{10, 4095, 4096, 50000, 63959} {
		good := newBody(64000, r, false).Bytes()
		good[at] ^= 1
		if _, err := verifyBody(bytes.NewReader(good), buf); err == nil {
			t.Fatalf("corruption at %d not detected", at)
		}
	}
}
