package tasks

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTaskPool(t *testing.T) {
	t.Run("runs every task, nested ones too, at most n at a time", func(t *testing.T) {
		p := New(t.Context(), 2)
		var running, peak, done atomic.Int32
		task := func() error {
			n := running.Add(1)
			for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
			}
			time.Sleep(time.Millisecond)
			running.Add(-1)
			done.Add(1)
			return nil
		}
		for range 10 {
			p.Run("outer", func() error {
				p.Run("inner", task)
				return task()
			})
		}
		require.NoError(t, p.Wait())
		assert.Equal(t, int32(20), done.Load())
		assert.LessOrEqual(t, peak.Load(), int32(2))
	})
	t.Run("the first error, named; later tasks skipped", func(t *testing.T) {
		p := New(t.Context(), 1)
		boom := errors.New("boom")
		var after atomic.Int32
		p.Run("table 3", func() error { return boom })
		p.Wait()
		p.Run("table 4", func() error { after.Add(1); return errors.New("second") })
		err := p.Wait()
		require.ErrorIs(t, err, boom)
		assert.Contains(t, err.Error(), "table 3")
		assert.Zero(t, after.Load())
	})
	t.Run("a done context skips the tasks", func(t *testing.T) {
		cctx, cancel := context.WithCancel(t.Context())
		cancel()
		p := New(cctx, 2)
		ran := false
		p.Run("docs", func() error { ran = true; return nil })
		err := p.Wait()
		require.ErrorIs(t, err, context.Canceled)
		assert.Equal(t, context.Canceled.Error(), err.Error(), "not a task's error")
		assert.False(t, ran)
	})
}
