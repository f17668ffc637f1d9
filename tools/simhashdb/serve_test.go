package main

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/simhashdb/simhashdb/engine"
	"github.com/simhashdb/simhashdb/internal/fingerprints"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// served is a running "simhashdb serve" process.
type served struct {
	cmd    *exec.Cmd
	url    string
	stderr *strings.Builder
	mu     *sync.Mutex
	done   chan struct{}
}

// startServe starts the server on a free loopback port and waits for the
// line that says where it listens.
func startServe(t *testing.T, args ...string) *served {
	t.Helper()
	return startServeBinary(t, binary, args...)
}

// startServeBinary is startServe with the command built as bin.
func startServeBinary(t testing.TB, bin string, args ...string) *served {
	t.Helper()
	return startListening(t, bin, "serve", args...)
}

// startListening starts bin's command (serve, route) on a free port, and
// waits for it to say where it listens.
func startListening(t testing.TB, bin, command string, args ...string) *served {
	t.Helper()
	cmd := exec.Command(bin, append([]string{command, "--addr", "127.0.0.1:0"}, args...)...)
	pipe, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	s := &served{cmd: cmd, stderr: &strings.Builder{}, mu: &sync.Mutex{}, done: make(chan struct{})}
	addr := make(chan string, 1)
	go func() {
		defer close(s.done)
		sc := bufio.NewScanner(pipe)
		re := regexp.MustCompile(`listening on (https?://\S+)`)
		for sc.Scan() {
			s.mu.Lock()
			s.stderr.WriteString(sc.Text() + "\n")
			s.mu.Unlock()
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				addr <- m[1]
			}
		}
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	select {
	case s.url = <-addr:
	case <-s.done:
		t.Fatalf("%s exited: %s", command, s.log())
	case <-time.After(2 * time.Minute): // only a hung server takes this long
		t.Fatalf("%s did not say where it listens: %s", command, s.log())
	}
	return s
}

func (s *served) log() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stderr.String()
}

// stop signals the server and returns its exit code.
func (s *served) stop(t *testing.T, sig syscall.Signal) int {
	t.Helper()
	require.NoError(t, s.cmd.Process.Signal(sig))
	<-s.done
	err := s.cmd.Wait()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	require.NoError(t, err)
	return 0
}

func httpDo(method, url, body, token string) (int, string, error) {
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		return 0, "", err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

func TestServe(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "idx")
	tokenFile := filepath.Join(dir, "token")
	require.NoError(t, os.WriteFile(tokenFile, []byte("s3cret\n"), 0o600))
	s := startServe(t, "--db", db, "--token-file", tokenFile)
	assert.Contains(t, s.log(), "bearer token required")

	code, body, err := httpDo("PUT", s.url+"/v1/documents/7", `{"fingerprint":"0x0123456789abcdef","name":"seven"}`, "")
	require.NoError(t, err)
	assert.Equal(t, 401, code, "no token")
	assert.JSONEq(t, `{"error":"unauthorized"}`, body)
	code, body, err = httpDo("PUT", s.url+"/v1/documents/7", `{"fingerprint":"0x0123456789abcdef","name":"seven"}`, "s3cret")
	require.NoError(t, err)
	require.Equal(t, 200, code, body)
	code, _, err = httpDo("GET", s.url+"/healthz", "", "")
	require.NoError(t, err)
	assert.Equal(t, 200, code)
	// A header of 1 MiB: the server's own JSON answer, not Go's plain text.
	req, err := http.NewRequest("GET", s.url+"/v1/stats", nil)
	require.NoError(t, err)
	req.Header.Set("X-Big", strings.Repeat("h", 1<<20-100))
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	big, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, 431, resp.StatusCode)
	assert.Equal(t, "application/json", resp.Header.Get("Content-Type"), string(big))

	// The index is the server's now: another command says so.
	r := runCLI(t, "", "stats", "--db", db)
	assert.Equal(t, 1, r.code)
	assert.Contains(t, r.stderr, "in use by another process")
	assert.Contains(t, r.stderr, "simhashdb serve")

	// A served index is a whole index: the commands that read one work
	// through the server, with the same output as with --db.
	remote := []string{"--server", s.url, "--token-file", tokenFile}
	code, body, err = httpDo("PUT", s.url+"/v1/documents/8", `{"fingerprint":"0x0123456789abcdee","name":"eight"}`, "s3cret")
	require.NoError(t, err)
	require.Equal(t, 200, code, body)
	r = runCLI(t, "", append([]string{"get", "7", "99"}, remote...)...)
	assert.Equal(t, 1, r.code)
	assert.Equal(t, "7 0x0123456789abcdef seven\n", r.stdout)
	assert.Contains(t, r.stderr, "99: not stored")
	r = runCLI(t, "", append([]string{"export"}, remote...)...)
	require.Equal(t, 0, r.code, r.stderr)
	// As export --db writes it: the header with the index's text options.
	assert.Equal(t, "7 0x0123456789abcdef seven\n8 0x0123456789abcdee eight\n", r.stdout[strings.IndexByte(r.stdout, '\n')+1:])
	assert.True(t, strings.HasPrefix(r.stdout, `# simhashdb-export {"fingerprint":{"shingle":2,`), r.stdout)
	r = runCLI(t, "", append([]string{"find-all", "-d", "1"}, remote...)...)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, `{"a":{"id":7,"name":"seven","fp":"0x0123456789abcdef"},"b":{"id":8,"name":"eight","fp":"0x0123456789abcdee"},"distance":1}`+"\n", r.stdout)
	r = runCLI(t, "", append([]string{"find-clusters", "-d", "1"}, remote...)...)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, `{"size":2,"documents":[{"id":7`)
	r = runCLI(t, "", append([]string{"check"}, remote...)...)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "2 log records not yet flushed verified")
	r = runCLI(t, "", "find-all", "--server", s.url)
	assert.Equal(t, 1, r.code, "no token")
	assert.Contains(t, r.stderr, "unauthenticated: the server wants its bearer token")

	if py, err := exec.LookPath("python3"); err == nil {
		client, err := filepath.Abs("../../docs/client.py")
		require.NoError(t, err)
		out, err := exec.Command(py, client, s.url, "s3cret").CombinedOutput()
		require.NoError(t, err, "%s", out)
		assert.Contains(t, string(out), "near-duplicate: 101 https://a.example/fox")
		assert.Contains(t, string(out), "inserted: False duplicates: [101]")
		assert.Contains(t, string(out), "stored in one commit: 6 rejected: 0")
		assert.Contains(t, string(out), "near fingerprints: 0x0000000000001234 0, 0x0000000000001235 1\n")
		assert.Contains(t, string(out), "batch: first [200]")
		assert.Contains(t, string(out), "batch: 2 [201]")
		assert.Contains(t, string(out), "pair: 200 205 distance 1")
		assert.Contains(t, string(out), "cluster of")
		assert.Regexp(t, `exported: \d+`, string(out))
		assert.Contains(t, string(out), "check ok: True")
		assert.Contains(t, string(out), "deleted: True")
		assert.Regexp(t, `documents: \d+`, string(out))
	} else {
		t.Log("no python3: the Python client is not run")
	}

	assert.Equal(t, 0, s.stop(t, syscall.SIGTERM), s.log())
	assert.Contains(t, s.log(), "stopped; every acknowledged write is in the index")
	r = runCLI(t, "", "get", "--db", db, "7")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "7 0x0123456789abcdef seven\n", r.stdout)
}

