package rcall

import (
	"errors"
	"strings"

	"github.com/redis/go-redis/v9"
)

// Errors of Resolve, which a test of the embedded scripts would meet first.
var (
	// ErrMissingInclude reports an include directive naming a file that does not exist.
	ErrMissingInclude = errors.New("lua: missing include")
	// ErrIncludeCycle reports scripts that include each other.
	ErrIncludeCycle = errors.New("lua: include cycle")
)

// IsNoScript reports whether err is Redis's NOSCRIPT reply: the script cache
// does not hold the SHA (a flushed cache, a restarted server, a new node).
func IsNoScript(err error) bool {
	return err != nil && strings.HasPrefix(err.Error(), "NOSCRIPT")
}

// IsOOM reports whether err is, or wraps, Redis's OOM reply: a write
// refused at the maxmemory limit under noeviction. Scripts that only
// drain (flagged allow-oom) still run.
func IsOOM(err error) bool {
	var re redis.Error
	return errors.As(err, &re) && strings.HasPrefix(re.Error(), "OOM ")
}

// IsScriptError reports an error a script raised while it ran: a Lua
// error, or the error of a command it called, which Redis 7 answers with
// the script's place appended ("... script: <sha>, on
// @user_script:<line>."). The script ran up to that point and stopped;
// sent again as it was, it would stop there again. Errors that only mean
// "not now" are not: a command refused for the server's state (OOM,
// NOREPLICAS, READONLY, which open the message), a key of a slot that is
// migrating away ("non local key"), a cluster that is down.
func IsScriptError(err error) bool {
	var re redis.Error
	if err == nil || !isRedisError(err) || !errors.As(err, &re) {
		return false
	}
	msg := re.Error() // the server's words, whatever wraps them
	if !strings.Contains(msg, " on @user_script:") {
		return false
	}
	if !strings.HasPrefix(msg, "ERR ") && !strings.HasPrefix(msg, "WRONGTYPE ") {
		return false
	}
	// Redis's own refusals of a command for the cluster's state
	refused := strings.HasPrefix(msg, "ERR Script attempted to") &&
		(strings.Contains(msg, "non local key") || strings.Contains(msg, "cluster is down"))
	return !refused
}
