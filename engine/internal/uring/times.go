package uring

import (
	"sync/atomic"
	"time"
)

// Times is where a ring's reads spent their time in the kernel since New:
// entering them (Submits calls of io_uring_enter that submitted, Submit
// in them: the file system's and the block layer's work for each read,
// and one notification of the device a call, which on a virtual machine
// can cost as much as the read's service) and waiting in it for their
// completions (Wait).
type Times struct {
	Submits      int64
	Submit, Wait time.Duration
}

// times counts a ring's Times; the ring's single submitter and single
// waiter add to it, Times reads it from any goroutine.
type times struct {
	submits, submit, wait atomic.Int64
}

// Times returns the ring's Times (zero for a nil ring).
func (r *Ring) Times() Times {
	if r == nil {
		return Times{}
	}
	return Times{Submits: r.t.submits.Load(), Submit: time.Duration(r.t.submit.Load()), Wait: time.Duration(r.t.wait.Load())}
}