func TestServeRefuses(t *testing.T) {
	db := filepath.Join(t.TempDir(), "idx")
	for _, c := range []struct {
		args []string
		msg  string
	}{
		{[]string{"--addr", "0.0.0.0:0"}, "only a loopback address"},
		{[]string{"--addr", ":7700"}, "only a loopback address"},
		{[]string{"--token-file", "/nonexistent/token"}, "--token-file /nonexistent/token: no such file"},
		{[]string{"--tls-cert", "x.pem"}, "go together"},
		{[]string{"--max-body", "0"}, "want a positive limit"},
		{[]string{"--max-inflight-bytes", "1000"}, "below --max-batch-body"},
		{[]string{"--max-inflight-bytes", "64 parsecs"}, `invalid value "64 parsecs" for flag -max-inflight-bytes: want a number of bytes`},
		{[]string{"--cache-size", "-1"}, "invalid value \"-1\" for flag -cache-size"},
		{[]string{"--memtable-size", "100"}, "--memtable-size 100: want at least 1KiB"},
		{[]string{"--stream-keep-for", "-1h"}, "--stream-keep-for -1h0m0s: want 0 (for ever) or a second or more"},
		{[]string{"--stream-keep-for", "10ms"}, "--stream-keep-for 10ms: want 0 (for ever) or a second or more"},
		{[]string{"--snapshot-from", "http://127.0.0.1:1"}, "--snapshot-from goes with --nats"},
	} {
		r := runCLI(t, "", append([]string{"serve", "--db", db}, c.args...)...)
		assert.Equal(t, 2, r.code, "%v: %s", c.args, r.stderr)
		assert.Contains(t, r.stderr, c.msg, "%v", c.args)
	}
	_, err := os.Stat(db)
	assert.True(t, os.IsNotExist(err), "nothing created")
}

// TestPlainTokenWarning: a token served without TLS off loopback is
// warned of; on loopback or with TLS it is not.
func TestPlainTokenWarning(t *testing.T) {
	for _, c := range []struct {
		sf    listenFlags
		token string
		warn  bool
	}{
		{listenFlags{addr: "0.0.0.0:7700"}, "t", true},
		{listenFlags{addr: "192.0.2.1:7700"}, "t", true},
		{listenFlags{addr: "0.0.0.0:7700", tlsCert: "c"}, "t", false},
		{listenFlags{addr: "127.0.0.1:7700"}, "t", false},
		{listenFlags{addr: "127.0.0.1:7700"}, "", false},
	} {
		w := c.sf.plainTokenWarning(c.token)
		assert.Equal(t, c.warn, w != "", "%+v", c.sf)
		if c.warn {
			assert.Contains(t, w, "without TLS")
		}
	}
}

