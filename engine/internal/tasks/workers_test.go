package tasks

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestWorkers: every function runs once, more at a time than the workers
// kept, and the workers end at Close.
func TestWorkers(t *testing.T) {
	w := NewWorkers(4)
	var ran atomic.Int64
	for range 50 {
		var wg sync.WaitGroup
		release := make(chan struct{})
		for range 10 { // more than the workers: some on goroutines of their own
			wg.Add(1)
			w.Go(func() {
				defer wg.Done()
				<-release
				ran.Add(1)
			})
		}
		close(release)
		wg.Wait()
	}
	require.EqualValues(t, 500, ran.Load())
	require.LessOrEqual(t, w.running.Load(), int32(4))
	w.Close()
	for w.running.Load() != 0 { // go test's timeout, with stacks, if they never end
		runtime.Gosched()
	}
}
