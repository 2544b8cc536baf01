package dashboard_test

import (
	"log"
	"net/http"
	"os"

	"github.com/redis/go-redis/v9"

	"github.com/shardq/shardq/dashboard"
	"github.com/shardq/shardq/queue"
)

// The dashboard mounted under /queues/ of an existing server, behind basic
// authentication.
func ExampleNew() {
	rdb := redis.NewClient(&redis.Options{Addr: "localhost:6379"})
	insp, err := queue.NewInspector(rdb, queue.Config{})
	if err != nil {
		log.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/queues/", http.StripPrefix("/queues", dashboard.New(insp, dashboard.Options{
		BasicAuth: &dashboard.BasicAuth{User: "ops", Password: os.Getenv("DASHBOARD_PASSWORD")},
	})))
	log.Fatal(http.ListenAndServe(":8080", mux))
}
