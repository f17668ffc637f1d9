// Package natstest runs NATS servers with JetStream for the tests of
// replicated indexes: real processes, built from the module
// tools/natsserver pins (so the project's own module does not require
// the server), on loopback ports, one alone or three in a cluster.
package natstest

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
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

// Binary returns the path of a nats-server built from tools/natsserver.
// It is built once per version of that module and of Go, into the user's
// cache folder, and kept there for later runs: a binary per test process
// left in the temporary folder filled it by tens of megabytes a run.
func Binary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() { binary, buildErr = build() })
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binary
}

func build() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD", "GOVERSION").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD GOVERSION: %w", err)
	}
	env := strings.Fields(string(out))
	if len(env) != 2 {
		return "", fmt.Errorf("go env GOMOD GOVERSION printed %q", out)
	}
	dir := filepath.Join(filepath.Dir(env[0]), "tools", "natsserver")
	sum, err := os.ReadFile(filepath.Join(dir, "go.sum"))
	if err != nil {
		return "", err
	}
	key := sha256.Sum256(append(sum, env[1]...))
	var home string
	for _, cache := range cacheDirs() {
		home = filepath.Join(cache, "simhashdb-natstest", hex.EncodeToString(key[:8]))
		if err = os.MkdirAll(home, 0o755); err == nil {
			break
		}
	}
	if err != nil {
		return "", err
	}
	path := filepath.Join(home, "nats-server")
	if st, err := os.Stat(path); err == nil && st.Mode().IsRegular() && st.Mode()&0o100 != 0 {
		return path, nil
	}
	// Built under a name of its own and renamed: test processes of
	// several packages build at once, and none may run a half-written file.
	tmp, err := os.CreateTemp(home, "nats-server-*")
	if err != nil {
		return "", err
	}
	tmp.Close()
	defer os.Remove(tmp.Name())
	cmd := exec.Command("go", "build", "-o", tmp.Name(), "github.com/nats-io/nats-server/v2")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building nats-server in %s: %v\n%s", dir, err, out)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return "", err
	}
	return path, nil
}

// cacheDirs lists where a built server may be kept, the user's cache
// first and the temporary folder where there is none or it is read-only.
func cacheDirs() []string {
	if cache, err := os.UserCacheDir(); err == nil {
		return []string{cache, os.TempDir()}
	}
	return []string{os.TempDir()}
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
