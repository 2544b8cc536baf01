package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/shardq/shardq/internal/config"
	"github.com/shardq/shardq/internal/redact"
)

// workerFile is the JSON config file of `shardq worker --config`. Flags
// given on the command line win over it.
//
//	{
//	  "redis": "redis://localhost:6379/0",
//	  "prefix": "shardq",
//	  "queues": {"email": 3, "default": 1, "tenant:*": 1},
//	  "strict_priority": false,
//	  "concurrency": 20,
//	  "shutdown_timeout": "30s",
//	  "handlers": {
//	    "image:resize": {"exec": ["convert-task", "--fast"], "timeout": "2m", "retry_exit_code": 75},
//	    "notify":       {"http": "https://hooks.example.com/shardq", "json": true,
//	                     "headers": {"Authorization": "Bearer ..."}}
//	  }
//	}
type workerFile struct {
	Redis           string                 `json:"redis"`
	Prefix          string                 `json:"prefix"`
	Queues          map[string]int         `json:"queues"`
	StrictPriority  bool                   `json:"strict_priority"`
	Concurrency     int                    `json:"concurrency"`
	ShutdownTimeout duration               `json:"shutdown_timeout"`
	Handlers        map[string]handlerSpec `json:"handlers"`
}

// handlerSpec configures the built-in handler of one task type: exactly
// one of Exec and HTTP. Unset options take the command line's values.
type handlerSpec struct {
	// Exec is the command and its arguments (no shell).
	Exec []string `json:"exec,omitempty"`
	// HTTP is the URL tasks are POSTed to.
	HTTP string `json:"http,omitempty"`
	// Headers are extra HTTP request headers.
	Headers map[string]string `json:"headers,omitempty"`
	// JSON hands msgpack payloads over as JSON.
	JSON *bool `json:"json,omitempty"`
	// Timeout bounds each run, on top of the task's own timeout.
	Timeout *duration `json:"timeout,omitempty"`
	// RetryExitCode is the exit code that asks for a retry (exec).
	RetryExitCode *int `json:"retry_exit_code,omitempty"`
	// RetryIn is the wait before a requested retry (exit code, 429, 503
	// without Retry-After); 0 uses the worker's backoff.
	RetryIn *duration `json:"retry_in,omitempty"`
}

// handlerDefaults are the command line's values for what a handlerSpec leaves unset.
type handlerDefaults struct {
	json          bool
	timeout       time.Duration
	retryExitCode int
	retryIn       time.Duration
}

// resolved is a handlerSpec with its defaults filled in.
type resolved struct {
	typ           string
	argv          []string
	url           string
	headers       map[string]string
	json          bool
	timeout       time.Duration
	retryExitCode int
	retryIn       time.Duration
}

func (h handlerSpec) resolve(typ string, d handlerDefaults) (resolved, error) {
	r := resolved{typ: typ, argv: h.Exec, url: h.HTTP, headers: h.Headers,
		json: d.json, timeout: d.timeout, retryExitCode: d.retryExitCode, retryIn: d.retryIn}
	if h.JSON != nil {
		r.json = *h.JSON
	}
	if h.Timeout != nil {
		r.timeout = time.Duration(*h.Timeout)
	}
	if h.RetryExitCode != nil {
		r.retryExitCode = *h.RetryExitCode
	}
	if h.RetryIn != nil {
		r.retryIn = time.Duration(*h.RetryIn)
	}
	switch {
	case typ == "":
		return r, fmt.Errorf("handler with an empty task type")
	case (len(h.Exec) > 0) == (h.HTTP != ""):
		return r, fmt.Errorf("handler %q: want exactly one of exec and http", typ)
	case h.HTTP != "":
		if err := checkURL(h.HTTP); err != nil {
			return r, fmt.Errorf("handler %q: %v", typ, err)
		}
	case len(h.Headers) > 0:
		return r, fmt.Errorf("handler %q: headers apply to http handlers only", typ)
	}
	if r.timeout < 0 || r.retryIn < 0 {
		return r, fmt.Errorf("handler %q: negative timeout or retry_in", typ)
	}
	if r.retryExitCode < 1 || r.retryExitCode > 255 {
		return r, fmt.Errorf("handler %q: retry exit code %d, want 1..255", typ, r.retryExitCode)
	}
	return r, nil
}

// checkURL checks a handler's URL. Its messages show the URL with its
// secrets hidden: it may carry a password or a token.
func checkURL(s string) error {
	u, err := url.Parse(s)
	var uerr *url.Error
	if errors.As(err, &uerr) {
		return fmt.Errorf("URL %q: %s", redact.URL(s), redact.Scrub(uerr.Err.Error(), s))
	}
	if err != nil {
		return fmt.Errorf("URL %q does not parse", redact.URL(s))
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("URL %q: want http:// or https:// and a host", redact.URL(s))
	}
	return nil
}