// TestServeKill: writers hammer the server; it is killed with SIGKILL;
// every write that got a 2xx answer is in the index after it restarts.
func TestServeKill(t *testing.T) {
	db := filepath.Join(t.TempDir(), "idx")
	for round := range 3 {
		s := startServe(t, "--db", db, "--sync", "always")
		var acked sync.Map
		var stop atomic.Bool
		var next, nacked atomic.Uint64
		next.Store(uint64(round) << 32)
		// The kill comes once this many writes are acknowledged, a different
		// number each round, whatever the machine's speed.
		killAt := uint64(50 + 100*round)
		reached := make(chan struct{})
		var wg sync.WaitGroup
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for !stop.Load() {
					id := next.Add(1)
					code, _, err := httpDo("PUT", fmt.Sprintf("%s/v1/documents/%d", s.url, id), fmt.Sprintf(`{"fingerprint":"%#x"}`, id*0x9e3779b97f4a7c15), "")
					if err == nil && code == 200 {
						acked.Store(id, true)
						if nacked.Add(1) == killAt {
							close(reached)
						}
					}
				}
			}()
		}
		select {
		case <-reached:
		case <-s.done:
			stop.Store(true)
			wg.Wait()
			t.Fatalf("round %d: the server stopped before %d writes were acknowledged: %s", round, killAt, s.log())
		}
		require.NoError(t, s.cmd.Process.Signal(syscall.SIGKILL))
		stop.Store(true)
		wg.Wait()
		<-s.done
		s.cmd.Wait()
		idx, err := engine.Open(db, engine.Options{ReadOnly: true})
		require.NoError(t, err)
		n := 0
		acked.Range(func(k, _ any) bool {
			_, err := idx.Get(context.Background(), k.(uint64))
			assert.NoError(t, err, "round %d: acknowledged id %d", round, k)
			n++
			return true
		})
		require.NoError(t, idx.Close())
		require.Positive(t, n, "round %d: some writes were acknowledged", round)
		t.Logf("round %d: %d acknowledged writes, all found", round, n)
	}
	r := runCLI(t, "", "check", "--db", db)
	require.Equal(t, 0, r.code, r.stderr)
}

// TestServeBatchStreams: a batch answers line by line, and a client that
// stops reading costs the server nothing more (it goes on serving).
func TestServeBatchStreams(t *testing.T) {
	db := filepath.Join(t.TempDir(), "idx")
	s := startServe(t, "--db", db)
	var in strings.Builder
	for i := range 50000 {
		fmt.Fprintf(&in, "%#x\n", uint64(i)*0x9e3779b97f4a7c15)
	}
	resp, err := http.Post(s.url+"/v1/batch?k=1", "text/plain", strings.NewReader(in.String()))
	require.NoError(t, err)
	line, err := bufio.NewReader(resp.Body).ReadString('\n')
	require.NoError(t, err)
	var a struct{ QID int }
	require.NoError(t, json.Unmarshal([]byte(line), &a))
	assert.Equal(t, 1, a.QID)
	resp.Body.Close() // gone mid-batch
	code, _, err := httpDo("GET", s.url+"/v1/query?fp=0x1", "", "")
	require.NoError(t, err)
	assert.Equal(t, 200, code)
	assert.Equal(t, 0, s.stop(t, syscall.SIGINT), s.log())
}

