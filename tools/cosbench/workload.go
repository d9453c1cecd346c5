package main

// Reading and validating COSBench workload XML. Everything the driver
// cannot execute is refused here, before any request is sent, with the
// element path and the attribute or key named.

import (
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
)

// node is a generic XML element (attributes kept, order kept).
type node struct {
	Name     string
	Attrs    map[string]string
	Order    []string
	Children []*node
	Line     int
}

func parseXMLTree(r io.Reader) (*node, error) {
	dec := xml.NewDecoder(r)
	dec.Strict = true
	var stack []*node
	var root *node
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("XML: %v", err)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			line, _ := dec.InputPos()
			n := &node{Name: t.Name.Local, Attrs: map[string]string{}, Line: line}
			if t.Name.Space != "" {
				return nil, fmt.Errorf("line %d: element <%s:%s>: namespaces not supported", line, t.Name.Space, t.Name.Local)
			}
			for _, a := range t.Attr {
				if a.Name.Space != "" {
					return nil, fmt.Errorf("line %d: element <%s>: attribute %s:%s not supported", line, n.Name, a.Name.Space, a.Name.Local)
				}
				n.Attrs[a.Name.Local] = a.Value
				n.Order = append(n.Order, a.Name.Local)
			}
			if len(stack) > 0 {
				p := stack[len(stack)-1]
				p.Children = append(p.Children, n)
			} else if root == nil {
				root = n
			}
			stack = append(stack, n)
		case xml.EndElement:
			stack = stack[:len(stack)-1]
		case xml.CharData:
			if len(stack) > 0 && strings.TrimSpace(string(t)) != "" {
				line, _ := dec.InputPos()
				return nil, fmt.Errorf("line %d: element <%s>: text content not supported", line, stack[len(stack)-1].Name)
			}
		}
	}
	if root == nil {
		return nil, fmt.Errorf("XML: no root element")
	}
	return root, nil
}

// Storage and Auth as written at some level.
type Storage struct {
	Type   string
	Config string
}

type Auth struct {
	Type   string
	Config string
}

type Operation struct {
	ID       string
	Type     string
	Ratio    int
	Division string
	Config   Config
	RawCfg   string
	Name     string // Op-Name in the CSV

	Containers *Selector
	Objects    *Selector
	Sizes      *SizeSpec
	CPrefix    string
	CSuffix    string
	OPrefix    string
	OSuffix    string
	Zero       bool
	CreateCont bool
	DeleteCont bool
}

// SampleType is the kind of request an operation's samples are (COSBench's
// sample type): prepare writes, cleanup deletes.
func (o *Operation) SampleType() string {
	switch o.Type {
	case "prepare":
		return "write"
	case "cleanup":
		return "delete"
	}
	return o.Type
}

// Key is the CSV's Op-Name column: name, or name-sampletype when they differ.
func (o *Operation) Key() string {
	if o.SampleType() == o.Name {
		return o.Name
	}
	return o.Name + "-" + o.SampleType()
}

type Work struct {
	Name       string
	Type       string // init prepare normal cleanup dispose delay
	Workers    int
	Interval   int
	Division   string
	Runtime    float64 // seconds, after --time-scale
	Rampup     float64
	Rampdown   float64
	AFR        int // failures per million accepted
	TotalOps   int64
	TotalBytes int64
	Config     string
	Storage    Storage
	Auth       Auth
	Ops        []*Operation
	Path       string // for messages
}

type Stage struct {
	Name         string
	ClosureDelay float64
	Works        []*Work
	Path         string
}

type Workload struct {
	Name        string
	Description string
	Stages      []*Stage
	Source      string
}

// Options that change what a workload file means at run time.
type LoadOptions struct {
	TimeScale       float64  // multiplies runtime, rampup, rampdown, closuredelay
	StorageOverride *Storage // replaces every <storage>, and makes <auth> moot
	Endpoint        string   // replaces endpoint= in s3 storage configs
}

type refusal struct{ msgs []string }

func (r *refusal) add(path, format string, a ...interface{}) {
	msg := fmt.Sprintf(format, a...)
	if path != "" {
		msg = path + ": " + msg
	}
	r.msgs = append(r.msgs, msg)
}

func (r *refusal) err() error {
	if len(r.msgs) == 0 {
		return nil
	}
	return fmt.Errorf("workload refused, nothing was run:\n  %s", strings.Join(r.msgs, "\n  "))
}

