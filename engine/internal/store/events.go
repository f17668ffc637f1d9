package store

import (
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/simhashdb/simhashdb/engine/internal/format"
)

// pebbleLogger sends Pebble's logs to slog at debug level (errors at error).
type pebbleLogger struct{ l *slog.Logger }

func (p pebbleLogger) Infof(format string, args ...any) {
	p.l.Debug("pebble: " + fmt.Sprintf(format, args...))
}

func (p pebbleLogger) Errorf(format string, args ...any) {
	p.l.Error("pebble: " + fmt.Sprintf(format, args...))
}

// Fatalf is what Pebble calls when its own state is broken beyond repair
// (an invariant violated, a MANIFEST write that may or may not have
// happened). It panics rather than exiting: the program that embeds the
// engine decides, and deferred functions run. Damaged data is not fatal:
// pebbleEvents reports it and the read that met it returns an error.
func (p pebbleLogger) Fatalf(format string, args ...any) {
	msg := "pebble: fatal: " + fmt.Sprintf(format, args...)
	p.l.Error(msg)
	panic(msg)
}

// pebbleEvents are the engine's handlers of Pebble's events: damaged data
// is logged (the read that found it returns ErrCorrupt; Pebble's default
// would end the process), and background errors, which Pebble retries,
// are logged at most once per backgroundLogEvery with a count: a full
// disk would otherwise write a line per retry.
func (s *Store) pebbleEvents() *pebble.EventListener {
	var mu sync.Mutex
	var last time.Time
	var skipped int
	return &pebble.EventListener{
		DataCorruption: func(info pebble.DataCorruptionInfo) {
			err := format.Corrupt("the Pebble store's "+info.Path+": writes stop until the index is repaired (run check)", info.Details)
			if s.damaged.CompareAndSwap(nil, &err) {
				msg, _, _ := strings.Cut(info.Details.Error(), "\n") // the rest is a stack trace
				s.log.Error("simhashdb: pebble found damaged data", "path", info.Path, "err", msg)
			}
		},
		BackgroundError: func(err error) {
			mu.Lock()
			defer mu.Unlock()
			if now := time.Now(); now.Sub(last) >= backgroundLogEvery {
				s.log.Error("simhashdb: pebble background error", "err", err, "repeats", skipped)
				last, skipped = now, 0
				return
			}
			skipped++
		},
	}
}

// backgroundLogEvery spaces the logs of Pebble's background errors.
const backgroundLogEvery = 10 * time.Second
