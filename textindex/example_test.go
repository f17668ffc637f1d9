package textindex_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"strings"

	"github.com/simhashdb/simhashdb/engine"
	"github.com/simhashdb/simhashdb/simhash"
	"github.com/simhashdb/simhashdb/textindex"
)

// Verify over the engine directly: documents read by a Reader and stored
// with their sketches, a query's matches verified.
func ExampleVerify() {
	dir, err := os.MkdirTemp("", "textindex")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	db, err := engine.Open(dir, textindex.Options(engine.Options{}))
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	f, err := simhash.New(simhash.Options{Shingle: textindex.Shingle})
	if err != nil {
		log.Fatal(err)
	}
	rd, err := textindex.NewReader(f, simhash.ReadText, db.SketchSize())
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	page := "the quick brown fox jumps over the lazy dog while the cat sleeps on the warm mat by the door of the old house near the river"
	for i, text := range []string{
		page,
		"a completely different text about databases, indexes, tables and the blocks they keep on disk for fast queries",
	} {
		fp, sk, err := rd.Read(strings.NewReader(text))
		if err != nil {
			log.Fatal(err)
		}
		if err := db.Insert(ctx, engine.Doc{ID: uint64(i + 1), Fingerprint: fp, Name: fmt.Sprint("page ", i+1), Sketch: sk}); err != nil {
			log.Fatal(err)
		}
	}
	// The same page with its last word changed.
	fp, sk, err := rd.Read(strings.NewReader(strings.Replace(page, "river", "sea", 1)))
	if err != nil {
		log.Fatal(err)
	}
	ms, err := db.Query(ctx, fp, db.K())
	if err != nil {
		log.Fatal(err)
	}
	for _, m := range textindex.Verify(ms, sk, textindex.DefaultSimilarity) {
		fmt.Println(m.Name)
	}
	// Output:
	// page 1
}

// A text index: documents added as text, then asked which stored ones are
// near-duplicates of a new one, each with its estimated similarity.
func Example() {
	dir, err := os.MkdirTemp("", "textindex")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	ctx := context.Background()
	ix, err := textindex.Open(ctx, dir, engine.Options{}, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer ix.Close()
	page := "the quick brown fox jumps over the lazy dog while the cat sleeps on the warm mat by the door of the old house near the river"
	if err := ix.AddString(ctx, 1, "page 1", page); err != nil {
		log.Fatal(err)
	}
	if err := ix.AddString(ctx, 2, "page 2", "a completely different text about databases, indexes, tables and the blocks they keep on disk"); err != nil {
		log.Fatal(err)
	}
	ms, err := ix.Similar(ctx, strings.NewReader(strings.Replace(page, "river", "sea", 1)), textindex.DefaultSimilarity)
	if err != nil {
		log.Fatal(err)
	}
	for _, m := range ms {
		fmt.Printf("%s, similarity %.2f\n", m.Name, m.Similarity)
	}
	// Output:
	// page 1, similarity 0.94
}

// All pairs of an index made for similarities from 0.5: found by its band
// keys, by sorts on disk within the memory given, whatever the corpus.
func ExamplePairsWith() {
	dir, err := os.MkdirTemp("", "textindex")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	opts, err := textindex.OptionsAt(engine.Options{}, 0.5)
	if err != nil {
		log.Fatal(err)
	}
	db, err := engine.Open(dir, opts)
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	f, err := simhash.New(simhash.Options{Shingle: textindex.Shingle})
	if err != nil {
		log.Fatal(err)
	}
	rd, err := textindex.NewReader(f, simhash.ReadText, db.SketchSize())
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	page := "the quick brown fox jumps over the lazy dog while the cat sleeps on the warm mat by the door of the old house near the river"
	for i, text := range []string{
		page,
		strings.Replace(page, "river", "sea", 1),
		"a completely different text about databases, indexes, tables and the blocks they keep on disk for fast queries",
	} {
		fp, sk, err := rd.Read(strings.NewReader(text))
		if err != nil {
			log.Fatal(err)
		}
		if err := db.Insert(ctx, engine.Doc{ID: uint64(i + 1), Fingerprint: fp, Name: fmt.Sprint("page ", i+1), Sketch: sk}); err != nil {
			log.Fatal(err)
		}
	}
	for p, err := range textindex.PairsWith(ctx, db, db.K(), 0.5, textindex.JoinOptions{Memory: 16 << 20}) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("%s and %s, similarity %.2f\n", p.A.Name, p.B.Name, p.Similarity)
	}
	// Output:
	// page 1 and page 2, similarity 0.94
}
