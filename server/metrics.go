package server

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/simhashdb/simhashdb/engine"
)

// metrics are the server's Prometheus metrics, in a registry of its own
// (not the process's global one: a library does not take it over).
type metrics struct {
	reg          *prometheus.Registry
	requests     *prometheus.CounterVec
	latency      *prometheus.HistogramVec
	unauthorized prometheus.Counter
}

func newMetrics(db *engine.DB, writes Writes) *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "simhashdb_http_requests_total", Help: "HTTP requests by endpoint and status code.",
		}, []string{"endpoint", "code"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "simhashdb_http_request_duration_seconds", Help: "HTTP request latency by endpoint.",
			Buckets: prometheus.ExponentialBuckets(20e-6, 2, 20),
		}, []string{"endpoint"}),
		unauthorized: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "simhashdb_http_unauthorized_total", Help: "Requests refused for a missing or wrong token.",
		}),
	}
	m.reg.MustRegister(m.requests, m.latency, m.unauthorized,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if db == nil {
		return m // a router's: no index of its own
	}
	m.reg.MustRegister(&engineCollector{db: db}, prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "simhashdb_applied_position", Help: "The position (a replicated index's stream sequence) of the last commit applied that had one.",
	}, func() float64 { return float64(db.Applied()) }))
	if l, ok := writes.(interface{ Lag() uint64 }); ok {
		m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "simhashdb_replica_lag_commands", Help: "Commands of the replicated index's stream this node had yet to apply when it applied its last one.",
		}, func() float64 { return float64(l.Lag()) }))
	}
	if p, ok := writes.(interface {
		Publishes() (uint64, time.Duration)
	}); ok {
		m.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "simhashdb_replica_publishes_total", Help: "Writes this node published that the replicated index's stream acknowledged.",
		}, func() float64 { n, _ := p.Publishes(); return float64(n) }))
		m.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "simhashdb_replica_publish_seconds_total", Help: "The time those publishes waited for the stream's acknowledgement (a quorum's round each), in all.",
		}, func() float64 { _, d := p.Publishes(); return d.Seconds() }))
	}
	return m
}

func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

// statusWriter remembers the status an endpoint answered with.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Flush passes streaming on (POST /v1/batch).
func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// instrument counts and times endpoint name.
func (m *metrics) instrument(name string, h http.Handler) http.Handler {
	obs := m.latency.WithLabelValues(name)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w}
		h.ServeHTTP(sw, r)
		obs.Observe(timeSince(start))
		m.requests.WithLabelValues(name, strconv.Itoa(max(sw.status, http.StatusOK))).Inc()
	})
}

// engineCollector reports the index's own figures (engine.Stats) at each
// scrape.
type engineCollector struct{ db *engine.DB }

var engineDescs = map[string]*prometheus.Desc{
	"documents":     prometheus.NewDesc("simhashdb_documents", "Documents stored: what a reader finds, writes not yet flushed included.", nil, nil),
	"fingerprints":  prometheus.NewDesc("simhashdb_fingerprints", "Distinct fingerprints flushed.", nil, nil),
	"pending":       prometheus.NewDesc("simhashdb_pending_writes", "Writes in the memtable, not yet flushed.", nil, nil),
	"memtable":      prometheus.NewDesc("simhashdb_memtable_bytes", "Memory of the memtable.", nil, nil),
	"disk":          prometheus.NewDesc("simhashdb_disk_bytes", "What the index takes on disk.", nil, nil),
	"cache":         prometheus.NewDesc("simhashdb_block_cache_bytes", "Decoded blocks cached.", nil, nil),
	"cache_hits":    prometheus.NewDesc("simhashdb_block_cache_hits_total", "Block cache hits.", nil, nil),
	"cache_misses":  prometheus.NewDesc("simhashdb_block_cache_misses_total", "Block cache misses.", nil, nil),
	"bits_per_fp":   prometheus.NewDesc("simhashdb_table_bits_per_fingerprint", "Bits per fingerprint in one table.", nil, nil),
	"pebble_index":  prometheus.NewDesc("simhashdb_pebble_index_bytes", "Index and filter blocks of the Pebble files holding the tables, which a cold read goes through.", nil, nil),
	"pebble_cache":  prometheus.NewDesc("simhashdb_pebble_cache_size_bytes", "Pebble's share of the cache; below simhashdb_pebble_index_bytes, cold queries read index blocks from the disk.", nil, nil),
	"stats_failure": prometheus.NewDesc("simhashdb_stats_failed", "1 when the index's statistics, or some of them, could not be read.", nil, nil),
}

func (c *engineCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range engineDescs {
		ch <- d
	}
}

func (c *engineCollector) Collect(ch chan<- prometheus.Metric) {
	st, err := c.db.Stats(context.Background())
	failed := 0.0
	if err != nil {
		failed = 1
	}
	ch <- prometheus.MustNewConstMetric(engineDescs["stats_failure"], prometheus.GaugeValue, failed)
	partial, _ := errors.AsType[*engine.StatsError](err)
	if err != nil && partial == nil {
		return
	}
	gauge := func(name string, v float64) {
		ch <- prometheus.MustNewConstMetric(engineDescs[name], prometheus.GaugeValue, v)
	}
	counter := func(name string, v float64) {
		ch <- prometheus.MustNewConstMetric(engineDescs[name], prometheus.CounterValue, v)
	}
	gauge("documents", float64(st.Documents))
	gauge("fingerprints", float64(st.Fingerprints))
	gauge("pending", float64(st.PendingWrites))
	gauge("memtable", float64(st.MemtableBytes))
	gauge("disk", float64(st.BytesOnDisk))
	gauge("cache", float64(st.CacheBytes))
	counter("cache_hits", float64(st.CacheHits))
	counter("cache_misses", float64(st.CacheMisses))
	gauge("bits_per_fp", st.BitsPerFingerprint)
	if partial == nil { // a damaged index's is not known
		gauge("pebble_index", float64(st.PebbleIndexBytes))
	}
	gauge("pebble_cache", float64(st.PebbleCacheSize))
}
