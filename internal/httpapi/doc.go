// Package httpapi is the HTTP producer API that shardq serve serves: any
// language with an HTTP client enqueues tasks and reads them back, with
// no shardq client of its own. Its routes are in openapi.json, which it
// serves at /v1/openapi.json; docs/http.md is the guide.
//
// Every request carries the bearer token the server was given, which is
// never empty. Bodies are bounded (Options.MaxBodyBytes) and read once;
// a batch holds at most Options.MaxBatch tasks and is one round trip to
// Redis (queue.Client.EnqueueMany).
package httpapi
