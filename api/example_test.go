package api_test

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/simhashdb/simhashdb/api"
	"github.com/simhashdb/simhashdb/engine"
)

// nearDuplicates is written once against api.Index: it works with the
// index in this process (*engine.DB, api.Embedded) and with a served one
// (*client.Client) alike.
func nearDuplicates(ctx context.Context, ix api.Index, fp uint64) ([]uint64, error) {
	ms, err := ix.Query(ctx, fp, 3)
	if err != nil {
		return nil, err
	}
	var ids []uint64
	for _, m := range ms {
		ids = append(ids, m.ID)
	}
	return ids, nil
}

func ExampleIndex() {
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	db, err := engine.Open(dir, engine.Options{Sync: engine.SyncNone})
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	if err := db.InsertBatch(ctx, []engine.Doc{
		{ID: 1, Fingerprint: 0x0123456789abcdef},
		{ID: 2, Fingerprint: 0x0123456789abcdee},
		{ID: 3, Fingerprint: 0xfedcba9876543210},
	}); err != nil {
		log.Fatal(err)
	}
	ids, err := nearDuplicates(ctx, db, 0x0123456789abcdef)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(ids)
	// Output:
	// [1 2]
}

func ExampleShardOf() {
	// Every client and node places a document alike: by its id alone.
	for id := uint64(1); id <= 4; id++ {
		fmt.Print(api.ShardOf(id, 2), " ")
	}
	fmt.Println()
	// Output: 1 0 1 0
}
