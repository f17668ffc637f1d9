// Package natstest runs NATS servers with JetStream for the tests of
// replicated indexes: real processes, built from the module
// tools/natsserver pins (so the project's own module does not require
// the server), on loopback ports, one alone or three in a cluster.
package natstest

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

var (
	buildOnce sync.Once
	binary    string
	buildErr  error
)

// Binary returns the path of a nats-server built for this test process.
func Binary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		out, err := exec.Command("go", "env", "GOMOD").Output()
		if err != nil {
			buildErr = fmt.Errorf("go env GOMOD: %w", err)
			return
		}
		dir := filepath.Join(filepath.Dir(strings.TrimSpace(string(out))), "tools", "natsserver")
		tmp, err := os.MkdirTemp("", "natstest")
		if err != nil {
			buildErr = err
			return
		}
		binary = filepath.Join(tmp, "nats-server")
		cmd := exec.Command("go", "build", "-o", binary, "github.com/nats-io/nats-server/v2")
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("building nats-server in %s: %v\n%s", dir, err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binary
}

// Server is one nats-server process.
type Server struct {
	Name string
	// URL is its client address, "nats://127.0.0.1:port".
	URL  string
	args []string
	cmd  *exec.Cmd
	exit chan struct{}
}

// Start runs n servers with JetStream, their stores under t's temporary
// folder; n > 1 forms one cluster. They are killed when t ends.
func Start(t testing.TB, n int) []*Server {
	t.Helper()
	bin := Binary(t)
	dir := t.TempDir()
	ports := freePorts(t, 2*n)
	var routes []string
	for i := range n {
		routes = append(routes, fmt.Sprintf("nats://127.0.0.1:%d", ports[n+i]))
	}
	servers := make([]*Server, n)
	for i := range n {
		s := &Server{Name: fmt.Sprintf("n%d", i), URL: fmt.Sprintf("nats://127.0.0.1:%d", ports[i])}
		s.args = []string{bin, "-a", "127.0.0.1", "-p", fmt.Sprint(ports[i]), "-n", s.Name, "-js", "-sd", filepath.Join(dir, s.Name)}
		if n > 1 {
			s.args = append(s.args, "--cluster_name", "simhashdb", "--cluster", routes[i], "--routes", strings.Join(routes, ","))
		}
		servers[i] = s
	}
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i, s := range servers {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = s.start() }()
	}
	wg.Wait()
	t.Cleanup(func() {
		for _, s := range servers {
			s.Kill()
		}
	})
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	return servers
}

// URLs is the servers' client addresses, comma separated.
func URLs(servers []*Server) string {
	var urls []string
	for _, s := range servers {
		urls = append(urls, s.URL)
	}
	return strings.Join(urls, ",")
}

// start runs the server and returns once it says it is ready.
func (s *Server) start() error {
	s.cmd = exec.Command(s.args[0], s.args[1:]...)
	stderr, err := s.cmd.StderrPipe()
	if err != nil {
		return err
	}
	if err := s.cmd.Start(); err != nil {
		return fmt.Errorf("nats-server %s: %w", s.Name, err)
	}
	s.exit = make(chan struct{})
	ready := make(chan struct{})
	var log strings.Builder
	scanned := make(chan struct{})
	go func() {
		defer close(scanned)
		sc := bufio.NewScanner(stderr)
		once := sync.Once{}
		for sc.Scan() {
			if log.Len() < 64<<10 {
				log.WriteString(sc.Text() + "\n")
			}
			if strings.Contains(sc.Text(), "Server is ready") {
				once.Do(func() { close(ready) })
			}
		}
		_, _ = io.Copy(io.Discard, stderr)
	}()
	go func() { _ = s.cmd.Wait(); close(s.exit) }()
	select {
	case <-ready:
		return nil
	case <-s.exit:
		<-scanned
		return fmt.Errorf("nats-server %s exited before it was ready:\n%s", s.Name, log.String())
	}
}

// Kill stops the server with SIGKILL and waits for it to exit.
func (s *Server) Kill() {
	if s.cmd == nil || s.cmd.Process == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	<-s.exit
	s.cmd = nil
}

// Restart starts a killed server again on its ports and store.
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	if err := s.start(); err != nil {
		t.Fatal(err)
	}
}

// freePorts returns n loopback ports free a moment ago.
func freePorts(t testing.TB, n int) []int {
	var ls []net.Listener
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	for _, l := range ls {
		l.Close()
	}
	return ports
}

// Eventually is how long a test waits for a cluster to form or a leader
// to be elected before it fails: long, for a loaded machine.
const Eventually = 2 * time.Minute