func checkAttrs(r *refusal, path string, n *node, allowed ...string) {
	ok := map[string]bool{}
	for _, a := range allowed {
		ok[a] = true
	}
	for _, a := range n.Order {
		if !ok[a] {
			r.add(path, "attribute %s not supported (line %d)", a, n.Line)
		}
	}
}

func atoiAttr(r *refusal, path string, n *node, attr string, def int, min int) int {
	s, ok := n.Attrs[attr]
	if !ok {
		return def
	}
	v, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || v < min {
		r.add(path, "attribute %s=%q is not an integer >= %d", attr, s, min)
		return def
	}
	return v
}

// LoadWorkload reads and validates a workload file.
func LoadWorkload(path string, opt LoadOptions) (*Workload, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ParseWorkload(f, path, opt)
}

func ParseWorkload(rd io.Reader, source string, opt LoadOptions) (*Workload, error) {
	if opt.TimeScale <= 0 {
		opt.TimeScale = 1
	}
	root, err := parseXMLTree(rd)
	if err != nil {
		return nil, fmt.Errorf("workload refused, nothing was run: %s: %v", source, err)
	}
	r := &refusal{}
	if root.Name != "workload" {
		r.add("", "root element <%s> is not <workload>", root.Name)
		return nil, r.err()
	}
	w := &Workload{Name: root.Attrs["name"], Description: root.Attrs["description"], Source: source}
	wpath := fmt.Sprintf("workload %q", w.Name)
	checkAttrs(r, wpath, root, "name", "description", "config", "trigger")
	if w.Name == "" {
		r.add(wpath, "attribute name is required")
	}
	if v := strings.TrimSpace(root.Attrs["config"]); v != "" {
		r.add(wpath, "attribute config (workload-level) not supported")
	}
	if v := strings.TrimSpace(root.Attrs["trigger"]); v != "" {
		r.add(wpath, "attribute trigger not supported")
	}
	var storage Storage
	var auth = Auth{Type: "none"}
	var workflow *node
	for _, c := range root.Children {
		switch c.Name {
		case "storage":
			storage = readStorage(r, wpath, c)
		case "auth":
			auth = readAuth(r, wpath, c)
		case "workflow":
			if workflow != nil {
				r.add(wpath, "more than one <workflow>")
			}
			workflow = c
		default:
			r.add(wpath, "element <%s> not supported", c.Name)
		}
	}
	if workflow == nil {
		r.add(wpath, "element <workflow> missing")
		return nil, r.err()
	}
	checkAttrs(r, wpath+" › workflow", workflow)
	for _, sn := range workflow.Children {
		if sn.Name != "workstage" {
			r.add(wpath+" › workflow", "element <%s> not supported (line %d)", sn.Name, sn.Line)
			continue
		}
		st := readStage(r, sn, storage, auth, opt)
		w.Stages = append(w.Stages, st)
	}
	if len(w.Stages) == 0 {
		r.add(wpath, "workflow has no workstage")
	}
	if err := r.err(); err != nil {
		return nil, err
	}
	return w, nil
}

func readStorage(r *refusal, path string, n *node) Storage {
	checkAttrs(r, path+" › storage", n, "type", "config")
	for _, c := range n.Children {
		r.add(path+" › storage", "element <%s> not supported", c.Name)
	}
	return Storage{Type: strings.TrimSpace(n.Attrs["type"]), Config: n.Attrs["config"]}
}

// levelStorageAuth applies a workstage's or work's own <storage>/<auth>,
// which override those inherited from the levels above.
func levelStorageAuth(r *refusal, path string, n *node, storage *Storage, auth *Auth) {
	for _, c := range n.Children {
		switch c.Name {
		case "storage":
			*storage = readStorage(r, path, c)
		case "auth":
			*auth = readAuth(r, path, c)
		}
	}
}

func readAuth(r *refusal, path string, n *node) Auth {
	checkAttrs(r, path+" › auth", n, "type", "config")
	for _, c := range n.Children {
		r.add(path+" › auth", "element <%s> not supported", c.Name)
	}
	return Auth{Type: strings.TrimSpace(n.Attrs["type"]), Config: n.Attrs["config"]}
}

