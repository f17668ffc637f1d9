package main

import (
	"flag"
	"testing"

	"github.com/simhashdb/simhashdb/server"
	"github.com/stretchr/testify/require"
)

// TestFitInflight: the default bytes in flight are at most an eighth of
// the memory the process may use, never below --max-batch-body; a value
// given, or an unknown memory, keeps them.
func TestFitInflight(t *testing.T) {
	const mib = 1 << 20
	for _, c := range []struct {
		name  string
		args  []string
		limit int64
		want  byteSize
	}{
		{"a large machine", nil, 24 << 30, server.DefaultMaxInflight},
		{"unknown", nil, 0, server.DefaultMaxInflight},
		{"a 1 GiB container", nil, 1 << 30, 128 * mib},
		{"a 256 MiB container: the batch body's floor", nil, 256 * mib, server.DefaultMaxBatchBody},
		{"a smaller batch body", []string{"--max-batch-body", "16MiB"}, 256 * mib, 32 * mib},
		{"given", []string{"--max-inflight-bytes", "200MiB"}, 256 * mib, 200 * mib},
	} {
		t.Run(c.name, func(t *testing.T) {
			var s listenFlags
			fl := flag.NewFlagSet("serve", flag.ContinueOnError)
			s.register(fl, "127.0.0.1:0")
			require.NoError(t, fl.Parse(c.args))
			s.fitInflight(fl, c.limit)
			require.Equal(t, c.want, s.maxInflight)
			_, err := s.check()
			require.NoError(t, err)
		})
	}
}
