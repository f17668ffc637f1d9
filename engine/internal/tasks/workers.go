package tasks

import "sync/atomic"

// Workers runs functions on goroutines that stay, up to a number, and on
// new goroutines past it. A goroutine that stays keeps the stack its
// calls grew: a cold read through Pebble runs deep, and a new goroutine
// for each would grow its stack again, copying it at every doubling.
type Workers struct {
	jobs    chan func()
	stop    chan struct{}
	running atomic.Int32
	max     int32
}

// NewWorkers returns Workers that keep at most n goroutines.
func NewWorkers(n int) *Workers {
	return &Workers{jobs: make(chan func()), stop: make(chan struct{}), max: int32(n)}
}

// Go runs f: on an idle worker, on a new one while fewer than the most
// run, or on a goroutine of its own.
func (w *Workers) Go(f func()) {
	select {
	case w.jobs <- f:
		return
	default:
	}
	if w.running.Add(1) <= w.max {
		go w.work(f)
		return
	}
	w.running.Add(-1)
	go f()
}

func (w *Workers) work(f func()) {
	defer w.running.Add(-1)
	for {
		f()
		select {
		case f = <-w.jobs:
		case <-w.stop:
			return
		}
	}
}

// Close lets the idle workers end; those at work end when done. Go must
// not be called after it.
func (w *Workers) Close() { close(w.stop) }
