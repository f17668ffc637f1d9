package wal

import (
	"context"
	"fmt"
	"sync"
	"testing"
)

// BenchmarkWriteSync: acknowledged writes of 100-byte records with
// SyncAlways, by 1 and 16 writers sharing fsyncs (group commit), on the
// test's temporary folder's disk.
func BenchmarkWriteSync(b *testing.B) {
	payload := make([]byte, 100)
	for _, writers := range []int{1, 16} {
		b.Run(fmt.Sprintf("writers=%d", writers), func(b *testing.B) {
			l, err := Open(b.TempDir(), Options{Sync: SyncAlways})
			if err != nil {
				b.Fatal(err)
			}
			defer l.Close()
			var wg sync.WaitGroup
			per := b.N/writers + 1
			b.ResetTimer()
			for range writers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for range per {
						if err := l.Write(context.Background(), 1, payload); err != nil {
							b.Error(err)
							return
						}
					}
				}()
			}
			wg.Wait()
		})
	}
}