// TestServeCLI: query, batch, add, delete and stats talk to a running
// server with --server, and answer as they do over --db.
func TestServeCLI(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "idx")
	tokenFile := filepath.Join(dir, "token")
	require.NoError(t, os.WriteFile(tokenFile, []byte("t0ken"), 0o600))
	s := startServe(t, "--db", db, "--token-file", tokenFile)
	srv := []string{"--server", s.url, "--token-file", tokenFile}
	cli := func(stdin string, args ...string) result {
		return runCLI(t, stdin, append(args, srv...)...)
	}
	r := cli("1 0x0123456789abcdef https://a.example/\n2 0x0123456789abcdee\nbad line\n3 0xff\n", "add")
	assert.Equal(t, 1, r.code)
	assert.Contains(t, r.stderr, "<stdin>:3:")
	r = cli("", "query", "--fp", "0x0123456789abcdef", "--k", "1", "--json")
	require.Equal(t, 0, r.code, r.stderr)
	assert.JSONEq(t, `{"query":"0x0123456789abcdef","matches":[
		{"id":1,"name":"https://a.example/","fp":"0x0123456789abcdef","distance":0},
		{"id":2,"name":"","fp":"0x0123456789abcdee","distance":1}]}`, r.stdout)
	r = cli("", "query", "--fp", "0xff")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "query 0x00000000000000ff: 1 within distance 3")
	r = cli("0x0123456789abcdef\nq 0xff\n0xzz\n", "batch", "--k", "0")
	assert.Equal(t, 1, r.code)
	assert.Contains(t, r.stderr, "<stdin>:3:")
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	require.Len(t, lines, 2, r.stdout)
	assert.Contains(t, lines[0], `"qid":1`)
	assert.Contains(t, lines[1], `"qid":"q"`)
	r = cli("", "delete", "2", "9")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "deleted 1 document; not stored: 9\n", r.stdout)
	r = cli("", "stats", "--json")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, `"k": 3`)

	r = runCLI(t, "", "stats", "--server", s.url)
	assert.Equal(t, 1, r.code, "no token")
	assert.Contains(t, r.stderr, "unauthenticated")
	r = runCLI(t, "", "stats", "--server", s.url, "--db", db)
	assert.Equal(t, 2, r.code)
	r = cli("", "add", "--text", "--html", dir)
	assert.Equal(t, 2, r.code, r.stderr)
	assert.Contains(t, r.stderr, "--html true (the index's is false): the index fingerprints text as it was created to")
	r = cli("", "add", "--k", "2", "--sync", "none")
	assert.Equal(t, 2, r.code)
	assert.Contains(t, r.stderr, "--k --sync: with --server, the server opened the index as it was started to")
	assert.Equal(t, 0, s.stop(t, syscall.SIGTERM), s.log())
}

// TestServeAddText: add --text --server stores files under the ids of
// their paths, fingerprinted as a local add --text does (with the index's
// options, here, so that a file in any encoding goes as it is); adding
// them again leaves them, a changed file is replaced.
func TestServeAddText(t *testing.T) {
	dir := t.TempDir()
	files := filepath.Join(dir, "files")
	require.NoError(t, os.MkdirAll(filepath.Join(files, "sub"), 0o755))
	write := func(name, text string) {
		require.NoError(t, os.WriteFile(filepath.Join(files, name), []byte(text), 0o644))
	}
	write("a.txt", "the quick brown fox jumps over the lazy dog")
	write("sub/b.txt", "a stitch in time saves nine, they said")
	write("latin1.txt", "caf\xe9 cr\xe8me")
	s := startServe(t, "--db", filepath.Join(dir, "served"))
	r := runCLI(t, "", "add", "--server", s.url, "--text", files)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "simhashdb add: 3 files: 3 added, 0 replaced, 0 unchanged\n", r.stderr)
	local := runCLI(t, "", "add", "--db", filepath.Join(dir, "local"), "--sketches=false", "--text", files)
	require.Equal(t, 0, local.code, local.stderr)
	assert.Equal(t, local.stdout, r.stdout, "the same ids and fingerprints as a local add")

	r = runCLI(t, "", "add", "--server", s.url, "--text", filepath.Join(files, "a.txt"), filepath.Join(files, "sub"))
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stderr, "2 files: 0 added, 0 replaced, 2 unchanged")
	assert.Empty(t, r.stdout, "unchanged files are not printed, as by a local add")
	write("a.txt", "the quick brown fox jumps over the lazy cat")
	r = runCLI(t, "", "add", "--server", s.url, "--text", filepath.Join(files, "a.txt"))
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stderr, "1 files: 0 added, 1 replaced, 0 unchanged")
	id := strings.Split(local.stdout, "\t")[0]
	g := runCLI(t, "", "get", "--server", s.url, id)
	require.Equal(t, 0, g.code, g.stderr)
	assert.Contains(t, g.stdout, strings.Split(r.stdout, "\t")[1], "replaced under the same id")
	assert.Equal(t, 0, s.stop(t, syscall.SIGTERM), s.log())

	// serve --sketches makes the index add --text makes: the same
	// fingerprints, and sketches.
	s = startServe(t, "--db", filepath.Join(dir, "served-text"), "--sketches")
	r = runCLI(t, "", "add", "--server", s.url, "--text", filepath.Join(files, "a.txt"), filepath.Join(files, "sub"))
	require.Equal(t, 0, r.code, r.stderr)
	local = runCLI(t, "", "add", "--db", filepath.Join(dir, "local-text"), "--text", filepath.Join(files, "a.txt"), filepath.Join(files, "sub"))
	require.Equal(t, 0, local.code, local.stderr)
	assert.Equal(t, local.stdout, r.stdout, "the same ids and fingerprints as a local add --text")
	g = runCLI(t, "", "get", "--server", s.url, "--json", id)
	require.Equal(t, 0, g.code, g.stderr)
	assert.Contains(t, g.stdout, `"sketch":"`)
	// export --server | add: the header says the records carry sketches.
	exp := runCLI(t, "", "export", "--server", s.url)
	require.Equal(t, 0, exp.code, exp.stderr)
	assert.Contains(t, exp.stdout, fmt.Sprintf(`"sketch":%d`, recordSize))
	assert.Contains(t, exp.stdout, `"shingle":1`, "the index's text options, as export --db writes them")
	r = runCLI(t, exp.stdout, "add", "--db", filepath.Join(dir, "copy"))
	require.Equal(t, 0, r.code, r.stderr)
	c := runCLI(t, "", "get", "--db", filepath.Join(dir, "copy"), "--json", id)
	assert.Equal(t, g.stdout, c.stdout, "the same document, sketch and name")
	c = runCLI(t, "", "stats", "--db", filepath.Join(dir, "copy"))
	assert.Contains(t, c.stdout, "--shingle 1", "the copy reads text as the served index")
	// batch of the export, served and local: the same verified answers.
	rb := runCLI(t, exp.stdout, "batch", "--server", s.url, "--similarity", "0.8")
	require.Equal(t, 0, rb.code, rb.stderr)
	lb := runCLI(t, exp.stdout, "batch", "--db", filepath.Join(dir, "copy"), "--similarity", "0.8")
	require.Equal(t, 0, lb.code, lb.stderr)
	assert.Equal(t, lb.stdout, rb.stdout)
	assert.Contains(t, rb.stdout, `"similarity":1`)
	assert.Equal(t, 0, s.stop(t, syscall.SIGTERM), s.log())
}

