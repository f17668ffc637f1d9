// Package uring reads files through a Linux io_uring instance, so that
// reads issued together by many goroutines reach the disk together.
//
// A goroutine blocked in pread holds its P until the runtime's monitor
// takes it back, tens of microseconds to milliseconds later; with two Ps,
// ten goroutines reading at once go to the disk about two at a time. Here
// a read is submitted without blocking (io_uring_enter returns at once;
// the kernel reads in the background, or at once from the page cache) and
// its goroutine parks until the completion arrives: the disk sees every
// read issued at once. One goroutine of the reads in flight waits in
// io_uring_enter for their completions and hands them out; an eventfd in
// the runtime's poller took more of the processor, each completion waking
// a thread to read the eventfd and another to drain the queue.
//
// ReadAtDirect reads what the page cache does not hold with O_DIRECT: a
// buffered read that misses has the kernel allocate, charge and insert
// its pages and start the disk's read on the reader's thread.
//
// Where the kernel refuses io_uring (an old kernel, a seccomp profile that
// blocks it, another system), New fails with an error that wraps
// ErrUnsupported and callers read as before.
package uring
