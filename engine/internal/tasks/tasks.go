// Package tasks runs the engine's work on every core: a pool of tasks
// that keeps the first error, and Parallel over parts (tables, ranges of
// queries).
package tasks

import (
	"context"
	"fmt"
	"runtime"
	"sync"
)

// Pool runs tasks on at most n goroutines at a time and keeps the first
// error, after which the tasks not yet started are skipped.
type Pool struct {
	ctx context.Context
	sem chan struct{}
	wg  sync.WaitGroup
	mu  sync.Mutex
	err error
}

// New returns a pool of n goroutines whose tasks ctx cancels.
func New(ctx context.Context, n int) *Pool {
	return &Pool{ctx: ctx, sem: make(chan struct{}, n)}
}

// Run starts f when a slot is free; a task may start others. what, if
// not empty, names the task in its error.
func (p *Pool) Run(what string, f func() error) {
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

func (p *Pool) fail(err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.err == nil {
		p.err = err
	}
}

func (p *Pool) failed() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err != nil
}

// Wait waits for every task, those started by tasks included, and returns
// the first error.
func (p *Pool) Wait() error {
	p.wg.Wait()
	return p.err
}

// Parallel runs fn for each of n parts (tables, ranges of queries) on
// every core and returns the results by part, or the first error.
func Parallel[T any](ctx context.Context, n int, fn func(part int) ([]T, error)) ([][]T, error) {
	out := make([][]T, n)
	p := New(ctx, min(n, runtime.GOMAXPROCS(0)))
	for t := range n {
		p.Run("", func() (err error) {
			out[t], err = fn(t)
			return err
		})
	}
	if err := p.Wait(); err != nil {
		return nil, err
	}
	return out, ctx.Err()
}
