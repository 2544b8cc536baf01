// Command dashboard-mount mounts the shardq dashboard into an existing
// net/http server under /admin/queues/, next to the application's own
// routes. It enqueues a few tasks so there is something to see, serves on
// a loopback port, fetches the dashboard's overview once to show it works,
// deletes its queue and exits; with -serve it keeps serving for you to
// browse first.
//
//	go run ./examples/dashboard-mount               # fetch once and exit
//	go run ./examples/dashboard-mount -serve 10m    # then open the printed URL
//
// It connects to $REDIS_URL, by default redis://localhost:6379. Its keys are
// under the prefix "example-dashboard", apart from anything else in that
// Redis.
package main

import (
	"bytes"
	"cmp"
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"regexp"
	"time"

	"github.com/shardq/shardq/dashboard"
	"github.com/shardq/shardq/queue"
)

func main() {
	serve := flag.Duration("serve", 0, "keep serving this long after the check")
	flag.Parse()
	ctx := context.Background()
	rdb, err := queue.NewRedisClient(cmp.Or(os.Getenv("REDIS_URL"), "redis://localhost:6379"))
	if err != nil {
		log.Fatal(err)
	}
	defer rdb.Close()
	cfg := queue.Config{Prefix: "example-dashboard"}

	client, err := queue.NewClient(rdb, cfg)
	if err != nil {
		log.Fatal(err)
	}
	for i := range 5 {
		task := queue.NewRawTask("email:send", fmt.Appendf(nil, `{"to": "user-%d@example.com"}`, i))
		if _, err := client.Enqueue(ctx, task, queue.In("email"), queue.ProcessIn(time.Duration(i)*time.Hour)); err != nil {
			log.Fatal(err)
		}
	}

	// The application's server, with the dashboard mounted under a prefix.
	insp, err := queue.NewInspector(rdb, cfg)
	if err != nil {
		log.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "the application; its queues are at /admin/queues/")
	})
	// In production set Options.BasicAuth or BearerToken, and ReadOnly for
	// viewers. This one serves a loopback port only, so it says on purpose
	// that it needs no credentials.
	dash, err := dashboard.New(insp, dashboard.Options{Unauthenticated: true})
	if err != nil {
		log.Fatal(err)
	}
	mux.Handle("/admin/queues/", http.StripPrefix("/admin/queues", dash))
	ln, err := net.Listen("tcp", "127.0.0.1:0") // loopback only
	if err != nil {
		log.Fatal(err)
	}
	server := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = server.Serve(ln) }()
	defer server.Close()
	url := "http://" + ln.Addr().String() + "/admin/queues/"
	fmt.Println("dashboard at", url)

	resp, err := http.Get(url)
	if err != nil {
		log.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	title := regexp.MustCompile(`<title>([^<]*)</title>`).FindSubmatch(page)
	if resp.StatusCode != http.StatusOK || title == nil || !bytes.Contains(page, []byte(`email`)) {
		log.Fatalf("GET %s: %s, %d bytes without the email queue", url, resp.Status, len(page))
	}
	fmt.Printf("GET %s: %s, page %q listing the email queue\n", url, resp.Status, title[1])

	if *serve > 0 {
		fmt.Printf("serving for %v; open %s\n", *serve, url)
		time.Sleep(*serve)
	}
	// the tasks were only there to be seen: delete them, with their queue
	if err := insp.DeleteQueue(ctx, "email", true); err != nil {
		log.Fatal(err)
	}
}
