package main

// `faas-standin up`: the director-side scaler. It starts N instance processes (each its own
// process group, like a pod's containers) and the platform's front (gateway or queue) in its
// own process, restarts an instance that dies (Kubernetes' restartPolicy: Always), scales on
// POST /system/scale {"replicas": N}, and on SIGTERM/SIGINT stops every instance and removes
// its PID files: nothing is left behind.

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

const defaultNuclioWorkers = 1 // Nuclio's HTTP trigger default ("by default, it has 1 worker")

type child struct {
	id       int
	host     int // index into supervisor.hosts (-1: this host)
	cmd      *exec.Cmd
	url      string
	node     string // where the instance measured it runs (its NODE line)
	hostname string
	restarts int
	done     chan struct{}
}

// placement is one host the instances may run on (--instance-hosts): the command prefix that
// runs a process there (an srun step on a cluster node), the address to listen on, its name.
type placement struct {
	Node   string   `json:"node"`
	Listen string   `json:"listen"`
	Launch []string `json:"launch"`
}

type supervisor struct {
	kind      string // openfaas | nuclio-cpp | nuclio-go
	self      string
	fprocess  string
	workers   int
	maxBody   int64
	stateDir  string
	hosts     []placement
	front     *front
	mu        sync.Mutex
	children  []*child
	nextID    int
	stopping  bool
	scaleLock sync.Mutex
}

// readHosts reads --instance-hosts (none: every instance on this host, on loopback).
func readHosts(path string) ([]placement, error) {
	if path == "" {
		return nil, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--instance-hosts: %w", err)
	}
	var hosts []placement
	if err := json.Unmarshal(b, &hosts); err != nil {
		return nil, fmt.Errorf("--instance-hosts %s: %w", path, err)
	}
	if len(hosts) == 0 {
		return nil, fmt.Errorf("--instance-hosts %s: no host", path)
	}
	for i, h := range hosts {
		if h.Listen == "" {
			return nil, fmt.Errorf("--instance-hosts %s: host %d (%q) has no listen address", path, i, h.Node)
		}
	}
	return hosts, nil
}

// whereAmI is (Slurm node name, hostname) of this process: SLURMD_NODENAME, which srun sets in
// every step, else the hostname.
func whereAmI() (string, string) {
	host, _ := os.Hostname()
	if n := os.Getenv("SLURMD_NODENAME"); n != "" {
		return n, host
	}
	return host, host
}

func instanceKind(kind string) string {
	if kind == "openfaas" {
		return "openfaas-watchdog"
	}
	return kind
}

func (s *supervisor) pidFile(id int) string {
	return filepath.Join(s.stateDir, fmt.Sprintf("instance-%d.pid", id))
}

// leastLoaded is the host with the fewest instances (the first of equals): instances spread
// over the hosts one by one, as Kubernetes spreads a deployment's pods; -1 without hosts.
func (s *supervisor) leastLoaded() int {
	if len(s.hosts) == 0 {
		return -1
	}
	count := make([]int, len(s.hosts))
	for _, c := range s.children {
		if c.host >= 0 {
			count[c.host]++
		}
	}
	best := 0
	for i, n := range count {
		if n < count[best] {
			best = i
		}
	}
	return best
}