func readStage(r *refusal, sn *node, storage Storage, auth Auth, opt LoadOptions) *Stage {
	st := &Stage{Name: sn.Attrs["name"]}
	st.Path = fmt.Sprintf("workstage %q", st.Name)
	checkAttrs(r, st.Path, sn, "name", "closuredelay", "trigger")
	if st.Name == "" {
		st.Path = fmt.Sprintf("workstage at line %d", sn.Line)
		r.add(st.Path, "attribute name is required")
	}
	if v := strings.TrimSpace(sn.Attrs["trigger"]); v != "" {
		r.add(st.Path, "attribute trigger not supported")
	}
	st.ClosureDelay = float64(atoiAttr(r, st.Path, sn, "closuredelay", 0, 0)) * opt.TimeScale
	levelStorageAuth(r, st.Path, sn, &storage, &auth)
	for _, c := range sn.Children {
		switch c.Name {
		case "storage", "auth":
		case "work":
			st.Works = append(st.Works, readWork(r, st, c, storage, auth, opt))
		default:
			r.add(st.Path, "element <%s> not supported (line %d)", c.Name, c.Line)
		}
	}
	if len(st.Works) == 0 {
		r.add(st.Path, "no <work>")
	}
	names := map[string]bool{}
	for _, wk := range st.Works {
		if names[wk.Name] {
			r.add(st.Path, "two works named %q", wk.Name)
		}
		names[wk.Name] = true
	}
	return st
}

var workTypes = map[string]bool{"init": true, "prepare": true, "normal": true, "main": true, "cleanup": true, "dispose": true, "delay": true}