// parseHandlerFlag parses --handler 'type=exec:cmd args...' or 'type=http:URL'.
func parseHandlerFlag(s string) (string, handlerSpec, error) {
	typ, rest, ok := strings.Cut(s, "=")
	kind, arg, _ := strings.Cut(rest, ":")
	shown := s
	if kind == "http" {
		shown = typ + "=http:" + redact.URL(arg)
	}
	bad := func(why string) (string, handlerSpec, error) {
		return "", handlerSpec{}, fmt.Errorf("--handler %q: %s; want 'type=exec:command args...' or 'type=http:URL'", shown, why)
	}
	if !ok || typ == "" {
		return bad("no task type")
	}
	switch kind {
	case "exec":
		argv, err := splitArgs(arg)
		if err != nil {
			return bad(err.Error())
		}
		if len(argv) == 0 {
			return bad("no command")
		}
		return typ, handlerSpec{Exec: argv}, nil
	case "http":
		if err := checkURL(arg); err != nil {
			return bad(err.Error())
		}
		return typ, handlerSpec{HTTP: arg}, nil
	}
	return bad(fmt.Sprintf("unknown handler kind %q", kind))
}

// splitArgs splits a command line into words the way a shell would for
// plain words, 'single' and "double" quotes and backslash escapes; it
// expands nothing.
func splitArgs(s string) ([]string, error) {
	var args []string
	var cur strings.Builder
	inWord := false
	var quote rune
	escaped := false
	for _, r := range s {
		switch {
		case escaped:
			cur.WriteRune(r)
			escaped = false
		case quote == '\'' && r == '\'', quote == '"' && r == '"':
			quote = 0
		case quote == '\'':
			cur.WriteRune(r)
		case r == '\\':
			escaped, inWord = true, true
		case quote == '"':
			cur.WriteRune(r)
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == ' ' || r == '\t' || r == '\n':
			if inWord {
				args = append(args, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if quote != 0 || escaped {
		return nil, fmt.Errorf("unterminated quote or escape in %q", s)
	}
	if inWord {
		args = append(args, cur.String())
	}
	return args, nil
}

// parseQueues parses --queues 'name[:weight],...', where a name may be a
// pattern ('tenant:*'), and the weight may follow '=' as well
// ('tenant:*=2'): a ':' is taken for the weight's only when a number
// follows it, since queue names may hold colons.
func parseQueues(s string) (map[string]int, error) {
	out := map[string]int{}
	for item := range strings.SplitSeq(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		name, w, hasWeight := cutWeight(item)
		weight := 1
		if hasWeight {
			n, err := strconv.Atoi(w)
			if err != nil || n < 1 {
				return nil, fmt.Errorf("--queues %q: weight %q of %q, want a whole number >= 1", s, w, name)
			}
			weight = n
		}
		if err := checkQueueOrPattern(name); err != nil {
			return nil, fmt.Errorf("--queues: %v", err)
		}
		out[name] = weight
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("--queues %q: no queue", s)
	}
	return out, nil
}

// readWorkerFile reads and checks a config file.
func readWorkerFile(path string) (*workerFile, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return parseWorkerFile(path, b)
}

// parseWorkerFile checks a config file's bytes, read from path. Its
// errors quote none of them: the file may hold a handler's
// Authorization header or a Redis URL's password.
func parseWorkerFile(path string, b []byte) (*workerFile, error) {
	var f workerFile
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("config %s: %s", path, redact.JSONError(err, "the fields of shardq help worker"))
	}
	if dec.More() {
		return nil, fmt.Errorf("config %s: more JSON after its object, at byte %d", path, dec.InputOffset())
	}
	for q, w := range f.Queues {
		if err := checkQueueOrPattern(q); err != nil {
			return nil, fmt.Errorf("config %s: %v", path, err)
		}
		if w < 1 {
			return nil, fmt.Errorf("config %s: queue %q has weight %d, want >= 1", path, q, w)
		}
	}
	return &f, nil
}

// duration is a time.Duration written as "30s" in JSON.
type duration time.Duration

func (d *duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("duration %s: want a string such as \"30s\"", b)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	*d = duration(v)
	return nil
}

// cutWeight splits "name=weight", or "name:weight" when a number (or a
// sign) follows the last colon.
func cutWeight(item string) (name, weight string, ok bool) {
	if i := strings.LastIndex(item, "="); i >= 0 {
		return item[:i], item[i+1:], true
	}
	if i := strings.LastIndex(item, ":"); i >= 0 {
		if w := item[i+1:]; w != "" && strings.Trim(w, "-+0123456789") == "" {
			return item[:i], w, true
		}
	}
	return item, "", false
}

// isPattern reports whether a --queues name is a pattern (path.Match
// syntax) that worker.Config.QueuePatterns takes.
func isPattern(name string) bool { return strings.ContainsAny(name, "*?[") }

// checkQueueName checks a queue name as queue does, saying what is wrong
// with it.
func checkQueueName(name string) error {
	if err := config.CheckName(name); err != nil {
		return fmt.Errorf("invalid queue name %q: %s", name, err)
	}
	return nil
}

// checkQueueOrPattern checks a queue name, or a pattern's syntax.
func checkQueueOrPattern(name string) error {
	if !isPattern(name) {
		return checkQueueName(name)
	}
	if _, err := path.Match(name, ""); err != nil || strings.ContainsAny(name, "{} \t") {
		return fmt.Errorf("queue pattern %q: want path.Match syntax, without braces or whitespace", name)
	}
	return nil
}

// splitPatterns separates the patterns of a queues map from its names.
func splitPatterns(all map[string]int) (queues, patterns map[string]int) {
	for q, w := range all {
		if isPattern(q) {
			if patterns == nil {
				patterns = map[string]int{}
			}
			patterns[q] = w
			continue
		}
		if queues == nil {
			queues = map[string]int{}
		}
		queues[q] = w
	}
	return queues, patterns
}