// start launches instance id (on its host) and waits for its LISTENING line.
func (s *supervisor) start(c *child) error {
	listen, wait := "127.0.0.1:0", 15*time.Second
	var launch []string
	if c.host >= 0 {
		h := s.hosts[c.host]
		listen, launch, wait = net.JoinHostPort(h.Listen, "0"), h.Launch, 120*time.Second
	}
	args := []string{"instance", "--kind", instanceKind(s.kind), "--listen", listen,
		"--id", fmt.Sprintf("%s-%d", s.kind, c.id), "--max-body", strconv.FormatInt(s.maxBody, 10),
		"--workers", strconv.Itoa(s.workers)}
	if s.fprocess != "" {
		args = append(args, "--fprocess", s.fprocess)
	}
	argv := append(append(append([]string{}, launch...), s.self), args...)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting instance %d: %w", c.id, err)
	}
	if err := writeFileAtomic(s.pidFile(c.id), strconv.Itoa(cmd.Process.Pid)+"\n"); err != nil {
		killGroup(cmd, syscall.SIGKILL)
		cmd.Wait()
		return err
	}
	line := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if l := sc.Text(); strings.HasPrefix(l, "NODE ") {
				if f := strings.Fields(l); len(f) >= 3 {
					c.node, c.hostname = f[1], f[2]
				}
				continue
			}
			line <- sc.Text()
			break
		}
		close(line)
		io.Copy(io.Discard, out)
	}()
	select {
	case l, ok := <-line:
		if !ok || !strings.HasPrefix(l, "LISTENING ") {
			killGroup(cmd, syscall.SIGKILL)
			cmd.Wait()
			os.Remove(s.pidFile(c.id))
			return fmt.Errorf("instance %d did not start (said %q)", c.id, l)
		}
		c.url = "http://" + strings.TrimPrefix(l, "LISTENING ")
	case <-time.After(wait):
		killGroup(cmd, syscall.SIGKILL)
		cmd.Wait()
		os.Remove(s.pidFile(c.id))
		return fmt.Errorf("instance %d did not listen within %s", c.id, wait)
	}
	c.cmd = cmd
	c.done = make(chan struct{})
	go s.watch(c, cmd)
	return nil
}

// watch restarts an instance that exits while the supervisor is not stopping or scaling it down.
func (s *supervisor) watch(c *child, cmd *exec.Cmd) {
	err := cmd.Wait()
	killGroup(cmd, syscall.SIGKILL) // the forked functions of a dead pod go with it
	close(c.done)
	s.mu.Lock()
	keep := !s.stopping && s.contains(c)
	s.mu.Unlock()
	if !keep {
		return
	}
	log.Printf("instance %d (pid %d) exited (%v): restarting", c.id, cmd.Process.Pid, err)
	for {
		time.Sleep(200 * time.Millisecond)
		s.mu.Lock()
		if s.stopping || !s.contains(c) {
			s.mu.Unlock()
			return
		}
		c.restarts++
		err := s.start(c)
		s.mu.Unlock()
		if err == nil {
			s.publish()
			return
		}
		log.Printf("restarting instance %d: %v", c.id, err)
	}
}

func (s *supervisor) contains(c *child) bool {
	for _, x := range s.children {
		if x == c {
			return true
		}
	}
	return false
}

// publish hands the current instance URLs to the front (a new generation).
func (s *supervisor) publish() {
	s.mu.Lock()
	urls := make([]string, 0, len(s.children))
	for _, c := range s.children {
		urls = append(urls, c.url)
	}
	s.mu.Unlock()
	s.front.setTargets(urls, s.workers)
}

func (s *supervisor) stopChild(c *child) {
	if c.cmd == nil {
		return
	}
	killGroup(c.cmd, syscall.SIGTERM)
	select {
	case <-c.done:
	case <-time.After(3 * time.Second):
		killGroup(c.cmd, syscall.SIGKILL)
		<-c.done
	}
	os.Remove(s.pidFile(c.id))
}

// scale sets the number of instances and returns once the new ones listen.
func (s *supervisor) scale(n int) error {
	if n < 1 || n > 256 {
		return fmt.Errorf("replicas %d: want 1..256", n)
	}
	s.scaleLock.Lock()
	defer s.scaleLock.Unlock()
	s.mu.Lock()
	var drop []*child
	for len(s.children) > n {
		drop = append(drop, s.children[len(s.children)-1])
		s.children = s.children[:len(s.children)-1]
	}
	s.mu.Unlock()
	for len(s.children) < n {
		s.mu.Lock()
		c := &child{id: s.nextID, host: s.leastLoaded()}
		s.nextID++
		err := s.start(c)
		if err == nil {
			s.children = append(s.children, c)
		}
		s.mu.Unlock()
		if err != nil {
			return err
		}
	}
	s.publish()
	for _, c := range drop {
		s.stopChild(c)
	}
	return nil
}

