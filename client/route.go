package client

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
)

// route sends each request to one node of a replicated index, the same
// one until it cannot be reached or says it is unavailable; then the
// next, so that the call's retry (Client.retry) goes elsewhere. Sticking
// to one node keeps a client's reads after its own writes.
type route struct {
	next  http.RoundTripper
	nodes []*url.URL
	cur   atomic.Uint32
}

// parseNodes reads a server address, or several comma separated (the
// nodes of a replicated index: simhashdb serve --nats).
func parseNodes(addrs string) ([]*url.URL, error) {
	var nodes []*url.URL
	for a := range strings.SplitSeq(addrs, ",") {
		u, err := url.Parse(strings.TrimSpace(a))
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("client: server address %q: want http://HOST:PORT or https://HOST:PORT", a)
		}
		nodes = append(nodes, u)
	}
	if len(nodes) > 1 {
		for _, u := range nodes {
			if strings.Trim(u.Path, "/") != "" {
				return nil, fmt.Errorf("client: server address %q: the nodes of a replicated index are given without a path", u)
			}
		}
	}
	return nodes, nil
}

func (r *route) RoundTrip(req *http.Request) (*http.Response, error) {
	i := r.cur.Load()
	u := r.nodes[int(i)%len(r.nodes)]
	req = req.Clone(req.Context())
	req.URL.Scheme, req.URL.Host, req.Host = u.Scheme, u.Host, u.Host
	resp, err := r.next.RoundTrip(req)
	if err != nil || resp.StatusCode == http.StatusBadGateway || resp.StatusCode == http.StatusServiceUnavailable || resp.StatusCode == http.StatusGatewayTimeout {
		r.cur.CompareAndSwap(i, i+1)
	}
	return resp, err
}
