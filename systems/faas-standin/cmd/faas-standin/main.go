// Command faas-standin: labelled stand-in runtimes for the serverless platforms of paper 003
// (OpenFaaS 0.21 and Nuclio 1.6 on Kubernetes), which cannot be installed on this machine.
// Each reproduces the execution model the paper names as the cause of its results; see
// systems/faas-standin/README.md.
//
//	faas-standin up --kind openfaas|nuclio-cpp|nuclio-go --instances N [--fprocess BIN] --state-dir DIR
//	faas-standin down --state-dir DIR
//	faas-standin instance --kind openfaas-watchdog|nuclio-cpp|nuclio-go|echo [--fprocess BIN]
//	faas-standin echo [--listen ADDR] [--pid-file F] [--endpoint-file F]
package main

import (
	"context"
	"fmt"
	"log"
	"os"
	"os/signal"
	"path/filepath"
	"sync/atomic"
	"syscall"
)

func main() {
	log.SetPrefix("faas-standin: ")
	log.SetFlags(log.Ltime | log.Lmicroseconds)
	if len(os.Args) < 2 {
		usage()
	}
	var err error
	switch os.Args[1] {
	case "up":
		err = cmdUp(os.Args[2:])
	case "down":
		err = cmdDown(os.Args[2:])
	case "instance":
		err = cmdInstance(os.Args[2:], false)
	case "echo":
		err = cmdInstance(os.Args[2:], true)
	case "-h", "--help", "help":
		usage()
	default:
		fmt.Fprintf(os.Stderr, "faas-standin: unknown command %q\n", os.Args[1])
		usage()
	}
	if err != nil {
		log.Printf("%s: %v", os.Args[1], err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprint(os.Stderr, `usage:
  faas-standin up --kind openfaas|nuclio-cpp|nuclio-go --instances N [--fprocess BIN] --state-dir DIR
                  [--listen 127.0.0.1:0] [--workers 1] [--max-body 2097152] [--instance-hosts FILE]
  faas-standin down --state-dir DIR
  faas-standin instance --kind openfaas-watchdog|nuclio-cpp|nuclio-go|echo [--fprocess BIN] [--listen ADDR]
  faas-standin echo [--listen ADDR] [--pid-file F] [--endpoint-file F]
`)
	os.Exit(2)
}

func signalContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
}

func contextWith(ctx context.Context, key, value interface{}) context.Context {
	return context.WithValue(ctx, key, value)
}

func (f *front) queuedNow() int64 { return atomic.LoadInt64(&f.queued) }

// writeFileAtomic writes a small state file under a temporary name and renames it.
func writeFileAtomic(path, content string) error {
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".tmp")
	if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