// TestServeTLS: with --tls-cert and --tls-key the server speaks HTTPS.
func TestServeTLS(t *testing.T) {
	dir := t.TempDir()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "127.0.0.1"},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	kder, err := x509.MarshalECPrivateKey(key)
	require.NoError(t, err)
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	require.NoError(t, os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600))
	require.NoError(t, os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600))
	s := startServe(t, "--db", filepath.Join(dir, "idx"), "--tls-cert", certFile, "--tls-key", keyFile)
	require.True(t, strings.HasPrefix(s.url, "https://"), s.url)
	pool := x509.NewCertPool()
	pool.AddCert(must(x509.ParseCertificate(der)))
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	resp, err := c.Get(s.url + "/healthz")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, 200, resp.StatusCode)
	_, err = http.Get(s.url + "/healthz") // without trusting the certificate
	assert.Error(t, err)
	assert.Equal(t, 0, s.stop(t, syscall.SIGTERM), s.log())
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// TestListenAddress: the address logged is the one asked for, with the
// port the server got.
func TestListenAddress(t *testing.T) {
	assert.Equal(t, "0.0.0.0:7704", listenedOn("0.0.0.0:7704", &net.TCPAddr{IP: net.IPv6zero, Port: 7704}))
	assert.Equal(t, "127.0.0.1:40001", listenedOn("127.0.0.1:0", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 40001}))
	assert.Equal(t, "[::]:7704", listenedOn(":7704", &net.TCPAddr{IP: net.IPv6zero, Port: 7704}))
}

// TestStatsSayWhatIsCounted: with writes not yet flushed, stats and check
// say what their numbers count.
func TestStatsSayWhatIsCounted(t *testing.T) {
	db := filepath.Join(t.TempDir(), "idx")
	s := startServe(t, "--db", db)
	for i := 1; i <= 3; i++ {
		code, body, err := httpDo("PUT", fmt.Sprintf("%s/v1/documents/%d", s.url, i), fmt.Sprintf(`{"fingerprint":"0x%x"}`, i*7919), "")
		require.NoError(t, err)
		require.Equal(t, 200, code, body)
	}
	r := runCLI(t, "", "stats", "--server", s.url)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "documents          3 (3 writes not yet flushed, counted)")
	assert.Contains(t, r.stdout, "fingerprints       0 distinct in the tables; the 3 writes not yet flushed count from the next flush")
	r = runCLI(t, "", "check", "--server", s.url)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "ok: the tables hold 0 documents")
	assert.Contains(t, r.stdout, "3 log records not yet flushed verified")
}

