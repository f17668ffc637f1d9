package client_test

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"os"

	"github.com/simhashdb/simhashdb/api"
	"github.com/simhashdb/simhashdb/client"
	"github.com/simhashdb/simhashdb/engine"
	"github.com/simhashdb/simhashdb/server"
	"github.com/simhashdb/simhashdb/simhash"
)

// A served index used as the embedded one is: the same documents,
// matches and errors. (Here the server runs in the example's process; a
// real one is `simhashdb serve --db DIR`.)
func Example() {
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	db, err := engine.Open(dir, engine.Options{})
	if err != nil {
		panic(err)
	}
	defer db.Close()
	ts := httptest.NewServer(server.New(db, server.Options{Fingerprinter: simhash.Default()}))
	defer ts.Close()

	ctx := context.Background()
	c, err := client.New(ts.URL, client.Options{})
	if err != nil {
		panic(err)
	}
	if err := c.InsertBatch(ctx, []engine.Doc{
		{ID: 1, Fingerprint: 0x0123456789abcdef, Name: "https://example.com/a"},
		{ID: 2, Fingerprint: 0x0123456789abcdee, Name: "https://example.com/b"},
		{ID: 3, Fingerprint: 0xfedcba9876543210, Name: "https://example.com/c"},
	}); err != nil {
		panic(err)
	}
	ms, err := c.Query(ctx, 0x0123456789abcdef, 3)
	if err != nil {
		panic(err)
	}
	for _, m := range ms {
		fmt.Println(m.ID, m.Name, m.Distance)
	}
	_, err = c.Get(ctx, 4)
	fmt.Println(errors.Is(err, engine.ErrNotFound))
	// Output:
	// 1 https://example.com/a 0
	// 2 https://example.com/b 1
	// true
}

// An index split over two shards by document id (each shard a server, or
// a replicated index's nodes comma separated): every answer is the one
// index's, pairs across shards included.
func ExampleSharded() {
	var shards []string
	for range 2 {
		dir, _ := os.MkdirTemp("", "example")
		defer os.RemoveAll(dir)
		db, err := engine.Open(dir, engine.Options{})
		if err != nil {
			panic(err)
		}
		defer db.Close()
		ts := httptest.NewServer(server.New(db, server.Options{}))
		defer ts.Close()
		shards = append(shards, ts.URL)
	}
	ctx := context.Background()
	s, err := client.NewSharded(shards, client.Options{})
	if err != nil {
		panic(err)
	}
	if err := s.InsertBatch(ctx, []engine.Doc{
		{ID: 1, Fingerprint: 0x0123456789abcdef}, {ID: 2, Fingerprint: 0x0123456789abcdee},
		{ID: 3, Fingerprint: 0x0123456789abcdec}, {ID: 4, Fingerprint: 0xfedcba9876543210},
	}); err != nil {
		panic(err)
	}
	fmt.Println(api.ShardOf(1, 2), api.ShardOf(2, 2), api.ShardOf(3, 2), api.ShardOf(4, 2))
	for p, err := range s.FindAll(ctx, 3) {
		if err != nil {
			panic(err)
		}
		fmt.Println(p.A.ID, p.B.ID, p.Distance)
	}
	// Unordered output:
	// 1 0 1 0
	// 1 2 1
	// 1 3 2
	// 2 3 1
}

// A router in front of two shards (simhashdb route): one address, whose
// clients (here the Go client, any gRPC or Connect client alike) get the
// one index's answers without placing documents themselves.
func ExampleSharded_Service() {
	var shards []string
	for range 2 {
		dir, _ := os.MkdirTemp("", "example")
		defer os.RemoveAll(dir)
		db, err := engine.Open(dir, engine.Options{})
		if err != nil {
			panic(err)
		}
		defer db.Close()
		ts := httptest.NewServer(server.New(db, server.Options{}))
		defer ts.Close()
		shards = append(shards, ts.URL)
	}
	s, err := client.NewSharded(shards, client.Options{})
	if err != nil {
		panic(err)
	}
	router := httptest.NewServer(server.NewRouter(s.Service(), server.Options{}))
	defer router.Close()

	ctx := context.Background()
	c, err := client.New(router.URL, client.Options{})
	if err != nil {
		panic(err)
	}
	if err := c.InsertBatch(ctx, []engine.Doc{
		{ID: 1, Fingerprint: 0x0123456789abcdef}, {ID: 2, Fingerprint: 0x0123456789abcdee},
		{ID: 3, Fingerprint: 0xfedcba9876543210},
	}); err != nil {
		panic(err)
	}
	ms, err := c.Query(ctx, 0x0123456789abcdef, 3)
	if err != nil {
		panic(err)
	}
	for _, m := range ms {
		fmt.Println(m.ID, m.Distance, "on shard", api.ShardOf(m.ID, 2))
	}
	// Output:
	// 1 0 on shard 1
	// 2 1 on shard 0
}
