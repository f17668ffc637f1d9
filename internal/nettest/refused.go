//go:build unix

// Package nettest holds what tests of the network's clients need of the
// network itself.
package nettest

import (
	"fmt"
	"syscall"
	"testing"
)

// Refused returns a loopback address ("127.0.0.1:port") whose port is
// bound and not listening until the test ends: a connection to it is
// refused, as to a server that went away, and no server of this test or
// of another test process can be given the port meanwhile, as it could a
// closed listener's.
func Refused(t testing.TB) string {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatalf("nettest: socket: %v", err)
	}
	t.Cleanup(func() { syscall.Close(fd) })
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatalf("nettest: bind: %v", err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		t.Fatalf("nettest: getsockname: %v", err)
	}
	in, ok := sa.(*syscall.SockaddrInet4)
	if !ok {
		t.Fatalf("nettest: getsockname gave %T", sa)
	}
	return fmt.Sprintf("127.0.0.1:%d", in.Port)
}
