package engine_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/simhashdb/simhashdb/engine"
	"github.com/simhashdb/simhashdb/vfs"
)

// An index in a folder: insert documents, then ask for near-duplicates.
func Example() {
	dir, _ := os.MkdirTemp("", "simhashdb-example-")
	defer os.RemoveAll(dir)
	ctx := context.Background()
	quiet := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	db, err := engine.Open(dir, engine.Options{K: 3, Logger: quiet})
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	docs := []engine.Doc{
		{ID: 1, Fingerprint: 0x0123456789abcdef, Name: "https://example.com/a"},
		{ID: 2, Fingerprint: 0x0123456789abcdee, Name: "https://example.com/a?utm=x"}, // 1 bit away
		{ID: 3, Fingerprint: 0xfedcba9876543210, Name: "https://example.com/b"},
	}
	if err := db.InsertBatch(ctx, docs); err != nil {
		log.Fatal(err)
	}
	matches, err := db.Query(ctx, 0x0123456789abcdef, 3)
	if err != nil {
		log.Fatal(err)
	}
	for _, m := range matches {
		fmt.Println(m.ID, m.Name, m.Distance)
	}
	// Output:
	// 1 https://example.com/a 0
	// 2 https://example.com/a?utm=x 1
}

// The crawler's decision: store a page only if nothing near it is stored.
func ExampleDB_InsertIfNew() {
	dir, _ := os.MkdirTemp("", "simhashdb-example-")
	defer os.RemoveAll(dir)
	ctx := context.Background()
	quiet := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	db, err := engine.Open(dir, engine.Options{Logger: quiet})
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	for _, d := range []engine.Doc{
		{ID: 1, Fingerprint: 0xf0f0f0f0f0f0f0f0, Name: "first"},
		{ID: 2, Fingerprint: 0xf0f0f0f0f0f0f0f3, Name: "near the first"},
	} {
		dups, inserted, err := db.InsertIfNew(ctx, d, 3)
		if err != nil {
			log.Fatal(err)
		}
		if inserted {
			fmt.Println(d.Name, "is new")
		} else {
			fmt.Println(d.Name, "duplicates", dups[0].Name, "at distance", dups[0].Distance)
		}
	}
	// Output:
	// first is new
	// near the first duplicates first at distance 2
}

