package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/simhashdb/simhashdb/engine"
	"golang.org/x/sys/unix"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSignalWhileReading: commands blocked on their input (an idle pipe)
// or fed without end (/dev/zero) stop on SIGINT or SIGTERM; a second
// signal quits at once.
func TestSignalWhileReading(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "idx")
	r := runCLI(t, "1 0x1\n", "add", "--db", db)
	require.Equal(t, 0, r.code, r.stderr)
	for _, c := range []struct {
		name  string
		args  []string
		input string // "" an idle pipe, else a file
		sig   syscall.Signal
		twice bool
	}{
		{"add idle pipe", []string{"add", "--db", filepath.Join(dir, "a")}, "", syscall.SIGINT, false},
		{"add /dev/zero", []string{"add", "--db", filepath.Join(dir, "b"), "--input", "/dev/zero"}, "", syscall.SIGTERM, false},
		{"batch idle pipe", []string{"batch", "--db", db}, "", syscall.SIGINT, false},
		{"find-all idle pipe", []string{"find-all"}, "", syscall.SIGTERM, false},
		{"find-clusters idle pipe", []string{"find-clusters"}, "", syscall.SIGINT, false},
		{"find-all /dev/zero", []string{"find-all", "--input", "/dev/zero"}, "", syscall.SIGINT, false},
		{"second signal", []string{"find-all"}, "", syscall.SIGINT, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			cmd := exec.Command(binary, c.args...)
			pr, pw, err := os.Pipe() // written one blank line, then idle
			require.NoError(t, err)
			defer pw.Close()
			cmd.Stdin = pr
			errPipe, err := cmd.StderrPipe()
			require.NoError(t, err)
			require.NoError(t, cmd.Start())
			pr.Close()
			stderr, _, eof := watchStderr(errPipe, "stopping")
			// Signal once the command reads its input: its handlers are set
			// by then (they are before any input is read).
			if slices.Contains(c.args, "/dev/zero") {
				waitReading(t, cmd.Process.Pid, 1<<20)
			} else {
				// A comment: every command reads and skips it.
				_, err := pw.Write([]byte("# reading\n"))
				require.NoError(t, err)
				waitDrained(t, pw)
			}
			require.NoError(t, cmd.Process.Signal(c.sig))
			if c.twice {
				// At once: the first cancels the work, the second, taken while
				// the command winds down, exits with 130 unless it is done first.
				require.NoError(t, cmd.Process.Signal(c.sig))
			}
			done := make(chan error, 1)
			go func() {
				<-eof
				done <- cmd.Wait()
			}()
			select {
			case <-done:
			case <-time.After(2 * time.Minute):
				cmd.Process.Kill()
				t.Fatalf("still running 2 minutes after the signal; stderr: %s", stderr())
			}
			assert.NotEqual(t, 0, cmd.ProcessState.ExitCode(), "an interrupted command does not say it succeeded")
			if c.twice && cmd.ProcessState.ExitCode() == 130 {
				assert.Contains(t, stderr(), "quit")
			}
			// "stopping" comes from the signal's goroutine, which a command
			// that stops at once may leave unprinted.
			assert.Regexp(t, `stopping|interrupted|canceled`, stderr())
		})
	}
}

// watchStderr collects what a command writes to r; seen is closed once a
// line holds want, eof once r ends (then the command may be waited for).
func watchStderr(r io.Reader, want string) (text func() string, seen, eof <-chan struct{}) {
	var mu sync.Mutex
	var b strings.Builder
	ch, end := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(end)
		sc := bufio.NewScanner(r)
		closed := false
		for sc.Scan() {
			mu.Lock()
			b.WriteString(sc.Text() + "\n")
			mu.Unlock()
			if !closed && strings.Contains(sc.Text(), want) {
				close(ch)
				closed = true
			}
		}
	}()
	return func() string {
		mu.Lock()
		defer mu.Unlock()
		return b.String()
	}, ch, end
}

// waitDrained waits until the reader of the pipe whose writing end is w
// has read everything written to it.
func waitDrained(t *testing.T, w *os.File) {
	t.Helper()
	waitFor(t, "the command to read its input", func() (bool, error) {
		n, err := unix.IoctlGetInt(int(w.Fd()), unix.TIOCINQ)
		return n == 0, err
	})
}

// waitReading waits until process pid has read n bytes.
func waitReading(t *testing.T, pid int, n int64) {
	t.Helper()
	waitFor(t, "the command to read its input", func() (bool, error) {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/io", pid))
		if err != nil {
			return false, err
		}
		for line := range strings.Lines(string(b)) {
			if v, ok := strings.CutPrefix(line, "rchar:"); ok {
				got, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
				return got >= n, err
			}
		}
		return false, nil
	})
}

// waitFor waits until cond holds: for what the test needs, checked every
// few milliseconds, failing only when it never comes or cond fails.
func waitFor(t *testing.T, what string, cond func() (bool, error)) {
	t.Helper()
	var err error
	require.Eventually(t, func() bool {
		ok, cerr := cond()
		if cerr != nil {
			err = cerr
			return true
		}
		return ok
	}, 5*time.Minute, 5*time.Millisecond, "waited 5 minutes for %s", what)
	require.NoError(t, err, what)
}