func readWork(r *refusal, st *Stage, n *node, storage Storage, auth Auth, opt LoadOptions) *Work {
	wk := &Work{Name: n.Attrs["name"], Type: strings.TrimSpace(n.Attrs["type"])}
	if wk.Type == "" || wk.Type == "main" {
		wk.Type = "normal"
	}
	if wk.Name == "" && wk.Type != "normal" {
		wk.Name = wk.Type
	}
	wk.Path = fmt.Sprintf("%s › work %q", st.Path, wk.Name)
	checkAttrs(r, wk.Path, n, "name", "type", "workers", "interval", "division", "runtime", "rampup", "rampdown",
		"afr", "totalOps", "totalBytes", "driver", "config")
	if wk.Name == "" {
		wk.Path = fmt.Sprintf("%s › work at line %d", st.Path, n.Line)
		r.add(wk.Path, "attribute name is required for a normal work")
	}
	if !workTypes[wk.Type] {
		r.add(wk.Path, "attribute type=%q not supported (supported: init, prepare, normal, cleanup, dispose, delay)", wk.Type)
		return wk
	}
	if v := strings.TrimSpace(n.Attrs["driver"]); v != "" {
		r.add(wk.Path, "attribute driver not supported (one local driver runs every work)")
	}
	wk.Workers = atoiAttr(r, wk.Path, n, "workers", 0, 1)
	if _, ok := n.Attrs["workers"]; !ok {
		if wk.Type == "delay" {
			wk.Workers = 1
		} else {
			r.add(wk.Path, "attribute workers is required")
		}
	}
	wk.Interval = atoiAttr(r, wk.Path, n, "interval", 5, 1)
	wk.Division = strings.TrimSpace(n.Attrs["division"])
	if wk.Division == "" {
		wk.Division = "none"
	}
	if wk.Division != "none" && wk.Division != "container" && wk.Division != "object" {
		r.add(wk.Path, "attribute division=%q not supported (none, container, object)", wk.Division)
	}
	wk.Runtime = float64(atoiAttr(r, wk.Path, n, "runtime", 0, 0)) * opt.TimeScale
	wk.Rampup = float64(atoiAttr(r, wk.Path, n, "rampup", 0, 0)) * opt.TimeScale
	wk.Rampdown = float64(atoiAttr(r, wk.Path, n, "rampdown", 0, 0)) * opt.TimeScale
	wk.AFR = atoiAttr(r, wk.Path, n, "afr", 0, 0)
	if wk.AFR > 1000000 {
		r.add(wk.Path, "attribute afr=%d outside 0..1000000", wk.AFR)
	}
	wk.TotalOps = int64(atoiAttr(r, wk.Path, n, "totalOps", 0, 0))
	if s, ok := n.Attrs["totalBytes"]; ok {
		v, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
		if err != nil || v < 0 {
			r.add(wk.Path, "attribute totalBytes=%q is not an integer >= 0", s)
		}
		wk.TotalBytes = v
	}
	wk.Config = n.Attrs["config"]
	levelStorageAuth(r, wk.Path, n, &storage, &auth)
	wk.Storage, wk.Auth = storage, auth
	if opt.StorageOverride != nil {
		wk.Storage = *opt.StorageOverride
		wk.Auth = Auth{Type: "none"}
	}
	if wk.Storage.Type == "" {
		wk.Storage.Type = "none" // COSBench's default: the no-op storage
	}
	checkStorage(r, wk, opt)
	var opNodes []*node
	for _, c := range n.Children {
		switch c.Name {
		case "storage", "auth":
		case "operation":
			opNodes = append(opNodes, c)
		default:
			r.add(wk.Path, "element <%s> not supported (line %d)", c.Name, c.Line)
		}
	}
	special := wk.Type != "normal"
	if special {
		// COSBench turns a special work into one operation that scans its ranges
		// once per worker: totalOps = workers, runtime 0.
		if wk.Type == "delay" {
			for _, c := range opNodes {
				if c.Attrs["type"] != "delay" {
					r.add(wk.Path, "a delay work holds only <operation type=\"delay\">")
				}
			}
			wk.Workers = 1
			return wk
		}
		if len(opNodes) > 0 {
			r.add(wk.Path, "<operation> inside a %s work not supported (COSBench generates it)", wk.Type)
		}
		if wk.Runtime > 0 || wk.TotalOps > 0 || wk.TotalBytes > 0 || wk.Rampup > 0 || wk.Rampdown > 0 {
			r.add(wk.Path, "runtime/totalOps/totalBytes/rampup/rampdown have no meaning for a %s work", wk.Type)
		}
		if _, ok := n.Attrs["division"]; ok {
			r.add(wk.Path, "attribute division on a %s work not supported (COSBench fixes it)", wk.Type)
		}
		wk.Division = map[string]string{"init": "container", "dispose": "container", "prepare": "object", "cleanup": "object"}[wk.Type]
		cfg := wk.Config
		switch wk.Type {
		case "prepare":
			cfg = "createContainer=false;" + cfg
		case "cleanup":
			cfg = "deleteContainer=false;" + cfg
		}
		op := readOpConfig(r, wk, wk.Type, cfg, "")
		op.Type, op.Ratio, op.Division, op.ID, op.Name = wk.Type, 100, wk.Division, "op1", wk.Type
		wk.Ops = []*Operation{op}
		checkOpNeeds(r, wk.Path, op)
		return wk
	}
	if wk.Runtime == 0 && wk.TotalOps == 0 && wk.TotalBytes == 0 {
		r.add(wk.Path, "no limit: set runtime, totalOps or totalBytes")
	}
	sum := 0
	for i, c := range opNodes {
		typ := strings.TrimSpace(c.Attrs["type"])
		opPath := fmt.Sprintf("%s › operation %q", wk.Path, typ)
		checkAttrs(r, opPath, c, "type", "ratio", "division", "config", "id")
		for _, cc := range c.Children {
			r.add(opPath, "element <%s> not supported", cc.Name)
		}
		switch typ {
		case "read", "write", "delete", "list":
		case "filewrite":
			r.add(opPath, "operation type filewrite not supported")
			continue
		default:
			r.add(opPath, "operation type %q not supported (read, write, delete, list)", typ)
			continue
		}
		ratio := atoiAttr(r, opPath, c, "ratio", -1, 0)
		if ratio < 0 || ratio > 100 {
			r.add(opPath, "attribute ratio is required, 0..100")
			continue
		}
		if ratio == 0 {
			continue // COSBench drops zero-ratio operations
		}
		cfg := wk.Config
		if v := c.Attrs["config"]; v != "" {
			if cfg != "" {
				cfg += ";"
			}
			cfg += v
		}
		op := readOpConfig(r, wk, opPath, cfg, typ)
		op.Type, op.Ratio = typ, ratio
		op.ID = c.Attrs["id"]
		if op.ID == "" {
			op.ID = fmt.Sprintf("op%d", i+1)
		}
		op.Division = strings.TrimSpace(c.Attrs["division"])
		if op.Division == "" {
			op.Division = wk.Division
		}
		if op.Division != "none" && op.Division != "container" && op.Division != "object" {
			r.add(opPath, "attribute division=%q not supported (none, container, object)", op.Division)
		}
		if op.Name == "" {
			op.Name = typ
		}
		checkOpNeeds(r, opPath, op)
		checkDivision(r, opPath, op, wk.Workers)
		sum += ratio
		wk.Ops = append(wk.Ops, op)
	}
	if len(wk.Ops) == 0 {
		r.add(wk.Path, "no operation with a ratio above 0")
	} else if sum != 100 {
		r.add(wk.Path, "operation ratios sum to %d, not 100", sum)
	}
	seen := map[string]bool{}
	for _, op := range wk.Ops {
		if seen[op.Key()] {
			r.add(wk.Path, "two operations report as %q (give one a name= in its config)", op.Key())
		}
		seen[op.Key()] = true
	}
	return wk
}

