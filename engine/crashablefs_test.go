package engine

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/stretchr/testify/require"
)

// crashableFS is Pebble's crashable MemFS with its Link kept apart from
// CrashClone. MemFS.Link (pebble v2.1.7, vfs/mem_fs.go) takes the clone
// lock for reading twice, the second time inside a walk that holds the
// file system's own lock; a CrashClone that asks for the clone lock
// between the two waits for the first, and the second waits behind it: a
// power cut during a flush's ingestion hung TestPowerCut once in CI.
type crashableFS struct {
	*vfs.MemFS
	link *sync.RWMutex
}

func newCrashableFS() crashableFS {
	return crashableFS{vfs.NewCrashableMem(), new(sync.RWMutex)}
}

// Link is MemFS.Link, never while CrashClone runs.
func (c crashableFS) Link(oldname, newname string) error {
	c.link.RLock()
	defer c.link.RUnlock()
	return c.MemFS.Link(oldname, newname)
}

// CrashClone is MemFS.CrashClone once no Link is under way.
func (c crashableFS) CrashClone(cfg vfs.CrashCloneCfg) crashableFS {
	c.link.Lock()
	defer c.link.Unlock()
	return crashableFS{c.MemFS.CrashClone(cfg), new(sync.RWMutex)}
}

// TestCrashableFSLinkDuringClone: links and crash clones at once, which
// hang Pebble's MemFS by itself within seconds, finish through
// crashableFS.
func TestCrashableFSLinkDuringClone(t *testing.T) {
	t.Parallel()
	fs := newCrashableFS()
	f, err := fs.Create("a", vfs.WriteCategoryUnspecified)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	// Clones go on until links have run beside them, however the
	// goroutines are scheduled; a hang is go test's timeout, with every
	// goroutine's stack.
	var links atomic.Int64
	stop := make(chan struct{})
	linked := make(chan struct{})
	go func() {
		defer close(linked)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			name := fmt.Sprintf("l%d", i)
			if err := fs.Link("a", name); err != nil {
				t.Error(err)
			}
			if err := fs.Remove(name); err != nil {
				t.Error(err)
			}
			links.Add(1)
		}
	}()
	clones := 0
	for ; clones < 50_000 || links.Load() < 1000; clones++ {
		fs.CrashClone(vfs.CrashCloneCfg{})
	}
	close(stop)
	<-linked
	require.GreaterOrEqual(t, links.Load(), int64(1000), "links ran beside the clones")
}
