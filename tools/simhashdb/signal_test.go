package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

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
			pr, pw, err := os.Pipe() // never written: an idle pipe
			require.NoError(t, err)
			defer pw.Close()
			cmd.Stdin = pr
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			require.NoError(t, cmd.Start())
			pr.Close()
			time.Sleep(300 * time.Millisecond)
			require.NoError(t, cmd.Process.Signal(c.sig))
			if c.twice {
				time.Sleep(50 * time.Millisecond)
				require.NoError(t, cmd.Process.Signal(c.sig))
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				cmd.Process.Kill()
				t.Fatalf("still running 10 s after the signal; stderr: %s", stderr.String())
			}
			assert.NotEqual(t, 0, cmd.ProcessState.ExitCode(), "an interrupted command does not say it succeeded")
			assert.True(t, strings.Contains(stderr.String(), "stopping") || strings.Contains(stderr.String(), "canceled"), stderr.String())
		})
	}
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
	cmd := exec.Command("sh", "-c", fmt.Sprintf("cat %s; sleep 30", in))
	pipe, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	defer cmd.Process.Kill()
	add := exec.Command(binary, "add", "--db", db)
	add.Stdin = pipe
	var stderr bytes.Buffer
	add.Stderr = &stderr
	require.NoError(t, add.Start())
	time.Sleep(time.Second)
	require.NoError(t, add.Process.Signal(syscall.SIGINT))
	_ = add.Wait() // exit code 1, read below
	assert.Equal(t, 1, add.ProcessState.ExitCode(), stderr.String())
	assert.Contains(t, stderr.String(), "interrupted: 2000 records read, 2000 stored or rejected for good, through line 2000 of <stdin>")
	assert.Contains(t, stderr.String(), "run the same command again")
	r := runCLI(t, b.String(), "add", "--db", db)
	require.Equal(t, 0, r.code, r.stderr)
	r = runCLI(t, "", "stats", "--db", db, "--json")
	assert.Contains(t, r.stdout, `"documents": 2000`)
}