// Millions of documents into an empty index: sorted tables handed to Pebble.
func ExampleDB_Load() {
	dir, _ := os.MkdirTemp("", "simhashdb-example-")
	defer os.RemoveAll(dir)
	ctx := context.Background()
	quiet := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	db, err := engine.Open(dir, engine.Options{SizeHint: 1 << 20, Logger: quiet})
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	// The documents as a sequence: from a file, a query, or made as here;
	// a slice goes through engine.DocsOf, and db.Docs copies an index.
	docs := func(yield func(engine.Doc, error) bool) {
		for i := range 100000 {
			if !yield(engine.Doc{ID: uint64(i), Fingerprint: uint64(i) * 0x9e3779b97f4a7c15}, nil) {
				return
			}
		}
	}
	if err := db.Load(ctx, docs); err != nil {
		log.Fatal(err)
	}
	st, err := db.Stats(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(st.Documents, "documents in", len(st.Tables), "tables")
	// Output:
	// 100000 documents in 10 tables
}

// openExample opens a throwaway index holding a near-duplicate pair, an
// exact duplicate and a loner.
func openExample() (*engine.DB, func()) {
	dir, _ := os.MkdirTemp("", "simhashdb-example-")
	quiet := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	db, err := engine.Open(dir, engine.Options{Logger: quiet})
	if err != nil {
		log.Fatal(err)
	}
	docs := []engine.Doc{
		{ID: 1, Fingerprint: 0x0123456789abcdef, Name: "a"},
		{ID: 2, Fingerprint: 0x0123456789abcdee, Name: "a, edited"}, // 1 bit from a
		{ID: 3, Fingerprint: 0x0123456789abcdef, Name: "a, copied"}, // a's fingerprint
		{ID: 4, Fingerprint: 0xfedcba9876543210, Name: "b"},
	}
	if err := db.Load(context.Background(), engine.DocsOf(docs)); err != nil {
		log.Fatal(err)
	}
	return db, func() { db.Close(); os.RemoveAll(dir) }
}

// A loop of queries that reuses one buffer: on a warm index each allocates
// nothing.
func ExampleDB_QueryAppend() {
	db, done := openExample()
	defer done()
	var buf []engine.Match
	for _, q := range []uint64{0xfedcba9876543211, 0x0000000000000000} {
		var err error
		if buf, err = db.QueryAppend(context.Background(), buf[:0], q, 2); err != nil {
			log.Fatal(err)
		}
		fmt.Printf("%#x: %d matches\n", q, len(buf))
	}
	// Output:
	// 0xfedcba9876543211: 1 matches
	// 0x0: 0 matches
}

// Whether the index holds a near-duplicate, and which fingerprints: a
// crawler's question about a fresh page. A read-only open of a flushed
// index answers it from the tables alone, one read of the disk a table
// where its blocks are not cached; Query would also read the documents.
func ExampleDB_QueryFingerprints() {
	dir, _ := os.MkdirTemp("", "simhashdb-example-")
	defer os.RemoveAll(dir)
	ctx := context.Background()
	db, err := engine.Open(dir, engine.Options{})
	if err != nil {
		log.Fatal(err)
	}
	err = db.InsertBatch(ctx, []engine.Doc{
		{ID: 1, Fingerprint: 0xf0f0f0f0f0f0f0f0, Name: "a"},
		{ID: 2, Fingerprint: 0xf0f0f0f0f0f0f0f0, Name: "a, copied"},
		{ID: 3, Fingerprint: 0xf0f0f0f0f0f0f0f7, Name: "a, edited"},
	})
	if err != nil {
		log.Fatal(err)
	}
	// Flushed: the writes leave the log for the tables, so the read-only
	// open below has none in memory.
	if err := db.Flush(ctx); err != nil {
		log.Fatal(err)
	}
	if err := db.Close(); err != nil {
		log.Fatal(err)
	}
	db, err = engine.Open(dir, engine.Options{ReadOnly: true})
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	near, err := db.QueryFingerprints(ctx, nil, 0xf0f0f0f0f0f0f0f1, 3)
	if err != nil {
		log.Fatal(err)
	}
	for _, n := range near {
		fmt.Printf("%#x at %d\n", n.Fingerprint, n.Distance)
	}
	// Output:
	// 0xf0f0f0f0f0f0f0f0 at 1
	// 0xf0f0f0f0f0f0f0f7 at 2
}

// A service warms the cache once after opening, so that its first queries
// find their blocks decoded; Stats says what the default budget came to.
func ExampleDB_Warm() {
	db, done := openExample()
	defer done()
	ctx := context.Background()
	if err := db.Warm(ctx); err != nil {
		log.Fatal(err)
	}
	st, err := db.Stats(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("cached:", st.CacheBytes > 0, "within the budget:", st.CacheBytes <= st.CacheSize)
	// Output:
	// cached: true within the budget: true
}

// Many queries at once: results come back in the order asked.
func ExampleDB_QueryBatch() {
	db, done := openExample()
	defer done()
	queries := []uint64{0xfedcba9876543211, 0x0000000000000000}
	for r, err := range db.QueryBatch(context.Background(), queries, 2) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("query %d: %d matches\n", r.Index, len(r.Matches))
		for _, m := range r.Matches {
			fmt.Println("  ", m.Name, m.Distance)
		}
	}
	// Output:
	// query 0: 1 matches
	//    b 1
	// query 1: 0 matches
}

// Every pair of documents within a distance, and the groups they form.
func ExampleDB_FindAll() {
	db, done := openExample()
	defer done()
	ctx := context.Background()
	for p, err := range db.FindAll(ctx, 3) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("%s ~ %s (%d)\n", p.A.Name, p.B.Name, p.Distance)
	}
	for c, err := range db.Clusters(ctx, 3) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println("cluster of", len(c), "starting with", c[0].Name)
	}
	// Output:
	// a ~ a, copied (0)
	// a ~ a, edited (1)
	// a, edited ~ a, copied (1)
	// cluster of 3 starting with a
}

// An index kept in memory (Options.FS): for tests and short-lived
// indexes, gone when the process ends.
func ExampleOptions_inMemory() {
	db, err := engine.Open("/index", engine.Options{FS: vfs.NewMem(), Sync: engine.SyncNone})
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	if err := db.Insert(ctx, engine.Doc{ID: 1, Fingerprint: 0x0123456789abcdef, Name: "a"}); err != nil {
		log.Fatal(err)
	}
	ms, err := db.Query(ctx, 0x0123456789abcdee, 3)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(ms[0].Name, ms[0].Distance)
	// Output:
	// a 1
}

