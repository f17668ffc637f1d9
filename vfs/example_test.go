package vfs_test

import (
	"context"
	"fmt"

	"github.com/simhashdb/simhashdb/engine"
	"github.com/simhashdb/simhashdb/vfs"
)

// An index kept in memory, as a test of code that embeds the engine might
// open one: no folder to make or remove.
func ExampleNewMem() {
	ctx := context.Background()
	db, err := engine.Open("index", engine.Options{FS: vfs.NewMem()})
	if err != nil {
		panic(err)
	}
	defer db.Close()
	if err := db.Insert(ctx, engine.Doc{ID: 7, Fingerprint: 0xff00, Name: "seven"}); err != nil {
		panic(err)
	}
	ms, err := db.Query(ctx, 0xff01, 3)
	if err != nil {
		panic(err)
	}
	for _, m := range ms {
		fmt.Println(m.ID, m.Name, m.Distance)
	}
	// Output:
	// 7 seven 1
}