// TestServerSameAsDB: every command that takes --server prints, to the
// byte, what it prints with --db on the same index (a copy of it, served):
// the same answers, errors and exit codes; on an index of fingerprints and
// on one of text, whose answers are verified by sketches.
func TestServerSameAsDB(t *testing.T) {
	t.Run("fingerprints", func(t *testing.T) {
		local := filepath.Join(t.TempDir(), "local")
		var records strings.Builder
		for i, fp := range fingerprints.Planted(400, 3, 0.3, 21) {
			fmt.Fprintf(&records, "%d 0x%016x page-%d\n", i+1, fp, i%7)
		}
		fmt.Fprintf(&records, "900 0x0000000000000000 zero\n901 0xffffffffffffffff ones\n902 0x0000000000000000 zero-again\n")
		r := runCLI(t, records.String(), "add", "--db", local, "--k", "3")
		require.Equal(t, 0, r.code, r.stderr)
		queries := "0x0000000000000001\nq 0xfffffffffffffffe\n0xzz\n"
		sameAsDB(t, local, []sameCase{
			{"get", "", []string{"get", "1", "900", "4242"}, nil},
			{"get json", "", []string{"get", "--json", "2", "901"}, nil},
			{"query", "", []string{"query", "--fp", "0x0000000000000003"}, nil},
			{"query json", "", []string{"query", "--fp", "0xfffffffffffffff0", "--k", "2", "--json"}, nil},
			{"query k above K", "", []string{"query", "--fp", "0x1", "--k", "4"}, nil},
			{"query fingerprints", "", []string{"query", "--fp", "0x0000000000000001", "--fingerprints"}, nil},
			{"query fingerprints json", "", []string{"query", "--fp", "0xfffffffffffffff0", "--k", "2", "--fingerprints", "--json"}, nil},
			{"query fingerprints k above K", "", []string{"query", "--fp", "0x1", "--k", "4", "--fingerprints"}, nil},
			{"batch", queries, []string{"batch", "--k", "2"}, nil},
			{"find-all", "", []string{"find-all"}, nil},
			{"find-all json", "", []string{"find-all", "--json", "--k", "1"}, nil},
			{"find-all similarity", "", []string{"find-all", "--similarity", "0.5"}, nil},
			{"find-clusters", "", []string{"find-clusters"}, nil},
			{"find-clusters star", "", []string{"find-clusters", "--method", "star", "-d", "2"}, nil},
			{"export", "", []string{"export"}, nil},
			{"export json", "", []string{"export", "--json"}, nil},
			{"check", "", []string{"check"}, nil},
			{"stats", "", []string{"stats"}, nil},
			{"compression", "", []string{"compression", "--block-sizes", "256,1024"}, nil},
			{"compression json", "", []string{"compression", "--json"}, nil},
			{"delete", "", []string{"delete", "3", "900", "77777"}, nil},
			{"export after delete", "", []string{"export"}, nil},
			{"add", "1000 0x00000000000000ff added\nbad line\n1001 0xff00000000000000\n3 0x0000000000000003 back\n", []string{"add"}, nil},
			{"add hex", "1002 00000000000000fe\n", []string{"add", "--hex"}, nil},
			{"add a name too long", fmt.Sprintf("1003 0x1 %s\n", strings.Repeat("n", 5000)), []string{"add"}, nil},
			{"add if-new", "1004 0x00000000000000fc near\n1005 0x5555555555555555 new\n", []string{"add", "--if-new", "2"}, nil},
			{"add named by path", "0x0123456789abcdef\t/srv/pages/a.html\n0x0123456789abcdef\t/srv/pages/b.html\n", []string{"add"}, nil},
			{"add named again", "0x0123456789abcdef\t/srv/pages/a.html\n0x0123456789abcdee\t/srv/pages/b.html\n", []string{"add"}, nil},
			{"add bulk into a stored index", "1006 0x1\n", []string{"add", "--bulk"}, nil},
			{"export after add", "", []string{"export"}, nil},
			{"query fingerprints after add", "", []string{"query", "--fp", "0x00000000000000fd", "--fingerprints"}, nil},
		})
	})
	t.Run("text", func(t *testing.T) {
		local := filepath.Join(t.TempDir(), "local")
		pages := textFolder(t)
		r := runCLI(t, "", "add", "--db", local, "--text", pages)
		require.Equal(t, 0, r.code, r.stderr)
		page, err := os.ReadFile(filepath.Join(pages, "a.txt"))
		require.NoError(t, err)
		export := runCLI(t, "", "export", "--db", local)
		require.Equal(t, 0, export.code, export.stderr)
		more := t.TempDir()
		for name, text := range map[string]string{"new.txt": "words never stored before in this index", "latin1.txt": "caf\xe9 cr\xe8me br\xfbl\xe9e",
			"empty.txt": " \n", "zeros.bin": "\x00\x01\x02\x00\x00\x00"} {
			require.NoError(t, os.WriteFile(filepath.Join(more, name), []byte(text), 0o644))
		}
		near := filepath.Join(t.TempDir(), "copy-of-a.txt")
		require.NoError(t, os.WriteFile(near, page, 0o644))
		sameAsDB(t, local, []sameCase{
			{"query text", "", []string{"query", "--text", string(page)}, nil},
			{"query file", "", []string{"query", "--file", filepath.Join(pages, "near.txt")}, nil},
			{"query file json", "", []string{"query", "--file", filepath.Join(pages, "far.txt"), "--json"}, nil},
			{"query stdin, similarity", string(page), []string{"query", "--file", "-", "--similarity", "0.75", "--k", "5"}, nil},
			{"query below the index's lowest similarity", string(page), []string{"query", "--file", "-", "--similarity", "0.3"}, nil},
			{"query text k above K", "", []string{"query", "--text", "some words", "--k", "7"}, nil},
			{"query text, missing file", "", []string{"query", "--file", filepath.Join(pages, "gone.txt")}, nil},
			{"query fp with similarity", "", []string{"query", "--fp", "0x1", "--similarity", "0.8"}, nil},
			{"batch of its export", export.stdout, []string{"batch"}, nil},
			{"batch of its export, similarity", export.stdout, []string{"batch", "--similarity", "0.95", "--k", "5"}, nil},
			{"batch k above K", export.stdout, []string{"batch", "--k", "7"}, nil},
			{"find-all", "", []string{"find-all"}, nil},
			{"find-all similarity", "", []string{"find-all", "--similarity", "0.8"}, nil},
			{"find-all below the index's lowest similarity", "", []string{"find-all", "--similarity", "0.5"}, nil},
			{"find-all distance", "", []string{"find-all", "-d", "3"}, nil},
			{"find-all distance above K", "", []string{"find-all", "-d", "9"}, nil},
			{"find-clusters", "", []string{"find-clusters"}, nil},
			{"find-clusters star", "", []string{"find-clusters", "--method", "star", "--similarity", "0.75"}, nil},
			{"export", "", []string{"export"}, nil},
			{"check", "", []string{"check"}, nil},
			{"stats", "", []string{"stats"}, nil},
			{"fingerprint as the index reads text", "", []string{"fingerprint", filepath.Join(pages, "a.txt"), filepath.Join(pages, "near.txt")}, nil},
			{"fingerprint, a flag against the index", "", []string{"fingerprint", "--shingle", "3", filepath.Join(pages, "a.txt")}, nil},
			{"add text again", "", []string{"add", "--text", pages}, nil},
			{"add text, new and unreadable files", "", []string{"add", "--text", more}, nil},
			{"add text if-new", "", []string{"add", "--text", "--if-new", "6", "--similarity", "0.75", filepath.Join(pages, "a.txt"), near}, nil},
			{"add text if-new below the index's lowest similarity", "", []string{"add", "--text", "--if-new", "6", "--similarity", "0.5", near}, nil},
			{"add text, a flag against the index", "", []string{"add", "--text", "--shingle", "3", more}, nil},
			{"add text, gone, dry run", "", []string{"add", "--text", "--prune", "--dry-run", more}, func() {
				require.NoError(t, os.Remove(filepath.Join(more, "new.txt")))
			}},
			{"add text, prune", "", []string{"add", "--text", "--prune", more}, nil},
			{"export after add", "", []string{"export"}, nil},
			{"add its export", export.stdout, []string{"add"}, nil},
			{"add its export, a flag against it", export.stdout, []string{"add", "--shingle", "4"}, nil},
			{"find-all after add", "", []string{"find-all"}, nil},
		})
	})
}