func (s *supervisor) stopAll() {
	s.mu.Lock()
	s.stopping = true
	kids := s.children
	s.children = nil
	s.mu.Unlock()
	var wg sync.WaitGroup
	for _, c := range kids {
		wg.Add(1)
		go func(c *child) { defer wg.Done(); s.stopChild(c) }(c)
	}
	wg.Wait()
}

type status struct {
	System    string     `json:"system_kind"`
	Node      string     `json:"node"`     // where the front (gateway / queue) measured it runs
	Hostname  string     `json:"hostname"` // its hostname
	Front     string     `json:"front"`
	Replicas  int        `json:"replicas"`
	Workers   int        `json:"workers_per_instance,omitempty"`
	MaxBody   int64      `json:"max_body,omitempty"`
	Queued    int64      `json:"queued"`
	Instances []instInfo `json:"instances"`
}

type instInfo struct {
	ID       int    `json:"id"`
	PID      int    `json:"pid"`
	URL      string `json:"url"`
	Node     string `json:"node"`
	Hostname string `json:"hostname"`
	Restarts int    `json:"restarts"`
}

func (s *supervisor) status() status {
	s.mu.Lock()
	defer s.mu.Unlock()
	node, host := whereAmI()
	st := status{System: systemKind[instanceKind(s.kind)], Node: node, Hostname: host,
		Front: s.front.label, Replicas: len(s.children), Queued: s.front.queuedNow()}
	if s.kind != "openfaas" {
		st.Workers = s.workers
	}
	if s.kind == "nuclio-go" {
		st.MaxBody = s.maxBody
	}
	for _, c := range s.children {
		info := instInfo{ID: c.id, URL: c.url, Node: c.node, Hostname: c.hostname, Restarts: c.restarts}
		if c.cmd != nil {
			info.PID = c.cmd.Process.Pid
		}
		st.Instances = append(st.Instances, info)
	}
	return st
}

