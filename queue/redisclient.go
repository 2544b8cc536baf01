package queue

import (
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/shardq/shardq/internal/rcall"
	"github.com/shardq/shardq/internal/redact"
)

// NewRedisClient returns a go-redis client for url, configured as shardq
// needs it: commands are never resent after a lost reply (MaxRetries -1:
// a resent enqueue could enqueue twice, a resent pop hides its tasks until
// their lease expires), and a context's deadline bounds every call
// (ContextTimeoutEnabled). On Redis Cluster, the client also re-reads its
// slot map after a failed call. Any other client works too; a worker logs
// a warning when its client resends commands.
//
// The scheme picks the deployment:
//
//	redis://[user:password@]host:port[/db][?options]   one server (rediss:// for TLS)
//	unix:///path/to/redis.sock[?db=N]                   one server on a Unix socket
//	redis+cluster://host:port[?addr=host2:port2...]    Redis Cluster (rediss+cluster:// for TLS)
//	redis+sentinel://host:port?master_name=mymaster[&addr=host2:port2...]
//	                                                    Sentinel (rediss+sentinel:// for TLS)
//
// Options are go-redis's URL options (dial_timeout, pool_size,
// max_retries to override the -1, ...). A URL it cannot use is
// ErrInvalid, the URL quoted with its secrets hidden: the
// password, and options such as a Sentinel URL's password=.
func NewRedisClient(rawURL string) (redis.UniversalClient, error) {
	bad := func(err error) error {
		// go-redis's messages may quote a part of the URL: scrubbed too
		return fmt.Errorf("%w %q: %s", errInvalidRedisURL, redact.URL(rawURL), redact.Scrub(err.Error(), rawURL))
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, bad(errors.New("does not parse"))
	}
	retries := !u.Query().Has("max_retries") // set by the caller: keep it
	plain, mode, _ := strings.Cut(u.Scheme, "+")
	if plain != "redis" && plain != "rediss" && (plain != "unix" || mode != "") {
		return nil, bad(fmt.Errorf("scheme %q: want redis, rediss, unix, redis+cluster or redis+sentinel", u.Scheme))
	}
	u.Scheme = plain
	switch mode {
	case "":
		o, err := redis.ParseURL(u.String())
		if err != nil {
			return nil, bad(err)
		}
		if retries {
			o.MaxRetries = -1
		}
		o.ContextTimeoutEnabled = true
		return redis.NewClient(o), nil
	case "cluster":
		o, err := redis.ParseClusterURL(u.String())
		if err != nil {
			return nil, bad(err)
		}
		if retries {
			o.MaxRetries = -1
		}
		o.ContextTimeoutEnabled = true
		cc := redis.NewClusterClient(o)
		// a dead master's slots are re-read at once, not after a minute
		cc.AddHook(rcall.RerouteHook{Client: cc})
		return cc, nil
	case "sentinel":
		o, err := redis.ParseFailoverURL(u.String())
		if err != nil {
			return nil, bad(err)
		}
		if o.MasterName == "" {
			return nil, bad(errors.New("no master_name: add ?master_name=<the name Sentinel monitors>"))
		}
		if retries {
			o.MaxRetries = -1
		}
		o.ContextTimeoutEnabled = true
		return redis.NewFailoverClient(o), nil
	}
	return nil, bad(fmt.Errorf("scheme %q: want redis, rediss, unix, redis+cluster or redis+sentinel", u.Scheme))
}

// NewRedisClientFromOptions returns a go-redis client for opts (one
// server, Cluster or Sentinel, as redis.NewUniversalClient picks), with
// the settings NewRedisClient explains: MaxRetries left at 0 (go-redis's
// default of 3 resends) becomes -1, ContextTimeoutEnabled is set, and a
// Cluster client re-reads its slot map after a failed call, as
// NewRedisClient's does. opts is not modified.
func NewRedisClientFromOptions(opts *redis.UniversalOptions) redis.UniversalClient {
	o := *opts
	if o.MaxRetries == 0 {
		o.MaxRetries = -1
	}
	o.ContextTimeoutEnabled = true
	c := redis.NewUniversalClient(&o)
	if cc, ok := c.(*redis.ClusterClient); ok {
		cc.AddHook(rcall.RerouteHook{Client: cc})
	}
	return c
}
