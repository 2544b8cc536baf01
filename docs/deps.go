// Package docs holds the test that type-checks every Go snippet of the
// README and of the guides in this directory (snippets_test.go). This
// file imports what the snippets may import, so that the module requires
// it and the snippets resolve against the checkout.
package docs

import (
	_ "github.com/prometheus/client_golang/prometheus"
	_ "github.com/prometheus/client_golang/prometheus/promhttp"
	_ "github.com/redis/go-redis/v9"
	_ "go.opentelemetry.io/otel"

	_ "github.com/shardq/shardq/dashboard"
	_ "github.com/shardq/shardq/lua"
	_ "github.com/shardq/shardq/metrics"
	_ "github.com/shardq/shardq/queue"
	_ "github.com/shardq/shardq/queuetest"
	_ "github.com/shardq/shardq/tracing"
	_ "github.com/shardq/shardq/worker"
)