// The memory an index works within, for a process that bounds its own
// (as the simhashdb command does with runtime/debug.SetMemoryLimit). The
// index is given 1 GiB; the defaults take a quarter for the cache and two
// sixteenths for the memtables.
func ExampleDB_MemoryBudget() {
	db, err := engine.Open("/index", engine.Options{FS: vfs.NewMem(), MemoryLimit: 1 << 30})
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	b := db.MemoryBudget()
	fmt.Printf("cache %d MiB, memtables at most %d MiB\n", b.Cache>>20, b.Memtables>>20)
	// Output:
	// cache 256 MiB, memtables at most 128 MiB
}

// A replica applying a replicated log: each message's commit carries the
// message's sequence number, so that the index says where to resume after
// a crash (Applied) and a message delivered again is applied once.
func ExampleDB_Apply() {
	dir, _ := os.MkdirTemp("", "simhashdb-example-")
	defer os.RemoveAll(dir)
	ctx := context.Background()
	// The stream's servers hold the log durably: the replica need not sync.
	db, err := engine.Open(dir, engine.Options{Sync: engine.SyncNone})
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	stream := []engine.Commit{
		{Position: 1, Insert: []engine.Doc{{ID: 1, Fingerprint: 0x0123456789abcdef, Name: "https://example.com/a"}}},
		{Position: 2, Insert: []engine.Doc{{ID: 2, Fingerprint: 0xfedcba9876543210, Name: "https://example.com/b"}}},
		{Position: 3, Delete: []uint64{1}},
	}
	for _, c := range stream[db.Applied():] { // resume after what the index holds
		if err := db.Apply(ctx, c); err != nil {
			log.Fatal(err)
		}
	}
	err = db.Apply(ctx, stream[1]) // delivered again
	fmt.Println(db.Applied(), errors.Is(err, engine.ErrApplied))
	// Output: 3 true
}

// A new replica starts from a copy of a peer's index and applies the log
// after the copy's position.
func ExampleDB_Checkpoint() {
	dir, _ := os.MkdirTemp("", "simhashdb-example-")
	defer os.RemoveAll(dir)
	ctx := context.Background()
	peer, err := engine.Open(filepath.Join(dir, "peer"), engine.Options{Sync: engine.SyncNone})
	if err != nil {
		log.Fatal(err)
	}
	defer peer.Close()
	for p := uint64(1); p <= 3; p++ {
		if err := peer.Apply(ctx, engine.Commit{Position: p, Insert: []engine.Doc{{ID: p, Fingerprint: p << 40}}}); err != nil {
			log.Fatal(err)
		}
	}
	applied, err := peer.Checkpoint(ctx, filepath.Join(dir, "new"))
	if err != nil {
		log.Fatal(err)
	}
	db, err := engine.Open(filepath.Join(dir, "new"), engine.Options{Sync: engine.SyncNone})
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	fmt.Println(applied, db.Applied())
	err = db.Apply(ctx, engine.Commit{Position: applied + 1, Delete: []uint64{1}})
	fmt.Println(err, db.Applied())
	// Output:
	// 3 3
	// <nil> 4
}

// An index opened read-only to serve queries: by default (ReadsAuto) it is
// read with O_DIRECT when it is more than 1.2 times the memory the process
// may use; a service that knows better names the mode.
func ExampleReadMode() {
	dir, _ := os.MkdirTemp("", "simhashdb-example-")
	defer os.RemoveAll(dir)
	ctx := context.Background()
	db, err := engine.Open(dir, engine.Options{Sync: engine.SyncNone})
	if err != nil {
		log.Fatal(err)
	}
	if err := db.Insert(ctx, engine.Doc{ID: 1, Fingerprint: 0x0123456789abcdef}); err != nil {
		log.Fatal(err)
	}
	if err := db.Close(); err != nil {
		log.Fatal(err)
	}
	mode, err := engine.ParseReadMode("buffered") // a flag's value
	if err != nil {
		log.Fatal(err)
	}
	db, err = engine.Open(dir, engine.Options{ReadOnly: true, Reads: mode})
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	st, err := db.Stats(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("direct:", st.ReadDirect)
	// Output: direct: false
}