func (s *supervisor) admin(w http.ResponseWriter, r *http.Request) {
	w.Header().Set(kindHeader, s.front.label)
	if r.Method == http.MethodPost {
		var req struct {
			Replicas *int `json:"replicas"`
		}
		if err := json.NewDecoder(io.LimitReader(r.Body, 4096)).Decode(&req); err != nil || req.Replicas == nil {
			http.Error(w, `scale: want a JSON body {"replicas": N}`, http.StatusBadRequest)
			return
		}
		if err := s.scale(*req.Replicas); err != nil {
			http.Error(w, "scale: "+err.Error(), http.StatusBadRequest)
			return
		}
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(s.status())
}

func cmdUp(args []string) error {
	fs := flag.NewFlagSet("up", flag.ContinueOnError)
	kind := fs.String("kind", "", "openfaas | nuclio-cpp | nuclio-go")
	n := fs.Int("instances", 1, "instances to start")
	fprocess := fs.String("fprocess", "", "the function binary (openfaas, nuclio-cpp)")
	listen := fs.String("listen", "127.0.0.1:0", "address of the gateway / queue")
	stateDir := fs.String("state-dir", "", "PID files, endpoint and ready files go here (required)")
	hostsFile := fs.String("instance-hosts", "", "JSON [{node, listen, launch}]: run the instances there, spread")
	workers := fs.Int("workers", defaultNuclioWorkers, "workers per instance (nuclio kinds)")
	maxBody := fs.Int64("max-body", 2<<20, "nuclio-go body-size limit in bytes")
	wait := fs.Duration("worker-wait", 60*time.Second, "nuclio: how long a request may wait for a free worker")
	if err := fs.Parse(args); err != nil {
		return err
	}
	switch *kind {
	case "openfaas", "nuclio-cpp", "nuclio-go":
	default:
		return fmt.Errorf("--kind %q: want openfaas, nuclio-cpp or nuclio-go", *kind)
	}
	if *stateDir == "" {
		return errors.New("--state-dir is required (PID files, endpoint)")
	}
	if *kind != "nuclio-go" {
		if _, err := newInstance(instanceKind(*kind), *fprocess, *workers, time.Second, *maxBody, ""); err != nil {
			return err
		}
	} else if *fprocess != "" {
		return errors.New("--kind nuclio-go runs the compiled-in Go handler: no --fprocess")
	}
	if *workers < 1 {
		return fmt.Errorf("--workers %d: must be at least 1", *workers)
	}
	if err := os.MkdirAll(*stateDir, 0o755); err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	frontKind := "nuclio"
	if *kind == "openfaas" {
		frontKind = "openfaas"
	}
	hosts, err := readHosts(*hostsFile)
	if err != nil {
		return err
	}
	s := &supervisor{kind: *kind, self: self, fprocess: *fprocess, workers: *workers, maxBody: *maxBody,
		stateDir: *stateDir, hosts: hosts, front: newFront(frontKind, *wait)}
	pidPath := filepath.Join(*stateDir, "supervisor.pid")
	readyPath := filepath.Join(*stateDir, "ready")
	os.Remove(readyPath)
	if err := writeFileAtomic(pidPath, strconv.Itoa(os.Getpid())+"\n"); err != nil {
		return err
	}
	defer os.Remove(pidPath)
	defer os.Remove(readyPath)
	defer s.stopAll()
	if err := s.scale(*n); err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/system/scale", s.admin)
	mux.HandleFunc("/system/status", s.admin)
	mux.Handle("/", s.front)
	ctx, stop := signalContext()
	defer stop()
	errc := make(chan error, 1)
	go func() { errc <- serve(mux, *listen, filepath.Join(*stateDir, "endpoint")) }()
	// ready once the endpoint file exists; a front that cannot listen is an error, never "ready"
	// (it was written after 2 s whatever happened: a caller then found ready but no endpoint)
	endpoint := filepath.Join(*stateDir, "endpoint")
	for i := 0; ; i++ {
		if _, err := os.Stat(endpoint); err == nil {
			break
		}
		select {
		case err := <-errc:
			return fmt.Errorf("front: %w", err)
		default:
		}
		if i == 500 {
			return fmt.Errorf("front: no endpoint file %s after 10 s", endpoint)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := writeFileAtomic(readyPath, "ready\n"); err != nil {
		return err
	}
	log.Printf("%s up: %d instance(s), state in %s", s.front.label, *n, *stateDir)
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
		log.Printf("%s: stopping", s.front.label)
		err := <-errc
		os.Remove(filepath.Join(*stateDir, "endpoint"))
		return err
	}
}

// cmdDown stops the supervisor whose PID file is in --state-dir and waits until it and every
// instance it recorded are gone (SIGKILL after --timeout).
func cmdDown(args []string) error {
	fs := flag.NewFlagSet("down", flag.ContinueOnError)
	stateDir := fs.String("state-dir", "", "the state directory given to `up`")
	timeout := fs.Duration("timeout", 10*time.Second, "SIGKILL after this long")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *stateDir == "" {
		return errors.New("--state-dir is required")
	}
	pids := map[string]int{}
	files, _ := filepath.Glob(filepath.Join(*stateDir, "*.pid"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && pid > 1 {
			pids[f] = pid
		}
	}
	if sup, ok := pids[filepath.Join(*stateDir, "supervisor.pid")]; ok {
		syscall.Kill(sup, syscall.SIGTERM)
	}
	deadline := time.Now().Add(*timeout)
	for f, pid := range pids {
		for alive(pid) && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
		}
		if alive(pid) {
			log.Printf("down: pid %d (%s) still alive after %s: SIGKILL to its group", pid, filepath.Base(f), *timeout)
			syscall.Kill(-pid, syscall.SIGKILL)
			syscall.Kill(pid, syscall.SIGKILL)
		}
		os.Remove(f)
	}
	os.Remove(filepath.Join(*stateDir, "endpoint"))
	os.Remove(filepath.Join(*stateDir, "ready"))
	return nil
}

func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// a zombie (state Z) has exited; its parent only has not reaped it yet
	fields := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	return len(fields) == 0 || fields[0] != "Z"
}

func killGroup(cmd *exec.Cmd, sig syscall.Signal) {
	if cmd.Process != nil {
		syscall.Kill(-cmd.Process.Pid, sig)
	}
}
