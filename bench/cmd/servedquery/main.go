// Command servedquery measures a single query served by simhashdb serve's
// handler against a bare handler of the same stack (net/http and
// connect-go, the same http.Server settings) that answers a fixed result,
// each driven by wrk, the load generator (apt-get install wrk), at 1 and at
// 32 connections: the served query's cost over what the stack alone costs.
// Queries are Connect's JSON (POST .../Query), random fingerprints one bit
// from stored ones, over an index of -n uniform fingerprints.
//
//	go run ./bench/cmd/servedquery -n 1000000 -d 10s
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"connectrpc.com/connect"
	"github.com/simhashdb/simhashdb/engine"
	simhashdbv1 "github.com/simhashdb/simhashdb/gen/simhashdb/v1"
	"github.com/simhashdb/simhashdb/gen/simhashdb/v1/simhashdbv1connect"
	"github.com/simhashdb/simhashdb/internal/fingerprints"
	"github.com/simhashdb/simhashdb/server"
	"github.com/simhashdb/simhashdb/simhash"
)

// fixed answers every query with the same match.
type fixed struct {
	simhashdbv1connect.UnimplementedIndexServiceHandler
}

func (fixed) Query(_ context.Context, req *connect.Request[simhashdbv1.QueryRequest]) (*connect.Response[simhashdbv1.QueryResponse], error) {
	fp := req.Msg.GetContent().GetFingerprint()
	return connect.NewResponse(&simhashdbv1.QueryResponse{Fingerprint: fp,
		Matches: []*simhashdbv1.Match{{Id: 1, Fingerprint: fp ^ 1, Distance: 1}}}), nil
}

func main() {
	n := flag.Int("n", 1_000_000, "stored fingerprints")
	dur := flag.Duration("d", 10*time.Second, "how long wrk runs each case")
	flag.Parse()
	if *n < 1 || *dur <= 0 {
		log.Fatalf("servedquery: -n %d -d %v: want at least one stored fingerprint and a positive duration", *n, *dur)
	}
	if _, err := exec.LookPath("wrk"); err != nil {
		log.Fatal("servedquery needs wrk, the load generator: apt-get install wrk")
	}
	dir, err := os.MkdirTemp("", "servedquery")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	db, err := engine.Open(filepath.Join(dir, "idx"), engine.Options{SizeHint: int64(*n), Sync: engine.SyncNone})
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	fps := fingerprints.Uniform(*n, 1)
	docs := make([]engine.Doc, *n)
	for i, fp := range fps {
		docs[i] = engine.Doc{ID: uint64(i), Fingerprint: fp, Name: fmt.Sprintf("https://example.com/%d", i)}
	}
	if err := db.Load(context.Background(), engine.DocsOf(docs)); err != nil {
		log.Fatal(err)
	}
	_, bare := simhashdbv1connect.NewIndexServiceHandler(fixed{})
	served := serve(server.New(db, server.Options{Fingerprinter: simhash.Default()}))
	fixedURL := serve(bare)
	script := filepath.Join(dir, "query.lua")
	if err := os.WriteFile(script, []byte(luaScript(fps)), 0o644); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("# %d stored; wrk %v a case; Connect JSON POST /simhashdb.v1.IndexService/Query\n", *n, *dur)
	fmt.Println("| connections | handler | requests/s | p50 | p99 |")
	fmt.Println("|---:|---|---:|---:|---:|")
	for _, conns := range []int{1, 32} {
		for _, h := range []struct{ name, url string }{{"bare (fixed answer)", fixedURL}, {"served query", served}} {
			rps, p50, p99 := wrk(h.url, script, conns, *dur)
			fmt.Printf("| %d | %s | %.0f | %s | %s |\n", conns, h.name, rps, p50, p99)
		}
	}
}

// serve serves h as simhashdb serve's http.Server does, on a free loopback
// port, and returns its URL.
func serve(h http.Handler) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second, ReadTimeout: time.Minute, WriteTimeout: 10 * time.Minute, IdleTimeout: 2 * time.Minute}
	srv.Protocols = new(http.Protocols)
	srv.Protocols.SetHTTP1(true)
	srv.Protocols.SetUnencryptedHTTP2(true)
	go srv.Serve(ln)
	return "http://" + ln.Addr().String()
}

// luaScript is wrk's script: POST a query of a random fingerprint one bit
// from a stored one, of 4096 chosen with a fixed seed.
func luaScript(fps []uint64) string {
	r := rand.New(rand.NewPCG(7, 8))
	var qs []string
	for range 4096 {
		q := fps[r.IntN(len(fps))] ^ 1<<r.IntN(64)
		qs = append(qs, fmt.Sprintf(`'{"content":{"fingerprint":"%d"},"k":3}'`, q))
	}
	return `wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
local bodies = {` + strings.Join(qs, ",") + `}
local i = 0
request = function()
  i = i % #bodies + 1
  return wrk.format(nil, "/simhashdb.v1.IndexService/Query", nil, bodies[i])
end
`
}

var (
	rpsRe = regexp.MustCompile(`Requests/sec:\s+([0-9.]+)`)
	p50Re = regexp.MustCompile(`\n\s+50%\s+(\S+)`)
	p99Re = regexp.MustCompile(`\n\s+99%\s+(\S+)`)
	errRe = regexp.MustCompile(`Non-2xx or 3xx responses: (\d+)`)
)

// wrk runs wrk against url and returns requests/s and the p50 and p99
// latencies it prints.
func wrk(url, script string, conns int, d time.Duration) (float64, string, string) {
	threads := min(conns, 2)
	out, err := exec.Command("wrk", "-t", fmt.Sprint(threads), "-c", fmt.Sprint(conns), "-d", d.String(), "--latency", "-s", script, url).CombinedOutput()
	if err != nil {
		log.Fatalf("wrk: %v\n%s", err, out)
	}
	if m := errRe.FindSubmatch(out); m != nil {
		log.Fatalf("wrk: %s answers not 200:\n%s", m[1], out)
	}
	m, p50, p99 := rpsRe.FindSubmatch(out), p50Re.FindSubmatch(out), p99Re.FindSubmatch(out)
	if m == nil || p50 == nil || p99 == nil {
		log.Fatalf("wrk printed no figures:\n%s", out)
	}
	var rps float64
	fmt.Sscan(string(m[1]), &rps)
	return rps, string(p50[1]), string(p99[1])
}
