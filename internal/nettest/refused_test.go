//go:build unix

package nettest

import (
	"errors"
	"net"
	"syscall"
	"testing"
)

// TestRefused: a connection to the address is refused while the test
// runs, and no listener can take its port.
func TestRefused(t *testing.T) {
	addr := Refused(t)
	_, err := net.Dial("tcp", addr)
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("dial %s: %v, want connection refused", addr, err)
	}
	if ln, err := net.Listen("tcp", addr); err == nil {
		ln.Close()
		t.Fatalf("listening on %s: the port was free", addr)
	}
}