// sameCase is a command run over --db and over --server, after before
// (if any).
type sameCase struct {
	name   string
	stdin  string
	args   []string
	before func()
}

// sameAsDB runs each case on the index in local with --db and on a copy
// of it served with --server, and requires the same output.
func sameAsDB(t *testing.T, local string, cases []sameCase) {
	served := filepath.Join(t.TempDir(), "served")
	require.NoError(t, os.CopyFS(served, os.DirFS(local)))
	s := startServe(t, "--db", served)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.before != nil {
				tc.before()
			}
			want := runCLI(t, tc.stdin, append(tc.args, "--db", local)...)
			got := runCLI(t, tc.stdin, append(tc.args, "--server", s.url)...)
			require.Equal(t, want.code, got.code, "exit code: --db %q, --server %q", want.stderr, got.stderr)
			require.Equal(t, cacheShare.ReplaceAllString(want.stdout, "$1"), cacheShare.ReplaceAllString(got.stdout, "$1"))
			require.Equal(t, strings.ReplaceAll(want.stderr, local, "INDEX"), strings.ReplaceAll(got.stderr, s.url, "INDEX"))
		})
	}
}

// cacheShare is Pebble's share of the cache in stats: serve leaves part of
// the memory to the batch bodies in flight, so its default cache is the
// smaller one.
var cacheShare = regexp.MustCompile(`(Pebble's share of the cache may grow to )[0-9]+`)

// TestServeMemoryBound: serve says the memory bound it keeps, from its
// flags, and leaves the runtime's limit to GOMEMLIMIT when that is set.
func TestServeMemoryBound(t *testing.T) {
	s := startServeBinary(t, binary, "--db", t.TempDir(), "--max-inflight-bytes", "64MiB", "--cache-size", "256MiB", "--memtable-size", "64MiB")
	// A new index's directories are a few bytes.
	assert.Regexp(t, `memory bound 576 MiB: 64 MiB in flight \(twice that decoded\), 256 MiB of cache, 128 MiB of memtables, [0-9]+ B of directories and 64 MiB besides \(GOMEMLIMIT overrides\)`, s.log())
	assert.Equal(t, 0, s.stop(t, syscall.SIGTERM), s.log())

	t.Setenv("GOMEMLIMIT", "1GiB")
	s = startServeBinary(t, binary, "--db", t.TempDir(), "--max-inflight-bytes", "64MiB", "--cache-size", "256MiB", "--memtable-size", "64MiB")
	assert.Contains(t, s.log(), "GOMEMLIMIT is set and kept")
	assert.NotContains(t, s.log(), "memory bound")
	assert.Equal(t, 0, s.stop(t, syscall.SIGTERM), s.log())
}