// Keys a work/operation config may hold (lower case; matching is
// case-insensitive, see README).
var opKeys = map[string]bool{
	"cprefix": true, "csuffix": true, "oprefix": true, "osuffix": true,
	"containers": true, "objects": true, "sizes": true,
	"hashcheck": true, "content": true, "createcontainer": true, "deletecontainer": true,
	"chunked": true, "name": true,
}

func readOpConfig(r *refusal, wk *Work, path, raw, typ string) *Operation {
	if !strings.Contains(path, "›") {
		path = wk.Path
	}
	cfg, err := ParseConfig(raw)
	if err != nil {
		r.add(path, "config: %v", err)
		cfg = Config{}
	}
	op := &Operation{Config: cfg, RawCfg: raw, CPrefix: "mycontainers_", OPrefix: "myobjects_"}
	keys := cfg.Keys()
	sort.Strings(keys)
	for _, k := range keys {
		if !opKeys[k] {
			r.add(path, "config key %q not supported", cfg.Orig(k))
		}
	}
	if v, ok := cfg.Get("cprefix"); ok {
		op.CPrefix = v
	}
	if v, ok := cfg.Get("oprefix"); ok {
		op.OPrefix = v
	}
	op.CSuffix, _ = cfg.Get("csuffix")
	op.OSuffix, _ = cfg.Get("osuffix")
	op.Name, _ = cfg.Get("name")
	if v, ok := cfg.Get("containers"); ok {
		if op.Containers, err = ParseSelector(v); err != nil {
			r.add(path, "config containers: %v", err)
		}
	}
	if v, ok := cfg.Get("objects"); ok {
		if op.Objects, err = ParseSelector(v); err != nil {
			r.add(path, "config objects: %v", err)
		}
	}
	if v, ok := cfg.Get("sizes"); ok {
		if op.Sizes, err = ParseSize(v); err != nil {
			r.add(path, "config sizes: %v", err)
		}
	}
	for _, b := range []struct {
		key string
		dst *bool
		def bool
	}{{"createcontainer", &op.CreateCont, false}, {"deletecontainer", &op.DeleteCont, false}, {"hashcheck", new(bool), false}, {"chunked", new(bool), false}} {
		*b.dst = b.def
		if v, ok := cfg.Get(b.key); ok {
			switch strings.ToLower(v) {
			case "true":
				*b.dst = true
			case "false":
				*b.dst = false
			default:
				r.add(path, "config %s=%q is not true/false", cfg.Orig(b.key), v)
			}
		}
	}
	if v, ok := cfg.Get("chunked"); ok && strings.ToLower(v) == "true" {
		r.add(path, "config chunked=true not supported")
	}
	if v, ok := cfg.Get("content"); ok {
		switch v {
		case "random":
		case "zero":
			op.Zero = true
		default:
			r.add(path, "config content=%q not supported (random, zero)", v)
		}
	}
	return op
}

func checkOpNeeds(r *refusal, path string, op *Operation) {
	need := map[string][]string{
		"init": {"containers"}, "dispose": {"containers"},
		"prepare": {"containers", "objects", "sizes"}, "cleanup": {"containers", "objects"},
		"read": {"containers", "objects"}, "write": {"containers", "objects", "sizes"},
		"delete": {"containers", "objects"}, "list": {"containers"},
	}[op.Type]
	for _, k := range need {
		if _, ok := op.Config.Get(k); !ok {
			r.add(path, "config key %s is required for %s", k, op.Type)
		}
	}
	scan := op.Type == "init" || op.Type == "dispose" || op.Type == "prepare" || op.Type == "cleanup"
	if scan {
		for _, s := range []*Selector{op.Containers, op.Objects} {
			if s != nil && s.Kind == SelUniform {
				r.add(path, "selector %s cannot be scanned by a %s work (use r(a,b))", s.Text, op.Type)
			}
		}
	}
	if op.Containers != nil && op.Containers.Lo < 1 {
		r.add(path, "containers=%s: container numbers start at 1", op.Containers.Text)
	}
	if op.Objects != nil && op.Objects.Lo < 1 && (op.Type != "init" && op.Type != "dispose") {
		r.add(path, "objects=%s: object numbers start at 1", op.Objects.Text)
	}
}

