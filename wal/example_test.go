package wal_test

import (
	"context"
	"fmt"
	"os"

	"github.com/simhashdb/simhashdb/wal"
)

// Records written and acknowledged, then read back in order after a
// restart.
func Example() {
	dir, err := os.MkdirTemp("", "wal-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)

	l, err := wal.Open(dir, wal.Options{Sync: wal.SyncAlways})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	for i, p := range []string{"insert 42", "insert 43", "delete 42"} {
		// Write returns once the record is on disk (SyncAlways): the
		// caller may acknowledge it.
		if err := l.Write(ctx, byte(1+i%2), []byte(p)); err != nil {
			panic(err)
		}
	}
	if err := l.Close(); err != nil {
		panic(err)
	}

	st, err := wal.Replay(dir, wal.Position{}, wal.ReplayOptions{}, func(end wal.Position, typ byte, payload []byte) error {
		fmt.Printf("type %d: %s\n", typ, payload)
		return nil
	})
	if err != nil {
		panic(err)
	}
	fmt.Println(st.Records, "records in", st.Segments, "segment")
	// Output:
	// type 1: insert 42
	// type 2: insert 43
	// type 1: delete 42
	// 3 records in 1 segment
}