// TestServeDirectReads: `serve --reads direct` reads the index with
// O_DIRECT through the ring, stats says so, and answers as without it; a
// mode that is none, or that contradicts the former flag, is refused.
func TestServeDirectReads(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "idx")
	r := runCLI(t, "1 0x0123456789abcdef\n2 0x0123456789abcdee\n", "add", "--db", db, "--sync", "none")
	require.Equal(t, 0, r.code, r.stderr)
	for _, bad := range [][]string{{"--reads", "fast"}, {"--direct-reads", "--reads", "blocking"}} {
		r = runCLI(t, "", append([]string{"serve", "--db", db}, bad...)...)
		assert.Equal(t, 2, r.code, "%v: a usage error", bad)
		assert.Contains(t, r.stderr, "--reads", bad)
	}
	s := startServe(t, "--db", db, "--reads", "direct")
	r = runCLI(t, "", "stats", "--server", s.url)
	require.Equal(t, 0, r.code, r.stderr)
	if strings.Contains(r.stdout, "with pread") {
		t.Skip("no io_uring here: --reads direct has nothing to read through")
	}
	assert.Contains(t, r.stdout, "with O_DIRECT what the page cache does not hold (--reads direct")
	r = runCLI(t, "", "query", "--server", s.url, "--fp", "0x0123456789abcdef", "--k", "1")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "2 within distance 1")
	r = runCLI(t, "3 0x1\n", "add", "--server", s.url, "--reads", "direct")
	assert.Equal(t, 2, r.code, "a flag of the index opened here, refused with --server")
	assert.Contains(t, r.stderr, "--reads")
}

// TestServeReadOnly: `serve --read-only` answers queries of an index that
// exists, refuses writes as the API does (403, engine.ErrReadOnly), still asks
// for the token, and refuses what would write or create an index.
func TestServeReadOnly(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "idx")
	tokenFile := filepath.Join(dir, "token")
	require.NoError(t, os.WriteFile(tokenFile, []byte("s3cret\n"), 0o600))
	r := runCLI(t, "1 0x0123456789abcdef one\n2 0x0123456789abcdee two\n", "add", "--db", db, "--sync", "none")
	require.Equal(t, 0, r.code, r.stderr)

	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--db", filepath.Join(dir, "none")}, 1, "none: no such folder"},
		{[]string{"--db", db, "--nats", "nats://127.0.0.1:1"}, 2, "--read-only serves an index as it is"},
		{[]string{"--db", db, "--sketches"}, 2, "--sketches is for an index that is written"},
		{[]string{"--db", db, "--design", "disk"}, 2, "--design is for an index that is written"},
	} {
		r := runCLI(t, "", append([]string{"serve", "--read-only", "--addr", "127.0.0.1:0"}, tc.args...)...)
		assert.Equal(t, tc.code, r.code, "%v: %s", tc.args, r.stderr)
		assert.Contains(t, r.stderr, tc.want, "%v", tc.args)
	}

	s := startServe(t, "--db", db, "--read-only", "--token-file", tokenFile)
	assert.Contains(t, s.log(), "idx, read-only, K = 3")
	code, body, err := httpDo("GET", s.url+"/v1/query?fp=0x0123456789abcdef&k=1", "", "")
	require.NoError(t, err)
	assert.Equal(t, 401, code, "no token: %s", body)
	remote := []string{"--server", s.url, "--token-file", tokenFile}
	r = runCLI(t, "", append([]string{"query", "--fp", "0x0123456789abcdef", "--k", "1"}, remote...)...)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "2 within distance 1")
	code, body, err = httpDo("PUT", s.url+"/v1/documents/7", `{"fingerprint":"0x0123456789abcdef","name":"seven"}`, "s3cret")
	require.NoError(t, err)
	assert.Equal(t, 403, code, body)
	assert.Contains(t, body, "read-only")
	r = runCLI(t, "3 0x1\n", append([]string{"add"}, remote...)...)
	assert.NotEqual(t, 0, r.code)
	assert.Contains(t, r.stderr, "read-only")
	assert.Equal(t, 0, s.stop(t, syscall.SIGTERM), s.log())
	assert.Contains(t, s.log(), "serve: stopped\n")

	// Nothing written: the index holds what it held.
	r = runCLI(t, "", "get", "--db", db, "1", "2", "7")
	assert.Equal(t, "1 0x0123456789abcdef one\n2 0x0123456789abcdee two\n", r.stdout)
	assert.Contains(t, r.stderr, "7: not stored")
}
