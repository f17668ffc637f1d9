// Command natsround measures a NATS JetStream stream's publish round on
// this machine's loopback, the cost of a replicated log that
// docs/distributed.md weighs: one server (R1) and a cluster of three (R3),
// file storage, with JetStream's default sync interval and with every
// write fsynced (sync_interval: always); 100-byte messages published one
// at a time (latency) and asynchronously with a window of 256
// (throughput). Its own module, so that the engine does not depend on
// NATS: cd bench/natsround && go run .
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

func start(dir, name string, port, cport int, routes []string, sync bool) *server.Server {
	opts := &server.Options{SyncAlways: sync, ServerName: name, Host: "127.0.0.1", Port: port, JetStream: true, StoreDir: filepath.Join(dir, name), NoLog: true, NoSigs: true}
	if len(routes) > 0 {
		opts.Cluster = server.ClusterOpts{Name: "c", Host: "127.0.0.1", Port: cport}
		opts.Routes = server.RoutesFromStr(fmt.Sprint(routes[0], ",", routes[1], ",", routes[2]))
	}
	s, err := server.NewServer(opts)
	if err != nil {
		panic(err)
	}
	go s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		panic("not ready")
	}
	return s
}

func pct(d []time.Duration, p float64) time.Duration {
	slices.Sort(d)
	return d[int(p*float64(len(d)-1))]
}

func run(url string, replicas int, label string) {
	nc, err := nats.Connect(url)
	if err != nil {
		panic(err)
	}
	defer nc.Close()
	js, err := nc.JetStream()
	if err != nil {
		panic(err)
	}
	for {
		_, err = js.AddStream(&nats.StreamConfig{Name: "docs", Subjects: []string{"docs.>"}, Replicas: replicas, Storage: nats.FileStorage})
		if err == nil {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	msg := make([]byte, 100)
	// warm
	for range 200 {
		if _, err := js.Publish("docs.a", msg); err != nil {
			panic(err)
		}
	}
	const n = 3000
	lat := make([]time.Duration, 0, n)
	for range n {
		t := time.Now()
		if _, err := js.Publish("docs.a", msg); err != nil {
			panic(err)
		}
		lat = append(lat, time.Since(t))
	}
	const m = 100000
	t := time.Now()
	for i := 0; i < m; i++ {
		if _, err := js.PublishAsync("docs.b", msg); err != nil {
			panic(err)
		}
		if i%256 == 255 {
			<-js.PublishAsyncComplete()
		}
	}
	<-js.PublishAsyncComplete()
	el := time.Since(t)
	fmt.Printf("%s: sync publish p50 %v p99 %v (%d); async, window 256: %.0f msgs/s (%d of 100 bytes)\n", label, pct(lat, 0.5), pct(lat, 0.99), n, float64(m)/el.Seconds(), m)
}

func main() {
	for _, sync := range []bool{false, true} {
		dir, _ := os.MkdirTemp("", "natsround")
		s1 := start(dir, "solo", 14222, 0, nil, sync)
		run(s1.ClientURL(), 1, fmt.Sprintf("R1, one server, sync_interval always=%v", sync))
		s1.Shutdown()
		routes := []string{"nats://127.0.0.1:16222", "nats://127.0.0.1:16223", "nats://127.0.0.1:16224"}
		var ss []*server.Server
		for i := range 3 {
			ss = append(ss, start(dir, fmt.Sprintf("n%d", i), 14300+i, 16222+i, routes, sync))
		}
		run(ss[0].ClientURL(), 3, fmt.Sprintf("R3, three servers, sync_interval always=%v", sync))
		for _, s := range ss {
			s.Shutdown()
		}
		os.RemoveAll(dir)
	}
}
