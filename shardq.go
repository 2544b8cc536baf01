// Package shardq is a task queue for Go on Redis: producers enqueue tasks
// with package queue, and package worker runs a handler for each.
//
// The packages:
//
//   - queue: Client enqueues tasks, Inspector reads and manages queues;
//   - worker: Server runs handlers and enqueues periodic tasks, Mux
//     routes them by task type;
//   - dashboard: the web dashboard, an http.Handler;
//   - queuetest: helpers for testing code that enqueues and handles tasks;
//   - lua: the Redis primitives shardq is built on, for use on their own.
//
// Prometheus metrics and OpenTelemetry tracing live in the modules
// github.com/shardq/shardq/metrics and github.com/shardq/shardq/tracing,
// so that an application that uses neither does not depend on them.
package shardq

// Version is the version of shardq. Producers and workers of the same
// minor version run side by side; docs/operations.md says what runs
// beside what across versions.
const Version = "0.2.0"