func checkDivision(r *refusal, path string, op *Operation, workers int) {
	var s *Selector
	switch op.Division {
	case "container":
		s = op.Containers
	case "object":
		s = op.Objects
	}
	if s != nil && (s.Kind == SelUniform || s.Kind == SelRange) && s.Count() < int64(workers) {
		r.add(path, "division=%s splits %s over %d workers: fewer values than workers", op.Division, s.Text, workers)
	}
}

func checkStorage(r *refusal, wk *Work, opt LoadOptions) {
	st := wk.Storage
	path := wk.Path + " › storage"
	switch st.Type {
	case "s3":
		cfg, err := ParseConfig(st.Config)
		if err != nil {
			r.add(path, "config: %v", err)
			return
		}
		for _, k := range cfg.Keys() {
			switch k {
			case "accesskey", "secretkey", "endpoint", "path_style_access", "region", "timeout":
			default:
				r.add(path, "config key %q not supported for type s3", cfg.Orig(k))
			}
		}
		ep, ok := cfg.Get("endpoint")
		if opt.Endpoint != "" {
			ep, ok = opt.Endpoint, true
		}
		if !ok || ep == "" {
			r.add(path, "config key endpoint is required for type s3 (or give --endpoint)")
		} else if !strings.HasPrefix(ep, "http://") && !strings.HasPrefix(ep, "https://") {
			r.add(path, "endpoint %q is not an http:// or https:// URL", ep)
		}
		if v, ok := cfg.Get("path_style_access"); ok && strings.ToLower(v) != "true" {
			r.add(path, "path_style_access=%s not supported (only path-style requests)", v)
		}
		if v, ok := cfg.Get("timeout"); ok {
			if n, err := strconv.Atoi(v); err != nil || n <= 0 {
				r.add(path, "timeout=%q is not a positive number of milliseconds", v)
			}
		}
	case "mock", "none", "":
		cfg, err := ParseConfig(st.Config)
		if err != nil {
			r.add(path, "config: %v", err)
			return
		}
		for _, k := range cfg.Keys() {
			if k != "size" {
				r.add(path, "config key %q not supported for type %s (size)", cfg.Orig(k), st.Type)
			}
		}
		if v, ok := cfg.Get("size"); ok {
			if n, err := strconv.ParseInt(v, 10, 64); err != nil || n < 0 {
				r.add(path, "size=%q is not a byte count", v)
			}
		}
	default:
		r.add(path, "attribute type=%q not supported (s3, mock)", st.Type)
	}
	if wk.Auth.Type != "" && wk.Auth.Type != "none" && wk.Auth.Type != "mock" {
		r.add(wk.Path+" › auth", "attribute type=%q not supported (none, mock; s3 credentials go in the storage config)", wk.Auth.Type)
	}
}

// Config is a COSBench key=value;key=value string. Keys compare
// case-insensitively; a later key overrides an earlier one.
type Config struct {
	vals map[string]string
	orig map[string]string
}

func ParseConfig(s string) (Config, error) {
	c := Config{vals: map[string]string{}, orig: map[string]string{}}
	for _, ent := range strings.Split(s, ";") {
		if strings.TrimSpace(ent) == "" {
			continue
		}
		i := strings.IndexByte(ent, '=')
		if i < 0 {
			return c, fmt.Errorf("entry %q has no '='", strings.TrimSpace(ent))
		}
		k := strings.TrimSpace(ent[:i])
		if k == "" {
			return c, fmt.Errorf("entry %q has an empty key", strings.TrimSpace(ent))
		}
		lk := strings.ToLower(k)
		c.vals[lk] = strings.TrimSpace(ent[i+1:])
		c.orig[lk] = k
	}
	return c, nil
}

func (c Config) Get(k string) (string, bool) {
	v, ok := c.vals[strings.ToLower(k)]
	return v, ok
}

func (c Config) Orig(k string) string { return c.orig[k] }

func (c Config) Keys() []string {
	ks := make([]string, 0, len(c.vals))
	for k := range c.vals {
		ks = append(ks, k)
	}
	return ks
}
