package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// progressReporter prints add's progress: a bar with rate and ETA on a
// terminal, or JSON lines.
type progressReporter struct {
	mode                    string
	w                       io.Writer
	size                    int64
	bytes                   func() int64
	read, durable, rejected *atomic.Int64
	start                   time.Time
	lastDurable             int64
	done                    chan struct{}
	stopped                 chan struct{}
	printing                atomic.Bool
	lastPrint               atomic.Int64
	stopOnce                sync.Once
}

func newProgress(mode string, w io.Writer, size int64, bytes func() int64, read, durable, rejected *atomic.Int64) *progressReporter {
	p := &progressReporter{mode: mode, w: w, size: size, bytes: bytes, read: read, durable: durable,
		rejected: rejected, start: time.Now(), lastDurable: -1, done: make(chan struct{}), stopped: make(chan struct{})}
	go func() {
		defer close(p.stopped)
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				p.print(true)
			case <-p.done:
				return
			}
		}
	}()
	return p
}

// update prints when durable has grown (JSON) or a tenth of a second has
// passed (bar).
func (p *progressReporter) update() { p.print(false) }

func (p *progressReporter) print(tick bool) {
	if p.mode == "none" || !p.printing.CompareAndSwap(false, true) {
		return
	}
	defer p.printing.Store(false)
	now := time.Now()
	d := p.durable.Load()
	switch p.mode {
	case "json":
		if !tick && d == p.lastDurable {
			return
		}
		p.lastDurable = d
		el := now.Sub(p.start).Seconds()
		b, _ := json.Marshal(map[string]any{"read": p.read.Load(), "durable": d, "rejected": p.rejected.Load(),
			"elapsed_s": round3(el), "rate": round3(float64(d) / max(el, 1e-9))})
		fmt.Fprintf(p.w, "%s\n", b)
	case "bar":
		if !tick && now.UnixNano()-p.lastPrint.Load() < int64(100*time.Millisecond) {
			return
		}
		p.lastPrint.Store(now.UnixNano())
		el := now.Sub(p.start).Seconds()
		rate := float64(d) / max(el, 1e-9)
		line := fmt.Sprintf("%s durable, %s/s", human(d), human(int64(rate)))
		if p.size > 0 {
			frac := min(float64(p.bytes())/float64(p.size), 1)
			const width = 30
			n := int(frac * width)
			eta := "?"
			if frac > 0 {
				eta = (time.Duration(el*(1-frac)/frac) * time.Second).Round(time.Second).String()
			}
			line = fmt.Sprintf("[%s%s] %3.0f%% %s, ETA %s", strings.Repeat("=", n), strings.Repeat(" ", width-n), frac*100, line, eta)
		}
		fmt.Fprintf(p.w, "\r%-78s", line)
	}
}

// stop prints the last report and ends the bar's line; it may be called
// more than once (before an error message, and deferred).
func (p *progressReporter) stop() {
	p.stopOnce.Do(func() {
		close(p.done)
		<-p.stopped
		p.print(p.mode == "bar") // a JSON line only if something changed since the last
		if p.mode == "bar" {
			fmt.Fprintln(p.w)
		}
	})
}

func round3(x float64) float64 { return float64(int64(x*1000+0.5)) / 1000 }

// human writes 1234567 as 1.2M.
func human(n int64) string {
	switch {
	case n >= 1e9:
		return fmt.Sprintf("%.1fG", float64(n)/1e9)
	case n >= 1e6:
		return fmt.Sprintf("%.1fM", float64(n)/1e6)
	case n >= 1e4:
		return fmt.Sprintf("%.1fK", float64(n)/1e3)
	}
	return strconv.FormatInt(n, 10)
}

// isTerminal reports whether w is a character device (a terminal).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
