package replica_test

import (
	"context"
	"fmt"
	"log"

	"github.com/simhashdb/simhashdb/engine"
	"github.com/simhashdb/simhashdb/replica"
)

// Each node of a replicated index opens its own index and joins the
// stream; writes through any node reach every node, and insert-if-new is
// decided once for the whole cluster. (It needs NATS servers with
// JetStream at the URL: nats-server -js.)
func ExampleStart() {
	ctx := context.Background()
	db, err := engine.Open("node1", engine.Options{Sync: engine.SyncNone})
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	node, err := replica.Start(ctx, db, replica.Options{URL: "nats://127.0.0.1:4222", Stream: "crawl", Replicas: 3})
	if err != nil {
		log.Fatal(err)
	}
	defer node.Close()

	// The crawler's decision, the same whichever node is asked.
	dups, inserted, err := node.InsertIfNew(ctx, engine.Doc{ID: 1, Fingerprint: 0x0123456789abcdef, Name: "https://a.example/"}, 3)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(inserted, len(dups))

	// A query that sees every write acknowledged before it, by any node.
	if err := node.Latest(ctx); err != nil {
		log.Fatal(err)
	}
	ms, err := node.DB().Query(ctx, 0x0123456789abcdee, 3)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(len(ms))
}
