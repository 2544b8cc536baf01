package queue

import (
	"errors"
	"strings"

	"github.com/shardq/shardq/internal/envelope"
	"github.com/shardq/shardq/internal/wire"
)

// opener turns what a task holds in its stored form (compressed,
// encrypted: see Config.Compression and Config.KeyRing) back into the
// values handlers wrote.
type opener struct {
	codec *envelope.Codec
	limit int
	why   error // the last value's that did not open
}

func (i *Inspector) opener() *opener { return &opener{codec: i.codec, limit: i.cfg.MaxPayloadSize} }

// open opens ti's payload, result, progress message, step values and last
// error in place. What is encrypted with a key o's ring lacks is left
// empty and ti.Redacted set; a value that does not open for another
// reason (cut short, tampered with, not encrypted under a ring without
// AllowPlaintext) marks the task Malformed, with why in LastError, and
// its payload keeps the stored bytes.
func (o *opener) open(ti *TaskInfo) {
	if ti == nil {
		return
	}
	sid := wire.StoredID(ti.ID)
	var broken []string
	// field returns b opened, or nil and ok false when it does not open.
	field := func(b []byte, u envelope.Use) (v []byte, ok bool) {
		if !envelope.Wrapped(b) && o.codec.Ring == nil {
			return b, true // with a ring, Open refuses it (AllowPlaintext)
		}
		v, err := o.codec.Open(b, sid, u, o.limit)
		o.why = err
		switch {
		case err == nil:
			return v, true
		case errors.Is(err, envelope.ErrUnknownKey):
			ti.Redacted = true
		default:
			broken = append(broken, u.String()+": "+err.Error())
		}
		return nil, false
	}
	if !ti.Malformed && (envelope.Wrapped(ti.Payload) || o.codec.Ring != nil) {
		ti.EncryptedWith = envelope.KeyID(ti.Payload)
		if v, ok := field(ti.Payload, envelope.Payload); ok || ti.Redacted {
			ti.Payload = v
		}
	}
	if !ti.Malformed && !ti.Raw && len(ti.Payload) > 0 {
		// as the worker checks it: so Decode, the dashboard and a caller's
		// own msgpack.Unmarshal of Payload are bounded by its bytes
		if v, err := wire.Normalize(ti.Payload); err != nil {
			broken = append(broken, "payload: "+err.Error())
		} else {
			ti.Payload = v
		}
	}
	if ti.HasResult {
		var ok bool
		if ti.Result, ok = field(ti.Result, envelope.Result); !ok {
			ti.resultErr = o.why
		}
	}
	if ti.Progress != nil {
		v, _ := field([]byte(ti.Progress.Message), envelope.Progress)
		ti.Progress.Message = string(v)
	}
	for j := range ti.Steps {
		ti.Steps[j].Value, _ = field(ti.Steps[j].Value, envelope.Step)
	}
	v, _ := field([]byte(ti.LastError), envelope.Error)
	ti.LastError = string(v)
	if len(broken) > 0 {
		ti.Malformed = true
		ti.LastError = strings.TrimPrefix(ti.LastError+"; "+strings.Join(broken, "; "), "; ")
	}
}
