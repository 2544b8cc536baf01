// Package crosslang holds the end-to-end matrix that every producer
// outside the Go client passes: the Python client, the TypeScript client
// and the HTTP API each enqueue a plain, a delayed, a fair-keyed, a
// compressed and an encrypted task, a duplicate ID and a batch, and a Go
// worker runs them on a private redis-server. The package has only tests;
// contract.md is the driver's side of it, docs/protocol.md the wire.
package crosslang
