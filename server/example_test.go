package server_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"

	"github.com/simhashdb/simhashdb/engine"
	"github.com/simhashdb/simhashdb/server"
)

// An index served over HTTP with a token: documents stored with one POST,
// then a query; a request without the token is refused.
func Example() {
	dir, err := os.MkdirTemp("", "server-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	db, err := engine.Open(dir, engine.Options{})
	if err != nil {
		panic(err)
	}
	defer db.Close()
	srv := httptest.NewServer(server.New(db, server.Options{Token: "s3cret"}))
	defer srv.Close()

	do := func(method, path, token, body string) string {
		req, err := http.NewRequestWithContext(context.Background(), method, srv.URL+path, strings.NewReader(body))
		if err != nil {
			panic(err)
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			panic(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			panic(err)
		}
		return fmt.Sprint(resp.StatusCode, " ", strings.TrimSpace(string(b)))
	}
	fmt.Println(do("POST", "/v1/documents", "s3cret",
		`{"id":1,"fingerprint":"0x0123456789abcdef","name":"a.html"}`+"\n"+
			`{"id":2,"fingerprint":"0x0123456789abcdee","name":"b.html"}`+"\n"))
	fmt.Println(do("GET", "/v1/query?fp=0x0123456789abcdef&k=3", "s3cret", ""))
	fmt.Println(do("GET", "/v1/query?fp=0x0123456789abcdef&k=3", "", ""))
	// Output:
	// 200 {"stored":2,"rejected":0,"errors":[],"ids":[1,2]}
	// 200 {"query":"0x0123456789abcdef","matches":[{"id":1,"name":"a.html","fp":"0x0123456789abcdef","distance":0},{"id":2,"name":"b.html","fp":"0x0123456789abcdee","distance":1}]}
	// 401 {"error":"unauthorized"}
}