// TestDamagedIndexErrors: on a damaged index every command exits 1 with
// one line naming the file and block, no stack trace; SIMHASHDB_VERBOSE=1
// adds the details.
func TestDamagedIndexErrors(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "idx")
	var in strings.Builder
	for i := range 3000 {
		fmt.Fprintf(&in, "%d %d\n", i+1, uint64(i+1)*0x9e3779b97f4a7c15)
	}
	r := runCLI(t, in.String(), "add", "--db", db, "--bulk")
	require.Equal(t, 0, r.code, r.stderr)
	ssts, err := filepath.Glob(filepath.Join(db, "pebble", "*.sst"))
	require.NoError(t, err)
	for _, s := range ssts {
		b, err := os.ReadFile(s)
		require.NoError(t, err)
		if len(b) > 4000 {
			b[200] ^= 0x20
			require.NoError(t, os.WriteFile(s, b, 0o644))
		}
	}
	for _, args := range [][]string{
		{"query", "--db", db, "--fp", "12345"},
		{"check", "--db", db},
		{"find-all", "--db", db},
		{"export", "--db", db},
	} {
		r := runCLI(t, "", args...)
		assert.Equal(t, 1, r.code, "%v: %s", args, r.stderr)
		assert.Contains(t, r.stderr, ".sst", args)
		assert.NotContains(t, r.stderr, "stack trace", args)
		assert.NotContains(t, r.stderr, "corruption detail carrier", args)
		assert.LessOrEqual(t, strings.Count(r.stderr, "\n"), 2, "%v: %s", args, r.stderr)
	}
	cmd := exec.Command(binary, "check", "--db", db)
	cmd.Env = append(os.Environ(), "SIMHASHDB_VERBOSE=1")
	out, _ := cmd.CombinedOutput()
	assert.Contains(t, string(out), "stack trace")
}

// TestAddInterrupted: Ctrl-C during add says how many records are stored
// for good, through which line, and how to finish; running the same
// command again finishes the job.
func TestAddInterrupted(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "idx")
	in := filepath.Join(dir, "in.txt")
	var b strings.Builder
	for i := range 2000 {
		fmt.Fprintf(&b, "%d %d\n", i+1, uint64(i+1)*0x9e3779b97f4a7c15)
	}
	require.NoError(t, os.WriteFile(in, []byte(b.String()), 0o644))
	// The input: the file, then an idle pipe, so the interrupt comes mid-input.
	pr, pw, err := os.Pipe()
	require.NoError(t, err)
	defer pw.Close()
	add := exec.Command(binary, "add", "--db", db, "--progress", "json")
	add.Stdin = pr
	errPipe, err := add.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, add.Start())
	pr.Close()
	stderr, stored, eof := watchStderr(errPipe, `"durable":2000`)
	_, err = pw.Write([]byte(b.String())) // returns once the pipe holds it all
	require.NoError(t, err)
	select { // all 2000 stored, and add waits for more input
	case <-stored:
	case <-time.After(5 * time.Minute):
		t.Fatalf("add did not report 2000 records durable: %s", stderr())
	}
	require.NoError(t, add.Process.Signal(syscall.SIGINT))
	<-eof
	_ = add.Wait() // exit code 1, read below
	assert.Equal(t, 1, add.ProcessState.ExitCode(), stderr())
	assert.Contains(t, stderr(), "interrupted: 2000 records read, 2000 stored or rejected for good, through line 2000 of <stdin>")
	assert.Contains(t, stderr(), "run the same command again")
	r := runCLI(t, b.String(), "add", "--db", db)
	require.Equal(t, 0, r.code, r.stderr)
	r = runCLI(t, "", "stats", "--db", db, "--json")
	assert.Contains(t, r.stdout, `"documents": 2000`)
}

// TestAddTextInterrupted: add --text stopped by an interrupt says what is
// stored for good and how to finish, not "context canceled".
func TestAddTextInterrupted(t *testing.T) {
	dir := t.TempDir()
	for i := range 3 {
		require.NoError(t, os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%d.txt", i)), []byte(fmt.Sprintf("words of file number %d here", i)), 0o644))
	}
	db, err := engine.Open(filepath.Join(t.TempDir(), "idx"), engine.Options{})
	require.NoError(t, err)
	defer db.Close()
	var ff fingerprintFlags
	fl := flag.NewFlagSet("add", flag.ContinueOnError)
	ff.register(fl)
	require.NoError(t, fl.Parse(nil))
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // the interrupt came before the first file
	var stdout, stderr strings.Builder
	code := addText(ctx, embeddedTarget(db), t.TempDir(), []string{dir}, &ff, "none", false, -1, 0, &stdout, &stderr)
	assert.Equal(t, exitFailed, code)
	assert.Contains(t, stderr.String(), "interrupted: 0 files read, 0 stored or left as they were, for good; to finish, run the same command again")
	assert.NotContains(t, stderr.String(), "context canceled")
}
