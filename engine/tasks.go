package engine

import (
	"context"
	"fmt"
	"runtime"
	"sync"
)

// taskPool runs tasks on at most n goroutines at a time and keeps the first
// error, after which the tasks not yet started are skipped.
type taskPool struct {
	ctx context.Context
	sem chan struct{}
	wg  sync.WaitGroup
	mu  sync.Mutex
	err error
}

func newTaskPool(ctx context.Context, n int) *taskPool {
	return &taskPool{ctx: ctx, sem: make(chan struct{}, n)}
}

// run starts f when a slot is free; a task may start others. what, if
// not empty, names the task in its error.
func (p *taskPool) run(what string, f func() error) {
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		p.sem <- struct{}{}
		defer func() { <-p.sem }()
		if p.failed() {
			return
		}
		if err := p.ctx.Err(); err != nil {
			p.fail(err)
		} else if err := f(); err != nil {
			if what != "" {
				err = fmt.Errorf("%s: %w", what, err)
			}
			p.fail(err)
		}
	}()
}

func (p *taskPool) fail(err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.err == nil {
		p.err = err
	}
}

func (p *taskPool) failed() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err != nil
}

// wait waits for every task, those started by tasks included, and returns
// the first error.
func (p *taskPool) wait() error {
	p.wg.Wait()
	return p.err
}

// parallel runs fn for each of n parts (tables, ranges of queries) on
// every core and returns the results by part, or the first error.
func parallel[T any](ctx context.Context, n int, fn func(part int) ([]T, error)) ([][]T, error) {
	out := make([][]T, n)
	p := newTaskPool(ctx, min(n, runtime.GOMAXPROCS(0)))
	for t := range n {
		p.run("", func() (err error) {
			out[t], err = fn(t)
			return err
		})
	}
	if err := p.wait(); err != nil {
		return nil, err
	}
	return out, ctx.Err()
}
