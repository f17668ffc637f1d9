package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/simhashdb/simhashdb/engine"
	"github.com/simhashdb/simhashdb/internal/memhold"
	"github.com/stretchr/testify/require"
)

// BenchmarkServeMemory sends many large POST /v1/documents bodies at once
// to a "simhashdb serve" process with --max-inflight-bytes 64 MiB and
// reports its peak RSS (the kernel's VmHWM), and its ratio to the bound
// serve keeps with --cache-size 256 MiB, beside what each client got:
// every one an answer, 200 or 503 with Retry-After, none a cut
// connection. SIMHASHDB_SERVE_BINARY runs another build of the command (a
// baseline) under the same load.
func BenchmarkServeMemory(b *testing.B) {
	bin := binary
	if alt := os.Getenv("SIMHASHDB_SERVE_BINARY"); alt != "" {
		bin = alt
	}
	const (
		lines    = 100_000
		lineLen  = 568 // 56.8 MB a body
		inflight = 64 << 20
		cache    = 256 << 20
		// The bound serve keeps: in flight (decoded), cache, two
		// memtables, 64 MiB.
		bound = inflightDecoded*inflight + cache + 2*engine.DefaultMemtableSize + memhold.Other
	)
	for _, clients := range []int{12, 48} {
		b.Run(fmt.Sprintf("clients=%d", clients), func(b *testing.B) {
			for range b.N {
				srv := startServeBinary(b, bin, "--db", b.TempDir(), "--max-inflight-bytes", strconv.Itoa(inflight), "--cache-size", strconv.Itoa(cache))
				var mu sync.Mutex
				codes := map[string]int{}
				var wg sync.WaitGroup
				for c := range clients {
					wg.Add(1)
					go func() {
						defer wg.Done()
						body := &docLines{client: c, lines: lines, lineLen: lineLen}
						req, err := http.NewRequest("POST", srv.url+"/v1/documents", body)
						if err != nil {
							panic(err)
						}
						req.ContentLength = int64(lines * lineLen)
						what := ""
						resp, err := http.DefaultClient.Do(req)
						if err != nil {
							what = "error: " + err.Error()
						} else {
							io.Copy(io.Discard, resp.Body)
							resp.Body.Close()
							what = strconv.Itoa(resp.StatusCode)
							if resp.StatusCode == http.StatusServiceUnavailable && resp.Header.Get("Retry-After") == "" {
								what += " without Retry-After"
							}
						}
						mu.Lock()
						codes[what]++
						mu.Unlock()
					}()
				}
				wg.Wait()
				peak := peakRSS(b, srv.cmd.Process.Pid)
				b.ReportMetric(float64(peak)/(1<<20), "peak-MiB")
				b.ReportMetric(float64(peak)/bound, "peak/bound")
				b.ReportMetric(float64(codes["200"]), "stored-bodies")
				b.Logf("%d clients: %v; peak RSS %d MiB, the bound %d MiB", clients, codes, peak>>20, bound>>20)
				for what := range codes {
					if what != "200" && what != "503" {
						b.Errorf("a client got %s", what)
					}
				}
				srv.cmd.Process.Kill()
				srv.cmd.Wait()
			}
		})
	}
}

// docLines generates a body of JSON document lines, each lineLen bytes
// with its newline, without holding it.
type docLines struct {
	client, lines, lineLen int
	n                      int
	pending                []byte
}

func (d *docLines) Read(p []byte) (int, error) {
	for len(d.pending) == 0 {
		if d.n == d.lines {
			return 0, io.EOF
		}
		id := d.client*d.lines + d.n
		head := fmt.Sprintf(`{"id":%d,"fingerprint":"0x%016x","name":"https://example.com/`, id, uint64(id)*0x9e3779b97f4a7c15)
		d.pending = []byte(head + strings.Repeat("p", d.lineLen-len(head)-3) + "\"}\n")
		d.n++
	}
	n := copy(p, d.pending)
	d.pending = d.pending[n:]
	return n, nil
}

// peakRSS is a process's peak resident memory, from /proc.
func peakRSS(tb testing.TB, pid int) int64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	require.NoError(tb, err)
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			require.NoError(tb, err)
			return kb << 10
		}
	}
	tb.Fatal("no VmHWM in /proc status")
	return 0
}
