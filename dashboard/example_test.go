package dashboard_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"

	"github.com/shardq/shardq/dashboard"
	"github.com/shardq/shardq/queue"
)

// The dashboard mounted under /queues/ of an existing server, behind basic
// authentication.
func ExampleNew() {
	rdb, stop := exampleRedis()
	defer stop()
	client, _ := queue.NewClient(rdb, queue.Config{})
	if _, err := client.Enqueue(context.Background(), queue.NewRawTask("email:send", nil), queue.In("email")); err != nil {
		log.Fatal(err)
	}

	insp, err := queue.NewInspector(rdb, queue.Config{})
	if err != nil {
		log.Fatal(err)
	}
	d, err := dashboard.New(insp, dashboard.Options{
		BasicAuth: &dashboard.BasicAuth{User: "ops", Password: "s3cret"}, // say, os.Getenv("DASHBOARD_PASSWORD")
	})
	if err != nil {
		log.Fatal(err) // an empty password, say: the dashboard is never open by accident
	}
	mux := http.NewServeMux()
	mux.Handle("/queues/", http.StripPrefix("/queues", d))
	srv := httptest.NewServer(mux) // in a program: log.Fatal(http.ListenAndServe(":8080", mux))
	defer srv.Close()

	get := func(path string, auth bool) *http.Response {
		req, _ := http.NewRequest("GET", srv.URL+path, nil)
		if auth {
			req.SetBasicAuth("ops", "s3cret")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			log.Fatal(err)
		}
		return resp
	}
	resp := get("/queues/", false)
	resp.Body.Close()
	fmt.Println("without credentials:", resp.StatusCode)

	resp = get("/queues/", true)
	resp.Body.Close()
	fmt.Println("overview page:", resp.StatusCode, resp.Header.Get("Content-Type"))

	// the JSON API (API.md) serves the same data
	resp = get("/queues/api/queues", true)
	defer resp.Body.Close()
	var body struct {
		Queues []struct {
			Name    string `json:"name"`
			Pending int    `json:"pending"`
		} `json:"queues"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("api: %d %+v\n", resp.StatusCode, body.Queues)
	// Output:
	// without credentials: 401
	// overview page: 200 text/html; charset=utf-8
	// api: 200 [{Name:email Pending:1}]
}
